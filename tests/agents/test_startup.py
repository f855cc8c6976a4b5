"""The preflight: an agent's process started once, in the sandbox a task runs it in, and
refused in one line that says where the program is and what the sandbox does there."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from agents._command import CommandAgent
from agents._startup import preflight
from graders.host import Sandbox, sandbox_for
from ledger import SweclError

from .conftest import REPO_ROOT


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return sandbox_for("bwrap", hide=[tmp_path / "cache"])


def _script(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def _in_temp(tmp_path: Path) -> Path:
    assert str(tmp_path).startswith(tempfile.gettempdir() + "/")  # the tree the sandbox replaces
    return tmp_path


def test_an_in_process_agent_has_nothing_to_check(sandbox: Sandbox) -> None:
    from agents._demo import DemoAgent

    assert preflight(DemoAgent(), sandbox) is None


def test_a_command_named_by_its_path_is_mounted_and_passes(tmp_path: Path, sandbox: Sandbox) -> None:
    agent = _script(_in_temp(tmp_path) / "bin" / "agent.sh", "#!/bin/sh\nexit 0\n")
    assert preflight(CommandAgent(f"{agent} {{workdir}}"), sandbox) == ""
    assert preflight(CommandAgent(f"{sys.executable} -c pass"), sandbox) == ""


def test_a_command_found_on_path_in_the_temp_dir_is_shown_and_one_in_a_hidden_place_refused(
        tmp_path: Path, sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sandbox shows a program's own install wherever it is (the private temp dir
    too), except where swecl hides its cache, results and dataset files."""
    bin_dir = _in_temp(tmp_path) / "bin"
    _script(bin_dir / "my-agent", "#!/bin/sh\nexit 0\n")
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    assert preflight(CommandAgent("my-agent {workdir}"), sandbox) == ""
    hidden_bin = tmp_path / "cache" / "bin"
    _script(hidden_bin / "my-agent", "#!/bin/sh\nexit 0\n")
    monkeypatch.setenv("PATH", f"{hidden_bin}:/usr/bin:/bin")
    with pytest.raises(SweclError) as info:
        preflight(CommandAgent("my-agent {workdir}"), sandbox)
    said = str(info.value)
    assert "\n" not in said
    assert said.startswith("the agent command my-agent cannot start inside the sandbox (exit 127: ")
    assert f"it is at {hidden_bin / 'my-agent'}, and the sandbox hides {tmp_path / 'cache'}" in said
    assert said.endswith("or run unconfined with --sandbox none")
    # unconfined, the same command starts
    assert preflight(CommandAgent("my-agent {workdir}"), sandbox_for("none")) == ""


def test_a_script_whose_interpreter_is_hidden_is_refused_naming_the_interpreter(tmp_path: Path, sandbox: Sandbox) -> None:
    hidden_interpreter = _script(tmp_path / "cache" / "python", "#!/bin/sh\nexit 0\n")
    agent = _script(tmp_path / "bin" / "agent", f"#!{hidden_interpreter}\n")
    with pytest.raises(SweclError) as info:
        preflight(CommandAgent(f"{agent} {{workdir}}"), sandbox)
    said = str(info.value)
    assert f"it is at {hidden_interpreter}, and the sandbox hides {tmp_path / 'cache'}" in said, said


def test_a_command_not_on_path_is_refused_before_any_sandbox(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    with pytest.raises(SweclError, match="the agent command 'no-such-agent' is not on PATH"):
        preflight(CommandAgent("no-such-agent {workdir}"), sandbox)


def test_a_cli_agent_runs_its_version_in_the_sandbox(tmp_path: Path, sandbox: Sandbox) -> None:
    """`CLI --version` with a task's environment (HOME is the sandbox's private one),
    wherever the CLI is installed (the temp dir too); the same CLI inside the hidden cache
    is refused, naming the variable that points elsewhere."""
    from agents._claude import ClaudeAgent

    body = '#!/bin/sh\necho "1.0 (fake) HOME=$HOME"\n'
    outside = Path(tempfile.mkdtemp(prefix="cli-", dir=REPO_ROOT / ".dev"))  # not under the temp dir
    try:
        reachable = _script(outside / "claude", body)
        assert preflight(ClaudeAgent(executable=reachable), sandbox) == "1.0 (fake) HOME=/tmp/home"
    finally:
        shutil.rmtree(outside)
    in_temp = _script(_in_temp(tmp_path) / "cli" / "claude", body)
    assert preflight(ClaudeAgent(executable=in_temp), sandbox) == "1.0 (fake) HOME=/tmp/home"
    with pytest.raises(SweclError) as info:
        preflight(ClaudeAgent(executable=_script(tmp_path / "cache" / "cli" / "claude", body)), sandbox)
    said = str(info.value)
    assert said.startswith("the claude CLI cannot start inside the sandbox (exit 127: swecl-launcher: cannot execute ")
    assert "set SWECL_CLAUDE_BIN to an install outside it (npm install -g @anthropic-ai/claude-code)" in said
