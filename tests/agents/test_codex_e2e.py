"""The codex adapter end to end: the real `codex` CLI (npm, pinned version) against a loopback
fake of OpenAI's Responses API, with a real git worktree and real MCP recall (`swecl run
--agent codex` is tests/run/test_codex_run.py, the stream parser test_codex_events.py).

The fake model uses codex's own tools as a real model would: `tool_search` to find the
deferred MCP tool, `recall` in the `mcp__memory` namespace, the freeform `apply_patch` tool
and `exec_command`. The model name is one of the CLI's catalog (gpt-5.5), so codex offers
the tool set it offers that model on the real service.
"""

from __future__ import annotations

import json
import sys
import time
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agents._codex import CodexAgent
from agents._protocol import AgentInput, Budget
from ledger import SweclError
from ledger.events import ToolCall
from projections.show import final_message

from .cli_scenarios import (
    LESSON,
    BrokenRecall,
    isolate,
    ledger_with_a_lesson,
    no_secret_anywhere,
    processes_mentioning,
    start_fakes,
    the_lesson_was_recalled,
)
from .conftest import build_repo
from .fake_openai import (
    MODEL,
    FakeOpenAI,
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
def codex_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, api_key: str) -> Callable[[FakeOpenAI], None]:
    """Point the CLI at a fake, in an isolated environment."""
    isolate(monkeypatch, tmp_path, ("CODEX_API_KEY", "CODEX_HOME", "OPENAI_ORGANIZATION", "OPENAI_PROJECT", "RUST_LOG"))

    def point(fake: FakeOpenAI) -> None:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.url)
        monkeypatch.setenv("OPENAI_API_KEY", api_key)

    return point


@pytest.fixture
def fakes() -> Iterator[Callable[..., FakeOpenAI]]:
    yield from start_fakes(FakeOpenAI)


def _tools(body: dict[str, Any]) -> list[str]:
    return [str(t.get("name") or t.get("type")) for t in body.get("tools", [])]


def test_recall_edit_and_finish_end_to_end(
    codex_bin: str, make_input: Callable[..., AgentInput], repo: Path, tmp_path: Path,
    fakes: Callable[..., FakeOpenAI], codex_env: Callable[[FakeOpenAI], None], api_key: str,
) -> None:
    issue = "greet() crashes on None: greet(None) raises AttributeError: 'NoneType' object has no attribute 'title'."
    fake = fakes([
        [tool_search("recall notes from earlier tasks")],
        [mcp_call("memory", "recall", {"query": issue, "repo": "demo/pkg", "k": 3})],
        [exec_command("cat pkg/missing.py")],  # fails: no such file
        [apply_patch(GREET_PATCH)],
        [exec_command("printf \"NONE_GREETING = 'Hello'\\n\" > pkg/compat.py")],
        [text("Fixed greet() for None.")],
    ])
    codex_env(fake)
    recall = MiniRecall([Item("m1", 1, 2.5, "greet None", "guard None before .title()", outcome="resolved")],
                        tmp_path / "recall")
    inp = make_input(issue=issue, recall=recall, memory_mode="plugin-real", stage="plugin-blank",
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
    codex_bin: str, make_input: Callable[..., AgentInput], fakes: Callable[..., FakeOpenAI],
    codex_env: Callable[[FakeOpenAI], None], api_key: str,
) -> None:
    # The model makes the agent print the key (as a prompt-injected issue might); codex
    # leaves variables named like keys out of its commands' environment.
    fake = fakes([
        [exec_command("echo key=$OPENAI_API_KEY > leaked.txt; echo key=$OPENAI_API_KEY")],
        [text("done")],
    ])
    codex_env(fake)
    inp = make_input(model=MODEL, budget=Budget(timeout_s=120))
    result = CodexAgent(executable=codex_bin, max_retries=0).run(inp)
    assert result.exit == "completed", result.error
    assert result.tool_calls == [ToolCall("command_execution")]
    assert "key=\n" in tool_outputs(fake.api_requests[1].body)[0]
    assert api_key not in json.dumps(fake.api_requests[1].body)
    assert "+key=\n" in result.patch
    no_secret_anywhere(result, inp.scratch_dir, api_key)


