"""git as swecl runs it, and what swecl reads from a repository with it.

Every git call is an argv list, never a shell, with `--` before paths, prompts off, no
system/global config (a user's `core.autocrlf` would change what a patch sees) and hooks
disabled.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from ledger.errors import GitError

__all__ = [
    "GitError",
    "cleanable_paths",
    "commit_date",
    "file_at",
    "git",
    "git_env",
    "linked_git_dir",
    "untracked_files",
]


def git_env(*, literal_pathspecs: bool = True, **extra: str) -> dict[str, str]:
    """The environment of every git swecl runs (grader, agents' patches, demo repositories):
    nothing of the user's or the system's git setup changes what git reads, writes or applies.

    `literal_pathspecs=False` is for a caller whose pathspecs are magic on purpose (the
    agents' `:(exclude,glob)` of bytecode); `extra` comes last (an index file, an author).
    """
    env = dict(os.environ)
    for key in list(env):
        # a caller's GIT_DIR / GIT_WORK_TREE / GIT_INDEX_FILE / GIT_CONFIG_COUNT would redirect every call
        if key.startswith("GIT_"):
            del env[key]
    env.update(
        GIT_TERMINAL_PROMPT="0",
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        # the system gitattributes (/etc/gitattributes) would change what is checked out,
        # stored and applied; GIT_CONFIG_NOSYSTEM does not cover it
        GIT_ATTR_NOSYSTEM="1",
        # Nor does GIT_CONFIG_GLOBAL cover the user's global attributes and ignore files:
        # core.attributesFile and core.excludesFile default to ~/.config/git/{attributes,ignore}
        # whatever config is read (an `eol=crlf` there changed checkouts, an ignore rule there
        # dropped files from an agent's patch).
        GIT_CONFIG_COUNT="2",
        GIT_CONFIG_KEY_0="core.attributesFile",
        GIT_CONFIG_VALUE_0=os.devnull,
        GIT_CONFIG_KEY_1="core.excludesFile",
        GIT_CONFIG_VALUE_1=os.devnull,
        GIT_ASKPASS="",
        SSH_ASKPASS="",
        LC_ALL="C",
    )
    if literal_pathspecs:
        env["GIT_LITERAL_PATHSPECS"] = "1"  # paths from patches are names, never globs
    env.update(extra)
    return env


_GIT_CONFIG = (
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.autocrlf=false",
    "-c", "core.fsmonitor=false",
    "-c", "advice.detachedHead=false",
    "-c", "gc.auto=0",
)


def git(
    args: Sequence[str],
    *,
    cwd: Path | None = None,
    check: bool = True,
    input: bytes | None = None,
    timeout_s: float | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run `git <args>` (argv, no shell) with swecl's isolated settings."""
    exe = shutil.which("git")
    if exe is None:
        raise GitError("git not found on PATH: install git (the grader needs it to check out repositories)")
    try:
        done = subprocess.run(
            [exe, *_GIT_CONFIG, *args],
            cwd=cwd,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            capture_output=True,
            env=git_env(),
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired as exc:
        raise GitError(f"git {' '.join(args[:2])} timed out after {timeout_s}s") from exc
    if check and done.returncode != 0:
        err = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(f"git {' '.join(args[:3])} failed ({done.returncode}): {err[-1] if err else 'no message'}")
    return done


def cleanable_paths(paths: Sequence[str]) -> list[str]:
    """The paths a patch named that git can be given: a hostile patch may name a path
    with a NUL byte (no file can have it, and argv cannot carry it)."""
    return [p for p in paths if p and "\x00" not in p]


def linked_git_dir(worktree: Path) -> Path | None:
    """The admin dir a linked worktree's `.git` file names (`gitdir: PATH`, as `git worktree
    add` writes it), read without starting git; None when `.git` is no such file. What
    `git rev-parse --absolute-git-dir` answers there, without its process: a grade resets
    its slot more than once, and each git command costs a process start."""
    try:
        text = (worktree / ".git").read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:  # a directory (a clone of its own), or none at all
        return None
    if not text.startswith("gitdir: "):
        return None
    named = Path(text[len("gitdir: "):].rstrip("\r\n"))
    return named if named.is_absolute() else worktree / named


def untracked_files(worktree: Path) -> list[str]:
    """Every untracked file of a checkout, ignored ones included (relative, `/`-separated);
    a nested repository is one entry ending in `/`."""
    out = git(["ls-files", "-z", "--others"], cwd=worktree).stdout.decode("utf-8", "surrogateescape")
    return [p for p in out.split("\0") if p]


def commit_date(git_dir: Path, commit: str) -> str:
    """The committer date of `commit` as UTC RFC 3339 (`2019-07-01T10:34:56Z`)."""
    text = git(["show", "-s", "--format=%cI", commit, "--"], cwd=git_dir).stdout.decode().strip()
    stamp = datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")


def file_at(git_dir: Path, commit: str, rel: str) -> str | None:
    """The text of `rel` at `commit` (None when the commit has no such file); a path that
    climbs out of the tree is no file."""
    norm = os.path.normpath(rel).replace(os.sep, "/")
    if norm.startswith(("../", "/")) or norm in ("..", "."):
        return None
    done = git(["cat-file", "blob", f"{commit}:{norm}"], cwd=git_dir, check=False)
    return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else None
