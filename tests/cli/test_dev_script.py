"""`./dev`, the set-up script the README starts with: where commands run, what it installs."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEV = ROOT / "dev"


def dev(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(DEV), *args], cwd=cwd, capture_output=True, text=True, timeout=900,
                          env={**os.environ, **(env or {})})


def test_a_command_runs_where_it_was_typed(tmp_path: Path) -> None:
    """A relative --dataset or --results must mean the caller's folder, not the checkout."""
    proc = dev("python", "-c", "import os; print(os.getcwd())", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(tmp_path)


def test_no_arguments_prints_the_usage(tmp_path: Path) -> None:
    proc = dev(cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("./dev COMMAND [ARGS...]")
    assert "./dev swecl run" in proc.stdout and "./dev pytest" in proc.stdout and "set -e" not in proc.stdout


@pytest.mark.slow
def test_the_demo_gets_only_what_it_needs(tmp_path: Path) -> None:
    """`./dev swecl run` on a fresh checkout: swecl's dependencies, not the test tools
    (ray and swebench alone are most of a gigabyte)."""
    venv = tmp_path / "venv"
    probe = "import importlib.util as u; print(sorted(m for m in ('ray', 'swebench', 'xdist', 'hypothesis', " \
            "'click', 'apsw', 'polars') if u.find_spec(m)))"
    proc = dev("python", "-c", probe, cwd=tmp_path, env={"UV_PROJECT_ENVIRONMENT": str(venv)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['apsw', 'click', 'polars']"
    assert (venv / "bin" / "swecl").exists()
