"""Patch application: safety checks, the apply chain, test-file reverting, the gold test patch.

The chain is swebench 5.x's GIT_APPLY_CMDS in its order: `git apply --verbose`, `--3way`,
`--reject`, then `patch --batch --forward --fuzz=5 -p1`, the worktree reset to the prepared
state before each retry (swebench: `git checkout -- . ; git clean -fd`), and, when all
fail, the patch accepted if the tree the last try left has it applied already
(`git apply --check --reverse`). Deliberate differences, each for safety or a clean tree:
paths leaving the worktree are refused before any try; GNU patch reads unified diffs only
(the safety check reads no other format, and ed scripts can run commands) and writes no
`.rej`/`.orig` files; sections touching `.gitattributes`/`.gitmodules` are left out.

Safety: a patch is data from a model. Before anything touches the disk every path it
names is checked: no absolute paths, no `..` components, nothing under `.git`, no
symlink it creates pointing out of the worktree, and no write through an existing
symlink that leaves the worktree (GNU `patch` would follow it). GNU patch runs with
`--unified` (never an ed script, which can run commands), `PATCH_GET=0` (never a
version-control checkout) and rejects discarded, so it writes only the files named.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from graders.host import cleanable_paths as _cleanable, git, git_env
from ledger.patches import (  # re-exported: the grader's callers read patches through here
    TEST_CONFIG_FILES, PatchFile, is_test_config_path, is_test_path, parse_patch_files, patch_paths, strip_prefix,
)

__all__ = [
    "ApplyResult",
    "CHAIN",
    "PatchFile",
    "apply_check",
    "apply_patch",
    "apply_test_patch",
    "changed_paths",
    "is_test_config_path",
    "is_test_path",
    "normalize_patch",
    "parse_patch_files",
    "patch_paths",
    "reset_to",
    "revert_test_files",
    "snapshot",
    "split_git_behaviour_files",
    "unsafe_reason",
]

# swebench 5.x's GIT_APPLY_CMDS, in its order (every git apply runs with --verbose):
# `git apply --verbose`, `--3way`, `--reject`, then `patch --batch --forward --fuzz=5 -p1 -i`.
GIT_APPLY = "git apply"
GIT_APPLY_3WAY = "git apply --3way"
GIT_APPLY_REJECT = "git apply --reject"
GNU_PATCH = "patch --forward --fuzz=5"
CHAIN = (GIT_APPLY, GIT_APPLY_3WAY, GIT_APPLY_REJECT, GNU_PATCH)
# Not in the model-patch chain (swebench has no such step): the gold test patch's fallback.
GIT_APPLY_RECOUNT = "git apply --recount"
# When every step fails, swebench accepts a tree the patch is already applied to (the last
# step, GNU patch with --forward, skips hunks it finds applied and exits 1).
ALREADY_APPLIED = " (verified already applied: git apply --check --reverse)"

# Files that change how git itself reads and writes the tree (encodings, filters, line
# endings, submodules): never applied from a model patch (see `split_git_behaviour_files`).
GIT_BEHAVIOUR_FILES = frozenset({".gitattributes", ".gitmodules"})
@dataclass(slots=True)
class ApplyResult:
    ok: bool
    status: str  # applied | empty_patch | patch_failed
    applied_with: str | None = None
    error: str | None = None
    log: str = ""
    paths: list[str] = field(default_factory=list)
    not_applied: list[str] = field(default_factory=list)  # git behaviour files left out


def normalize_patch(text: str) -> str:
    """CRLF-mangled patches back to LF, and a final newline added.

    Only a patch whose *header* lines all end in CR is converted: that is transport
    damage (a Windows editor, a chat UI). A patch against a file that really has CRLF
    line endings keeps its CRs, which `git apply` needs.
    """
    lines = text.split("\n")
    headers = [ln for ln in lines if ln.startswith(("diff --git ", "--- ", "+++ ", "@@ "))]
    if headers and all(ln.endswith("\r") for ln in headers):
        lines = [ln[:-1] if ln.endswith("\r") else ln for ln in lines]
        text = "\n".join(lines)
    if text and not text.endswith("\n"):
        text += "\n"
    return text


def _names_git_behaviour_file(f: PatchFile) -> bool:
    names = [f.old_path, f.new_path, *(strip_prefix(raw) for raw in f.raw_paths)]
    return any(name and PurePosixPath(name).name in GIT_BEHAVIOUR_FILES for name in names)


def split_git_behaviour_files(patch: str) -> tuple[str, list[str]]:
    """`patch` without its sections that touch `.gitattributes` / `.gitmodules` (anywhere),
    and the paths those sections named.

    Such a file changes how every later git command reads the tree: a
    `working-tree-encoding=UTF-16` makes `git add` fail, `eol`/`text`/`ident` rewrite what
    is stored, a `merge` driver changes what `--3way` produces. None is ever part of a fix
    SWE-bench tests, so the grader leaves them out (and says so in the grade log) rather
    than let them decide how the rest of the patch is applied or cleaned up.
    """
    files = parse_patch_files(patch)
    dropped = [f for f in files if _names_git_behaviour_file(f)]
    if not dropped:
        return patch, []
    lines = patch.split("\n")
    starts = [f.start_line for f in files] + [len(lines)]
    keep = [True] * len(lines)
    for index, f in enumerate(files):
        if f in dropped:
            for n in range(starts[index], starts[index + 1]):
                keep[n] = False
    names: dict[str, None] = {}
    for f in dropped:
        for name in (f.old_path, f.new_path):
            if name:
                names.setdefault(name, None)
    kept = "\n".join(line for line, kept in zip(lines, keep, strict=True) if kept)
    return (kept + "\n" if kept and not kept.endswith("\n") else kept), list(names)


def _path_problem(raw: str) -> str | None:
    if raw == "/dev/null":
        return None
    if "\x00" in raw:
        return f"path {raw!r} contains a NUL byte"
    if raw.startswith("/"):
        return f"absolute path {raw!r}"
    if raw.startswith("~"):
        return f"home-relative path {raw!r}"
    stripped = strip_prefix(raw) or ""
    for candidate in (raw, stripped):
        parts = [p for p in candidate.replace("\\", "/").split("/")]
        if ".." in parts:
            return f"path {raw!r} escapes the worktree (..)"
        if any(p.lower() == ".git" for p in parts):
            return f"path {raw!r} points into .git"
    if not stripped.strip("/"):
        return f"empty path {raw!r}"
    return None


def _inside(root: Path, candidate: Path) -> bool:
    try:
        candidate.relative_to(root)
        return True
    except ValueError:
        return False


def unsafe_reason(worktree: Path, patch: str) -> str | None:
    """Why applying `patch` in `worktree` could write outside it, or None when it cannot."""
    files = parse_patch_files(patch)
    root = Path(os.path.realpath(worktree))
    created_links: set[str] = set()
    for f in files:
        for raw in f.raw_paths:
            problem = _path_problem(raw)
            if problem:
                return problem
        if f.symlink and f.new_path:
            target = f.symlink_target or ""
            if target.startswith("/"):
                return f"symlink {f.new_path!r} points to absolute path {target!r}"
            resolved = os.path.normpath(os.path.join(os.path.dirname(f.new_path), target))
            if resolved == ".." or resolved.startswith("../") or any(
                p.lower() == ".git" for p in resolved.split("/")
            ):
                return f"symlink {f.new_path!r} points outside the worktree ({target!r})"
            created_links.add(f.new_path)
    for f in files:
        for rel in (f.old_path, f.new_path):
            if not rel:
                continue
            parts = PurePosixPath(rel).parts
            for i in range(1, len(parts)):
                if "/".join(parts[:i]) in created_links:
                    return f"path {rel!r} goes through symlink {'/'.join(parts[:i])!r} the patch creates"
            here = root
            for part in parts:
                here = here / part
                if here.is_symlink():
                    real = Path(os.path.realpath(here))
                    if not _inside(root, real):
                        return f"path {rel!r} goes through symlink {here.relative_to(root)} pointing outside the worktree"
    return None


def snapshot(worktree: Path) -> str:
    """The worktree's current content (tracked + untracked, not ignored) as a git tree id."""
    git(["add", "--all", "--", "."], cwd=worktree)
    return git(["write-tree"], cwd=worktree).stdout.decode().strip()


