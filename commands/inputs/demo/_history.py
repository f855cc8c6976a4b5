"""How a demo library's git history is described, built and written.

A library is an initial set of files plus, per task, the commits that land before the
task's base (features, regressions), the gold fix, the test patch and the demo agent's
own attempt, all as exact text edits. From that description everything is computed in
pure Python, without git: the file snapshot at every commit, the patches (unified diffs
by difflib), and the commit SHAs (git's object format hashed here). `write_repo` then
writes the history with `git fast-import` and checks git arrives at the same SHAs, so
the task data can name base commits before any repository exists, identically on every
machine.
"""

from __future__ import annotations

import difflib
import hashlib
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from graders.host import git_env as isolated_git_env
from ledger.errors import SweclError

__all__ = [
    "AUTHOR",
    "Built",
    "BuiltTask",
    "Commit",
    "DemoTask",
    "Edit",
    "GOLD",
    "Library",
    "apply_edits",
    "build_library",
    "git_env",
    "unified_diff",
    "write_repo",
]

AUTHOR = ("swecl demo", "demo@swecl.invalid")
GOLD: Literal["gold"] = "gold"


@dataclass(frozen=True)
class Edit:
    """Replace the one occurrence of `old` in `path` by `new`; `old=None` writes the whole file."""

    path: str
    old: str | None
    new: str


@dataclass(frozen=True)
class Commit:
    message: str
    edits: tuple[Edit, ...]


@dataclass(frozen=True)
class DemoTask:
    """One task of a demo sequence, with its design (see the demo README)."""

    number: int
    title: str
    body: str
    difficulty: int
    version: str
    fix_message: str
    fix: tuple[Edit, ...]
    tests: tuple[Edit, ...]
    attempt: tuple[Edit, ...] | Literal["gold"] | None
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    kind: str
    expect_memory_on: bool
    expect_memory_off: bool
    notes: str
    recurs: int | None = None
    before: tuple[Commit, ...] = ()
    hints: str = ""


@dataclass(frozen=True)
class Library:
    name: str
    initial_message: str
    initial: tuple[Edit, ...]
    tasks: tuple[DemoTask, ...]
    # Unix time of the first commit; later commits are spaced by `_STEP` seconds.
    start: int = 1706000000


@dataclass(frozen=True)
class BuiltTask:
    spec: DemoTask
    instance_id: str
    base_commit: str
    base_time: int
    patch: str
    test_patch: str
    attempt_patch: str
    modified_files: tuple[str, ...]


@dataclass(frozen=True)
class Built:
    library: Library
    # (message, unix time, files) per commit, oldest first, and their SHAs.
    commits: tuple[tuple[str, int, dict[str, str]], ...]
    shas: tuple[str, ...]
    tasks: tuple[BuiltTask, ...] = field(default=())

    @property
    def tip(self) -> str:
        return self.shas[-1]


_STEP = 26 * 3600 + 17 * 60  # a little over a day, so commit times look lived-in


def apply_edits(files: dict[str, str], edits: tuple[Edit, ...], where: str) -> dict[str, str]:
    """A new snapshot with `edits` applied; an edit that does not match is a spec bug."""
    result = dict(files)
    for edit in edits:
        if edit.old is None:
            result[edit.path] = edit.new
            continue
        text = result.get(edit.path)
        if text is None:
            raise AssertionError(f"{where}: {edit.path} does not exist")
        count = text.count(edit.old)
        if count != 1:
            raise AssertionError(f"{where}: {edit.path}: expected 1 match of {edit.old[:60]!r}, found {count}")
        result[edit.path] = text.replace(edit.old, edit.new)
    for path, text in result.items():
        if not text.endswith("\n"):
            raise AssertionError(f"{where}: {path} must end with a newline")
    return result


def unified_diff(before: dict[str, str], after: dict[str, str]) -> str:
    """A git-style patch (`diff --git` headers, 3 lines of context) from `before` to `after`."""
    chunks: list[str] = []
    for path in sorted(set(before) | set(after)):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        header = f"diff --git a/{path} b/{path}\n"
        if old is None:
            header += "new file mode 100644\n"
        elif new is None:
            header += "deleted file mode 100644\n"
        lines = difflib.unified_diff(
            (old or "").splitlines(keepends=True),
            (new or "").splitlines(keepends=True),
            fromfile="/dev/null" if old is None else f"a/{path}",
            tofile="/dev/null" if new is None else f"b/{path}",
            n=3,
        )
        chunks.append(header + "".join(lines))
    return "".join(chunks)


# --- git objects, hashed here exactly as git hashes them ------------------------------------


def _object_sha(kind: str, body: bytes) -> str:
    return hashlib.sha1(f"{kind} {len(body)}\0".encode() + body).hexdigest()


def _tree_sha(files: dict[str, bytes]) -> str:
    """SHA of the tree holding `files` (path -> blob SHA as raw bytes)."""
    entries: dict[str, tuple[str, bytes]] = {}
    subtrees: dict[str, dict[str, bytes]] = {}
    for path, blob in files.items():
        head, sep, rest = path.partition("/")
        if sep:
            subtrees.setdefault(head, {})[rest] = blob
        else:
            entries[head] = ("100644", blob)
    for name, content in subtrees.items():
        entries[name] = ("40000", bytes.fromhex(_tree_sha(content)))
    # git orders entries by name, comparing a tree's name as if it ended with "/".
    ordered = sorted(entries, key=lambda n: n.encode() + (b"/" if entries[n][0] == "40000" else b""))
    body = b"".join(f"{entries[n][0]} {n}\0".encode() + entries[n][1] for n in ordered)
    return _object_sha("tree", body)


