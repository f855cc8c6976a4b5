"""Bytecode in the worktree before a test run (graders._bytecode): untracked compiled
modules go, the install's products and the repository's own files stay."""

from __future__ import annotations

from pathlib import Path

from graders._bytecode import PYCACHE_VAR, PrivatePycache, remove_stray_bytecode
from graders._run import test_environment
from tests.graders.exec_support import run_git, write


def test_untracked_compiled_modules_are_removed_before_the_run(tmp_path: Path) -> None:
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/shipped.pyc", "tracked by the repository")
    write(tmp_path, ".gitignore", "__pycache__/\n")
    run_git(tmp_path, "init", "-q")
    run_git(tmp_path, "add", "-A")
    run_git(tmp_path, "commit", "-q", "-m", "base")
    for rel in ("pkg/fast.pyc", "pkg/__pycache__/core.cpython-311.pyc", "old.pyo", "build/made_by_install.pyc"):
        write(tmp_path, rel, "planted")
    write(tmp_path, "pkg/new.py", "x = 1\n")

    removed = remove_stray_bytecode(tmp_path, keep={"build/made_by_install.pyc"})
    assert sorted(removed) == ["old.pyo", "pkg/__pycache__/core.cpython-311.pyc", "pkg/fast.pyc"]
    assert (tmp_path / "pkg" / "shipped.pyc").exists() and (tmp_path / "build" / "made_by_install.pyc").exists()
    assert (tmp_path / "pkg" / "new.py").exists()


def test_the_private_cache_is_outside_the_worktree_and_goes_with_the_grade(tmp_path: Path) -> None:
    pycache = PrivatePycache()
    assert pycache.path is not None and pycache.path.is_dir() and not pycache.path.is_relative_to(tmp_path)
    env = test_environment(bin_dir=None, extra={PYCACHE_VAR: str(tmp_path)}, pycache=pycache.path)
    assert env[PYCACHE_VAR] == str(pycache.path)  # the spec's variables do not choose it
    where = pycache.path
    pycache.close()
    assert not where.exists() and pycache.environment() == {}
