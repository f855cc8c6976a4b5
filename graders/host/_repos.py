"""Repository cache: one bare mirror per repo, reusable worktrees ("slots") per repo.

Layout under the cache dir:

    repos/OWNER__NAME.git            bare mirror (`git clone --mirror`), fetched on demand
    repos/OWNER__NAME.lock           serialises clone/fetch/worktree-add on that mirror
    worktrees/OWNER__NAME/slot-N     a detached worktree, reused task after task
    worktrees/OWNER__NAME/slot-N.lock  held (flock) by the one process using the slot
    views/OWNER__NAME/SHA.git        what an agent may see of the repo at SHA: its history only
    workspaces/swecl-agent-*/NAME    an agent's checkout, one per attempt, removed after it

Cleaning before each use: every untracked *and* ignored file goes (`Worktree.clean`),
so nothing a previous task or its tests left (a stale `.tox/`, a planted `__pycache__/*.pyc`
in an ignored dir) reaches the next one. The only exception is what the repo's own
install produced (`*.egg-info`, extensions compiled in place): the environment records
those files with their size and SHA-256 after installing, and the grader keeps exactly
them (`clean(keep=...)`), or removes everything and re-installs when one of them changed
(see `graders._install.prepare_worktree`). At the end of a task `Worktree.reset` puts tracked
files back and removes untracked files and the ignored files the patches named.

The mirrors live in `graders.host._mirrors`, an agent's views and checkouts in
`graders.host._agent_checkouts`, the worktree slots here; every git call goes through
`graders.host._git`.
"""

from __future__ import annotations

import contextvars
import os
import shutil
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ._agent_checkouts import AgentCheckouts
from ._git import cleanable_paths, git, linked_git_dir, untracked_files
from ._mirrors import repo_slug
from ledger.errors import SweclError
from ledger.locks import file_lock

__all__ = ["MAX_SLOTS", "RepoCache", "Worktree", "avoided_slots", "preferred_slot"]

MAX_SLOTS = 64
# The worktree slot this thread tries first (see `preferred_slot`).
_PREFERRED_SLOT: contextvars.ContextVar[int | None] = contextvars.ContextVar("swecl_preferred_slot", default=None)
# Slots this thread tries last (see `avoided_slots`).
_AVOIDED_SLOTS: contextvars.ContextVar[frozenset[int]] = contextvars.ContextVar("swecl_avoided_slots",
                                                                                 default=frozenset())


@contextmanager
def avoided_slots(numbers: Collection[int]) -> Iterator[None]:
    """Within the block, `RepoCache.worktree` takes the slots `numbers` only when every other
    is busy: the slots other environments installed the repository into. Taking one
    removes the products of that install, which then has to be put back at its
    environment's next grade; a slot of its own costs a checkout once."""
    token = _AVOIDED_SLOTS.set(frozenset(numbers))
    try:
        yield
    finally:
        _AVOIDED_SLOTS.reset(token)


@contextmanager
def preferred_slot(number: int) -> Iterator[None]:
    """Within the block, `RepoCache.worktree` tries slot `number` first: a thread that
    grades task after task keeps its slot, so what an install built there is reused."""
    token = _PREFERRED_SLOT.set(number)
    try:
        yield
    finally:
        _PREFERRED_SLOT.reset(token)


