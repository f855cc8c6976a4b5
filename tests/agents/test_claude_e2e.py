"""The claude adapter end to end: the real `claude` CLI (npm, pinned version) against a
loopback fake of the Messages API, with a real git worktree, real MCP recall and real hooks.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agents._claude import ClaudeAgent, hook_records
from agents._protocol import AgentInput, AgentResult, Budget
from ledger.events import ToolCall
from tests.atif_check import AtifValidator

from .cli_scenarios import (
    LESSON,
    BrokenRecall,
    isolate,
    exported_trajectory,
    ledger_with_a_lesson,
    no_secret_anywhere,
    processes_mentioning,
    recall_call_and_memory_steps,
    start_fakes,
    the_lesson_was_recalled,
    time_out_while_the_api_hangs,
)
from .conftest import GREET_FIX, build_repo
from .fake_anthropic import FakeAnthropic, text, tool_use
from .mini_recall import Item, MiniRecall

pytestmark = pytest.mark.slow

FIX_OLD = "def greet(name):\n"
FIX_NEW = 'def greet(name):\n    if name is None:\n        return "Hello"\n'


@pytest.fixture
def claude_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, api_key: str) -> Callable[[FakeAnthropic], None]:
    """Point the CLI at a fake, in an isolated environment."""
    isolate(monkeypatch, tmp_path, ("ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CODE_USE_BEDROCK",
                                    "CLAUDE_CODE_USE_VERTEX", "ANTHROPIC_MODEL"))

    def point(fake: FakeAnthropic) -> None:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", api_key)

    return point


@pytest.fixture
def fakes() -> Iterator[Callable[..., FakeAnthropic]]:
    yield from start_fakes(FakeAnthropic)


def test_recall_edit_and_hooks_end_to_end(
    claude_bin: str, make_input: Callable[..., AgentInput], repo: Path, tmp_path: Path,
    fakes: Callable[..., FakeAnthropic], claude_env: Callable[[FakeAnthropic], None], api_key: str,
    atif_validator: AtifValidator,
) -> None:
    issue = "greet() crashes on None: greet(None) raises AttributeError: 'NoneType' object has no attribute 'title'."
    util = str(repo / "pkg" / "util.py")
    fake = fakes([
        [tool_use("mcp__memory__recall", {"query": issue, "repo": "demo/pkg", "k": 3})],
        [tool_use("Edit", {"file_path": util, "old_string": FIX_OLD, "new_string": FIX_NEW})],  # not Read yet: fails
        [tool_use("Read", {"file_path": util})],
        [tool_use("Edit", {"file_path": util, "old_string": FIX_OLD, "new_string": FIX_NEW})],
        [tool_use("Write", {"file_path": str(repo / "pkg" / "compat.py"), "content": "NONE_GREETING = 'Hello'\n"})],
        [text("Fixed greet() for None.")],
    ])
    claude_env(fake)
    recall = MiniRecall([Item("m1", 1, 2.5, "greet None", "guard None before .title()", outcome="resolved")],
                        tmp_path / "recall")
    inp = make_input(issue=issue, recall=recall, stage="plugin-blank",
                     prompt_style="recall", model="claude-fake", budget=Budget(max_turns=12, timeout_s=120))

    result = ClaudeAgent(executable=claude_bin, max_retries=0).run(inp)

    assert result.exit == "completed", result.error
    assert result.exit_code == 0 and result.error is None
    # the MCP recall really ran, through the CLI, with what the model asked
    assert recall.calls() == [{"via": "mcp", "query": issue, "repo": "demo/pkg", "k": 3}]
    assert result.tool_calls == [
        ToolCall("mcp__memory__recall"),
        ToolCall("Edit", error=True),
        ToolCall("Read"),
        ToolCall("Edit"),
        ToolCall("Write"),
    ]
    assert result.turns == 6
    assert result.tokens == {"input": 600, "output": 120, "cache_read": 0, "cache_creation": 0}
    assert result.cost_usd is not None and result.cost_usd > 0
    assert result.model == "claude-fake"
    # the patch is the real diff of the edits the fake asked for
    assert "+    if name is None:\n+        return \"Hello\"\n" in result.patch
    assert "+++ b/pkg/compat.py" in result.patch and "+NONE_GREETING = 'Hello'" in result.patch
    assert (repo / "pkg" / "util.py").read_text().count("if name is None") == 1
    # the Stop hook fired and recorded the session; the transcript is the CLI's own
    records = hook_records(inp.scratch_dir)
    stops = [r for r in records if r["hook_event_name"] == "Stop"]
    assert stops and stops[0]["session_id"] == result.session_id
    transcript_path = Path(str(stops[0]["transcript_path"]))
    assert transcript_path.is_file() and transcript_path.is_relative_to(inp.scratch_dir)
    assert result.transcript and result.session_id and result.session_id.encode() in result.transcript
    assert b'"mcp__memory__recall"' in result.transcript
    # the prompt had the agent recall with the issue text before editing
    first = fake.api_requests[0].body
    first_user = json.dumps([m for m in first["messages"] if m["role"] == "user"][0])
    assert "mcp__memory__recall" in first_user and json.dumps(issue)[1:-1] in first_user
    assert "mcp__memory__recall" in [t["name"] for t in first["tools"]]
    assert first["model"] == "claude-fake"
    # what the CLI asked of the API: a warm-up HEAD and one message request per turn
    assert {(r.method, r.path.split("?")[0]) for r in fake.requests} <= {("HEAD", "/"), ("POST", "/v1/messages")}
    assert len(fake.api_requests) == 6
    assert all(r.credential == api_key for r in fake.api_requests)
    # and the key is nowhere we keep anything
    no_secret_anywhere(result, inp.scratch_dir, api_key, tmp_path / "home")
    # its transcript as ATIF: the prompt, then each call with its result on its step, usage per step
    trajectory = exported_trajectory(tmp_path / "ledger.db", result, "claude", atif_validator, tmp_path / "atif")
    steps = trajectory["steps"]
    assert steps[0]["source"] == "user" and "mcp__memory__recall" in steps[0]["message"]
    calls = [c["function_name"] for s in steps for c in s.get("tool_calls", [])]
    assert calls == ["mcp__memory__recall", "Edit", "Read", "Edit", "Write"]
    for step in steps:
        if step.get("tool_calls"):
            assert [r["source_call_id"] for r in step["observation"]["results"]] == \
                [c["tool_call_id"] for c in step["tool_calls"]]
    assert "File has not been read yet" in json.dumps(steps)
    assert steps[-1]["message"] == "Fixed greet() for None."
    assert trajectory["agent"]["model_name"] == "claude-fake" and trajectory["agent"]["version"] != "unrecorded"
    final = trajectory["final_metrics"]
    assert (final["total_prompt_tokens"], final["total_completion_tokens"]) == (600, 120)
    assert final["total_cost_usd"] == result.cost_usd
    assert sum(s.get("metrics", {}).get("completion_tokens", 0) for s in steps) == 120


def test_not_logged_in_is_auth_failed(
    claude_bin: str, make_input: Callable[..., AgentInput], fakes: Callable[..., FakeAnthropic],
    claude_env: Callable[[FakeAnthropic], None], monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = fakes([[text("must never be asked")]])
    claude_env(fake)
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    result = ClaudeAgent(executable=claude_bin, max_retries=0).run(make_input(model="claude-fake"))
    assert result.exit == "auth_failed" and "Not logged in" in (result.error or "")
    assert result.exit_code == 1 and result.patch == "" and result.cost_usd == 0
    assert fake.api_requests == []


def test_rejected_key_is_auth_failed(
    claude_bin: str, make_input: Callable[..., AgentInput], fakes: Callable[..., FakeAnthropic],
    claude_env: Callable[[FakeAnthropic], None], api_key: str,
) -> None:
    fake = fakes(mode="unauthorized")
    claude_env(fake)
    inp = make_input(model="claude-fake")
    result = ClaudeAgent(executable=claude_bin, max_retries=0).run(inp)
    assert result.exit == "auth_failed" and "Invalid API key" in (result.error or "")
    assert len(fake.api_requests) == 1
    no_secret_anywhere(result, inp.scratch_dir, api_key)


def test_max_turns(
    claude_bin: str, make_input: Callable[..., AgentInput], repo: Path, fakes: Callable[..., FakeAnthropic],
    claude_env: Callable[[FakeAnthropic], None],
) -> None:
    fake = fakes([[tool_use("Read", {"file_path": str(repo / "README.md")})]])  # reads forever
    claude_env(fake)
    result = ClaudeAgent(executable=claude_bin, max_retries=0).run(
        make_input(model="claude-fake", budget=Budget(max_turns=2, timeout_s=120))
    )
    assert result.exit == "max_turns" and "maximum number of turns (2)" in (result.error or "")
    assert result.tool_calls[:2] == [ToolCall("Read"), ToolCall("Read")]
    assert result.patch == ""


def test_budget(
    claude_bin: str, make_input: Callable[..., AgentInput], repo: Path, fakes: Callable[..., FakeAnthropic],
    claude_env: Callable[[FakeAnthropic], None],
) -> None:
    fake = fakes([[tool_use("Read", {"file_path": str(repo / "README.md")})]])
    claude_env(fake)
    result = ClaudeAgent(executable=claude_bin, max_retries=0).run(
        make_input(model="claude-fake", budget=Budget(max_cost_usd=0.0001, timeout_s=120))
    )
    assert result.exit == "budget" and "budget" in (result.error or "")
    assert result.cost_usd is not None and result.cost_usd > 0.0001
    assert result.tokens["input"] > 0  # from modelUsage: the result's own usage is empty here


def test_token_limit_ends_the_cli_and_keeps_its_patch(
    claude_bin: str, make_input: Callable[..., AgentInput], repo: Path, fakes: Callable[..., FakeAnthropic],
    claude_env: Callable[[FakeAnthropic], None], tmp_path: Path,
) -> None:
    # Each reply reports 100 input + 20 output tokens: a write, then reading forever.
    fake = fakes([
        [tool_use("Write", {"file_path": str(repo / "pkg" / "compat.py"), "content": "NONE_GREETING = 'Hello'\n"})],
        [tool_use("Read", {"file_path": str(repo / "README.md")})],
    ])
    claude_env(fake)
    result = ClaudeAgent(executable=claude_bin, max_retries=0).run(
        make_input(model="claude-fake", budget=Budget(max_turns=30, timeout_s=120, max_tokens=300))
    )
    assert result.exit == "max_tokens", (result.exit, result.error)
    assert result.exit_code is None and "token limit" in (result.error or "")
    assert result.not_started is None  # the agent's own end, not the run's
    # Ended once the stream's usage passed 300, far short of its turns. Claude Code writes a
    # message's output tokens as they grow, so how much of the third reply's 20 was on the
    # stream when the group was ended depends on timing: past the limit is what is certain.
    assert result.tokens["input"] + result.tokens["output"] > 300
    assert 3 <= len(fake.api_requests) < 30
    assert "+++ b/pkg/compat.py" in result.patch and "+NONE_GREETING = 'Hello'" in result.patch
    assert processes_mentioning(str(tmp_path)) == []


def test_hanging_api_is_a_timeout_and_the_process_group_is_gone(
    claude_bin: str, make_input: Callable[..., AgentInput], tmp_path: Path, fakes: Callable[..., FakeAnthropic],
    claude_env: Callable[[FakeAnthropic], None],
) -> None:
    def attempt(limit: float, scratch: Path) -> tuple[AgentResult, FakeAnthropic]:
        fake = fakes(mode="hang")
        claude_env(fake)
        recall = MiniRecall([], tmp_path / f"{scratch.name}-recall")  # an MCP child too: it must die with the CLI
        inp = make_input(model="claude-fake", recall=recall, scratch_dir=scratch,
                         budget=Budget(timeout_s=limit))
        return ClaudeAgent(executable=claude_bin, max_retries=0).run(inp), fake

    result, _ = time_out_while_the_api_hangs(attempt, tmp_path, start_s=15)
    assert result.session_id  # ours, passed with --session-id


def test_blind_mode_applies_the_diff_from_the_answer(
    claude_bin: str, make_input: Callable[..., AgentInput], repo: Path, fakes: Callable[..., FakeAnthropic],
    claude_env: Callable[[FakeAnthropic], None],
) -> None:
    fake = fakes([[text(f"The fix:\n\n```diff\n{GREET_FIX}```\n")]])
    claude_env(fake)
    result = ClaudeAgent(executable=claude_bin, max_retries=0).run(
        make_input(model="claude-fake", code_mode="blind", budget=Budget(timeout_s=120))
    )
    assert result.exit == "completed", result.error
    assert "+    if name is None:" in result.patch
    assert "if name is None" in (repo / "pkg" / "util.py").read_text()
    assert fake.api_requests[0].body.get("tools", []) == []  # no tools at all without memory


def test_primed_natural_invocation_over_stream_json_input(
    claude_bin: str, make_input: Callable[..., AgentInput], tmp_path: Path, fakes: Callable[..., FakeAnthropic],
    claude_env: Callable[[FakeAnthropic], None],
) -> None:
    fake = fakes([[text("Nothing to change.")]])
    claude_env(fake)
    recall = MiniRecall([Item("m1", 1, 1.0, "greet None", "guard None before .title()", outcome="resolved")],
                        tmp_path / "recall")
    inp = make_input(model="claude-fake", recall=recall, stage="plugin-primed",
                     prompt_style="natural", budget=Budget(timeout_s=120))
    result = ClaudeAgent(executable=claude_bin, max_retries=0).run(inp)
    assert result.exit == "completed", result.error
    sent = json.dumps(fake.api_requests[0].body["messages"])
    assert "guard None before .title()" in sent and "You have worked in the demo/pkg repository before" in sent
    assert recall.calls() == [{"via": "inproc", "query": inp.issue, "repo": "demo/pkg", "k": 5}]


def test_builtin_native_memory_carries_across_tasks(
    claude_bin: str, make_input: Callable[..., AgentInput], tmp_path: Path, fakes: Callable[..., FakeAnthropic],
    claude_env: Callable[[FakeAnthropic], None],
) -> None:
    memory_dir = tmp_path / "builtin-v1-seq"
    note = memory_dir / "auto-memory" / "MEMORY.md"
    fake = fakes([
        [tool_use("Write", {"file_path": str(note), "content": "- greet(None) needs a guard\n"})],
        [text("Noted.")],
    ])
    claude_env(fake)
    agent = ClaudeAgent(executable=claude_bin, max_retries=0)
    first = agent.run(make_input(model="claude-fake", stage="builtin",
                                 memory_dir=memory_dir, budget=Budget(timeout_s=120)))
    assert first.exit == "completed", first.error
    assert first.memory_files == {"MEMORY.md": "- greet(None) needs a guard\n"}
    assert first.patch == ""  # the memory lives outside the worktree

    fake2 = fakes([[text("Seen my notes.")]])
    claude_env(fake2)
    second = agent.run(make_input(model="claude-fake", stage="builtin",
                                  memory_dir=memory_dir, worktree=build_repo(tmp_path / "repo2"),
                                  scratch_dir=tmp_path / "scratch2", budget=Budget(timeout_s=120)))
    assert second.exit == "completed", second.error
    assert second.memory_files == first.memory_files
    # Claude Code loaded the kept MEMORY.md into the next task's context
    assert "greet(None) needs a guard" in json.dumps(fake2.api_requests[0].body)


def test_ledger_recall_through_the_project_recall_service(
    claude_bin: str, make_input: Callable[..., AgentInput], tmp_path: Path, fakes: Callable[..., FakeAnthropic],
    claude_env: Callable[[FakeAnthropic], None], atif_validator: AtifValidator,
) -> None:
    ledger_path = tmp_path / "ledger.db"
    service = ledger_with_a_lesson(ledger_path)
    issue = "greet() crashes on None"
    fake = fakes([[tool_use("mcp__memory__recall", {"query": issue, "repo": "demo/pkg", "k": 3})], [text("done")]])
    claude_env(fake)
    inp = make_input(issue=issue, recall=service, stage="plugin-blank",
                     prompt_style="recall", model="claude-fake", budget=Budget(timeout_s=120))
    result = ClaudeAgent(executable=claude_bin, max_retries=0).run(inp)
    assert result.exit == "completed", result.error
    assert result.tool_calls == [ToolCall("mcp__memory__recall")]
    the_lesson_was_recalled(ledger_path, issue)
    tool_result = json.dumps(fake.api_requests[1].body["messages"])
    assert LESSON in tool_result
    recall_call_and_memory_steps(exported_trajectory(ledger_path, result, "claude", atif_validator, tmp_path / "atif"))


def test_stream_and_stderr_files_are_scrubbed_even_when_the_cli_echoes_the_key(
    claude_bin: str, make_input: Callable[..., AgentInput], repo: Path, fakes: Callable[..., FakeAnthropic],
    claude_env: Callable[[FakeAnthropic], None], api_key: str,
) -> None:
    # The model makes the agent print the key (as a prompt-injected issue might).
    fake = fakes([
        [tool_use("Bash", {"command": "echo key=$ANTHROPIC_API_KEY > leaked.txt; echo key=$ANTHROPIC_API_KEY",
                           "description": "print env"})],
        [text("done")],
    ])
    claude_env(fake)
    inp = make_input(model="claude-fake", budget=Budget(timeout_s=120))
    result = ClaudeAgent(executable=claude_bin, max_retries=0).run(inp)
    assert result.exit == "completed", result.error
    assert result.tool_calls == [ToolCall("Bash")]
    # the key did reach the tool (the model saw it in the tool result) ...
    assert api_key in json.dumps(fake.api_requests[1].body)
    # ... but not the transcript, the patch (the leaked file is in the worktree!) or scratch
    assert b"[REDACTED]" in result.transcript
    assert "+++ b/leaked.txt" in result.patch
    no_secret_anywhere(result, inp.scratch_dir, api_key)
    assert os.environ["ANTHROPIC_API_KEY"] == api_key


def test_a_memory_server_that_fails_to_start_makes_the_run_an_error(
    claude_bin: str, make_input: Callable[..., AgentInput], fakes: Callable[..., FakeAnthropic],
    claude_env: Callable[[FakeAnthropic], None],
) -> None:
    fake = fakes([[text("done without memory")]])
    claude_env(fake)
    result = ClaudeAgent(executable=claude_bin, max_retries=0).run(
        make_input(model="claude-fake", recall=BrokenRecall(), budget=Budget(timeout_s=120))
    )
    assert result.exit == "error"
    assert result.error == "the memory MCP server's status at start-up was failed: the run had no recall"


def test_an_api_it_cannot_reach_is_no_model_call_and_marked_not_started(
    claude_bin: str, make_input: Callable[..., AgentInput], fakes: Callable[..., FakeAnthropic],
    claude_env: Callable[[FakeAnthropic], None],
) -> None:
    """The CLI started but never had an answer from a model: the run's failure (the
    harness records it as agent_error), not the agent's 0."""
    fake = fakes([[text("must never be asked")]])
    claude_env(fake)
    fake.stop()  # its port now refuses connections
    result = ClaudeAgent(executable=claude_bin, max_retries=0).run(make_input(model="claude-fake"))
    assert result.exit == "error" and result.exit_code == 1 and result.patch == ""
    assert not sum(result.tokens.values()) and not result.tool_calls
    assert result.not_started == "the claude CLI exited 1 before any model call"
    assert (result.error or "").endswith(result.not_started) and "Unable to connect" in (result.error or "")


class _FailsAfterOneAnswer(FakeAnthropic):
    """Answers the first model call; every later one is a server error."""

    def answer(self, handler: Any, logged: Any) -> None:
        if logged.turn >= 1:
            self.error(handler, 500, "overloaded")
        else:
            super().answer(handler, logged)


def test_a_cli_that_reached_its_model_and_then_failed_is_the_agents_own_end(
    claude_bin: str, make_input: Callable[..., AgentInput], repo: Path, fakes: Callable[..., FakeAnthropic],
    claude_env: Callable[[FakeAnthropic], None],
) -> None:
    """The same non-zero exit and no patch, but a model answered (tokens, a tool call):
    the agent ran, and its result is graded as it is."""
    fake = _FailsAfterOneAnswer(script=[[tool_use("Read", {"file_path": str(repo / "README.md")})]]).start()
    try:
        claude_env(fake)
        result = ClaudeAgent(executable=claude_bin, max_retries=0).run(make_input(model="claude-fake"))
    finally:
        fake.stop()
    assert result.exit == "error" and result.exit_code == 1 and result.patch == "", result.error
    assert result.tool_calls == [ToolCall("Read")]
    assert result.not_started is None
