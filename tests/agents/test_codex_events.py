"""The codex stream and session-file readers over real captures of codex 0.169.0, and the
config.toml writer (no CLI needed)."""

from __future__ import annotations

import json
import tomllib

from agents._codex import render_config
from agents._codex_events import classify, parse_events, read_rollout
from ledger.events import ToolCall
from projections.show import final_message

CAPTURED_RUN = """\
{"type":"thread.started","thread_id":"01a20d84-9fc8-7141-ae91-6a0a33a96805"}
{"type":"turn.started"}
{"type":"item.started","item":{"id":"item_0","type":"mcp_tool_call","server":"memory","tool":"recall",\
"arguments":{"query":"greet None","repo":"demo/pkg","k":3},"result":null,"error":null,"status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_0","type":"mcp_tool_call","server":"memory","tool":"recall",\
"arguments":{"query":"greet None","repo":"demo/pkg","k":3},"result":{"content":[{"type":"text","text":"[]"}],\
"structured_content":{"result":[]}},"error":null,"status":"completed"}}
{"type":"item.started","item":{"id":"item_1","type":"file_change","changes":[{"path":"/tmp/cx/wt/a.txt","kind":"update"}],\
"status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_1","type":"file_change","changes":[{"path":"/tmp/cx/wt/a.txt","kind":"update"}],\
"status":"completed"}}
{"type":"item.started","item":{"id":"item_2","type":"command_execution","command":"/bin/bash -lc 'cat a.txt'",\
"aggregated_output":"","exit_code":null,"status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_2","type":"command_execution","command":"/bin/bash -lc 'cat a.txt'",\
"aggregated_output":"hello\\n","exit_code":0,"status":"completed"}}
{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"All done."}}
{"type":"turn.completed","usage":{"input_tokens":500,"cached_input_tokens":50,"cache_write_input_tokens":0,\
"output_tokens":100,"reasoning_output_tokens":25}}
"""
CAPTURED_NO_KEY = """\
{"type":"thread.started","thread_id":"01a20d86-5ce6-7153-92b4-fbd026fbcea2"}
{"type":"turn.started"}
{"type":"error","message":"Missing environment variable: `OPENAI_API_KEY`."}
{"type":"turn.failed","error":{"message":"Missing environment variable: `OPENAI_API_KEY`."}}
"""


def test_the_stream_of_a_completed_run() -> None:
    s = parse_events(CAPTURED_RUN.splitlines())
    assert s.thread_id == "01a20d84-9fc8-7141-ae91-6a0a33a96805" and s.completed and s.bad_lines == 0
    assert s.tool_calls == [ToolCall("mcp__memory__recall"), ToolCall("file_change"), ToolCall("command_execution")]
    assert s.tokens == {"input": 450, "output": 100, "cache_read": 50, "cache_creation": 0, "reasoning": 25}
    assert s.final_text == "All done." == final_message(CAPTURED_RUN)
    assert classify(s, 0, timed_out=False) == ("completed", None)
    assert classify(s, 3, timed_out=False) == ("error", "the turn completed but the CLI exited 3")
    assert classify(s, None, timed_out=True)[0] == "timeout"


def test_a_missing_key_is_classified_auth_failed() -> None:
    s = parse_events(CAPTURED_NO_KEY.splitlines())
    assert not s.completed and s.tool_calls == [] and s.tokens == {}
    assert classify(s, 1, timed_out=False) == ("auth_failed", "Missing environment variable: `OPENAI_API_KEY`.")


def test_a_run_that_ends_without_its_turn() -> None:
    started = parse_events(CAPTURED_NO_KEY.splitlines()[:2] + ['{"type":"error","message":"Reconnecting... 1/5"}', "garbage"])
    assert started.bad_lines == 1
    assert classify(started, -9, timed_out=False) == ("crashed", "killed by signal 9 before its turn ended")
    assert classify(started, 1, timed_out=False) == (
        "crashed", "exited 1 before its turn ended (last error: Reconnecting... 1/5, 1 reported)")
    assert classify(started, 0, timed_out=False) == ("error", "exited 0 without a turn.completed event")


def test_the_session_file_gives_model_calls_and_the_model() -> None:
    lines = [
        json.dumps({"type": "session_meta", "payload": {"id": "t1"}}),
        json.dumps({"type": "turn_context", "payload": {"model": "gpt-5.5"}}),
        *(json.dumps({"type": "token_usage_record", "payload": {"response_id": f"resp_{n}"}}) for n in (0, 1, 1, 2)),
        json.dumps({"type": "event_msg", "payload": {"type": "task_complete", "last_agent_message": "Done."}}),
    ]
    facts = read_rollout(lines)
    assert (facts.turns, facts.model) == (3, "gpt-5.5")
    assert final_message("\n".join(lines)) == "Done."
    older = [json.dumps({"type": "event_msg", "payload": {"type": "token_count", "info": {"total_token_usage": {}}}})] * 2
    assert read_rollout(older).turns == 2 and read_rollout([]).turns is None


def test_the_config_is_toml_whatever_the_text() -> None:
    awkward = 'quote " backslash \\ tab \t newline \n del \x7f emoji \U0001f600 ünïcode'
    text = render_config({"mcp_servers.memory": {"command": awkward, "args": [awkward], "env": {"A-B.c": awkward}}},
                         {"developer_instructions": awkward, "flag": False, "n": 3})
    parsed = tomllib.loads(text)
    assert parsed["developer_instructions"] == awkward and parsed["flag"] is False and parsed["n"] == 3
    assert parsed["mcp_servers"]["memory"] == {"command": awkward, "args": [awkward], "env": {"A-B.c": awkward}}
