from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from agents._claude import ClaudeAgent
from agents._demo import DemoAgent
from agents._oracle import OracleAgent
from agents._protocol import AgentInput, AgentResult, Recall
from agents._registry import AGENTS, get_agent
from ledger import Ledger, SweclError
from ledger.events import AgentFinished, ToolCall

from .mini_recall import MiniRecall


def test_registry_lists_and_builds_every_agent() -> None:
    names = [n for n, _ in AGENTS]
    assert names == ["demo", "oracle", "predictions", "claude", "codex", "gemini", "mini-swe-agent", "opencode", "command"]
    assert all(desc for _, desc in AGENTS)
    assert isinstance(get_agent("demo"), DemoAgent)
    assert isinstance(get_agent("oracle", gold={}), OracleAgent)
    assert isinstance(get_agent("claude", max_retries=0), ClaudeAgent)
    assert get_agent("command", template="x {workdir}").name == "command"
    for name in names:
        assert get_agent(name, **_minimal_options(name)).name == name


def _minimal_options(name: str) -> dict[str, object]:
    return {"oracle": {"gold": {}}, "predictions": {"predictions": {}}, "command": {"template": "x"}}.get(name, {})


def test_registry_errors_are_one_line_user_errors() -> None:
    with pytest.raises(SweclError, match="unknown agent 'gpt': choose one of demo, oracle"):
        get_agent("gpt")
    with pytest.raises(SweclError, match="agent 'oracle' cannot be built with options"):
        get_agent("oracle", gold={}, colour="red")


def test_input_validation(make_input: Callable[..., AgentInput]) -> None:
    with pytest.raises(SweclError, match="code_mode 'sighted'"):
        make_input(code_mode="sighted")
    with pytest.raises(SweclError, match="prompt_style"):
        make_input(prompt_style="loud")


def test_input_never_carries_grading_secrets() -> None:
    fields = set(AgentInput.__dataclass_fields__)
    for secret in ("gold", "patch", "test_patch", "FAIL_TO_PASS", "PASS_TO_PASS", "fail_to_pass", "pass_to_pass"):
        assert secret not in fields


def test_mini_recall_satisfies_the_recall_protocol(tmp_path: Path) -> None:
    assert isinstance(MiniRecall([], tmp_path), Recall)


def test_result_becomes_an_agent_finished_event_in_a_real_ledger(tmp_path: Path) -> None:
    result = AgentResult(
        patch="diff --git a/x b/x\n",
        exit="max_turns",
        exit_code=1,
        turns=3,
        tool_calls=[ToolCall("Read"), ToolCall("Edit", error=True)],
        tokens={"input": 1, "output": 2, "cache_read": 3, "cache_creation": 4},
        cost_usd=0.5,
        duration_s=1.5,
        transcript=b'{"type":"result"}\n',
        prompt="fix it",
        session_id="sid",
        error="Reached maximum number of turns (3)",
        model="claude-sonnet-4-6",
    )
    with Ledger.open(tmp_path / "ledger.db", create=True) as ledger:
        event = result.to_event(ledger.put_blob, agent="claude", sequence_id="seq", instance_id="i-1", order=1, pass_="initial")
        ledger.append("run/v1/seq/i-1", [event])
        stored = [r.event for r in ledger.read(types=["agent.finished"])]
        assert stored == [event]
        got = stored[0]
        assert isinstance(got, AgentFinished)
        assert ledger.get_blob(got.patch or "") == b"diff --git a/x b/x\n"
        assert ledger.get_blob(got.transcript or "") == b'{"type":"result"}\n'
        assert ledger.get_blob(got.prompt or "") == b"fix it"
        assert got.exit == "max_turns" and got.tool_calls[1].error and got.tokens["cache_creation"] == 4
    empty = AgentResult().to_event(lambda b: "unused", agent="demo", sequence_id="s", instance_id="i", order=1, pass_="initial")
    assert empty.patch is None and empty.transcript is None and empty.prompt is None


def test_result_refuses_an_unknown_exit() -> None:
    with pytest.raises(ValueError):
        AgentResult(exit="success")  # type: ignore[arg-type]
