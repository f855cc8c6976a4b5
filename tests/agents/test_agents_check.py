"""`swecl agents --check AGENT`: the agent started once in the sandbox a task runs it in,
and every path it sees there printed, for each real CLI and a command (issue 65)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.inprocess import swecl

from .conftest import (  # noqa: F401  (session fixtures: the npm- and PyPI-installed CLIs)
    claude_bin,
    codex_bin,
    gemini_bin,
    mini_bin,
    opencode_bin,
)


def _check(tmp_path: Path, cache: Path, *args: str, env: dict[str, str] | None = None) -> dict:
    done = swecl(tmp_path / "r", "agents", "--check", *args, "--json", cache=cache, env=env)
    return json.loads(done.stdout)


def _shown(doc: dict) -> set[str]:
    return {m["path"] for m in doc["visible"]}


def test_a_command_starts_and_sees_its_program_the_system_and_its_checkout(tmp_path: Path, cache: Path) -> None:
    agent = tmp_path / "tools" / "agent.sh"
    agent.parent.mkdir()
    agent.write_text("#!/bin/sh\nexit 0\n")
    agent.chmod(0o755)
    (tmp_path / "tools" / "other.txt").write_text("a file beside the program")
    doc = _check(tmp_path, cache, "command", "--command", f"{agent} {{workdir}}")
    assert doc["starts"] is True and doc["sandbox"] == "bwrap"
    shown = _shown(doc)
    assert {str(agent), "/usr", "{checkout}", "{scratch}"} <= shown
    assert str(tmp_path / "tools") not in shown and str(Path.home()) not in shown and "/" not in shown
    # the text form names the same paths
    text = swecl(tmp_path / "r", "agents", "--check", "command", "--command", f"{agent} {{workdir}}", cache=cache).stdout
    assert text.startswith("command starts inside the sandbox") and f"\n  program (read-only): {agent}\n" in text
    # --expose shows more, read-only
    doc = _check(tmp_path, cache, "command", "--command", f"{agent} {{workdir}}", "--expose", str(tmp_path / "tools"))
    assert {"path": str(tmp_path / "tools"), "mode": "ro", "what": "exposed (--expose)"} in doc["visible"]


def test_an_agent_that_cannot_start_is_said_in_one_line(tmp_path: Path, cache: Path) -> None:
    done = swecl(tmp_path / "r", "agents", "--check", "command", "--command", f"{tmp_path / 'missing'} {{workdir}}",
                 cache=cache, check=False)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert f"the agent command {tmp_path / 'missing'} cannot start" in done.stderr
    done = swecl(tmp_path / "r", "agents", "--check", "command", "--command", "/bin/true", "--expose",
                 str(tmp_path / "nowhere"), cache=cache, check=False)
    assert done.returncode != 0 and f"--expose {tmp_path / 'nowhere'}: no such file or folder" in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("name, fixture, env_var", [
    ("claude", "claude_bin", "SWECL_CLAUDE_BIN"),
    ("codex", "codex_bin", "SWECL_CODEX_BIN"),
    ("gemini", "gemini_bin", "SWECL_GEMINI_BIN"),
    ("opencode", "opencode_bin", "SWECL_OPENCODE_BIN"),
    ("mini-swe-agent", "mini_bin", "SWECL_MINI_BIN"),
])
def test_each_real_cli_runs_its_version_with_the_narrow_view(name: str, fixture: str, env_var: str, tmp_path: Path,
                                                              cache: Path, request: pytest.FixtureRequest) -> None:
    """Each CLI's own install is found by following its executable (npm package and its
    dependencies, a venv and its interpreter): it starts, and the home around it is not shown."""
    binary = request.getfixturevalue(fixture)
    doc = _check(tmp_path, cache, name, env={env_var: binary})
    assert doc["starts"] is True and doc["version"], doc
    shown = _shown(doc)
    real = os.path.realpath(binary)
    assert any(real == p or real.startswith(p + "/") for p in shown if not p.startswith("{")), (real, shown)
    assert str(Path.home()) not in shown and "/" not in shown
    assert not any(p in shown for p in ("/home", "/root", "/opt", "/srv", "/var", "/mnt"))
