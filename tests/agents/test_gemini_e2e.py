"""The gemini adapter end to end: the real `gemini` CLI (npm, pinned version) against a
loopback fake of the Gemini API, with a real git worktree and real MCP recall (`swecl run
--agent gemini` is tests/run/test_gemini_run.py, the stream parser test_gemini_events.py;
what every such CLI must do alike, timeouts, auth failures and recall among it, is
test_cli_agents_shared.py).

The fake model uses the CLI's own tools as a real model would: `mcp_memory_recall` (the
recall tool of the `memory` MCP server, as the CLI names it), `read_file`, `replace`,
`write_file` and `run_shell_command`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agents._gemini import GeminiAgent
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
from .fake_gemini import (
    MODEL,
    declared_tools,
    function_call,
    function_responses,
    text,
    write_gemini_md,
)
from .mini_recall import Item, MiniRecall

pytestmark = pytest.mark.slow

CASE = next(c for c in CASES if c.name == "gemini")

FIX_OLD = "def greet(name):\n"
FIX_NEW = 'def greet(name):\n    if name is None:\n        return "Hello"\n'


@pytest.fixture
def cli(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, api_key: str) -> Iterator[Harness]:
    """The gemini CLI pointed at its fakes (`cli.fake(script)`), in an isolated environment."""
    yield from harness(CASE, request, monkeypatch, tmp_path, api_key)


def test_recall_edit_and_finish_end_to_end(
    gemini_bin: str, make_input: Callable[..., AgentInput], repo: Path, tmp_path: Path,
    cli: Harness, api_key: str,
) -> None:
    issue = "greet() crashes on None: greet(None) raises AttributeError: 'NoneType' object has no attribute 'title'."
    util = str(repo / "pkg" / "util.py")
    fake = cli.fake([
        [function_call("mcp_memory_recall", {"query": issue, "repo": "demo/pkg", "k": 3})],
        [function_call("read_file", {"file_path": "pkg/missing.py"})],  # fails: no such file
        [function_call("replace", {"file_path": util, "old_string": FIX_OLD, "new_string": FIX_NEW,
                                   "instruction": "return a greeting for None"})],
        [function_call("write_file", {"file_path": str(repo / "pkg" / "compat.py"), "content": "NONE_GREETING = 'Hello'\n"})],
        [text("Fixed greet() for None.")],
    ], expected_key=api_key)
    recall = MiniRecall([Item("m1", 1, 2.5, "greet None", "guard None before .title()", outcome="resolved")],
                        tmp_path / "recall")
    inp = make_input(issue=issue, recall=recall, stage="plugin-blank",
                     prompt_style="recall", model=MODEL, budget=Budget(max_turns=12, timeout_s=120))

    result = GeminiAgent(executable=gemini_bin, max_retries=0).run(inp)

    assert result.exit == "completed", result.error
    assert result.exit_code == 0 and result.error is None
    # the MCP recall really ran, through the CLI, with what the model asked
    assert recall.calls() == [{"via": "mcp", "query": issue, "repo": "demo/pkg", "k": 3}]
    assert result.tool_calls == [
        ToolCall("mcp__memory__recall"),
        ToolCall("read_file", error=True),
        ToolCall("replace"),
        ToolCall("write_file"),
    ]
    assert result.turns == 5  # model responses, from the CLI's session file
    assert result.tokens == {"input": 450, "output": 100, "cache_read": 50, "cache_creation": 0}
    assert result.cost_usd is None and result.model == MODEL
    # the patch is the real diff of the edits the fake asked for
    assert "+    if name is None:\n+        return \"Hello\"\n" in result.patch
    assert "+++ b/pkg/compat.py" in result.patch and "+NONE_GREETING = 'Hello'" in result.patch
    assert (repo / "pkg" / "util.py").read_text().count("if name is None") == 1
    # the transcript is the CLI's own session file, with its session id and the final message
    assert result.session_id and result.session_id.encode() in result.transcript
    assert b'"mcp_memory_recall"' in result.transcript
    assert final_message(result.transcript.decode()) == "Fixed greet() for None."
    # the recall result went back to the model
    assert "guard None before .title()" in json.dumps(function_responses(fake.api_requests[1].body))
    # the prompt had the agent recall with the issue text before editing
    first = fake.api_requests[0].body
    first_user = json.dumps([c for c in first["contents"] if c.get("role") == "user"])
    assert "mcp__memory__recall" in first_user and json.dumps(issue)[1:-1] in first_user
    offered = declared_tools(first)
    assert {"mcp_memory_recall", "read_file", "replace", "write_file", "run_shell_command"} <= set(offered)
    assert not {"google_web_search", "web_fetch"} & set(offered)  # the network is for the model API only
    # what the CLI asked of the API: one streamed response per model call, with our key
    assert {(r.method, r.path) for r in fake.requests} == {
        ("POST", f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse")}
    assert len(fake.api_requests) == 5
    assert all(r.credential == api_key for r in fake.api_requests)
    # the settings we wrote hold neither the key nor its value; the key is nowhere we keep anything
    settings = json.loads((inp.scratch_dir / "gemini-home" / ".gemini" / "settings.json").read_text())
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"
    assert settings["mcpServers"]["memory"]["trust"] is True
    no_secret_anywhere(result, inp.scratch_dir, api_key, tmp_path / "home")


def test_the_agents_commands_never_see_the_key(
    gemini_bin: str, make_input: Callable[..., AgentInput], cli: Harness, api_key: str,
) -> None:
    # The model makes the agent print the key (as a prompt-injected issue might); the CLI's
    # redaction leaves variables named like keys out of its shell's environment.
    fake = cli.fake([
        [function_call("run_shell_command", {"command": "echo key=$GEMINI_API_KEY > leaked.txt; echo key=$GEMINI_API_KEY",
                                             "description": "print env"})],
        [text("done")],
    ])
    inp = make_input(model=MODEL, budget=Budget(timeout_s=120))
    result = GeminiAgent(executable=gemini_bin, max_retries=0).run(inp)
    assert result.exit == "completed", result.error
    assert result.tool_calls == [ToolCall("run_shell_command")]
    assert "key=" in json.dumps(function_responses(fake.api_requests[1].body))
    assert api_key not in json.dumps(fake.api_requests[1].body)
    assert "+key=\n" in result.patch
    no_secret_anywhere(result, inp.scratch_dir, api_key)
    assert os.environ["GEMINI_API_KEY"] == api_key


def test_max_turns(
    gemini_bin: str, make_input: Callable[..., AgentInput], repo: Path, cli: Harness,
) -> None:
    # reads forever, a different file each time (the CLI stops identical calls as a loop)
    fake = cli.fake(lambda body: [function_call("read_file", {"file_path": ["README.md", "pkg/util.py", ".gitignore"][
        len(function_responses(body)) % 3]})])
    result = GeminiAgent(executable=gemini_bin, max_retries=0).run(
        make_input(model=MODEL, budget=Budget(max_turns=2, timeout_s=120))
    )
    assert result.exit == "max_turns", (result.exit, result.error)
    assert "max session turns" in (result.error or "")
    assert result.tool_calls[:2] == [ToolCall("read_file"), ToolCall("read_file")]
    assert len(fake.api_requests) == 2 and result.patch == ""


def test_builtin_gemini_md_carries_across_tasks(
    gemini_bin: str, make_input: Callable[..., AgentInput], tmp_path: Path, cli: Harness,
) -> None:
    memory_dir = tmp_path / "builtin-v1-seq"
    cli.fake(lambda body: write_gemini_md(body, "- greet(None) needs a guard")
             if not function_responses(body) else [text("Noted.")])
    agent = GeminiAgent(executable=gemini_bin, max_retries=0)
    first = agent.run(make_input(model=MODEL, stage="builtin",
                                 memory_dir=memory_dir, budget=Budget(timeout_s=120)))
    assert first.exit == "completed", first.error
    assert first.tool_calls == [ToolCall("write_file")]
    assert first.memory_files == {"GEMINI.md": "- greet(None) needs a guard"}
    assert (memory_dir / "auto-memory" / "GEMINI.md").read_text() == "- greet(None) needs a guard"
    assert first.patch == ""  # the memory lives outside the worktree

    fake2 = cli.fake(lambda body: write_gemini_md(body, "- total() sums a list")
                  if not function_responses(body) else [text("Seen my notes.")])
    second = agent.run(make_input(model=MODEL, stage="builtin",
                                  memory_dir=memory_dir, worktree=build_repo(tmp_path / "repo2"),
                                  scratch_dir=tmp_path / "scratch2", budget=Budget(timeout_s=120)))
    assert second.exit == "completed", second.error
    assert second.memory_files == {"GEMINI.md": "- greet(None) needs a guard\n- total() sums a list"}
    # the CLI loaded the kept GEMINI.md into the next task's context
    system = json.dumps(fake2.api_requests[0].body["systemInstruction"])
    assert "/gemini-home/.gemini/GEMINI.md ---" in system and "greet(None) needs a guard" in system


def test_no_memory_no_mcp_server_and_no_memory_note(
    gemini_bin: str, make_input: Callable[..., AgentInput], cli: Harness,
) -> None:
    fake = cli.fake([[text("nothing to do")]])
    inp = make_input(model=MODEL, budget=Budget(timeout_s=120))
    result = GeminiAgent(executable=gemini_bin, max_retries=0).run(inp)
    assert result.exit == "completed", result.error
    settings = json.loads((inp.scratch_dir / "gemini-home" / ".gemini" / "settings.json").read_text())
    assert "mcpServers" not in settings
    body = json.dumps(fake.api_requests[0].body)
    assert "mcp_memory" not in body and "memory file across the tasks" not in body
