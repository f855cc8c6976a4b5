"""ATIF trajectories checked by the authority: Harbor's published pydantic models
(`harbor.models.trajectories.Trajectory`, through `harbor.utils.trajectory_validator`),
loaded by `uv run --with harbor==HARBOR` in a Python it supports (3.12 or newer; swecl's
own is 3.11, so never in swecl's environment). Nothing of Harbor is copied here.

One validator process per test session (per xdist worker): started on first use, it
reads a JSON list of file paths a line and answers a JSON object {path: [errors]}, so
each test checks all its files in one round trip and the interpreter and pydantic load once.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

HARBOR = "0.26.0"  # the harbor release whose models the tests hold trajectories to
REPO_ROOT = Path(__file__).resolve().parents[1]

_LOOP = """
import json, sys
from harbor.utils.trajectory_validator import TrajectoryValidator
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    answer = {}
    for path in json.loads(line):
        validator = TrajectoryValidator()
        validator.validate(path)
        answer[path] = validator.get_errors()
    print(json.dumps(answer), flush=True)
"""


def uv_binary() -> str | None:
    """The uv `./dev` uses: on PATH, else the one it installed into .dev/uv."""
    found = shutil.which("uv")
    local = REPO_ROOT / ".dev" / "uv" / "bin" / "uv"
    return found or (str(local) if local.is_file() else None)


def _version_ok(python: str) -> bool:
    try:
        done = subprocess.run([python, "-c", "import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)"],
                              capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def harbor_python(uv: str) -> str | None:
    """A Python 3.12+ for Harbor: SWECL_HARBOR_PYTHON, what uv finds without downloading,
    python3.13 / python3.12 on PATH (run, since a pyenv shim may name one it cannot
    start), else a pyenv-installed one."""
    candidates = [os.environ.get("SWECL_HARBOR_PYTHON") or ""]
    found = subprocess.run([uv, "python", "find", "--no-python-downloads", ">=3.12"], capture_output=True, text=True,
                           timeout=60)
    if found.returncode == 0:
        candidates.append(found.stdout.strip())
    candidates += [shutil.which(n) or "" for n in ("python3.13", "python3.12")]
    pyenv = shutil.which("pyenv")
    if pyenv:
        root = subprocess.run([pyenv, "root"], capture_output=True, text=True, timeout=30).stdout.strip()
        candidates += sorted(glob.glob(os.path.join(root, "versions", "3.1[2-9]*", "bin", "python3")), reverse=True)
    return next((c for c in candidates if c and _version_ok(c)), None)


class AtifValidator:
    """The session's validator process (see the module's doc)."""

    def __init__(self, uv: str, python: str) -> None:
        self.process = subprocess.Popen(
            [uv, "run", "--quiet", "--no-project", "--python", python, "--with", f"harbor=={HARBOR}",
             "python", "-c", _LOOP],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO_ROOT,
        )
        ready = self._line()
        if ready != {"ready": True}:
            raise RuntimeError(f"the harbor validator did not start: {ready!r}")

    def _line(self) -> dict[str, list[str]]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the harbor validator ended (exit {self.process.wait()})")
        return json.loads(line)

    def errors(self, paths: Iterable[Path]) -> dict[str, list[str]]:
        """{path: Harbor's errors} of the files that are not valid ATIF ({} when all are)."""
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps([str(p) for p in paths]) + "\n")
        self.process.stdin.flush()
        return {path: errors for path, errors in self._line().items() if errors}

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=30)
