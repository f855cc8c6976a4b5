"""The gemini stream and session-file readers over real captures of @google/gemini-cli
0.61.0 (no CLI needed)."""

from __future__ import annotations

import json

from agents._gemini_events import classify, gemini_tool_name, parse_events, read_session
from ledger.events import ToolCall
from projections.show import final_message

CAPTURED_RUN = """\
{"type":"init","timestamp":"2026-11-24T15:14:00.140Z","session_id":"5117448e-b9a3-439e-b533-5d32d165155b","model":"gemini-2.5-flash"}
{"type":"message","timestamp":"2026-11-24T15:14:00.141Z","role":"user","content":"You are fixing an issue."}
{"type":"tool_use","timestamp":"2026-11-24T15:14:00.348Z","tool_name":"mcp_memory_recall",\
"tool_id":"mcp_memory_recall__mcp_memory_recall_1795533240224_0","parameters":{"query":"greet None","repo":"demo/pkg","k":3}}
{"type":"tool_result","timestamp":"2026-11-24T15:14:00.440Z","tool_id":"mcp_memory_recall__mcp_memory_recall_1795533240224_0",\
"status":"success","output":"[]"}
{"type":"message","timestamp":"2026-11-24T15:14:00.450Z","role":"assistant","content":"Let me look.","delta":true}
{"type":"tool_use","timestamp":"2026-11-24T15:14:00.458Z","tool_name":"read_file","tool_id":"read_file__read_file_1795533240452_0",\
"parameters":{"file_path":"pkg/missing.py"}}
{"type":"tool_result","timestamp":"2026-11-24T15:14:00.462Z","tool_id":"read_file__read_file_1795533240452_0","status":"error",\
"output":"File not found.","error":{"type":"file_not_found","message":"File not found: /tmp/repo/pkg/missing.py"}}
{"type":"tool_use","timestamp":"2026-11-24T15:14:00.477Z","tool_name":"replace","tool_id":"replace__replace_1795533240471_0",\
"parameters":{"file_path":"/tmp/repo/pkg/util.py","old_string":"a","new_string":"b","instruction":"guard None"}}
{"type":"tool_result","timestamp":"2026-11-24T15:14:00.536Z","tool_id":"replace__replace_1795533240471_0","status":"success"}
{"type":"message","timestamp":"2026-11-24T15:14:00.628Z","role":"assistant","content":"Fixed greet","delta":true}
{"type":"message","timestamp":"2026-11-24T15:14:00.629Z","role":"assistant","content":"() for None.","delta":true}
{"type":"result","timestamp":"2026-11-24T15:14:00.630Z","status":"success","stats":{"total_tokens":600,"input_tokens":500,\
"output_tokens":100,"cached":50,"input":450,"duration_ms":490,"tool_calls":3,"models":{"gemini-2.5-flash":{"total_tokens":600,\
"input_tokens":500,"output_tokens":100,"cached":50,"input":450}}}}
"""
CAPTURED_MAX_TURNS = """\
{"type":"init","timestamp":"2026-11-24T15:18:08.871Z","session_id":"1775ce21-df8a-4bef-91ca-dff16b55514e","model":"gemini-2.5-flash"}
{"type":"tool_use","timestamp":"2026-11-24T15:18:09.185Z","tool_name":"read_file","tool_id":"read_file__read_file_1795533489000_0",\
"parameters":{"file_path":"README.md"}}
{"type":"tool_result","timestamp":"2026-11-24T15:18:09.491Z","tool_id":"read_file__read_file_1795533489000_0","status":"success","output":""}
{"type":"result","timestamp":"2026-11-24T15:18:09.538Z","status":"error","error":{"type":"FatalTurnLimitedError","message":\
"Reached max session turns for this session. Increase the number of turns by specifying maxSessionTurns in settings.json."},\
"stats":{"total_tokens":240,"input_tokens":200,"output_tokens":40,"cached":20,"input":180,"duration_ms":0,"tool_calls":2,"models":{}}}
"""
CAPTURED_REJECTED_KEY = """\
{"type":"init","timestamp":"2026-11-24T15:18:13.522Z","session_id":"19c1e98a-31fe-4e07-87e5-b2f2f48a2133","model":"gemini-2.5-flash"}
{"type":"result","timestamp":"2026-11-24T15:18:13.897Z","status":"error","error":{"type":"unknown","message":"[API Error: \
{\\"error\\":{\\"code\\":400,\\"message\\":\\"API key not valid. Please pass a valid API key.\\",\\"status\\":\\"INVALID_ARGUMENT\\"}}]"},\
"stats":{"total_tokens":0,"input_tokens":0,"output_tokens":0,"cached":0,"input":0,"duration_ms":0,"tool_calls":0,"models":{}}}
"""
# What the CLI prints, with no stream at all, when no key is set (exit 41).
STDERR_NO_KEY = """\
Invalid auth method selected.
When using Gemini API, you must specify the GEMINI_API_KEY environment variable.
Update your environment and try again (no reload needed if using .env)!
"""


