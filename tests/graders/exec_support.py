"""A small real repository with a bug, its gold patch and its test patch, for grader tests.

`calc.ops.clamp` ignores its upper bound. The gold patch fixes it; the test patch adds
`test_clamp_high` (FAIL_TO_PASS) next to the existing `test_add` (PASS_TO_PASS). The
repo has a root `conftest.py`, so pytest puts the checkout on sys.path without an install.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from graders._specs import EnvSpec

REPO = "acme/calc"

OPS_V1 = '''\
"""Arithmetic helpers."""


def add(a, b):
    return a + b


def sub(a, b):
    return a - b


def clamp(x, lo, hi):
    """x limited to [lo, hi]."""
    if x < lo:
        return lo
    return x


def mean(values):
    return sum(values) / len(values)
'''

TESTS_V1 = '''\
from calc.ops import add, clamp, sub


def test_add():
    assert add(2, 3) == 5


def test_sub():
    assert sub(5, 3) == 2


def test_clamp_low():
    assert clamp(-5, 0, 10) == 0
'''

GOLD_PATCH = '''\
diff --git a/calc/ops.py b/calc/ops.py
--- a/calc/ops.py
+++ b/calc/ops.py
@@ -13,6 +13,8 @@ def clamp(x, lo, hi):
     """x limited to [lo, hi]."""
     if x < lo:
         return lo
+    if x > hi:
+        return hi
     return x
 
 
'''

WRONG_PATCH = '''\
diff --git a/calc/ops.py b/calc/ops.py
--- a/calc/ops.py
+++ b/calc/ops.py
@@ -13,6 +13,8 @@ def clamp(x, lo, hi):
     """x limited to [lo, hi]."""
     if x < lo:
         return lo
+    if x > hi:
+        return hi - 1
     return x
 
 
'''

TEST_PATCH = '''\
diff --git a/tests/test_ops.py b/tests/test_ops.py
--- a/tests/test_ops.py
+++ b/tests/test_ops.py
@@ -11,3 +11,7 @@ def test_sub():
 
 def test_clamp_low():
     assert clamp(-5, 0, 10) == 0
+
+
+def test_clamp_high():
+    assert clamp(50, 0, 10) == 10
'''

F2P = ["tests/test_ops.py::test_clamp_high"]
P2P = ["tests/test_ops.py::test_add", "tests/test_ops.py::test_sub", "tests/test_ops.py::test_clamp_low"]

# pytest from the uv cache (or PyPI); the running interpreter, so no other Python is needed.
TEST_ENV = EnvSpec(python=None, pip_packages=["pytest"], test_cmd="pytest -rA")


def run_git(cwd: Path, *args: str, date: str | None = None) -> str:
    """git with a neutral identity and no user config; `date`: author and committer date."""
    env = {
        **os.environ,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    if date is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = date
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def make_calc_repo(root: Path) -> tuple[Path, str]:
    """Create the sample repository at `root`; returns (path, base commit)."""
    root.mkdir(parents=True, exist_ok=True)
    run_git(root, "init", "-q", "-b", "main")
    write(root, "calc/__init__.py", "")
    write(root, "calc/ops.py", OPS_V1)
    write(root, "tests/test_ops.py", TESTS_V1)
    write(root, "conftest.py", "# puts the repo root on sys.path for pytest\n")
    write(root, ".gitignore", "build/\n*.egg-info/\n__pycache__/\n*.so\n")
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "-m", "calc with a clamp bug")
    return root, run_git(root, "rev-parse", "HEAD")


_SHARED: dict[str, tuple[Path, Path, str]] = {}


def shared_grading_cache(tmp_path_factory) -> tuple[Path, Path, str]:
    """(cache dir, source repo, base commit) shared by every grader test of this process,
    so the uv environment for TEST_ENV is built once per test session."""
    if "calc" not in _SHARED:
        root = tmp_path_factory.mktemp("swecl-grading")
        src, base = make_calc_repo(root / "src")
        _SHARED["calc"] = (root / "cache", src, base)
    return _SHARED["calc"]