def reset_to(worktree: Path, tree: str, extra_paths: Sequence[str] = ()) -> None:
    """Worktree and index back to `tree`; untracked files removed, ignored ones only under extra_paths."""
    git(["read-tree", "--reset", "-u", tree], cwd=worktree)
    git(["checkout-index", "--all", "--force"], cwd=worktree)
    git(["clean", "-ffd", "--quiet"], cwd=worktree)
    paths = _cleanable(extra_paths)
    if paths:
        git(["clean", "-ffdx", "--quiet", "--", *paths], cwd=worktree)


def _git_apply(worktree: Path, patch: bytes, extra: list[str], *, check: bool) -> tuple[bool, str]:
    args = ["apply", "-v", "--whitespace=nowarn", *extra, *(["--check"] if check else []), "-"]
    done = git(args, cwd=worktree, input=patch, check=False)
    out = (done.stdout + done.stderr).decode("utf-8", "replace")
    return done.returncode == 0, out


def _gnu_patch(worktree: Path, patch: bytes, *, check: bool) -> tuple[bool, str]:
    exe = shutil.which("patch")
    if exe is None:
        return False, "GNU patch not found on PATH; skipped"
    with tempfile.TemporaryDirectory(prefix="swecl-patch-") as tmp:
        patch_file = Path(tmp) / "model.patch"
        patch_file.write_bytes(patch)
        argv = [
            exe, "--batch", "--forward", "--fuzz=5", "-p1", "--unified",
            "--no-backup-if-mismatch", "--reject-file=-", "--quoting-style=literal",
            "-i", os.fspath(patch_file),
        ]
        if check:
            argv.append("--dry-run")
        env = {k: v for k, v in git_env().items() if k not in ("POSIXLY_CORRECT", "SIMPLE_BACKUP_SUFFIX", "VERSION_CONTROL")}
        env["PATCH_GET"] = "0"
        try:
            done = subprocess.run(argv, cwd=worktree, capture_output=True, stdin=subprocess.DEVNULL, env=env, timeout=300)
        except subprocess.TimeoutExpired:
            return False, "patch timed out"
    return done.returncode == 0, (done.stdout + done.stderr).decode("utf-8", "replace")


