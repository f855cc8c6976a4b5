"""Patch overlap: the changed lines of a unified diff, and how much of a recalled item's
patch the agent's patch repeats (`Reuse`).

Reuse. A recalled item "was reused" when the agent's patch of that attempt repeats
the item's patch: the score is the share of the item's added lines (per file,
whitespace-normalised, blank lines ignored) that the agent's patch adds too. Added lines
are the fix; removed lines only say where the bug was, and any fix of the same bug
removes them, so they count only for a patch that adds nothing (`basis` says which).
`reused` is that score at or above `REUSE_THRESHOLD` (0.5: at least half of the
remembered fix reappears). Shared files are reported too, as a weaker signal.
"""

from __future__ import annotations

import re

from ._model import REUSE_THRESHOLD, Reuse


# -- patch overlap ------------------------------------------------------------------------

_HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
_DIFF_GIT = re.compile(r"^diff --git a/(.+?) b/(.+)$")


def _path(raw: str) -> str:
    raw = raw.strip().split("\t", 1)[0]
    return raw[2:] if raw.startswith(("a/", "b/")) else raw


def changed_lines(patch: str) -> set[tuple[str, str, str]]:
    """(file, '+'|'-', whitespace-normalised text) of every non-blank changed line.

    Hunks are read by their line counts, so a changed line that itself starts with
    `+++` or `---` is still a line, not a header.
    """
    out: set[tuple[str, str, str]] = set()
    current = ""
    old_left = new_left = 0
    for line in patch.splitlines():
        if old_left > 0 or new_left > 0:
            tag, text = line[:1], line[1:]
            if tag == "\\":
                continue
            if tag == "+":
                new_left -= 1
            elif tag == "-":
                old_left -= 1
            else:
                old_left -= 1
                new_left -= 1
                continue
            norm = " ".join(text.split())
            if norm:
                out.add((current, tag, norm))
            continue
        m = _DIFF_GIT.match(line)
        if m:
            current = _path(m.group(2))
            continue
        if line.startswith("+++ "):
            target = _path(line[4:])
            if target != "/dev/null":
                current = target
            continue
        if line.startswith("--- "):
            source = _path(line[4:])
            if source != "/dev/null" and not current:
                current = source
            continue
        h = _HUNK.match(line)
        if h:
            old_left = int(h.group(1)) if h.group(1) is not None else 1
            new_left = int(h.group(2)) if h.group(2) is not None else 1
    return out


def patch_reuse(item_patch: str | None, agent_patch: str | None) -> Reuse:
    """How much of the item's patch reappears in the agent's (see the module doc)."""
    if item_patch is None:
        return Reuse(compared=False, reason="the item has no patch")
    if agent_patch is None:
        return Reuse(compared=False, reason="the attempt has no agent patch")
    mine = changed_lines(item_patch)
    theirs = changed_lines(agent_patch)
    item_files = sorted({f for f, _, _ in mine})
    basis = "+" if any(sign == "+" for _, sign, _ in mine) else "-"
    mine_basis = {line for line in mine if line[1] == basis}
    theirs_basis = {line for line in theirs if line[1] == basis}
    if not mine_basis:
        return Reuse(compared=False, reason="the item's patch changes no lines", item_files=item_files)
    shared = mine_basis & theirs_basis
    score = round(len(shared) / len(mine_basis), 6)
    return Reuse(
        compared=True,
        score=score,
        reused=score >= REUSE_THRESHOLD,
        basis="added" if basis == "+" else "removed",
        shared_lines=len(shared),
        item_lines=len(mine_basis),
        agent_lines=len(theirs_basis),
        shared_files=sorted(set(item_files) & {f for f, _, _ in theirs}),
        item_files=item_files,
    )
