"""The codex adapter end to end: the real `codex` CLI (npm, pinned version) against a loopback
fake of OpenAI's Responses API, with a real git worktree and real MCP recall (`swecl run
--agent codex` is tests/run/test_codex_run.py, the stream parser test_codex_events.py;
what every such CLI must do alike, timeouts, auth failures and recall among it, is
test_cli_agents_shared.py).

The fake model uses codex's own tools as a real model would: `tool_search` to find the
deferred MCP tool, `recall` in the `mcp__memory` namespace, the freeform `apply_patch` tool
and `exec_command`. The model name is one of the CLI's catalog (gpt-5.5), so codex offers
the tool set it offers that model on the real service.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agents._codex import CodexAgent
from agents._protocol import AgentInput, Budget
from ledger.events import ToolCall
from projections.show import final_message

from .cli_scenarios import (
    CASES,
    Harness,
    harness,
    no_secret_anywhere,
)
from .conftest import build_repo
from .fake_openai import (
    MODEL,
    apply_patch,
    exec_command,
    mcp_call,
    text,
    tool_outputs,
    tool_search,
    write_agents_md,
)
from .mini_recall import Item, MiniRecall

pytestmark = pytest.mark.slow

CASE = next(c for c in CASES if c.name == "codex")

GREET_PATCH = """\
*** Begin Patch
*** Update File: pkg/util.py
@@
 def greet(name):
+    if name is None:
+        return "Hello"
     return "Hello, " + name.title()