def test_the_stream_of_a_completed_run() -> None:
    s = parse_events(CAPTURED_RUN.splitlines(), ["memory"])
    assert s.session_id == "5117448e-b9a3-439e-b533-5d32d165155b" and s.model == "gemini-2.5-flash"
    assert s.succeeded and s.bad_lines == 0
    assert s.tool_calls == [ToolCall("mcp__memory__recall"), ToolCall("read_file", error=True), ToolCall("replace")]
    assert s.tokens == {"input": 450, "output": 100, "cache_read": 50, "cache_creation": 0}
    assert s.final_text == "Fixed greet() for None." == final_message(CAPTURED_RUN)
    assert classify(s, 0, timed_out=False) == ("completed", None)
    assert classify(s, 3, timed_out=False) == ("error", "the session succeeded but the CLI exited 3")
    assert classify(s, None, timed_out=True)[0] == "timeout"
    # without the server named, an MCP tool keeps the CLI's name
    assert parse_events(CAPTURED_RUN.splitlines()).tool_calls[0] == ToolCall("mcp_memory_recall")


def test_the_turn_limit_is_max_turns() -> None:
    s = parse_events(CAPTURED_MAX_TURNS.splitlines())
    assert not s.succeeded and s.error_type == "FatalTurnLimitedError"
    assert s.tool_calls == [ToolCall("read_file")] and s.tokens["input"] == 180
    kind, message = classify(s, 53, timed_out=False)
    assert kind == "max_turns" and "max session turns" in (message or "")


def test_a_rejected_or_missing_key_is_auth_failed() -> None:
    s = parse_events(CAPTURED_REJECTED_KEY.splitlines())
    kind, message = classify(s, 144, timed_out=False)
    assert kind == "auth_failed" and "API key not valid" in (message or "")
    none = parse_events([])
    assert classify(none, 41, timed_out=False, stderr=STDERR_NO_KEY) == (
        "auth_failed", "When using Gemini API, you must specify the GEMINI_API_KEY environment variable.")


def test_a_run_that_ends_without_its_result() -> None:
    started = parse_events(CAPTURED_MAX_TURNS.splitlines()[:3] + [
        '{"type":"error","timestamp":"t","severity":"warning","message":"Retrying after 429"}', "garbage"])
    assert started.bad_lines == 1 and started.warnings == ["Retrying after 429"]
    assert classify(started, -9, timed_out=False) == ("crashed", "killed by signal 9 before its session ended")
    assert classify(started, 1, timed_out=False) == (
        "crashed", "exited 1 before its session ended (last error: Retrying after 429, 1 reported)")
    assert classify(started, 0, timed_out=False) == ("error", "exited 0 without a result event")


def test_the_session_file_gives_model_calls_and_the_final_message() -> None:
    lines = [
        json.dumps({"sessionId": "s1", "kind": "main"}),
        json.dumps({"id": "u1", "type": "user", "content": [{"text": "fix it"}]}),
        # a response is written when it starts and again with its tool calls: one model call
        json.dumps({"id": "g1", "type": "gemini", "content": "", "model": "gemini-2.5-flash"}),
        json.dumps({"id": "g1", "type": "gemini", "content": "", "toolCalls": [{"name": "read_file"}]}),
        json.dumps({"$set": {"lastUpdated": "2026-11-24T15:14:00.442Z"}}),
        json.dumps({"id": "g2", "type": "gemini", "content": "Done."}),
    ]
    assert read_session(lines) == 2 and read_session([]) is None
    assert final_message("\n".join(lines)) == "Done."


def test_a_memory_server_tool_the_cli_renamed_is_recorded_under_the_servers_name() -> None:
    """The CLI offers an MCP tool as `mcp_SERVER_TOOL` with odd characters made `_` and a
    name over 63 characters cut in the middle (generateValidName); given the server's
    tools, the record names each as the server does."""
    long = "remember_the_lesson_of_this_task_for_the_later_tasks_of_the_sequence"
    assert gemini_tool_name("memory", "notes/write note") == "mcp_memory_notes_write_note"
    assert gemini_tool_name("memory", long) == "mcp_memory_remember_the_lesson...he_later_tasks_of_the_sequence"
    assert gemini_tool_name("memory", "search_nodes") == "mcp_memory_search_nodes"
    stream = "\n".join(json.dumps({"type": "tool_use", "tool_name": name, "tool_id": str(i), "parameters": {}})
                       for i, name in enumerate(["mcp_memory_notes_write_note",
                                                 "mcp_memory_remember_the_lesson...he_later_tasks_of_the_sequence",
                                                 "mcp_memory_search_nodes", "read_file"]))
    tools = ["notes/write note", long, "search_nodes"]
    named = [c.name for c in parse_events(stream.splitlines(), ["memory"], {"memory": tools}).tool_calls]
    assert named == ["mcp__memory__notes/write note", f"mcp__memory__{long}", "mcp__memory__search_nodes", "read_file"]
    # Without the server's tools (swecl's own recall server), the prefix alone is read.
    assert [c.name for c in parse_events(stream.splitlines(), ["memory"]).tool_calls][0] == (
        "mcp__memory__notes_write_note")
