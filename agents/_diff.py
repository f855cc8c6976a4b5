"""The one way every agent's patch is taken: the worktree's diff against its base commit.

Whatever an agent did (edited, created, deleted, staged or even committed files), the
patch is the difference between the worktree on disk and the commit it started from, new
files included, taken through a throw-away index so the worktree's own index is never
touched. Oracle, predictions and demo apply a patch and then take it back through this
same path, so every `agent.finished` patch is produced identically.

Applying here is deliberately small (atomic `git apply`, then `--recount`): it serves
agents that replay a known patch. The grader owns the full apply chain and its safety
rules; a patch that does not apply here is handed on as given so the grader decides.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath

from ledger import SweclError

from graders.host import git_env

__all__ = [
    "apply_answer",
    "apply_patch",
    "check_patch",
    "extract_diff",
    "head_commit",
    "unsafe_paths",
    "worktree_patch",
]

# Generated files an agent's test runs leave behind; they are never part of a fix and
# a binary .pyc hunk would make the patch unappliable with GNU patch.
_EXCLUDE = (":(exclude,glob)**/__pycache__/**", ":(exclude,glob)**/*.py[co]")

_GIT_CONFIG = (
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.autocrlf=false",
    "-c", "core.quotepath=off",
    "-c", "core.fsmonitor=false",
    "-c", "gc.auto=0",
)


def _git(
    worktree: Path, args: Sequence[str], *, env: dict[str, str] | None = None, input: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    exe = shutil.which("git")
    if exe is None:
        raise SweclError("git not found on PATH: install git (agents need it to take their patches)")
    if not worktree.is_dir():
        raise SweclError(f"agent worktree {worktree} does not exist: prepare the task's checkout first")
    return subprocess.run(
        [exe, *_GIT_CONFIG, *args],
        cwd=worktree,
        env=env or git_env(literal_pathspecs=False),  # not literal: `_EXCLUDE` is pathspec magic
        input=input,
        stdin=None if input is not None else subprocess.DEVNULL,
        capture_output=True,
    )


def _checked(done: subprocess.CompletedProcess[bytes], what: str, worktree: Path) -> bytes:
    if done.returncode != 0:
        err = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise SweclError(f"{what} failed in {worktree}: {err[-1] if err else f'exit {done.returncode}'}")
    return done.stdout


def head_commit(worktree: str | os.PathLike[str]) -> str:
    """The commit the worktree is checked out at (the task's base commit before the agent runs)."""
    tree = Path(worktree)
    return _checked(_git(tree, ["rev-parse", "--verify", "HEAD^{commit}"]), "git rev-parse HEAD", tree).decode().strip()


def worktree_patch(worktree: str | os.PathLike[str], base: str | None = None) -> str:
    """The unified diff from `base` (default HEAD) to the files on disk, new files included.

    Ignored files (.gitignore) and Python bytecode are left out; renames are spelled as
    delete + add so every consumer (git apply, GNU patch, unidiff) reads it.
    """
    tree = Path(worktree)
    base = base or head_commit(tree)
    with tempfile.TemporaryDirectory(prefix="swecl-diff-") as tmp, _attributes_neutralised(tree, base):
        index = Path(tmp) / "index"
        real_index = Path(
            _checked(_git(tree, ["rev-parse", "--path-format=absolute", "--git-path", "index"]), "git rev-parse", tree)
            .decode()
            .strip()
        )
        env = git_env(literal_pathspecs=False, GIT_INDEX_FILE=str(index))
        if real_index.is_file():
            # Starting from a copy of the real index keeps its stat cache: `add -A` then
            # hashes only files that changed, not the whole repository.
            shutil.copy2(real_index, index)  # copy2 keeps the mtime git's racy-file check needs
        else:
            _checked(_git(tree, ["read-tree", "HEAD"], env=env), "git read-tree", tree)
        _checked(_git(tree, ["add", "-A", "--", ".", *_EXCLUDE], env=env), "git add (temporary index)", tree)
        out = _checked(
            _git(
                tree,
                [
                    "diff", "--cached", "--binary", "--no-color", "--no-ext-diff", "--no-textconv",
                    "--no-renames", "--src-prefix=a/", "--dst-prefix=b/", base, "--",
                ],
                env=env,
            ),
            "git diff",
            tree,
        )
    return out.decode("utf-8", "surrogateescape")


# Every attribute that makes `git add` transform or refuse content; unspecified (`!`) for all
# paths, they store the bytes on disk as they are.
_NEUTRAL_ATTRIBUTES = "* !working-tree-encoding !filter !ident !text !eol !crlf !diff !merge\n"


def _changed_attribute_files(tree: Path, base: str) -> bool:
    """Did the agent add, change or remove a `.gitattributes` (read as raw bytes, so no
    attribute applies to the check itself)?"""
    listed = _git(tree, ["ls-tree", "-r", "-z", "--name-only", base]).stdout.decode("utf-8", "surrogateescape")
    in_base = {p for p in listed.split("\0") if p.rsplit("/", 1)[-1] == ".gitattributes"}
    on_disk = set()
    for folder, dirs, files in os.walk(tree):
        dirs[:] = [d for d in dirs if d != ".git"]
        if ".gitattributes" in files:
            on_disk.add(os.path.relpath(os.path.join(folder, ".gitattributes"), tree).replace(os.sep, "/"))
    if in_base != on_disk:
        return True
    for rel in in_base:
        blob = _git(tree, ["cat-file", "blob", f"{base}:{rel}"]).stdout
        if (tree / rel).read_bytes() != blob:
            return True
    return False


@contextlib.contextmanager
def _attributes_neutralised(tree: Path, base: str) -> Iterator[None]:
    """While the patch is taken: if the agent changed a `.gitattributes`, git ignores every
    attribute (`$GIT_DIR/info/attributes` outranks the tree's files). A
    `working-tree-encoding=UTF-16` would make `git add` fail and the task count as
    missing; the grader leaves such files out of the patch anyway."""
    if not _changed_attribute_files(tree, base):
        yield
        return
    path = Path(
        _checked(_git(tree, ["rev-parse", "--path-format=absolute", "--git-path", "info/attributes"]),
                 "git rev-parse", tree).decode().strip()
    )
    saved = path.read_bytes() if path.is_file() else None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_NEUTRAL_ATTRIBUTES, encoding="utf-8")
    try:
        yield
    finally:
        if saved is None:
            path.unlink(missing_ok=True)
        else:
            path.write_bytes(saved)


