"""Repository cache: mirrors, fetch on demand, worktree slots, locks, cleaning."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from graders.host import RepoCache, default_cache_dir, repo_slug
from graders.host._git import GitError, git, linked_git_dir
from ledger.errors import SweclError
from tests.graders.exec_support import GOLD_PATCH, REPO, make_calc_repo, run_git, write


@pytest.fixture
def source(tmp_path: Path) -> tuple[Path, str]:
    return make_calc_repo(tmp_path / "src")


def test_cache_dir_resolution(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SWECL_CACHE", str(tmp_path / "a"))
    assert default_cache_dir() == tmp_path / "a"
    monkeypatch.delenv("SWECL_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert default_cache_dir() == tmp_path / "x" / "swecl"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_cache_dir() == Path.home() / ".cache" / "swecl"


def test_repo_names_are_checked() -> None:
    assert repo_slug("django/django") == "django__django"
    for bad in ("django", "../x/y", "a/b/c", "a/..", "/abs/x"):
        with pytest.raises(SweclError):
            repo_slug(bad)


def test_mirror_is_cloned_once_and_worktrees_are_reused(tmp_path: Path, source: tuple[Path, str]) -> None:
    src, base = source
    cache = RepoCache(tmp_path / "cache", {REPO: str(src)})
    with cache.worktree(REPO, base) as wt:
        assert wt.slot == 0
        assert (wt.path / "calc" / "ops.py").is_file()
        assert git(["rev-parse", "HEAD"], cwd=wt.path).stdout.decode().strip() == base
        write(wt.path, "calc/ops.py", "edited by an agent\n")
        write(wt.path, "untracked.py", "x")
        write(wt.path, "build/lib.so", "compiled in place")  # ignored: kept only when asked
    mirror_inode = (cache.mirror_path(REPO) / "HEAD").stat().st_ino
    with cache.worktree(REPO, base, clean_ignored=False) as wt2:
        assert wt2.path == wt.path
        assert (wt2.path / "calc" / "ops.py").read_text() != "edited by an agent\n"
        assert not (wt2.path / "untracked.py").exists()
        assert (wt2.path / "build" / "lib.so").exists()
    with cache.worktree(REPO, base) as wt3:
        assert not (wt3.path / "build").exists()
    assert (cache.mirror_path(REPO) / "HEAD").stat().st_ino == mirror_inode


def test_every_untracked_and_ignored_file_goes_before_each_use(tmp_path: Path, source: tuple[Path, str]) -> None:
    src, base = source
    cache = RepoCache(tmp_path / "cache", {REPO: str(src)})
    with cache.worktree(REPO, base) as wt:
        write(wt.path, ".tox/py39/lib/site.py", "stale tox env")  # not even in .gitignore
        write(wt.path, "build/__pycache__/evil.cpython-311.pyc", "planted")
        write(wt.path, "calc/__pycache__/ops.cpython-311.pyc", "planted")
        write(wt.path, "scratch.txt", "untracked")
        (wt.path / "empty" / "dirs").mkdir(parents=True)
    with cache.worktree(REPO, base) as wt:
        assert wt.untracked_files() == []
        for gone in (".tox", "build", "calc/__pycache__", "scratch.txt", "empty"):
            assert not (wt.path / gone).exists(), gone


def test_clean_keeps_exactly_the_listed_files(tmp_path: Path, source: tuple[Path, str]) -> None:
    src, base = source
    cache = RepoCache(tmp_path / "cache", {REPO: str(src)})
    with cache.worktree(REPO, base) as wt:
        write(wt.path, "calc.egg-info/PKG-INFO", "Name: calc")
        write(wt.path, "calc/_ext.so", "built")
        write(wt.path, "calc/__pycache__/ops.cpython-311.pyc", "planted")
        write(wt.path, ".tox/log.txt", "stale")
        nested = wt.path / "vendored"
        nested.mkdir()
        run_git(nested, "init", "-q")
        write(nested, "x.py", "x = 1")
        removed = wt.clean(keep={"calc.egg-info/PKG-INFO", "calc/_ext.so"})
        assert sorted(removed) == [".tox/log.txt", "calc/__pycache__/ops.cpython-311.pyc", "vendored/"]
        assert sorted(wt.untracked_files()) == ["calc.egg-info/PKG-INFO", "calc/_ext.so"]
        assert not (wt.path / ".tox").exists() and not (wt.path / "calc" / "__pycache__").exists()
        assert (wt.path / "calc" / "ops.py").is_file()


def test_commit_date_and_files_at_a_commit(tmp_path: Path) -> None:
    from graders.host._git import commit_date, file_at

    src = tmp_path / "src"
    src.mkdir()
    run_git(src, "init", "-q")
    write(src, "reqs/base.txt", "six\n")
    run_git(src, "add", ".")
    env = {**os.environ, "GIT_COMMITTER_DATE": "2019-07-01T23:30:00+02:00", "GIT_AUTHOR_DATE": "2010-01-01T00:00:00Z"}
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "old"], cwd=src, env=env, check=True)
    sha = run_git(src, "rev-parse", "HEAD")
    cache = RepoCache(tmp_path / "cache", {REPO: str(src)})
    mirror = cache.ensure_commit(REPO, sha)
    assert cache.commit_date(REPO, sha) == commit_date(mirror, sha) == "2019-07-01T21:30:00Z"  # committer, in UTC
    assert file_at(mirror, sha, "reqs/base.txt") == "six\n"
    assert file_at(mirror, sha, "reqs/../reqs/base.txt") == "six\n"
    assert file_at(mirror, sha, "missing.txt") is None
    assert file_at(mirror, sha, "../outside.txt") is None


def test_missing_commit_is_fetched(tmp_path: Path, source: tuple[Path, str]) -> None:
    src, base = source
    cache = RepoCache(tmp_path / "cache", {REPO: str(src)})
    cache.ensure_mirror(REPO)
    write(src, "calc/new.py", "NEW = 1\n")
    run_git(src, "add", "-A")
    run_git(src, "commit", "-q", "-m", "later")
    later = run_git(src, "rev-parse", "HEAD")
    assert not cache.has_commit(REPO, later)
    with cache.worktree(REPO, later) as wt:
        assert (wt.path / "calc" / "new.py").is_file()
    with cache.worktree(REPO, base) as wt:  # and back to the older base in the same slot
        assert not (wt.path / "calc" / "new.py").exists()


def test_unknown_commit_and_unreachable_source_are_git_errors(tmp_path: Path, source: tuple[Path, str]) -> None:
    src, _ = source
    cache = RepoCache(tmp_path / "cache", {REPO: str(src), "acme/missing": str(tmp_path / "nope")})
    with pytest.raises(GitError, match="not found"):
        cache.ensure_commit(REPO, "0" * 40)
    with pytest.raises(GitError, match="cannot clone"):
        cache.ensure_mirror("acme/missing")
    with pytest.raises(SweclError, match="not a commit hash"):
        cache.ensure_commit(REPO, "HEAD; rm -rf /")


def test_busy_slot_is_never_shared(tmp_path: Path, source: tuple[Path, str]) -> None:
    src, base = source
    cache = RepoCache(tmp_path / "cache", {REPO: str(src)})
    with cache.worktree(REPO, base) as first:
        with cache.worktree(REPO, base) as second:
            assert first.slot != second.slot
            assert first.path != second.path


def _hold_slot(cache_dir: str, src: str, base: str, ready, release) -> None:
    cache = RepoCache(cache_dir, {REPO: src})
    with cache.worktree(REPO, base) as wt:
        ready.put(wt.slot)
        release.get(timeout=60)


def test_another_process_gets_another_slot(tmp_path: Path, source: tuple[Path, str]) -> None:
    src, base = source
    ctx = multiprocessing.get_context("spawn")
    ready, release = ctx.Queue(), ctx.Queue()
    proc = ctx.Process(target=_hold_slot, args=(str(tmp_path / "cache"), str(src), base, ready, release))
    proc.start()
    try:
        held = ready.get(timeout=60)
        with RepoCache(tmp_path / "cache", {REPO: str(src)}).worktree(REPO, base) as wt:
            assert wt.slot != held
    finally:
        release.put(True)
        proc.join(timeout=60)
    assert proc.exitcode == 0


def test_hooks_and_user_config_do_not_run(tmp_path: Path, source: tuple[Path, str]) -> None:
    src, base = source
    cache = RepoCache(tmp_path / "cache", {REPO: str(src)})
    mirror = cache.ensure_mirror(REPO)
    marker = tmp_path / "hook-ran"
    hook = mirror / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    with cache.worktree(REPO, base):
        pass
    assert not marker.exists()


def test_local_source_is_a_mirror_not_a_work_tree(tmp_path: Path, source: tuple[Path, str]) -> None:
    src, base = source
    cache = RepoCache(tmp_path / "cache", {REPO: os.path.relpath(src)})
    mirror = cache.ensure_mirror(REPO)
    assert (mirror / "HEAD").is_file() and not (mirror / "calc").exists()
    assert git(["config", "--get", "remote.origin.mirror"], cwd=mirror).stdout.decode().strip() == "true"


def test_a_stale_index_lock_from_a_killed_grader_is_cleared(tmp_path: Path, source: tuple[Path, str]) -> None:
    src, base = source
    cache = RepoCache(tmp_path / "cache", {REPO: str(src)})
    with cache.worktree(REPO, base) as wt:
        git_dir = Path(git(["rev-parse", "--absolute-git-dir"], cwd=wt.path).stdout.decode().strip())
    (git_dir / "index.lock").write_text("")
    with cache.worktree(REPO, base) as wt:
        assert wt.slot == 0 and not (git_dir / "index.lock").exists()


def test_a_slot_names_its_git_dir_as_git_does_and_a_copied_cache_makes_slots_of_its_own(
    tmp_path: Path, source: tuple[Path, str],
) -> None:
    src, base = source
    first = RepoCache(tmp_path / "a", {REPO: str(src)})
    with first.worktree(REPO, base) as wt:
        said = git(["rev-parse", "--absolute-git-dir"], cwd=wt.path).stdout.decode().strip()
        found = linked_git_dir(wt.path)
        assert found is not None and found.resolve() == Path(said).resolve()
    assert linked_git_dir(src) is None  # a clone of its own: its `.git` is a directory
    # A copy's slots name the first cache's mirror: the copy makes its own from its mirror.
    shutil.copytree(tmp_path / "a", tmp_path / "b", symlinks=True)
    copy = RepoCache(tmp_path / "b", {REPO: str(src)})
    with copy.worktree(REPO, base) as wt:
        admin = linked_git_dir(wt.path)
        assert admin is not None and admin.parent.parent.resolve() == copy.mirror_path(REPO).resolve()
        write(wt.path, "calc/ops.py", "edited in the copy\n")
        git(["add", "-A"], cwd=wt.path)
    with first.worktree(REPO, base) as wt:  # the first cache's slot and index are its own still
        admin = linked_git_dir(wt.path)
        assert admin is not None and admin.parent.parent.resolve() == first.mirror_path(REPO).resolve()
        assert (wt.path / "calc" / "ops.py").read_text() != "edited in the copy\n"
        assert git(["status", "--porcelain"], cwd=wt.path).stdout == b""


# -- what an agent may see -------------------------------------------------------------------


def _linear_history(src: Path, n: int) -> list[str]:
    run_git(src, "init", "-q")
    shas = []
    for i in range(n):
        write(src, "f.txt", f"v{i}\n")
        run_git(src, "add", ".")
        run_git(src, "commit", "-qm", f"c{i} MARK{i}")
        shas.append(run_git(src, "rev-parse", "HEAD").strip())
    return shas


def test_an_agent_checkout_reaches_only_the_history_of_its_commit(tmp_path: Path) -> None:
    """`git log --all --reflog` and every object in the store: commits up to the base
    only, whatever views of later or unrelated commits exist (views are made in an
    order that is not the history's: a retest pass goes back)."""
    src = tmp_path / "src"
    src.mkdir()
    shas = _linear_history(src, 8)
    cache = RepoCache(tmp_path / "cache", {REPO: str(src)})
    for k in (2, 5, 3, 7, 1, 6, 4, 0):
        with cache.agent_checkout(REPO, shas[k]) as path:
            seen = git(["log", "--all", "--reflog", "--format=%s"], cwd=path).stdout
            seen += git(["cat-file", "--batch-all-objects", "--batch"], cwd=path).stdout
            assert [i for i in range(8) if f"MARK{i}".encode() in seen] == list(range(k + 1)), k
            assert (path / "f.txt").read_text() == f"v{k}\n"
            assert git(["status", "--porcelain"], cwd=path).stdout == b""
            assert git(["remote"], cwd=path).stdout == b""
            # the agent's own commits stay in its checkout, never in the shared view
            write(path, "f.txt", "agent\n")
            git(["-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qam", "AGENT"], cwd=path)
        assert not path.exists()
    for k in (3, 7):
        with cache.agent_checkout(REPO, shas[k]) as path:
            assert b"AGENT" not in git(["cat-file", "--batch-all-objects", "--batch"], cwd=path).stdout
    # A view borrows from the nearest ancestor view there was when it was made, and from
    # all that one borrows, listed flat (git follows alternates only a few levels deep):
    # 7 was made after 2, 5 and 3; 5 after 2.
    borrowed = (cache.view_path(REPO, shas[7]) / "objects" / "info" / "alternates").read_text().split()
    assert borrowed == [f"../../{cache.view_path(REPO, shas[k]).name}/objects" for k in (5, 2)]
    # relative paths: the cache folder copied elsewhere, and the first one gone, still serves
    # every view, and its slots are its own mirror's worktrees, not the first cache's
    with cache.worktree(REPO, shas[7]) as wt:
        first_slot = wt.path
    shutil.copytree(tmp_path / "cache", tmp_path / "copy", symlinks=True)
    copy = RepoCache(tmp_path / "copy", {REPO: str(src)})
    with copy.worktree(REPO, shas[6]) as wt:
        admin = git(["rev-parse", "--absolute-git-dir"], cwd=wt.path).stdout.decode().strip()
        assert admin.startswith(str(tmp_path / "copy")) and (wt.path / "f.txt").read_text() == "v6\n"
    with cache.worktree(REPO, shas[7]) as wt:  # the first cache's slot is left as it was
        assert wt.path == first_slot and (wt.path / "f.txt").read_text() == "v7\n"
    shutil.rmtree(tmp_path / "cache")
    with copy.agent_checkout(REPO, shas[7]) as path:
        assert (path / "f.txt").read_text() == "v7\n"
        assert git(["fsck", "--connectivity-only"], cwd=path, check=False).returncode == 0


def test_a_checkout_left_by_a_killed_process_is_removed_by_the_next(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    shas = _linear_history(src, 2)
    cache = RepoCache(tmp_path / "cache", {REPO: str(src)})
    spaces = tmp_path / "cache" / "workspaces"
    stale = spaces / "swecl-agent-dead"
    (stale / "r").mkdir(parents=True)
    lock = spaces / "swecl-agent-dead.lock"
    lock.write_text("")
    os.utime(lock, (0, 0))  # an old lock nobody holds
    with cache.agent_checkout(REPO, shas[1]):
        assert not stale.exists() and not lock.exists()
    assert list(spaces.iterdir()) == []


def test_a_new_source_for_a_cached_repo_is_fetched_from(tmp_path: Path) -> None:
    """The mirror was cloned from one copy; a later run names another that has a newer
    commit: the commit is fetched from the source given now."""
    first = tmp_path / "first"
    first.mkdir()
    shas = _linear_history(first, 2)
    cache = RepoCache(tmp_path / "cache", {REPO: str(first)})
    with cache.worktree(REPO, shas[1]):
        pass
    moved = tmp_path / "moved"
    run_git(tmp_path, "clone", "-q", str(first), str(moved))
    write(moved, "f.txt", "new\n")
    run_git(moved, "commit", "-qam", "newer")
    newer = run_git(moved, "rev-parse", "HEAD")
    shutil.rmtree(first)  # the old source is gone
    cache = RepoCache(tmp_path / "cache", {REPO: str(moved)})
    with cache.worktree(REPO, newer) as wt:
        assert (wt.path / "f.txt").read_text() == "new\n"


def test_a_replay_checkout_holds_only_the_patched_files_and_gives_the_same_patch(
    tmp_path: Path, source: tuple[Path, str]
) -> None:
    """An agent that replays a known patch gets a sparse checkout: the files the patch
    names and every .gitignore, nothing else; its diff is the full checkout's, a file the
    .gitignore ignores stays out of both, and a patch that needs more of the tree makes the
    checkout whole and applies."""
    from agents import _diff

    src, base = source
    cache = RepoCache(tmp_path / "cache", {REPO: str(src)})
    new_and_ignored = GOLD_PATCH + (
        "diff --git a/build/out.txt b/build/out.txt\nnew file mode 100644\n--- /dev/null\n+++ b/build/out.txt\n@@ -0,0 +1 @@\n+x\n"
    )
    patches = {}
    for only in (None, ["calc/ops.py", "build/out.txt"]):
        with cache.agent_checkout(REPO, base, only=only) as path:
            present = sorted(str(p.relative_to(path)) for p in path.rglob("*") if ".git" not in p.parts and p.is_file())
            assert _diff.apply_patch(path, new_and_ignored) == "git apply"
            patches[only is None] = _diff.worktree_patch(path, base)
            if only is not None:
                assert present == [".gitignore", "calc/ops.py"]
                assert git(["status", "--porcelain"], cwd=path).stdout.decode().split() == ["M", "calc/ops.py"]
    assert patches[True] == patches[False] and "build/out.txt" not in patches[True] and "calc/ops.py" in patches[True]
    # the patch names a file the sparse checkout left out: the whole tree comes back and it applies
    with cache.agent_checkout(REPO, base, only=["tests/test_ops.py"]) as path:
        assert not (path / "calc" / "ops.py").exists()
        assert _diff.apply_patch(path, GOLD_PATCH) == "git apply"
        assert (path / "conftest.py").is_file() and _diff.worktree_patch(path, base) == patches[True]
    # it reads no history: no view of the commit is made, and the checkout names no ref
    fresh = RepoCache(tmp_path / "fresh", {REPO: str(src)})
    with fresh.agent_checkout(REPO, base, only=["calc/ops.py"]) as path:
        assert (path / "calc" / "ops.py").is_file()
        assert git(["for-each-ref"], cwd=path).stdout == b"" and git(["remote"], cwd=path).stdout == b""
    assert not fresh.view_path(REPO, base).exists() and not (tmp_path / "fresh" / "views").exists()
