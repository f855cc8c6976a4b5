"""How the claude adapter sets up a run (argv, environment, sandbox files), before any process.

The executable is only named here, never started: these check the invocation we build;
the end-to-end tests run the real CLI with it.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from agents._claude import MODEL_ALIASES, ClaudeAgent, build_prompt, find_claude, resolve_model
from agents._protocol import AgentInput, Budget
from ledger import SweclError

from .mini_recall import Item, MiniRecall


@pytest.fixture
def agent() -> ClaudeAgent:
    return ClaudeAgent(executable=sys.executable)


def _flag(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def test_model_aliases() -> None:
    assert resolve_model("haiku-4-5") == "claude-haiku-4-5-20251001"
    assert resolve_model("sonnet-4-6") == "claude-sonnet-4-6"
    assert resolve_model("opus-4-8") == "claude-opus-4-8"
    assert resolve_model("claude-fake") == "claude-fake"
    assert resolve_model(None) is None
    assert set(MODEL_ALIASES) == {"haiku-4-5", "sonnet-4-6", "opus-4-8"}


def test_memory_off_gets_an_empty_strict_mcp_config_and_no_auto_memory(
    agent: ClaudeAgent, make_input: Callable[..., AgentInput], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDECODE", "1")  # as if swecl ran inside a Claude Code session
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", "/somewhere/else")
    inv = agent.prepare(make_input(model="sonnet-4-6", budget=Budget(max_turns=7, max_cost_usd=1.5)))
    argv = inv.argv
    assert argv[:5] == [sys.executable, "-p", "--output-format", "stream-json", "--verbose"]
    assert "--bare" not in argv
    assert "--strict-mcp-config" in argv
    assert json.loads(Path(_flag(argv, "--mcp-config") or "").read_text()) == {"mcpServers": {}}
    assert _flag(argv, "--model") == "claude-sonnet-4-6"
    assert _flag(argv, "--max-turns") == "7" and _flag(argv, "--max-budget-usd") == "1.5"
    assert _flag(argv, "--permission-mode") == "bypassPermissions"
    assert _flag(argv, "--session-id") == inv.session_id
    assert "--input-format" not in argv and "--tools" not in argv
    env = inv.env
    assert env["CLAUDE_CONFIG_DIR"] == str(inv.config_dir) and inv.config_dir.is_dir()
    assert inv.config_dir.is_relative_to(make_input().scratch_dir)
    assert env["CLAUDE_CODE_DISABLE_AUTO_MEMORY"] == "1"
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1" and env["DISABLE_TELEMETRY"] == "1"
    assert "CLAUDECODE" not in env
    assert ("IS_SANDBOX" in env) == (os.geteuid() == 0)
    assert inv.stdin == inv.prompt.encode()


def test_stop_hook_only_records_and_exits_zero(agent: ClaudeAgent, make_input: Callable[..., AgentInput]) -> None:
    inv = agent.prepare(make_input())
    settings = json.loads(Path(_flag(inv.argv, "--settings") or "").read_text())
    assert "autoMemoryDirectory" not in settings
    stop = settings["hooks"]["Stop"][0]["hooks"][0]
    assert stop["type"] == "command" and settings["hooks"]["SessionEnd"][0]["hooks"][0] == stop
    payload = {"session_id": "s-1", "transcript_path": "/t/s-1.jsonl", "hook_event_name": "Stop",
               "last_assistant_message": "$(touch pwned) `rm -rf ~`", "cwd": "/x"}
    # The CLI runs hook commands through a shell; so do we, with a hostile payload on stdin.
    done = subprocess.run(["sh", "-c", stop["command"]], input=json.dumps(payload), text=True,
                          capture_output=True, cwd=inv.config_dir)
    assert done.returncode == 0 and done.stdout == ""
    assert not (inv.config_dir / "pwned").exists()
    lines = inv.hook_record.read_text().splitlines()
    assert [json.loads(x) for x in lines] == [{"hook_event_name": "Stop", "session_id": "s-1", "transcript_path": "/t/s-1.jsonl"}]
    # garbage on stdin: still exit 0, nothing recorded
    done = subprocess.run(["sh", "-c", stop["command"]], input="not json", text=True, capture_output=True)
    assert done.returncode == 0 and len(inv.hook_record.read_text().splitlines()) == 1
    assert shlex.split(stop["command"])[0] == sys.executable


def test_plugin_memory_points_the_mcp_config_at_the_recall_server(
    agent: ClaudeAgent, make_input: Callable[..., AgentInput], tmp_path: Path
) -> None:
    recall = MiniRecall([], tmp_path / "recall")
    inp = make_input(recall=recall, stage="plugin-blank", prompt_style="recall")
    inv = agent.prepare(inp)
    config = json.loads(Path(_flag(inv.argv, "--mcp-config") or "").read_text())
    argv = recall.mcp_server_argv()
    assert config == {"mcpServers": {"memory": {"type": "stdio", "command": argv[0], "args": argv[1:], "alwaysLoad": True}}}
    assert inv.env["MCP_CONNECTION_NONBLOCKING"] == "0"
    assert "mcp__memory__recall" in inv.prompt and inp.issue in inv.prompt
    assert inv.env["CLAUDE_CODE_DISABLE_AUTO_MEMORY"] == "1"


def test_a_recall_handle_can_add_environment_for_its_server(
    agent: ClaudeAgent, make_input: Callable[..., AgentInput], tmp_path: Path
) -> None:
    class WithEnv(MiniRecall):
        def mcp_server_env(self) -> dict[str, str]:
            return {"PYTHONPATH": "/project"}

    inv = agent.prepare(make_input(recall=WithEnv([], tmp_path / "r")))
    config = json.loads(Path(_flag(inv.argv, "--mcp-config") or "").read_text())
    assert config["mcpServers"]["memory"]["env"] == {"PYTHONPATH": "/project"}


def test_builtin_keeps_config_and_memory_per_run_sequence(
    agent: ClaudeAgent, make_input: Callable[..., AgentInput], tmp_path: Path
) -> None:
    memory_dir = tmp_path / "run-v1-seq1"
    first = agent.prepare(make_input(stage="builtin", memory_dir=memory_dir))
    (first.config_dir / "kept.txt").write_text("x")
    second = agent.prepare(make_input(stage="builtin", memory_dir=memory_dir,
                                      scratch_dir=tmp_path / "scratch2"))
    assert first.config_dir == second.config_dir == memory_dir / "claude-config"
    assert (second.config_dir / "kept.txt").exists()
    assert "CLAUDE_CODE_DISABLE_AUTO_MEMORY" not in second.env
    settings = json.loads(Path(_flag(second.argv, "--settings") or "").read_text())
    assert settings["autoMemoryDirectory"] == str(memory_dir / "auto-memory")
    # other stages start from a fresh sandbox every task
    plain = agent.prepare(make_input())
    (plain.config_dir / "left.txt").write_text("x")
    assert not (agent.prepare(make_input()).config_dir / "left.txt").exists()


def test_blind_mode_has_no_builtin_tools_and_asks_for_a_diff(
    agent: ClaudeAgent, make_input: Callable[..., AgentInput], tmp_path: Path
) -> None:
    inv = agent.prepare(make_input(code_mode="blind"))
    assert _flag(inv.argv, "--tools") == ""
    assert "```diff" in inv.prompt and "You have no tools." in inv.prompt
    with_memory = agent.prepare(make_input(code_mode="blind", recall=MiniRecall([], tmp_path / "r")))
    assert "The only tool you have is `recall`." in with_memory.prompt


def test_natural_style_primes_a_stream_json_invocation(
    agent: ClaudeAgent, make_input: Callable[..., AgentInput], tmp_path: Path
) -> None:
    recall = MiniRecall([Item("m1", 1, 2.0, "greet None", "guard None in greet()", outcome="resolved")], tmp_path / "r")
    inp = make_input(recall=recall, stage="plugin-primed", prompt_style="natural")
    inv = agent.prepare(inp)
    assert _flag(inv.argv, "--input-format") == "stream-json"
    message = json.loads(inv.stdin)
    assert message["type"] == "user" and message["message"]["role"] == "user"
    text = message["message"]["content"][0]["text"]
    assert text == inv.prompt
    assert "You have worked in the demo/pkg repository before." in text
    assert "- greet None (outcome: resolved): guard None in greet()" in text
    assert recall.calls() == [{"via": "inproc", "query": inp.issue, "repo": "demo/pkg", "k": 5}]


def test_memory_styles_fall_back_to_plain_without_memory(make_input: Callable[..., AgentInput]) -> None:
    plain = build_prompt(make_input())
    assert build_prompt(make_input(prompt_style="recall")) == plain
    assert build_prompt(make_input(prompt_style="natural")) == plain
    assert "recall" not in plain
    hinted = build_prompt(make_input(hints="look at title()"))
    assert "<hints>\nlook at title()\n</hints>" in hinted


def test_a_relative_cli_path_is_made_absolute(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    exe = tmp_path / "bin" / "claude"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    assert find_claude("bin/claude") == str(exe)  # the CLI runs with the worktree as cwd


def test_missing_cli_is_a_user_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("SWECL_CLAUDE_BIN", raising=False)
    with pytest.raises(SweclError, match="claude CLI is not on PATH"):
        find_claude()
    monkeypatch.setenv("SWECL_CLAUDE_BIN", str(tmp_path / "nope"))
    with pytest.raises(SweclError, match="not an executable file"):
        find_claude()
