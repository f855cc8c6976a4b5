"""The stream-json parser and the exit classification, over every shared real capture."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents._stream_json import classify, parse_stream, parse_stream_text
from ledger.events import ToolCall

CAPTURES = (
    "claude_fakeapi_bare.json",
    "claude_fakeapi_stream.jsonl",
    "claude_fakeapi_streamin.jsonl",
    "claude_noauth_json.json",
    "claude_noauth_stream.jsonl",
)


def _capture(shared: Path, name: str) -> str:
    return (shared / "fixtures" / "claude-cli" / name).read_text()


def test_every_capture_is_covered(shared: Path) -> None:
    found = {p.name for p in (shared / "fixtures" / "claude-cli").glob("claude_*.json*")}
    assert found == set(CAPTURES), "a new capture needs a parser test"


def test_stream_with_mcp_recall(shared: Path) -> None:
    s = parse_stream_text(_capture(shared, "claude_fakeapi_stream.jsonl"))
    assert s.session_id == "08ed3454-c775-4a5e-85d9-8f29c650f3fc"
    assert s.model == "claude-fake"
    assert s.mcp_servers == {"memory": "connected"}
    assert s.tool_calls == [ToolCall("mcp__memory__recall", error=False)]
    assert s.turns == 2 and s.cost_usd == pytest.approx(0.002)
    assert s.tokens == {"input": 200, "output": 40, "cache_read": 0, "cache_creation": 0}
    assert s.terminal_reason == "completed" and s.is_error is False
    assert s.final_text == "Recalled prior fix; done." == s.result_text
    assert s.hooks == ["SessionStart"]
    assert classify(s, 0, timed_out=False) == ("completed", None)


def test_json_result_alone(shared: Path) -> None:
    s = parse_stream_text(_capture(shared, "claude_fakeapi_bare.json"))
    assert s.has_result and s.turns == 2 and s.tool_calls == []
    assert s.session_id == "febc16f0-3374-466d-b10e-12228b2d0bd0"
    assert classify(s, 0, timed_out=False) == ("completed", None)


def test_stream_input_run(shared: Path) -> None:
    s = parse_stream_text(_capture(shared, "claude_fakeapi_streamin.jsonl"))
    assert s.turns == 1 and s.tokens["input"] == 100 and s.tokens["output"] == 20
    assert s.mcp_servers == {}
    assert classify(s, 0, timed_out=False) == ("completed", None)


@pytest.mark.parametrize("name", ["claude_noauth_json.json", "claude_noauth_stream.jsonl"])
def test_not_logged_in_is_auth_failed_although_subtype_says_success(shared: Path, name: str) -> None:
    s = parse_stream_text(_capture(shared, name))
    assert s.subtype == "success" and s.is_error is True
    kind, error = classify(s, 1, timed_out=False)
    assert kind == "auth_failed" and error is not None and "Not logged in" in error
    # even an exit code of 0 does not make it a success
    assert classify(s, 0, timed_out=False)[0] == "auth_failed"
    assert s.cost_usd == 0 and s.tokens["input"] == 0


def test_noauth_stream_records_the_assistant_error(shared: Path) -> None:
    s = parse_stream_text(_capture(shared, "claude_noauth_stream.jsonl"))
    assert s.assistant_errors == ["authentication_failed"]
    assert s.mcp_servers == {"memory": "pending"}
    assert s.turns == 1


def _result(**fields: object) -> str:
    base = {"type": "result", "subtype": "success", "is_error": False, "num_turns": 1,
            "session_id": "s", "total_cost_usd": 0.01, "terminal_reason": "completed",
            "usage": {"input_tokens": 5, "output_tokens": 6, "cache_read_input_tokens": 7,
                      "cache_creation_input_tokens": 8}}
    base.update(fields)
    return json.dumps(base)


def test_classification_rules() -> None:
    def kind(text: str, code: int | None = 0, timed_out: bool = False) -> str:
        return classify(parse_stream_text(text), code, timed_out=timed_out)[0]

    assert kind(_result()) == "completed"
    assert kind(_result(subtype="error_max_turns", is_error=True, terminal_reason="max_turns",
                        errors=["Reached maximum number of turns (1)"]), 1) == "max_turns"
    assert kind(_result(subtype="error_max_budget_usd", is_error=True, terminal_reason=None), 1) == "budget"
    assert kind(_result(is_error=True, api_error_status=401, result="Invalid API key"), 1) == "auth_failed"
    assert kind(_result(is_error=True, result="Overloaded"), 1) == "error"
    assert kind(_result(subtype="error_during_execution", is_error=False), 1) == "error"
    assert kind(_result(), 1) == "error"  # success claimed, yet the CLI failed
    assert kind("", 1) == "crashed"
    assert kind("", -9) == "crashed"
    assert kind("garbage\n{not json", 0) == "error"
    assert kind(_result(), None, timed_out=True) == "timeout"
    assert kind("", None, timed_out=True) == "timeout"


def test_result_usage_is_used_without_model_usage() -> None:
    s = parse_stream_text(_result())
    assert s.tokens == {"input": 5, "output": 6, "cache_read": 7, "cache_creation": 8}


def test_partial_run_without_result_counts_streamed_messages() -> None:
    lines = [
        {"type": "system", "subtype": "init", "session_id": "abc", "model": "m", "mcp_servers": []},
        {"type": "assistant", "session_id": "abc", "parent_tool_use_id": None,
         "message": {"id": "m1", "model": "m", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}],
                     "usage": {"input_tokens": 10, "output_tokens": 1}}},
        {"type": "user", "session_id": "abc",
         "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": True, "content": "x"}]}},
        # the same API message again (one line per content block): counted once
        {"type": "assistant", "session_id": "abc", "parent_tool_use_id": None,
         "message": {"id": "m2", "model": "m", "content": [{"type": "tool_use", "id": "t2", "name": "Edit", "input": {}}],
                     "usage": {"input_tokens": 20, "output_tokens": 2}}},
        {"type": "assistant", "session_id": "abc", "parent_tool_use_id": None,
         "message": {"id": "m2", "model": "m", "content": [{"type": "text", "text": "more"}],
                     "usage": {"input_tokens": 20, "output_tokens": 2}}},
        {"type": "system", "subtype": "api_retry", "attempt": 1, "error_status": 529, "error": "overloaded"},
    ]
    s = parse_stream(json.dumps(line).encode() for line in lines)
    assert s.session_id == "abc" and not s.has_result
    assert s.tool_calls == [ToolCall("Read", error=True), ToolCall("Edit", error=False)]
    assert s.turns == 2
    assert s.tokens == {"input": 30, "output": 3, "cache_read": 0, "cache_creation": 0}
    kind, error = classify(s, None, timed_out=True)
    assert kind == "timeout" and error is not None and "overloaded 529" in error
