"""No bytecode from the worktree: what the code under test runs is the source the patch shows.

A patch could ship behaviour as bytecode: library code that writes a compiled module into
the worktree during the run (or a `.pyc` the patch adds) would be loaded instead of the
source the diff shows. So:

- every test run, and apart from it the install step, gets a private bytecode cache
  outside the worktree (`PYTHONPYCACHEPREFIX`, Python 3.8+): the interpreter then never
  reads the worktree's `__pycache__`. For a test run the directory is fresh, empty and
  read-only in the sandbox (`PYTHONDONTWRITEBYTECODE` stays set), so nothing can be
  planted in it either;
- untracked `.pyc` / `.pyo` files in the worktree (but the install's own products) (a sourceless module beside the sources,
  which every Python 3 imports, or a cache of any interpreter) are removed before the run;
- under pytest the results plugin (`graders._results_plugin`) also refuses, for every
  import from the worktree, bytecode of any kind (sourceless, cached, or pytest's
  assertion-rewriting cache), which covers Python 3.5-3.7 and files written during the run.

Not covered: under a runner other than pytest (django's runtests.py, sympy's bin/test) on
Python < 3.8, a `.pyc` written into the worktree during the run, after the clean-up.

An empty cache costs time: every test process compiles what it imports from the standard
library and site-packages afresh (a demo pass took 2.5 times the CPU). So in the sandbox a
test run gets its environment's own cache instead (`env_pycache`): made once per
environment by swecl, before any patch, from an import of pytest (and its plugins) run in
an empty directory, pruned to the files of the environment and of its interpreter (never
a worktree's, which an editable install of the repository would otherwise put there),
with every module the environment's install compiled linked in (`_link_compiled`: else a
module the warm-up did not import compiles at each import, and its compile-time warnings
reach the tests) and so the interpreter's standard library's own bytecode (hard links: a
test's import of `decimal` or `xml` compiles nothing, and the warm-up only what is left),
and read-only in the sandbox, so a test can plant nothing in it.
Unconfined, a test run could write into it, so each grade gets a fresh empty one there
(`PrivatePycache`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Collection
from pathlib import Path

from graders._env_info import EnvInfo
from graders.host import untracked_files

__all__ = ["PYCACHE_VAR", "PrivatePycache", "env_pycache", "forget_env_pycache", "remove_stray_bytecode"]

PYCACHE_VAR = "PYTHONPYCACHEPREFIX"
_BYTECODE_SUFFIXES = (".pyc", ".pyo")


class PrivatePycache:
    """A fresh empty directory outside the worktree for one grade's processes; `close`
    removes it."""

    def __init__(self) -> None:
        self.path: Path | None = Path(tempfile.mkdtemp(prefix="swecl-pycache-"))

    def environment(self) -> dict[str, str]:
        return {} if self.path is None else {PYCACHE_VAR: str(self.path)}

    def paths(self) -> list[Path]:
        return [] if self.path is None else [self.path]

    def close(self) -> None:
        if self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)
            self.path = None


def remove_stray_bytecode(worktree: Path, keep: Collection[str] = ()) -> list[str]:
    """Remove the untracked (and ignored) compiled modules of a checkout but those in
    `keep` (the install's products: made before any patch, and checked before each grade
    by `prepare_worktree`); returns what was removed."""
    removed = []
    kept = set(keep)
    for rel in untracked_files(worktree):
        if rel.endswith(_BYTECODE_SUFFIXES) and rel not in kept:
            target = worktree / rel
            if target.is_file() or target.is_symlink():
                target.unlink(missing_ok=True)
                removed.append(rel)
    return removed


ENV_PYCACHE = "pycache"  # beside the environment's venv
# written last into a finished cache; one without it was made by an earlier swecl (before
# the install's bytecode, then the standard library's, was linked in) and is made again
_ENV_PYCACHE_DONE = ".swecl-pycache-3"
_WARM_TIMEOUT_S = 300
# Run by the environment's interpreter (3.8+): where it lives (the prefix its standard
# library's bytecode is kept under, and that library), for `_link_compiled`.
_WHERE = "import sys, sysconfig; print(sys.base_prefix); print(sysconfig.get_paths()['stdlib'])"
# What of the standard library is not linked in: what no test run imports (Python's own
# tests, its GUI tools) and third-party packages installed beside it.
_STDLIB_SKIP = frozenset({"site-packages", "dist-packages", "test", "idlelib", "turtledemo"})
# Then, in an empty directory: import pytest and its plugins as a test run would (nothing
# to collect), which compiles what neither the install nor the standard library holds.
_WARM = """\
try:
    import pytest
except Exception:
    pass
else:
    import os
    pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", os.getcwd()])
