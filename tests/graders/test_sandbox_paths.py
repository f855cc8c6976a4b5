"""Where tests in the sandbox find their temp files: apart from the worktree, as in
SWE-bench's images (tests in /testbed, temp files in /tmp). docutils' `relative_path`
gives an absolute path only when two paths differ in their top directory, and sphinx's
tests name documents through it: with a worktree and the temp tree both under /tmp, the
gold patch of sphinx-11510 fails its own test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from graders.host import sandbox_for
from graders.host._sandbox import temp_dir_apart_from


@pytest.mark.parametrize(("cwd", "expected"), [
    ("/tmp/cache/worktrees/w", "/var/tmp"),
    ("/var/tmp/cache/w", "/tmp"),
    ("/home/u/.cache/swecl/worktrees/w", "/tmp"),
    ("/tmp", "/var/tmp"),
])
def test_the_temp_tree_never_shares_the_worktrees_top_directory(cwd: str, expected: str) -> None:
    assert temp_dir_apart_from(cwd) == expected


def test_a_sandboxed_test_sees_its_temp_files_apart_from_its_worktree(tmp_path: Path) -> None:
    work = tmp_path / "cache" / "worktrees" / "w"
    work.mkdir(parents=True)
    # docutils.utils.relative_path's own test: do the first two parts of the paths match?
    script = (
        "import os, tempfile\n"
        "t = tempfile.mkdtemp()\n"
        "same = os.path.abspath(t).split(os.sep)[:2] == os.getcwd().split(os.sep)[:2]\n"
        "print(os.path.isdir(t), same)\n"
    )
    argv, env = sandbox_for("bwrap").wrap([sys.executable, "-c", script], cwd=work, env={"PATH": os.environ["PATH"]})
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False"]
