"""What an agent may see of a repository: a view holding a commit and its history only,
and a fresh checkout of it per attempt.

    views/OWNER__NAME/SHA.git        what an agent may see of the repo at SHA: its history only
    workspaces/swecl-agent-*/NAME    an agent's checkout, one per attempt, removed after it
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from ._git import git
from ._mirrors import SHA_RE, Mirrors, repo_slug
from ledger.errors import SweclError
from ledger.locks import file_lock

__all__ = ["AgentCheckouts", "sparse_checkout"]


def _has_submodules(checkout: Path, rev: str) -> bool:
    return git(["cat-file", "-e", f"{rev}:.gitmodules"], cwd=checkout, check=False).returncode == 0


def _sparse_pattern(path: str) -> str:
    """One repository path as an anchored, literal sparse-checkout (gitignore) pattern."""
    escaped = re.sub(r"([\\*?\[\]!#])", r"\\\1", path)
    if escaped.endswith(" "):
        escaped = escaped[:-1] + "\\ "
    return "/" + escaped


def _symlinked_parents(checkout: Path, rev: str, paths: Sequence[str]) -> list[str]:
    """The parent directories of `paths` that are symbolic links at `rev`. A patch through
    one (`link/file` where `link` points elsewhere) must meet the link as a full checkout
    has it: left out, the patch would create a real directory there and apply."""
    parents = sorted({"/".join(parts[:i]) for p in paths for parts in [p.split("/")] for i in range(1, len(parts))})
    if not parents:
        return []
    listed = git(["ls-tree", "-z", rev, "--", *parents], cwd=checkout, check=False).stdout
    return [entry.split(b"\t", 1)[1].decode("utf-8", "surrogateescape")
            for entry in listed.split(b"\0") if entry.startswith(b"120000 ")]


def sparse_checkout(checkout: Path, paths: Sequence[str], rev: str | None = None) -> None:
    """Before the first checkout of a clone: only `paths` (and, given the `rev` to be checked
    out, the symbolic links among their parents) and the ignore and attribute files will be
    written (`git sparse-checkout disable` brings back the rest)."""
    wanted = [p for p in paths if p and "\n" not in p]
    if rev is not None:
        wanted += _symlinked_parents(checkout, rev, wanted)
    patterns = [".gitignore", ".gitattributes", *(_sparse_pattern(p) for p in wanted)]
    git(["sparse-checkout", "set", "--no-cone", "--stdin"], cwd=checkout,
        input="".join(f"{p}\n" for p in patterns).encode("utf-8", "surrogateescape"))


def _remove_abandoned_workspaces(base: Path) -> None:
    """Agent checkouts whose process died (their lock is free) are removed. A lock file
    younger than a minute is left alone: its owner may not have locked it yet."""
    now = time.time()
    for lock in base.glob("swecl-agent-*.lock"):
        try:
            if now - lock.stat().st_mtime < 60:
                continue
        except OSError:
            continue
        with file_lock(lock, blocking=False) as free:
            if free:
                shutil.rmtree(lock.with_suffix(""), ignore_errors=True)
                lock.unlink(missing_ok=True)


class AgentCheckouts(Mirrors):
    """The mirrors, and the views and checkouts made from them for agents."""

    def view_path(self, repo: str, commit: str) -> Path:
        return self.cache_dir / "views" / repo_slug(repo) / f"{commit}.git"

    def _commit_in_mirror(self, repo: str, commit: str) -> tuple[Path, str]:
        """The mirror, made to hold `commit`, and the commit's full hash."""
        mirror = self.ensure_commit(repo, commit)
        return mirror, git(["rev-parse", "--verify", f"{commit}^{{commit}}"], cwd=mirror).stdout.decode().strip()

    def ensure_view(self, repo: str, commit: str) -> Path:
        """A bare repository holding `commit` and its ancestors, and nothing else.

        The mirror holds every later commit too (the task's own fix and tests among them);
        a worktree of it would let an agent read them (`git log --all`, `git cat-file
        --batch-all-objects`). A view is filled by fetching `commit` from the mirror, so
        exactly its history arrives. It borrows (alternates) the objects of the newest
        cached view of an ancestor commit, so along a sequence each view costs only the
        commits since the previous task, and a view is made once per base commit and
        kept for every pass, stage and run.
        """
        if not SHA_RE.match(commit):
            raise SweclError(f"base_commit {commit!r} of {repo} is not a commit hash: fix the task")
        mirror, full = self._commit_in_mirror(repo, commit)
        view = self.view_path(repo, full)
        if (view / "refs" / "heads" / "base").is_file():
            return view
        with file_lock(self._mirror_lock(repo)):
            if (view / "refs" / "heads" / "base").is_file():
                return view
            view.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{full[:12]}.", suffix=".tmp", dir=view.parent))
            try:
                git(["init", "--bare", "--quiet", os.fspath(tmp)])
                borrowed = self._ancestor_view(repo, mirror, full)
                if borrowed is not None:
                    # The ancestor's objects and every store it borrows from, listed flat:
                    # git follows alternates only a few levels deep.
                    # Relative to the objects directory (views of a repository are siblings, so
                    # the same text holds in each): a cache folder copied elsewhere keeps them.
                    chain = [os.path.join("..", "..", borrowed.name, "objects")]
                    inherited = borrowed / "objects" / "info" / "alternates"
                    if inherited.is_file():
                        chain += [line for line in inherited.read_text().splitlines() if line.strip()]
                    Path(tmp, "objects", "info", "alternates").write_text("\n".join(chain) + "\n")
                git(
                    ["-c", "uploadpack.allowAnySHA1InWant=true", "fetch", "--quiet", "--no-tags", "--",
                     os.fspath(mirror), f"{full}:refs/heads/base"],
                    cwd=tmp,
                )
                Path(tmp, "FETCH_HEAD").unlink(missing_ok=True)
                os.replace(tmp, view)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        return view

    def _ancestor_view(self, repo: str, mirror: Path, commit: str) -> Path | None:
        """The cached view of the nearest ancestor of `commit`, if any."""
        base = self.cache_dir / "views" / repo_slug(repo)
        if not base.is_dir():
            return None
        best: tuple[int, Path] | None = None
        for view in base.glob("*.git"):
            other = view.name[:-4]
            if other == commit or not (view / "refs" / "heads" / "base").is_file():
                continue
            if git(["merge-base", "--is-ancestor", other, commit], cwd=mirror, check=False).returncode != 0:
                continue
            count = git(["rev-list", "--count", f"{other}..{commit}"], cwd=mirror).stdout.decode().strip()
            distance = int(count or 0)
            if best is None or distance < best[0]:
                best = (distance, view)
        return None if best is None else best[1]

    @contextmanager
    def agent_checkout(self, repo: str, commit: str, parent: Path | str | None = None, *,
                       only: Sequence[str] | None = None) -> Iterator[Path]:
        """A fresh checkout of `commit` for an agent: its history ends at `commit`.

        A shared clone of the commit's view (objects borrowed, not copied; the agent's
        own commits stay in the checkout), with no remote, no tags and no reflog that
        names a later commit. Removed when the block ends.

        `only`: the paths an agent that replays a known patch touches. The checkout is then
        sparse: those files and every `.gitignore` and `.gitattributes` (what decides what
        `git add` takes), not the thousands of other files of a large repository; git keeps
        the rest in the index (skip-worktree), so the worktree's diff is the same. A repository
        with submodules is checked out whole. Such an agent reads no history, so its checkout
        borrows the mirror's objects directly and no view is made: a first view of a large
        repository copies its whole history, and each later one the commits since (sympy: 26 s,
        then 1 to 7 s a task).
        """
        if only is not None:
            source, rev = self._commit_in_mirror(repo, commit)
        else:
            source, rev = self.ensure_view(repo, commit), "refs/remotes/origin/base"
        base = Path(parent) if parent is not None else self.cache_dir / "workspaces"
        base.mkdir(parents=True, exist_ok=True)
        _remove_abandoned_workspaces(base)
        holder = Path(tempfile.mkdtemp(prefix="swecl-agent-", dir=base))
        path = holder / repo_slug(repo).split("__", 1)[1]
        # Held while the checkout is in use: a process killed mid-task leaves its
        # checkout behind, and the next checkout removes what no lock holds.
        with file_lock(holder.with_name(holder.name + ".lock")):
            try:
                if only is None:
                    git(["clone", "--shared", "--no-checkout", "--quiet", "--", os.fspath(source), os.fspath(path)])
                else:  # no refs, no remote: the mirror's objects only, the commit named by its hash
                    git(["init", "--quiet", "--", os.fspath(path)])
                    (path / ".git" / "objects" / "info" / "alternates").write_text(
                        os.path.abspath(source / "objects") + "\n", encoding="utf-8")
                    if not _has_submodules(path, rev):
                        sparse_checkout(path, only, rev)
                git(["checkout", "--detach", "--quiet", rev], cwd=path)
                if only is None:
                    git(["remote", "remove", "origin"], cwd=path)
                for ref in git(["for-each-ref", "--format=%(refname)"], cwd=path).stdout.decode().split():
                    git(["update-ref", "-d", ref], cwd=path)
                git(["reflog", "expire", "--expire=now", "--all"], cwd=path, check=False)
                self.fill_submodules(repo, path, for_agent=True)
                yield path
            finally:
                shutil.rmtree(holder, ignore_errors=True)
                holder.with_name(holder.name + ".lock").unlink(missing_ok=True)
