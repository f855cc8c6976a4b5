"""The bare mirrors of a repository cache: one per repository (`git clone --mirror`), fetched
when a commit is missing, and the submodules of a checkout filled from mirrors of their own.

    repos/OWNER__NAME.git            bare mirror, fetched on demand
    repos/OWNER__NAME.lock           serialises clone/fetch/worktree-add on that mirror

`graders.host._repos.RepoCache` builds the worktree slots and the agents' checkouts on these.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from ._git import GitError, commit_date, git
from ._submodules import gitlinks_at, is_inside, parse_gitmodules, submodule_repo, submodules_of
from ledger.errors import SweclError
from ledger.locks import file_lock

__all__ = ["SHA_RE", "Mirrors", "default_cache_dir", "repo_slug"]

_REPO_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
SHA_RE = re.compile(r"^[0-9a-fA-F]{7,64}$")


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


class Mirrors:
    """The mirrors under one cache dir, and where each repository comes from."""

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
        if not SHA_RE.match(commit):
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

    def fill_submodules(self, repo: str, checkout: Path, *, for_agent: bool = False) -> list[str]:
        """Check out every submodule of `checkout` at its recorded commit, from a cached
        mirror of the submodule's repository (see `graders.host._submodules`), recursively.
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