# --- applying a known patch -------------------------------------------------------------

_PATH_LINE = re.compile(r"^(?:diff --git a/(\S+) b/(\S+)|--- (\S+)|\+\+\+ (\S+))", re.MULTILINE)


def unsafe_paths(patch: str) -> list[str]:
    """Paths a patch names that must never be written: absolute, `..`, or under `.git`."""
    bad: list[str] = []
    for match in _PATH_LINE.finditer(patch):
        for raw in match.groups():
            if not raw or raw == "/dev/null":
                continue
            name = raw[2:] if raw.startswith(("a/", "b/")) else raw
            parts = PurePosixPath(name).parts
            if name.startswith("/") or ".." in parts or ".git" in parts:
                bad.append(raw)
    return sorted(set(bad))


def _normalise(patch: str) -> str:
    # Transport damage only: a patch whose every header line ends in CR came through a
    # CRLF channel; a patch for a CRLF file keeps its CRs.
    lines = patch.split("\n")
    headers = [ln for ln in lines if ln.startswith(("diff --git ", "--- ", "+++ ", "@@ "))]
    if headers and all(ln.endswith("\r") for ln in headers):
        patch = "\n".join(ln[:-1] if ln.endswith("\r") else ln for ln in lines)
    return patch if patch.endswith("\n") else patch + "\n"


def _git_apply(worktree: Path, patch: str, extra: Sequence[str]) -> bool:
    data = patch.encode("utf-8", "surrogateescape")
    return _git(worktree, ["apply", "--whitespace=nowarn", *extra, "-"], input=data).returncode == 0


def check_patch(worktree: str | os.PathLike[str], patch: str) -> bool:
    """Would `apply_patch` succeed? Writes nothing."""
    tree = Path(worktree)
    if not patch.strip() or unsafe_paths(patch):
        return False
    text = _normalise(patch)
    return any(_git_apply(tree, text, [*extra, "--check"]) for extra in ((), ("--recount",)))


def apply_patch(worktree: str | os.PathLike[str], patch: str) -> str | None:
    """Apply `patch` to the worktree; the strategy that worked, or None (nothing written).

    Both strategies are atomic: a failed `git apply` leaves the worktree as it was.
    """
    tree = Path(worktree)
    if not patch.strip() or unsafe_paths(patch):
        return None
    text = _normalise(patch)
    for name, extra in (("git apply", ()), ("git apply --recount", ("--recount",))):
        if _git_apply(tree, text, extra):
            return name
    if _git(tree, ["config", "--bool", "core.sparseCheckout"]).stdout.strip() == b"true":
        # a sparse checkout made for the paths the patch names (`RepoCache.agent_checkout`):
        # the patch needs more of the tree than they are; with all of it, it applies as it
        # would have in a full checkout
        _checked(_git(tree, ["sparse-checkout", "disable"]), "git sparse-checkout disable", tree)
        return apply_patch(tree, patch)
    return None


# --- a diff inside a model's answer (code_mode blind) ----------------------------------

_FENCE = re.compile(r"```[ \t]*(?:diff|patch|udiff)?[^\n]*\n(.*?)```", re.DOTALL)
_DIFF_START = re.compile(r"^(diff --git |--- (?:a/|/dev/null))", re.MULTILINE)


def extract_diff(text: str) -> str | None:
    """The unified diff in a model's final message: fenced blocks first, else bare text.

    Several fenced diffs (one per file, as models like to write them) are joined.
    """
    blocks = [b for b in _FENCE.findall(text) if _DIFF_START.search(b) and "@@" in b]
    if blocks:
        joined = "".join(b[_DIFF_START.search(b).start():] for b in blocks)  # type: ignore[union-attr]
        return joined if joined.endswith("\n") else joined + "\n"
    start = _DIFF_START.search(text)
    if start is None or "@@" not in text[start.start():]:
        return None
    body = text[start.start():]
    return body if body.endswith("\n") else body + "\n"


def apply_answer(worktree: str | os.PathLike[str], base: str, answer: str,
                 where: str = "the final message") -> tuple[str, str | None]:
    """A blind answer applied to the worktree: (its patch against `base`, None), or, when
    `answer` (`where` names it in the note) holds no diff, ("", note), or, when its diff
    does not apply, (the diff as written, note): the grader's fuller apply chain may still
    manage."""
    diff = extract_diff(answer)
    if diff is None:
        return "", f"blind: {where} holds no unified diff"
    if apply_patch(worktree, diff) is None:
        return diff, f"blind: the diff in {where} does not apply with git apply; kept as written"
    return worktree_patch(worktree, base), None