def _try(strategy: str, worktree: Path, data: bytes, *, check: bool) -> tuple[bool, str]:
    if strategy == GIT_APPLY:
        return _git_apply(worktree, data, [], check=check)
    if strategy == GIT_APPLY_3WAY:
        return _git_apply(worktree, data, ["--3way"], check=check)
    if strategy == GIT_APPLY_REJECT:
        # A rejected hunk leaves a .rej file and the other hunks applied; the try then
        # counts as failed and the reset before the next try removes both.
        return _git_apply(worktree, data, ["--reject"], check=check)
    if strategy == GIT_APPLY_RECOUNT:
        return _git_apply(worktree, data, ["--recount"], check=check)
    return _gnu_patch(worktree, data, check=check)


def _already_applied(worktree: Path, data: bytes) -> tuple[bool, str]:
    return _git_apply(worktree, data, ["--reverse"], check=True)


def apply_patch(
    worktree: Path,
    patch: str,
    *,
    reset: Callable[[], None] | None = None,
    strategies: Sequence[str] = CHAIN,
    git_behaviour_files: bool = False,
) -> ApplyResult:
    """Apply a model patch with the chain; `reset` restores the worktree before each retry.

    Returns status `empty_patch` (blank), `patch_failed` (unsafe, or no strategy applied;
    the worktree is then reset) or `applied` with the strategy that worked. As in
    swebench, when every strategy fails but the tree the last one left has the whole
    patch applied (`git apply --check --reverse`), the patch counts as applied.
    Sections touching git behaviour files are left out first (`split_git_behaviour_files`,
    listed in `not_applied`) unless `git_behaviour_files` (the gold test patch is trusted).
    """
    if not patch or not patch.strip():
        return ApplyResult(False, "empty_patch", error="the patch is empty")
    text = normalize_patch(patch)
    paths = patch_paths(text)
    reason = unsafe_reason(worktree, text)
    if reason:
        return ApplyResult(False, "patch_failed", error=f"unsafe patch: {reason}", paths=paths)
    not_applied: list[str] = []
    if not git_behaviour_files:
        text, not_applied = split_git_behaviour_files(text)
    logs: list[str] = []
    if not_applied:
        logs.append(f"[swecl] not applied (git behaviour files are never taken from a patch): {', '.join(not_applied)}\n")
        if not patch_paths(text):
            return ApplyResult(
                False, "patch_failed", error="the patch changes only git behaviour files (.gitattributes, .gitmodules)",
                log="".join(logs), paths=paths, not_applied=not_applied,
            )
    data = text.encode("utf-8", "surrogateescape")
    for i, strategy in enumerate(strategies):
        if i and reset is not None:
            reset()
        ok, out = _try(strategy, worktree, data, check=False)
        logs.append(f"$ {strategy}\n{out.rstrip()}\n")
        if ok:
            return ApplyResult(True, "applied", applied_with=strategy, log="".join(logs), paths=paths,
                               not_applied=not_applied)
    if strategies and strategies[-1] == GNU_PATCH:
        ok, out = _already_applied(worktree, data)
        logs.append(f"$ git apply --check --reverse\n{out.rstrip()}\n")
        if ok:
            return ApplyResult(True, "applied", applied_with=strategies[-1] + ALREADY_APPLIED, log="".join(logs),
                               paths=paths, not_applied=not_applied)
    if reset is not None:
        reset()
    last = logs[-1].strip().splitlines()[-1] if logs else "no strategy"
    return ApplyResult(
        False, "patch_failed", error=f"no strategy applied the patch ({', '.join(strategies)}); last: {last}",
        log="".join(logs), paths=paths, not_applied=not_applied,
    )