@dataclass(frozen=True, slots=True)
class Worktree:
    """A checked-out slot; valid while its `RepoCache.worktree` context is open."""

    repo: str
    path: Path
    slot: int
    commit: str

    def reset(self, commit: str | None = None, *, extra_paths: Sequence[str] = ()) -> None:
        """Back to `commit` (default: this task's base): tracked files restored, untracked
        files removed, and ignored files removed only under `extra_paths` (see module doc)."""
        target = commit or self.commit
        # A grader killed mid-git leaves lock files behind (index.lock, HEAD.lock of this
        # worktree); the slot lock says nobody else is here.
        git_dir = (linked_git_dir(self.path)
                   or git(["rev-parse", "--absolute-git-dir"], cwd=self.path).stdout.decode().strip())
        for name in ("index.lock", "HEAD.lock", "ORIG_HEAD.lock"):
            Path(git_dir, name).unlink(missing_ok=True)
        # `checkout --force` leaves index and tracked files as `reset --hard` would (staged
        # new files removed too): a reset after it only refreshed the index again
        git(["checkout", "--detach", "--force", target], cwd=self.path)
        git(["clean", "-ffd", "--quiet"], cwd=self.path)
        paths = cleanable_paths(extra_paths)
        if paths:
            git(["clean", "-ffdx", "--quiet", "--", *paths], cwd=self.path)

    def untracked_files(self) -> list[str]:
        return untracked_files(self.path)

    def clean(self, keep: Collection[str] | None = None) -> list[str]:
        """Remove every untracked and ignored file except the files in `keep`; None keeps
        nothing (`git clean -ffdx`). Returns what was removed (with keep given)."""
        if keep is None:
            git(["clean", "-ffdx", "--quiet"], cwd=self.path)
            return []
        kept = set(keep)
        removed: list[str] = []
        for rel in self.untracked_files():
            if rel in kept:
                continue
            target = self.path / rel
            if rel.endswith("/") and not target.is_symlink():
                shutil.rmtree(target, ignore_errors=True)
            else:
                target.unlink(missing_ok=True)
            removed.append(rel)
        # Empty directories left behind, or left before (`.tox/` emptied by a test): git
        # tracks no empty directory, so none of them is part of the checkout.
        dirs_seen: list[str] = []
        for root, dirs, _ in os.walk(self.path):
            dirs[:] = [d for d in dirs if d != ".git"]
            dirs_seen += [os.path.join(root, d) for d in dirs]
        for directory in reversed(dirs_seen):
            try:
                os.rmdir(directory)  # fails unless empty: exactly the ones to remove
            except OSError:
                pass
        return removed


class RepoCache(AgentCheckouts):
    """Mirrors, worktree slots and agents' checkouts under one cache dir: one object, as the
    grader and the agents share the mirrors and their locks (each part in its own module)."""

    def slot_path(self, repo: str, slot: int) -> Path:
        return self.cache_dir / "worktrees" / repo_slug(repo) / f"slot-{slot}"

    @contextmanager
    def worktree(
        self, repo: str, commit: str, *, slot: int | None = None, clean_ignored: bool = True
    ) -> Iterator[Worktree]:
        """A worktree of `repo` at `commit`, clean, held exclusively until the block ends.

        slot=None takes the first free slot (never shared between processes: a flock per
        slot); a given slot waits until it is free. clean_ignored=False leaves ignored
        files for the caller to clean (`Worktree.clean(keep=...)`): the grader keeps the
        products of the repo's install, which only the environment knows.
        """
        mirror = self.ensure_commit(repo, commit)
        if slot is not None:
            candidates = [slot]
        else:
            first, avoided = _PREFERRED_SLOT.get(), _AVOIDED_SLOTS.get()
            # the slots not avoided, then the avoided ones; in each, the preferred one first
            candidates = sorted(range(MAX_SLOTS), key=lambda n: (n in avoided, n != first))
        with self._take_slot(repo, candidates, blocking=slot is not None) as taken:
            path = self.slot_path(repo, taken)
            with file_lock(self._mirror_lock(repo)):
                if not self._slot_of_mirror(path, mirror):
                    shutil.rmtree(path, ignore_errors=True)
                    git(["worktree", "prune"], cwd=mirror)
                    git(["worktree", "add", "--detach", "--force", "--", os.fspath(path), commit], cwd=mirror)
            tree = Worktree(repo=repo, path=path, slot=taken, commit=commit)
            tree.reset()
            self.fill_submodules(repo, path)
            if clean_ignored:
                tree.clean()
            yield tree

    @staticmethod
    def _slot_of_mirror(path: Path, mirror: Path) -> bool:
        """Is `path` a worktree of this cache's `mirror`? A slot of a cache folder copied from
        elsewhere still names the first cache's mirror (its `.git` file is an absolute path):
        used as it is, two caches would share one index and HEAD."""
        admin = linked_git_dir(path)
        if admin is None or not (admin / "HEAD").is_file():  # no worktree, or one whose admin dir is gone
            return False
        return admin.parent.parent.resolve() == mirror.resolve() and admin.parent.name == "worktrees"

    @contextmanager
    def _take_slot(self, repo: str, candidates: list[int], *, blocking: bool) -> Iterator[int]:
        base = self.cache_dir / "worktrees" / repo_slug(repo)
        for number in candidates:
            with file_lock(base / f"slot-{number}.lock", blocking=blocking) as got:
                if got:
                    yield number
                    return
        raise SweclError(f"all {len(candidates)} worktree slots of {repo} are busy under {base}: wait or prune")