def test_a_missing_key_is_auth_failed(
    codex_bin: str, make_input: Callable[..., AgentInput], fakes: Callable[..., FakeOpenAI],
    codex_env: Callable[[FakeOpenAI], None], monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = fakes([[text("must never be asked")]])
    codex_env(fake)
    monkeypatch.delenv("OPENAI_API_KEY")
    result = CodexAgent(executable=codex_bin, max_retries=0).run(make_input(model=MODEL))
    assert result.exit == "auth_failed" and "OPENAI_API_KEY" in (result.error or "")
    assert result.exit_code == 1 and result.patch == "" and result.cost_usd is None
    assert fake.api_requests == []


def test_a_rejected_key_is_auth_failed(
    codex_bin: str, make_input: Callable[..., AgentInput], fakes: Callable[..., FakeOpenAI],
    codex_env: Callable[[FakeOpenAI], None], api_key: str,
) -> None:
    fake = fakes(mode="unauthorized")
    codex_env(fake)
    inp = make_input(model=MODEL)
    result = CodexAgent(executable=codex_bin, max_retries=0).run(inp)
    assert result.exit == "auth_failed" and "401 Unauthorized" in (result.error or "")
    assert len(fake.api_requests) == 1
    no_secret_anywhere(result, inp.scratch_dir, api_key)


def test_hanging_api_is_a_timeout_and_the_process_group_is_gone(
    codex_bin: str, make_input: Callable[..., AgentInput], tmp_path: Path, fakes: Callable[..., FakeOpenAI],
    codex_env: Callable[[FakeOpenAI], None],
) -> None:
    fake = fakes(mode="hang")
    codex_env(fake)
    recall = MiniRecall([], tmp_path / "recall")  # an MCP child too: it must die with the CLI
    inp = make_input(model=MODEL, recall=recall, memory_mode="plugin-real", budget=Budget(timeout_s=15))
    started = time.monotonic()
    result = CodexAgent(executable=codex_bin, max_retries=0).run(inp)
    assert time.monotonic() - started < 45
    assert result.exit == "timeout" and result.exit_code is None
    assert len(fake.api_requests) >= 1
    assert result.session_id  # thread.started came before the hang
    # neither the CLI (its CODEX_HOME is in tmp_path) nor its MCP server (the recall dir) survives
    assert processes_mentioning(str(tmp_path)) == []


def test_builtin_agents_md_carries_across_tasks(
    codex_bin: str, make_input: Callable[..., AgentInput], tmp_path: Path, fakes: Callable[..., FakeOpenAI],
    codex_env: Callable[[FakeOpenAI], None],
) -> None:
    memory_dir = tmp_path / "builtin-v1-seq"
    fake = fakes(lambda body: write_agents_md(body, "- greet(None) needs a guard")
                 if not tool_outputs(body) else [text("Noted.")])
    codex_env(fake)
    agent = CodexAgent(executable=codex_bin, max_retries=0)
    first = agent.run(make_input(model=MODEL, memory_mode="builtin", stage="builtin",
                                 memory_dir=memory_dir, budget=Budget(timeout_s=120)))
    assert first.exit == "completed", first.error
    assert first.memory_files == {"AGENTS.md": "- greet(None) needs a guard"}
    assert (memory_dir / "auto-memory" / "AGENTS.md").read_text() == "- greet(None) needs a guard"
    assert first.patch == ""  # the memory lives outside the worktree

    fake2 = fakes(lambda body: write_agents_md(body, "- total() sums a list")
                  if not tool_outputs(body) else [text("Seen my notes.")])
    codex_env(fake2)
    second = agent.run(make_input(model=MODEL, memory_mode="builtin", stage="builtin",
                                  memory_dir=memory_dir, worktree=build_repo(tmp_path / "repo2"),
                                  scratch_dir=tmp_path / "scratch2", budget=Budget(timeout_s=120)))
    assert second.exit == "completed", second.error
    assert second.memory_files == {"AGENTS.md": "- greet(None) needs a guard\n- total() sums a list"}
    # codex loaded the kept AGENTS.md into the next task's context, as instructions
    first_request = json.dumps(fake2.api_requests[0].body)
    assert "# AGENTS.md instructions" in first_request and "greet(None) needs a guard" in first_request


def test_no_memory_no_mcp_server_and_no_memory_instructions(
    codex_bin: str, make_input: Callable[..., AgentInput], fakes: Callable[..., FakeOpenAI],
    codex_env: Callable[[FakeOpenAI], None],
) -> None:
    fake = fakes([[text("nothing to do")]])
    codex_env(fake)
    inp = make_input(model=MODEL, budget=Budget(timeout_s=120))
    result = CodexAgent(executable=codex_bin, max_retries=0).run(inp)
    assert result.exit == "completed", result.error
    config = tomllib.loads((inp.scratch_dir / "codex-home" / "config.toml").read_text())
    assert "mcp_servers" not in config and "developer_instructions" not in config
    body = json.dumps(fake.api_requests[0].body)
    assert "mcp__memory" not in body and "AGENTS.md instructions" not in body


def test_primed_natural_prompt_holds_the_recalled_notes(
    codex_bin: str, make_input: Callable[..., AgentInput], tmp_path: Path, fakes: Callable[..., FakeOpenAI],
    codex_env: Callable[[FakeOpenAI], None],
) -> None:
    fake = fakes([[text("Nothing to change.")]])
    codex_env(fake)
    recall = MiniRecall([Item("m1", 1, 1.0, "greet None", "guard None before .title()", outcome="resolved")],
                        tmp_path / "recall")
    inp = make_input(model=MODEL, recall=recall, memory_mode="plugin-real", stage="plugin-primed",
                     prompt_style="natural", budget=Budget(timeout_s=120))
    result = CodexAgent(executable=codex_bin, max_retries=0).run(inp)
    assert result.exit == "completed", result.error
    sent = json.dumps(fake.api_requests[0].body["input"])
    assert "guard None before .title()" in sent and "You have worked in the demo/pkg repository before" in sent
    assert recall.calls() == [{"via": "inproc", "query": inp.issue, "repo": "demo/pkg", "k": 5}]


def test_ledger_recall_through_the_project_recall_service(
    codex_bin: str, make_input: Callable[..., AgentInput], tmp_path: Path, fakes: Callable[..., FakeOpenAI],
    codex_env: Callable[[FakeOpenAI], None],
) -> None:
    ledger_path = tmp_path / "ledger.db"
    service = ledger_with_a_lesson(ledger_path)
    issue = "greet() crashes on None"
    fake = fakes([
        [tool_search("recall")],
        [mcp_call("memory", "recall", {"query": issue, "repo": "demo/pkg", "k": 3})],
        [text("done")],
    ])
    codex_env(fake)
    inp = make_input(issue=issue, recall=service, memory_mode="plugin-real", stage="plugin-blank",
                     prompt_style="recall", model=MODEL, budget=Budget(timeout_s=120))
    result = CodexAgent(executable=codex_bin, max_retries=0).run(inp)
    assert result.exit == "completed", result.error
    assert result.tool_calls == [ToolCall("mcp__memory__recall")]
    the_lesson_was_recalled(ledger_path, issue)
    assert LESSON in tool_outputs(fake.api_requests[2].body)[0]


def test_a_memory_server_that_fails_to_start_makes_the_run_an_error(
    codex_bin: str, make_input: Callable[..., AgentInput], fakes: Callable[..., FakeOpenAI],
    codex_env: Callable[[FakeOpenAI], None],
) -> None:
    fake = fakes([[text("done without memory")]])
    codex_env(fake)
    result = CodexAgent(executable=codex_bin, max_retries=0).run(
        make_input(model=MODEL, recall=BrokenRecall(), memory_mode="plugin-real", budget=Budget(timeout_s=120))
    )
    assert result.exit == "error"
    assert (result.error or "").startswith("the memory MCP server failed to start: the run had no recall (")
    assert "required MCP servers failed to initialize: memory" in (result.error or "")
    assert fake.api_requests == []  # codex never started the turn


def test_blind_mode_is_refused_in_one_line(make_input: Callable[..., AgentInput]) -> None:
    with pytest.raises(SweclError, match="the codex agent has no blind mode") as info:
        CodexAgent(executable=sys.executable).run(make_input(code_mode="blind"))
    assert "\n" not in str(info.value)
