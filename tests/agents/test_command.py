"""The command agent: a real child process per task, placeholders per argument, no shell."""

from __future__ import annotations

import os
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from agents._command import CommandAgent
from agents._protocol import AgentInput, Budget
from ledger import SweclError

# A stand-in "coding agent": reads the issue file, edits the worktree, prints its model.
AGENT_SCRIPT = """\
import pathlib, sys
workdir, issue_file, model = sys.argv[1], sys.argv[2], sys.argv[3]
issue = pathlib.Path(issue_file).read_text()
util = pathlib.Path(workdir, "pkg", "util.py")
util.write_text(util.read_text().replace("def greet(name):\\n", "def greet(name):\\n    if name is None:\\n        return 'Hello'\\n"))
pathlib.Path(workdir, "NOTES.txt").write_text("issue had %d chars\\n" % len(issue))
print("model=" + model)
"""


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "fake_agent.py"
    path.write_text(AGENT_SCRIPT)
    return path


def test_runs_the_template_and_takes_the_worktree_diff(
    make_input: Callable[..., AgentInput], script: Path, tmp_path: Path
) -> None:
    issue = "greet(None) fails; also `rm -rf /` $(touch pwned) ; echo {model}"
    agent = CommandAgent(f"{shlex.quote(sys.executable)} {shlex.quote(str(script))} {{workdir}} {{issue_file}} {{model}}")
    result = agent.run(make_input(issue=issue, model="sonnet-4-6"))
    assert result.exit == "completed" and result.exit_code == 0, result.error
    assert "+    if name is None:" in result.patch and "+++ b/NOTES.txt" in result.patch
    assert f"+issue had {len(issue)} chars" in result.patch
    assert b"model=sonnet-4-6" in result.transcript
    # the issue reached the agent as a file, never through a shell
    assert (tmp_path / "scratch" / "issue.md").read_text() == issue
    assert not (tmp_path / "repo" / "pwned").exists() and not Path("pwned").exists()


def test_placeholders_are_substituted_inside_arguments(make_input: Callable[..., AgentInput]) -> None:
    agent = CommandAgent(["tool", "--cwd={workdir}", "--json={\"a\": 1}", "--m", "{model}", "{instance_id}@{repo}"])
    inp = make_input(model=None)
    argv = agent.argv(inp, "/x/issue.md", "/x/hints.md")
    assert argv == ["tool", f"--cwd={inp.worktree}", '--json={"a": 1}', "--m", "", "demo__pkg-1@demo/pkg"]


def test_nonzero_exit_is_an_error_with_stderr(make_input: Callable[..., AgentInput]) -> None:
    code = "import sys; sys.stderr.write('boom: no key\\n'); sys.exit(3)"
    result = CommandAgent([sys.executable, "-c", code]).run(make_input())
    assert result.exit == "error" and result.exit_code == 3
    assert result.error == f"{sys.executable} exited 3: boom: no key"
    assert result.patch == ""
    assert result.not_started is None  # it ran and gave up: the agent's own end, graded


def test_a_program_it_cannot_exec_is_marked_not_started(make_input: Callable[..., AgentInput]) -> None:
    """The shell's 127: the agent's wrapper found no program to run. Nothing the agent did."""
    result = CommandAgent(["/bin/sh", "-c", "exec no-such-model-client --go"]).run(make_input())
    assert result.exit == "error" and result.exit_code == 127 and result.patch == ""
    assert result.not_started == result.error
    assert result.error.startswith("the agent command /bin/sh did not run: it could not be executed (exit 127: ")
    assert "no-such-model-client" in result.error


def test_an_exit_127_after_editing_is_graded(make_input: Callable[..., AgentInput]) -> None:
    """A patch says the agent ran, whatever its exit: graded as it is."""
    result = CommandAgent(["/bin/sh", "-c", "echo '# edited' >> README.md; exit 127"]).run(make_input())
    assert result.exit_code == 127 and "+# edited" in result.patch
    assert result.not_started is None


def test_timeout_kills_the_whole_process_group(make_input: Callable[..., AgentInput], tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    # The agent starts a grandchild that would outlive it, then hangs.
    code = (
        "import subprocess, sys, time, pathlib\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"pathlib.Path({str(pidfile)!r}).write_text(str(p.pid))\n"
        "time.sleep(60)\n"
    )
    started = time.monotonic()
    result = CommandAgent([sys.executable, "-c", code]).run(make_input(budget=Budget(timeout_s=1.5)))
    assert time.monotonic() - started < 15
    assert result.exit == "timeout" and result.exit_code is None
    grandchild = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie waiting for its reaper is gone for our purposes
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_secrets_in_output_are_scrubbed(make_input: Callable[..., AgentInput], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-SECRETVALUE123")
    code = "import os; print('key is', os.environ['ANTHROPIC_API_KEY'])"
    result = CommandAgent([sys.executable, "-c", code]).run(make_input())
    assert b"SECRETVALUE123" not in result.transcript and b"[REDACTED]" in result.transcript
    assert "SECRETVALUE123" not in (make_input().scratch_dir / "command-stdout.txt").read_text()


def test_missing_executable_and_bad_template_are_user_errors(make_input: Callable[..., AgentInput]) -> None:
    with pytest.raises(SweclError, match="not found"):
        CommandAgent(["/nonexistent/agent-cli", "{workdir}"]).run(make_input())
    with pytest.raises(SweclError, match="cannot be split"):
        CommandAgent("agent 'unterminated")
    with pytest.raises(SweclError, match="empty"):
        CommandAgent("   ")
