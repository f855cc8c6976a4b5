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
Every compile from source costs time: the private cache is empty, so site-packages are
compiled afresh in each test process as well (about half a second for pytest itself).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Collection
from pathlib import Path

from graders._repos import untracked_files

__all__ = ["PYCACHE_VAR", "PrivatePycache", "remove_stray_bytecode"]

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