*** End Patch
"""


@pytest.fixture
def cli(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, api_key: str) -> Iterator[Harness]:
    """The codex CLI pointed at its fakes (`cli.fake(script)`), in an isolated environment."""
    yield from harness(CASE, request, monkeypatch, tmp_path, api_key)


def _tools(body: dict[str, Any]) -> list[str]:
    return [str(t.get("name") or t.get("type")) for t in body.get("tools", [])]


def test_recall_edit_and_finish_end_to_end(
    codex_bin: str, make_input: Callable[..., AgentInput], repo: Path, tmp_path: Path,
    cli: Harness, api_key: str,
) -> None:
    issue = "greet() crashes on None: greet(None) raises AttributeError: 'NoneType' object has no attribute 'title'."
    fake = cli.fake([
        [tool_search("recall notes from earlier tasks")],
        [mcp_call("memory", "recall", {"query": issue, "repo": "demo/pkg", "k": 3})],
        [exec_command("cat pkg/missing.py")],  # fails: no such file
        [apply_patch(GREET_PATCH)],
        [exec_command("printf \"NONE_GREETING = 'Hello'\\n\" > pkg/compat.py")],
        [text("Fixed greet() for None.")],
    ])
    recall = MiniRecall([Item("m1", 1, 2.5, "greet None", "guard None before .title()", outcome="resolved")],
                        tmp_path / "recall")
    inp = make_input(issue=issue, recall=recall, stage="plugin-blank",
                     prompt_style="recall", model=MODEL, budget=Budget(timeout_s=120))

    # --strict-config: codex refuses a config.toml key it does not know, so every key we write is real.
    result = CodexAgent(executable=codex_bin, max_retries=0, extra_args=["--strict-config"]).run(inp)

    assert result.exit == "completed", result.error
    assert result.exit_code == 0 and result.error is None
    # the MCP recall really ran, through the CLI, with what the model asked
    assert recall.calls() == [{"via": "mcp", "query": issue, "repo": "demo/pkg", "k": 3}]
    assert result.tool_calls == [
        ToolCall("mcp__memory__recall"),
        ToolCall("command_execution", error=True),
        ToolCall("file_change"),
        ToolCall("command_execution"),
    ]
    assert result.turns == 6  # model responses, from codex's session file
    assert result.tokens == {"input": 540, "output": 120, "cache_read": 60, "cache_creation": 0, "reasoning": 30}
    assert result.cost_usd is None and result.model == MODEL
    # the patch is the real diff of the edits the fake asked for
    assert "+    if name is None:\n+        return \"Hello\"\n" in result.patch
    assert "+++ b/pkg/compat.py" in result.patch and "+NONE_GREETING = 'Hello'" in result.patch
    assert (repo / "pkg" / "util.py").read_text().count("if name is None") == 1
    # the transcript is codex's own session file, with its thread id and the final message
    assert result.session_id and result.session_id.encode() in result.transcript
    assert b'"mcp__memory"' in result.transcript
    assert final_message(result.transcript.decode()) == "Fixed greet() for None."
    # the recall result went back to the model
    assert "guard None before .title()" in tool_outputs(fake.api_requests[2].body)[0]  # tool search answers apart
    # the prompt had the agent recall with the issue text before editing
    first = fake.api_requests[0].body
    assert first["model"] == MODEL and first["stream"] is True
    first_user = json.dumps([m for m in first["input"] if m.get("role") == "user"][-1])
    assert "mcp__memory__recall" in first_user and json.dumps(issue)[1:-1] in first_user
    assert {"exec_command", "apply_patch", "tool_search"} <= set(_tools(first))
    assert "web_search" not in _tools(first)  # the network is for the model API only
    # what the CLI asked of the API: one streamed response per model call, with our key
    assert {(r.method, r.path) for r in fake.requests} == {("POST", "/v1/responses")}
    assert len(fake.api_requests) == 6
    assert all(r.credential == f"Bearer {api_key}" for r in fake.api_requests)
    # the config we wrote names the key's variable, never the key
    config = (inp.scratch_dir / "codex-home" / "config.toml").read_text()
    assert tomllib.loads(config)["model_providers"]["swecl"]["env_key"] == "OPENAI_API_KEY"
    # and the key is nowhere we keep anything
    no_secret_anywhere(result, inp.scratch_dir, api_key, tmp_path / "home")


def test_the_agents_commands_never_see_the_key(
    codex_bin: str, make_input: Callable[..., AgentInput], cli: Harness, api_key: str,
) -> None:
    # The model makes the agent print the key (as a prompt-injected issue might); codex
    # leaves variables named like keys out of its commands' environment.
    fake = cli.fake([
        [exec_command("echo key=$OPENAI_API_KEY > leaked.txt; echo key=$OPENAI_API_KEY")],
        [text("done")],
    ])
    inp = make_input(model=MODEL, budget=Budget(timeout_s=120))
    result = CodexAgent(executable=codex_bin, max_retries=0).run(inp)
    assert result.exit == "completed", result.error
    assert result.tool_calls == [ToolCall("command_execution")]
    assert "key=\n" in tool_outputs(fake.api_requests[1].body)[0]
    assert api_key not in json.dumps(fake.api_requests[1].body)
    assert "+key=\n" in result.patch
    no_secret_anywhere(result, inp.scratch_dir, api_key)


def test_builtin_agents_md_carries_across_tasks(
    codex_bin: str, make_input: Callable[..., AgentInput], tmp_path: Path, cli: Harness,
) -> None:
    memory_dir = tmp_path / "builtin-v1-seq"
    cli.fake(lambda body: write_agents_md(body, "- greet(None) needs a guard")
             if not tool_outputs(body) else [text("Noted.")])
    agent = CodexAgent(executable=codex_bin, max_retries=0)
    first = agent.run(make_input(model=MODEL, stage="builtin",
                                 memory_dir=memory_dir, budget=Budget(timeout_s=120)))
    assert first.exit == "completed", first.error
    assert first.memory_files == {"AGENTS.md": "- greet(None) needs a guard"}
    assert (memory_dir / "auto-memory" / "AGENTS.md").read_text() == "- greet(None) needs a guard"
    assert first.patch == ""  # the memory lives outside the worktree

    fake2 = cli.fake(lambda body: write_agents_md(body, "- total() sums a list")
                  if not tool_outputs(body) else [text("Seen my notes.")])
    second = agent.run(make_input(model=MODEL, stage="builtin",
                                  memory_dir=memory_dir, worktree=build_repo(tmp_path / "repo2"),
                                  scratch_dir=tmp_path / "scratch2", budget=Budget(timeout_s=120)))
    assert second.exit == "completed", second.error
    assert second.memory_files == {"AGENTS.md": "- greet(None) needs a guard\n- total() sums a list"}
    # codex loaded the kept AGENTS.md into the next task's context, as instructions
    first_request = json.dumps(fake2.api_requests[0].body)
    assert "# AGENTS.md instructions" in first_request and "greet(None) needs a guard" in first_request


def test_no_memory_no_mcp_server_and_no_memory_instructions(
    codex_bin: str, make_input: Callable[..., AgentInput], cli: Harness,
) -> None:
    fake = cli.fake([[text("nothing to do")]])
    inp = make_input(model=MODEL, budget=Budget(timeout_s=120))
    result = CodexAgent(executable=codex_bin, max_retries=0).run(inp)
    assert result.exit == "completed", result.error
    config = tomllib.loads((inp.scratch_dir / "codex-home" / "config.toml").read_text())
    assert "mcp_servers" not in config and "developer_instructions" not in config
    body = json.dumps(fake.api_requests[0].body)
    assert "mcp__memory" not in body and "AGENTS.md instructions" not in body
