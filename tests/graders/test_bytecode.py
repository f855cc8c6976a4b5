"""Bytecode in the worktree before a test run (graders._bytecode): untracked compiled
modules go, the install's products and the repository's own files stay."""

from __future__ import annotations

import json.decoder
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from graders._bytecode import PYCACHE_VAR, PrivatePycache, env_pycache, remove_stray_bytecode
from graders._install import install_environment
from graders._uv import _uv_env as uv_environment
from graders._env_info import EnvInfo
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


def _pycache_file(prefix: Path, source: Path) -> list[Path]:
    """The compiled files of `source` in a PYTHONPYCACHEPREFIX tree (it mirrors the source's directory)."""
    mirrored = prefix / str(source.parent).lstrip("/")
    return sorted(mirrored.glob(f"{source.stem}.*.pyc")) if mirrored.is_dir() else []


def test_the_environments_cache_is_warmed_once_and_holds_no_worktree_module(tmp_path: Path) -> None:
    """A real venv whose start-up imports a module of its site-packages and one of a
    checkout outside it (as an editable install of the repository would): the warm cache
    keeps the first compiled, never the checkout's (a stale compile of it could outlive a
    patch that keeps the file's size and second)."""
    env_dir = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir / "venv")], check=True)
    site = Path(subprocess.run([str(env_dir / "venv" / "bin" / "python"), "-c",
                                "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    checkout = tmp_path / "worktree"
    write(checkout, "repo_mod.py", "VALUE = 1\n")
    write(site, "env_mod.py", "VALUE = 2\n")
    write(site, "start.pth", f"{checkout}\nimport env_mod, repo_mod, json.decoder\n")
    version = ".".join(str(v) for v in sys.version_info[:2])
    env = EnvInfo(key="o__n/1/x", repo="o/n", version="1", spec_hash="x", python_version=version, path=env_dir,
                  complete=True)

    # a module the install compiled but start-up never imports, whose compile warns
    write(site, "lazy_mod.py", "def same(x):\n    return x is 1\n")
    subprocess.run([str(env_dir / "venv" / "bin" / "python"), "-W", "ignore", "-m", "compileall", "-q", str(site)],
                   check=True, env=install_environment(env))  # as an install step runs: into site-packages

    made = env_pycache(env)
    assert made == env_dir / "pycache" and made.is_dir()
    assert _pycache_file(made, site / "env_mod.py")  # the environment's own module is there
    assert _pycache_file(made, site / "lazy_mod.py")  # the install's bytecode too
    # so a test's lazy import of it warns no more than with the environment's own
    # bytecode (a SyntaxWarning made an error: exit 1 if it were compiled again); in a
    # copy, as the sandbox keeps the cache read-only and these runs import the checkout
    copy = tmp_path / "copy"
    shutil.copytree(made, copy)
    def import_lazy(prefix: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(env_dir / "venv" / "bin" / "python"), "-W", "error::SyntaxWarning", "-c",
                               "import lazy_mod"], env={"PYTHONPYCACHEPREFIX": str(prefix), "PATH": "/usr/bin:/bin"},
                              capture_output=True, text=True)

    lazy = import_lazy(copy)
    assert lazy.returncode == 0, lazy.stderr
    missing = import_lazy(tmp_path / "empty")
    # the control: compiled, it warns (`"is" with a literal`; 3.13: `"is" with 'int' literal`)
    assert missing.returncode != 0 and '"is" with ' in missing.stderr
    assert _pycache_file(made, Path(json.decoder.__file__))  # and the standard library's
    assert not _pycache_file(made, checkout / "repo_mod.py")  # never the checkout's
    assert not any(str(checkout).lstrip("/") in str(p) for p in made.rglob("*"))
    (made / "marker").write_text("")
    assert env_pycache(env) == made and (made / "marker").exists()  # made once
    (made / ".swecl-pycache-3").unlink()  # as an earlier swecl left it (without the install's bytecode, say)
    assert env_pycache(env) == made and not (made / "marker").exists() and _pycache_file(made, site / "lazy_mod.py")
    # the environment copied to another path (a cache folder shared): its cache, made for
    # the paths of the first, is made again for the copy's own
    moved_dir = tmp_path / "elsewhere" / "env"
    shutil.copytree(env_dir, moved_dir, symlinks=True)
    moved = EnvInfo(key=env.key, repo="o/n", version="1", spec_hash="x", python_version=version, path=moved_dir,
                    complete=True)
    moved_site = moved_dir / site.relative_to(env_dir)
    assert not _pycache_file(moved_dir / "pycache", moved_site / "lazy_mod.py")
    assert env_pycache(moved) == moved_dir / "pycache" and _pycache_file(moved_dir / "pycache", moved_site / "lazy_mod.py")


def test_an_interpreter_that_ignores_the_prefix_gets_no_environment_cache(tmp_path: Path) -> None:
    env = EnvInfo(key="o__n/1/x", repo="o/n", version="1", spec_hash="x", python_version="3.7.17", path=tmp_path,
                  complete=True)
    assert env_pycache(env) is None and not (tmp_path / "pycache").exists()


def test_an_install_compiles_into_the_environment_whatever_prefix_the_user_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A user's PYTHONPYCACHEPREFIX would send the install's bytecode out of the env, and the
    # env's cache (which takes it from there) would miss it: every test run would compile
    # those modules again, and their compile-time warnings would reach the tests.
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(tmp_path / "users-prefix"))
    env = EnvInfo(key="o__n/1/x", repo="o/n", version="1", spec_hash="x", python_version="3.11", path=tmp_path,
                  complete=True)
    assert "PYTHONPYCACHEPREFIX" not in install_environment(env)
    assert "PYTHONPYCACHEPREFIX" not in uv_environment()
