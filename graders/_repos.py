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

Every git call is an argv list, never a shell, with `--` before paths, prompts off, no
system/global config (a user's `core.autocrlf` would change what a patch sees) and hooks
disabled.
"""

from __future__ import annotations

import contextvars
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from graders._submodules import gitlinks_at, is_inside, parse_gitmodules, submodule_repo, submodules_of
from ledger.errors import SweclError
from ledger.locks import file_lock

__all__ = [
    "GitError",
    "RepoCache",
    "Worktree",
    "commit_date",
    "default_cache_dir",
    "preferred_slot",
    "file_at",
    "git",
    "git_env",
    "repo_slug",
    "untracked_files",
]

_REPO_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
_SHA_RE = re.compile(r"^[0-9a-fA-F]{7,64}$")
MAX_SLOTS = 64
# The worktree slot this thread tries first (see `preferred_slot`).
_PREFERRED_SLOT: contextvars.ContextVar[int | None] = contextvars.ContextVar("swecl_preferred_slot", default=None)


@contextmanager
def preferred_slot(number: int) -> Iterator[None]:
    """Within the block, `RepoCache.worktree` tries slot `number` first: a thread that
    grades task after task keeps its slot, so what an install built there is reused."""
    token = _PREFERRED_SLOT.set(number)
    try:
        yield
    finally:
        _PREFERRED_SLOT.reset(token)


class GitError(SweclError):
    """A git operation failed (missing git, unreachable source, unknown commit)."""


def default_cache_dir() -> Path:
    """`$SWECL_CACHE`, else `$XDG_CACHE_HOME/swecl`, else `~/.cache/swecl`."""
    if os.environ.get("SWECL_CACHE"):
        return Path(os.environ["SWECL_CACHE"]).expanduser()
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]).expanduser() / "swecl"
    return Path.home() / ".cache" / "swecl"


def repo_slug(repo: str) -> str:
    """"owner/name" -> "owner__name" (a safe single path component)."""
    if not _REPO_RE.match(repo) or ".." in repo:
        raise SweclError(f"repo {repo!r} is not of the form OWNER/NAME: fix the task's `repo`")
    return repo.replace("/", "__")


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
        git(["checkout", "--detach", "--force", target], cwd=self.path)
        git(["reset", "--hard", "--quiet", target], cwd=self.path)
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


class RepoCache:
    """Mirrors and worktree slots under one cache dir."""

    def __init__(self, cache_dir: Path | str | None = None, repo_sources: Mapping[str, str] | None = None) -> None:
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.repo_sources = dict(repo_sources or {})
        # submodules named by an absolute URL that no --repo-source overrides
        self._submodule_urls: dict[str, str] = {}
        # (repo, commit) found in its mirror: a mirror only ever gains commits, so a task's
        # base is looked up once per process, not at each of its checkouts
        self._present: set[tuple[str, str]] = set()

    def source_of(self, repo: str) -> str:
        source = self.repo_sources.get(repo)
        if source is None:
            return self._submodule_urls.get(repo, f"https://github.com/{repo}.git")
        # a local path is cloned as a path (absolute, so the mirror's origin stays valid)
        if "://" not in source and not source.startswith("git@"):
            return os.fspath(Path(source).expanduser().resolve())
        return source

    def mirror_path(self, repo: str) -> Path:
        return self.cache_dir / "repos" / f"{repo_slug(repo)}.git"

    def _mirror_lock(self, repo: str) -> Path:
        return self.cache_dir / "repos" / f"{repo_slug(repo)}.lock"

    def ensure_mirror(self, repo: str) -> Path:
        """The bare mirror of `repo`, cloned on first use (atomically: temp dir + rename)."""
        mirror = self.mirror_path(repo)
        if (mirror / "HEAD").is_file():
            return mirror
        with file_lock(self._mirror_lock(repo)):
            if (mirror / "HEAD").is_file():
                return mirror
            mirror.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{repo_slug(repo)}.", suffix=".tmp", dir=mirror.parent))
            try:
                source = self.source_of(repo)
                try:
                    git(["clone", "--mirror", "--quiet", "--", source, os.fspath(tmp / "m.git")])
                except GitError as exc:
                    raise GitError(
                        f"cannot clone {repo} from {source}: {exc}; give a local copy with "
                        f"repo_sources ({repo}=/path/to/clone)"
                    ) from None
                os.replace(tmp / "m.git", mirror)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        return mirror

    def commit_date(self, repo: str, commit: str) -> str:
        """The committer date of `commit` (fetched first if needed), UTC RFC 3339."""
        return commit_date(self.ensure_commit(repo, commit), commit)

    def has_commit(self, repo: str, commit: str) -> bool:
        if (repo, commit) in self._present:
            return True
        mirror = self.mirror_path(repo)
        done = git(["cat-file", "-e", f"{commit}^{{commit}}"], cwd=mirror, check=False)
        if done.returncode == 0:
            self._present.add((repo, commit))
        return done.returncode == 0

    def ensure_commit(self, repo: str, commit: str) -> Path:
        """Make sure the mirror holds `commit`, fetching once if not."""
        if not _SHA_RE.match(commit):
            raise SweclError(f"base_commit {commit!r} of {repo} is not a commit hash: fix the task")
        mirror = self.ensure_mirror(repo)
        if self.has_commit(repo, commit):
            return mirror
        with file_lock(self._mirror_lock(repo)):
            if not self.has_commit(repo, commit):
                # The source given now wins over the one the mirror was cloned from (a
                # user who moved a local copy, or switched from GitHub to a path).
                source = self.source_of(repo)
                current = git(["remote", "get-url", "origin"], cwd=mirror, check=False).stdout.decode().strip()
                if current != source:
                    git(["remote", "set-url", "origin", source], cwd=mirror, check=False)
                git(["fetch", "--quiet", "--prune", "origin"], cwd=mirror, check=False)
            if not self.has_commit(repo, commit) and len(commit) == 40:
                # servers that allow fetching a reachable sha by name (GitHub does)
                git(["fetch", "--quiet", "origin", commit], cwd=mirror, check=False)
        if not self.has_commit(repo, commit):
            raise GitError(f"commit {commit} not found in {repo} (source {self.source_of(repo)}) even after fetching")
        return mirror

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
            first = _PREFERRED_SLOT.get()
            candidates = list(range(MAX_SLOTS))
            if first is not None and 0 <= first < MAX_SLOTS:
                candidates.remove(first)
                candidates.insert(0, first)
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

    # -- what an agent may see ------------------------------------------------------------

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
        if not _SHA_RE.match(commit):
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

    # -- submodules -----------------------------------------------------------------------

    def fill_submodules(self, repo: str, checkout: Path, *, for_agent: bool = False) -> list[str]:
        """Check out every submodule of `checkout` at its recorded commit, from a cached
        mirror of the submodule's repository (see `graders._submodules`), recursively.
        Local changes and untracked files inside a submodule go. Returns their paths.

        For an agent's checkout the submodule's remote and URL are put back as the
        .gitmodules file has them: the agent sees no path of the cache.
        """
        if not (checkout / ".gitmodules").is_file():
            return []
        links = gitlinks_at(git(["ls-tree", "-r", "-z", "HEAD"], cwd=checkout).stdout.decode("utf-8", "surrogateescape"))
        if not links:
            return []
        listing = git(["config", "-z", "--file", ".gitmodules", "--list"], cwd=checkout, check=False)
        modules = submodules_of(links, parse_gitmodules(listing.stdout.decode("utf-8", "surrogateescape")), repo)
        filled: list[str] = []
        for sub in modules:
            if not is_inside(checkout, sub.path):
                raise GitError(f"{repo}: submodule path {sub.path!r} leaves the checkout")
            key, absolute = submodule_repo(sub.url, repo)
            if absolute is not None and key not in self.repo_sources:
                self._submodule_urls.setdefault(key, absolute)
            try:
                mirror = self.ensure_commit(key, sub.commit)
            except GitError as exc:
                raise GitError(f"submodule {sub.path} of {repo}: {exc}; name a local copy with "
                               f"--repo-source {key}=PATH") from None
            # a linked worktree's config is its mirror's, shared by every slot
            with file_lock(self._mirror_lock(repo)):
                git(["config", f"submodule.{sub.name}.url", os.fspath(mirror)], cwd=checkout)
            git(["-c", "protocol.file.allow=always", "submodule", "update", "--init", "--force", "--checkout",
                 "--", sub.path], cwd=checkout)
            inner = checkout / sub.path
            git(["clean", "-ffd", "--quiet"], cwd=inner)
            if for_agent:
                git(["config", f"submodule.{sub.name}.url", sub.url], cwd=checkout)
                git(["remote", "remove", "origin"], cwd=inner, check=False)
            filled.append(sub.path)
            filled += [f"{sub.path}/{p}" for p in self.fill_submodules(key, inner, for_agent=for_agent)]
        return filled

    @contextmanager
    def _take_slot(self, repo: str, candidates: list[int], *, blocking: bool) -> Iterator[int]:
        base = self.cache_dir / "worktrees" / repo_slug(repo)
        for number in candidates:
            with file_lock(base / f"slot-{number}.lock", blocking=blocking) as got:
                if got:
                    yield number
                    return
        raise SweclError(f"all {len(candidates)} worktree slots of {repo} are busy under {base}: wait or prune")