def apply_check(worktree: str | os.PathLike[str], patch: str) -> bool:
    """Would `patch` apply in `worktree`? A dry run that writes nothing (for agents)."""
    tree = Path(worktree)
    if not patch or not patch.strip():
        return False
    text = normalize_patch(patch)
    if unsafe_reason(tree, text):
        return False
    text, _ = split_git_behaviour_files(text)
    if not patch_paths(text):
        return False
    data = text.encode("utf-8", "surrogateescape")
    # --recount too: an agent's patch reaches the grader as its worktree's diff (clean
    # counts), and agents apply what they are given with --recount (agents/_diff.py).
    return any(_try(s, tree, data, check=True)[0] for s in (GIT_APPLY, GIT_APPLY_RECOUNT, GNU_PATCH))


def apply_test_patch(worktree: Path, test_patch: str) -> ApplyResult:
    """Apply the gold test patch (git apply, then --recount; both atomic). Failure is infra's."""
    if not test_patch or not test_patch.strip():
        return ApplyResult(True, "applied", applied_with=None, log="(no test patch)\n")
    return apply_patch(worktree, test_patch, reset=None, strategies=(GIT_APPLY, GIT_APPLY_RECOUNT), git_behaviour_files=True)


def changed_paths(worktree: Path, tree: str, also: Sequence[str] = ()) -> list[str]:
    """Paths that differ from `tree` now (staged via `git add`), plus `also` that exist."""
    git(["add", "--all", "--", "."], cwd=worktree)
    done = git(["diff", "--cached", "--name-only", "--no-renames", "-z", tree], cwd=worktree)
    names = {n for n in done.stdout.decode("utf-8", "surrogateescape").split("\0") if n}
    for p in _cleanable(also):
        if (worktree / p).exists() or (worktree / p).is_symlink():
            names.add(p)
    return sorted(names)


def revert_test_files(worktree: Path, tree: str, test_patch: str, also: Sequence[str] = ()) -> list[str]:
    """Undo changes to test files relative to `tree` (the prepared base); returns their paths.

    Reverted: every changed path the gold test patch touches, every changed test-like
    path (`is_test_path`) and every changed test configuration file (`is_test_config_path`:
    pytest.ini, tox.ini, setup.cfg, pyproject.toml, conftest.py). Files the base has are
    restored, files it lacks are deleted. The rest of the patch stays applied.
    """
    gold = set(patch_paths(normalize_patch(test_patch))) if test_patch and test_patch.strip() else set()
    reverted: list[str] = []
    for path in changed_paths(worktree, tree, also):
        if path not in gold and not is_test_path(path) and not is_test_config_path(path):
            continue
        in_base = git(["cat-file", "-e", f"{tree}:{path}"], cwd=worktree, check=False).returncode == 0
        if in_base:
            git(["checkout", tree, "--", path], cwd=worktree)
        else:
            git(["rm", "-r", "--cached", "--quiet", "--ignore-unmatch", "--", path], cwd=worktree)
            target = worktree / path
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            elif target.exists() or target.is_symlink():
                target.unlink()
        reverted.append(path)
    return reverted