def _commit_sha(tree: str, parent: str | None, message: str, when: int) -> str:
    name, email = AUTHOR
    ident = f"{name} <{email}> {when} +0000"
    lines = [f"tree {tree}"]
    if parent:
        lines.append(f"parent {parent}")
    lines += [f"author {ident}", f"committer {ident}", "", message]
    return _object_sha("commit", "\n".join(lines).encode())


def _snapshot_sha(files: dict[str, str]) -> str:
    blobs = {path: bytes.fromhex(_object_sha("blob", text.encode())) for path, text in files.items()}
    return _tree_sha(blobs)


def _message(text: str) -> str:
    return text.rstrip("\n") + "\n"


def build_library(library: Library) -> Built:
    """Every commit, SHA and task patch of `library`, computed without git."""
    commits: list[tuple[str, int, dict[str, str]]] = []
    shas: list[str] = []

    def commit(message: str, files: dict[str, str]) -> str:
        when = library.start + len(commits) * _STEP
        parent = shas[-1] if shas else None
        sha = _commit_sha(_snapshot_sha(files), parent, _message(message), when)
        commits.append((_message(message), when, files))
        shas.append(sha)
        return sha

    files = apply_edits({}, library.initial, f"{library.name} initial")
    commit(library.initial_message, files)
    tasks: list[BuiltTask] = []
    for task in library.tasks:
        where = f"{library.name}#{task.number}"
        for pre in task.before:
            files = apply_edits(files, pre.edits, f"{where} before-commit")
            commit(pre.message, files)
        base, base_sha, base_time = files, shas[-1], commits[-1][1]
        fixed = apply_edits(base, task.fix, f"{where} fix")
        tested = apply_edits(base, task.tests, f"{where} tests")
        if task.attempt is None:
            attempt = ""
        elif task.attempt == GOLD:
            attempt = unified_diff(base, fixed)
        else:
            attempt = unified_diff(base, apply_edits(base, task.attempt, f"{where} attempt"))
        patch = unified_diff(base, fixed)
        tasks.append(
            BuiltTask(
                spec=task,
                instance_id=f"swecl-demo__{library.name}-{task.number}",
                base_commit=base_sha,
                base_time=base_time,
                patch=patch,
                test_patch=unified_diff(base, tested),
                attempt_patch=attempt,
                modified_files=tuple(sorted(p for p in set(base) | set(fixed) if base.get(p) != fixed.get(p))),
            )
        )
        files = apply_edits(fixed, task.tests, f"{where} fix+tests")
        commit(f"{task.fix_message} (#{task.number})", files)
    return Built(library=library, commits=tuple(commits), shas=tuple(shas), tasks=tuple(tasks))


# --- writing the repository -------------------------------------------------------------------


def git_env() -> dict[str, str]:
    """`graders.host.git_env` (no user or system git setup changes what git writes), with the
    demo's author so every build makes the same commits."""
    name, email = AUTHOR
    return isolated_git_env(GIT_AUTHOR_NAME=name, GIT_AUTHOR_EMAIL=email, GIT_COMMITTER_NAME=name,
                            GIT_COMMITTER_EMAIL=email)


def _git(args: list[str], cwd: Path, stdin: bytes | None = None) -> str:
    try:
        done = subprocess.run(
            ["git", "-c", "core.autocrlf=false", "-c", "core.safecrlf=false", *args],
            cwd=cwd,
            input=stdin,
            capture_output=True,
            env=git_env(),
            check=False,
        )
    except FileNotFoundError:
        raise SweclError("git is not on PATH; the demo benchmark builds its repositories with git") from None
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise SweclError(f"git {args[0]} failed in {cwd}: {detail[-1] if detail else 'exit ' + str(done.returncode)}")
    return done.stdout.decode("utf-8", "replace")


def _fast_import_stream(built: Built) -> bytes:
    name, email = AUTHOR
    out: list[bytes] = []
    for index, (message, when, files) in enumerate(built.commits):
        msg = message.encode()
        out.append(f"commit refs/heads/main\nmark :{index + 1}\n".encode())
        out.append(f"author {name} <{email}> {when} +0000\ncommitter {name} <{email}> {when} +0000\n".encode())
        out.append(f"data {len(msg)}\n".encode() + msg + b"\n")
        if index:
            out.append(f"from :{index}\n".encode())
        out.append(b"deleteall\n")
        for path in sorted(files):
            data = files[path].encode()
            out.append(f"M 100644 inline {path}\ndata {len(data)}\n".encode() + data + b"\n")
        out.append(b"\n")
    out.append(b"done\n")
    return b"".join(out)


def write_repo(built: Built, path: Path) -> None:
    """Create a git repository at `path` (must not exist) holding `built`'s history.

    Raises if git computes other SHAs than `build_library` did: the task data would
    then name commits that do not exist.
    """
    path.mkdir(parents=True)
    # No template (no sample hooks); HEAD set by hand works on gits older than `init -b`.
    _git(["init", "-q", "--template=", "."], path)
    _git(["symbolic-ref", "HEAD", "refs/heads/main"], path)
    _git(["config", "core.autocrlf", "false"], path)
    _git(["fast-import", "--quiet", "--done"], path, stdin=_fast_import_stream(built))
    made = _git(["rev-list", "--reverse", "refs/heads/main"], path).split()
    if tuple(made) != built.shas:
        raise SweclError(
            f"demo repository {built.library.name}: git wrote commits {made[-1][:12] if made else 'none'}..., "
            f"expected {built.tip[:12]}; the demo history is not reproducible with this git"
        )
    _git(["reset", "-q", "--hard", "refs/heads/main"], path)