"""


def env_pycache(env: EnvInfo) -> Path | None:
    """The environment's own bytecode cache for its confined test runs (module doc): made
    on first use, under the environment's lock the grader holds. None where it cannot be
    had (Python < 3.8 ignores PYTHONPYCACHEPREFIX; the warm-up failed): the caller falls
    back to a private empty cache."""
    target = env.path / ENV_PYCACHE
    try:
        # The tree mirrors absolute source paths: made for the venv where it is now and the
        # interpreter it runs, not for a venv at another path (a cache folder copied or moved)
        # or another interpreter, where no module would be found and each would compile at
        # every import, with its compile-time warnings.
        if (target / _ENV_PYCACHE_DONE).read_text(encoding="utf-8") == _made_for(env):
            return target
    except OSError:
        pass
    if target.is_dir():
        shutil.rmtree(target, ignore_errors=True)
    try:
        major, minor = (int(x) for x in env.python_version.split(".")[:2])
    except ValueError:
        return None
    if (major, minor) < (3, 8):
        return None
    work = Path(tempfile.mkdtemp(prefix=".pycache-", dir=env.path))
    empty = Path(tempfile.mkdtemp(prefix="swecl-warm-"))
    try:
        environ = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPYCACHEPREFIX": os.fspath(work),
                   "PYTHONNOUSERSITE": "1", "HOME": os.fspath(empty), "VIRTUAL_ENV": os.fspath(env.venv)}
        try:
            where = subprocess.run([os.fspath(env.python), "-c", _WHERE], cwd=empty, env=environ, capture_output=True,
                                   text=True, stdin=subprocess.DEVNULL, timeout=_WARM_TIMEOUT_S).stdout.splitlines()
            base, stdlib = (line.strip() for line in where[:2]) if len(where) >= 2 else ("", "")
            if not base or not stdlib:
                return None
            # first: the warm-up compiles only what neither holds; the standard library's
            # files are never copied (a copy of it per environment where links are refused)
            _link_compiled(env.venv, work)
            _link_compiled(Path(stdlib), work, skip=_STDLIB_SKIP, copy=False)
            subprocess.run([os.fspath(env.python), "-c", _WARM], cwd=empty, env=environ, capture_output=True,
                           stdin=subprocess.DEVNULL, timeout=_WARM_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired):
            return None
        _keep_only(work, [env.venv, Path(base)])
        (work / _ENV_PYCACHE_DONE).write_text(_made_for(env), encoding="utf-8")
        try:
            os.rename(work, target)
        except OSError:  # made meanwhile by another process: use that one
            if not target.is_dir():
                return None
        return target
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(empty, ignore_errors=True)


def forget_env_pycache(env: EnvInfo) -> None:
    """Remove the environment's bytecode cache, made again at its next use: the venv's
    modules changed in place (an install's record put back from another slot, its path
    written over), and what was compiled from them before no longer stands for them."""
    shutil.rmtree(env.path / ENV_PYCACHE, ignore_errors=True)


# 2: made again once, as a record put back from another slot could have left one that
# no longer stands for the venv's modules (`forget_env_pycache`)
_PYCACHE_FORMAT = 2


def _made_for(env: EnvInfo) -> str:
    """What an environment's bytecode cache holds paths of: its venv and its interpreter."""
    return f"{os.fspath(env.venv)}\n{os.path.realpath(env.python)}\nformat {_PYCACHE_FORMAT}\n"


def _link_compiled(root: Path, prefix: Path, *, skip: Collection[str] = (), copy: bool = True) -> None:
    """Every compiled module under `root` (`X/__pycache__/NAME.TAG.pyc`, as an install or
    Python's own leaves them; not in a folder named in `skip`) also at its place in the
    prefix tree (`PREFIX/X/NAME.TAG.pyc`): hard-linked, else copied if `copy`.

    With PYTHONPYCACHEPREFIX set, the interpreter looks for bytecode only in the prefix, so
    a module the warm-up did not import would be compiled from source at every import:
    slower, and its compile-time warnings (`"is" with a literal`, invalid escapes) would
    reach the tests, which see none with the environment's own bytecode. astropy 3.1's
    `test_rshift_warns` counts the warnings of one call: a lazy import of traitlets inside
    it added two SyntaxWarnings and failed the gold patch."""
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in skip]
        if os.path.basename(dirpath) != "__pycache__":
            continue
        into = prefix / os.path.dirname(os.path.abspath(dirpath)).lstrip(os.sep)
        for name in files:
            if not name.endswith(".pyc") or name.count(".") != 2:  # an optimised one (NAME.TAG.opt-1.pyc) is not read
                continue
            target = into / name
            if target.exists():
                continue
            try:
                into.mkdir(parents=True, exist_ok=True)
                try:
                    os.link(os.path.join(dirpath, name), target)
                except OSError:
                    if copy:
                        shutil.copy2(os.path.join(dirpath, name), target)
            except OSError:
                pass  # a module left out compiles from its source, as before


def _keep_only(prefix: Path, roots: list[Path]) -> None:
    """Remove from a PYTHONPYCACHEPREFIX tree every file whose source is not under one of
    `roots` (the tree mirrors each source's absolute directory)."""
    allowed = {os.path.abspath(r) for r in roots} | {os.path.realpath(r) for r in roots}
    for dirpath, _dirs, files in os.walk(prefix, topdown=False):
        source_dir = "/" + os.path.relpath(dirpath, prefix)
        if any(source_dir == r or source_dir.startswith(r + "/") for r in allowed):
            continue
        for name in files:
            os.unlink(os.path.join(dirpath, name))
        if dirpath != os.fspath(prefix) and not os.listdir(dirpath):
            os.rmdir(dirpath)  # not even the names of other trees
