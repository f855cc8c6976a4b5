"""The opencode event parser and classifier, on lines captured from `opencode run --format
json` (opencode-ai 1.18.33) against the loopback Anthropic fake (paths shortened)."""

from __future__ import annotations

from agents._opencode_events import classify, parse_events
from ledger.events import ToolCall

SESSION = "ses_de448d4e7ffemn8i7mtvYYn0oA"
_S = f'"sessionID":"{SESSION}"'
STEP_START = f'{{"type":"step_start","timestamp":1795761330755,{_S},"part":{{"id":"prt_1","messageID":"msg_1",{_S},"type":"step-start"}}}}'
RECALL = (f'{{"type":"tool_use","timestamp":1795761330857,{_S},"part":{{"type":"tool","tool":"memory_recall","callID":"toolu_fake_0_0",'
          '"state":{"status":"completed","input":{"query":"q1","repo":"demo/pkg","k":3},"output":"{\\n  \\"item_id\\": \\"m1\\"\\n}",'
          '"metadata":{"truncated":false},"title":"","time":{"start":1795761330674,"end":1795761330787}},"id":"prt_2",'
          f'{_S},"messageID":"msg_1"}}}}')
READ_FAILED = (f'{{"type":"tool_use","timestamp":1795761331999,{_S},"part":{{"type":"tool","tool":"read","callID":"toolu_fake_1_0",'
               '"state":{"status":"error","input":{"filePath":"/w/repo/pkg/missing.py"},"error":"File not found: /w/repo/pkg/missing.py",'
               f'"time":{{"start":1795761331705,"end":1795761331899}}}},"id":"prt_3",{_S},"messageID":"msg_2"}}}}')
INVALID = (f'{{"type":"tool_use","timestamp":1795761386737,{_S},"part":{{"type":"tool","tool":"invalid","callID":"toolu_fake_0_0",'
           '"state":{"status":"completed","input":{"tool":"memory_recall","error":"Model tried to call unavailable tool '
           '\'memory_recall\'."},"output":"The arguments provided to the tool are invalid","metadata":{"truncated":false},'
           f'"title":"Invalid Tool","time":{{"start":1,"end":2}}}},"id":"prt_4",{_S},"messageID":"msg_1"}}}}')


def step_finish(reason: str, cost: float = 0.0006, reasoning: int = 0, read: int = 0, write: int = 0) -> str:
    return (f'{{"type":"step_finish","timestamp":1795761330858,{_S},"part":{{"id":"prt_5","reason":"{reason}","messageID":"msg_1",'
            f'{_S},"type":"step-finish","tokens":{{"total":120,"input":100,"output":20,"reasoning":{reasoning},'
            f'"cache":{{"write":{write},"read":{read}}}}},"cost":{cost}}}}}')


TEXT = (f'{{"type":"text","timestamp":1795761333095,{_S},"part":{{"id":"prt_6","messageID":"msg_5",{_S},"type":"text",'
        '"text":"Done.","time":{"start":1795761332975,"end":1795761332981}}}')
UNAUTHORIZED = (f'{{"type":"error","timestamp":1795761357053,{_S},"error":{{"name":"APIError","data":{{"message":"invalid x-api-key",'
                '"statusCode":401,"isRetryable":false,"responseBody":"{\\"type\\": \\"error\\"}",'
                '"metadata":{"url":"http://127.0.0.1:42599/v1/messages"}}}}')
NO_KEY = (f'{{"type":"error","timestamp":1795761365658,{_S},"error":{{"name":"ProviderAuthError","data":{{"providerID":"anthropic",'
          '"message":"Anthropic API key is missing. Pass it using the \'apiKey\' parameter or the ANTHROPIC_API_KEY environment variable."}}}')


def test_a_session_that_answered() -> None:
    lines = [STEP_START, RECALL, step_finish("tool-calls"), STEP_START, READ_FAILED,
             step_finish("tool-calls", reasoning=7, read=30, write=4), STEP_START, TEXT, step_finish("stop"), ""]
    s = parse_events(lines, ["memory"])
    assert s.session_id == SESSION and s.turns == 3 and s.bad_lines == 0
    assert s.tool_calls == [ToolCall("mcp__memory__recall"), ToolCall("read", error=True)]
    assert s.tokens == {"input": 300, "output": 67, "reasoning": 7, "cache_read": 30, "cache_creation": 4}
    assert s.cost_usd is not None and abs(s.cost_usd - 0.0018) < 1e-12
    assert s.final_text == "Done."
    assert classify(s, 0, timed_out=False) == ("completed", None)


def test_mcp_names_are_ours_only_for_our_servers_and_an_unknown_tool_is_an_error() -> None:
    s = parse_events([RECALL, INVALID, "not json"])
    assert s.tool_calls == [ToolCall("memory_recall"), ToolCall("invalid", error=True)] and s.bad_lines == 1


def test_auth_failures() -> None:
    for line in (UNAUTHORIZED, NO_KEY):
        kind, message = classify(parse_events([line]), 1, timed_out=False)
        assert kind == "auth_failed"
    assert classify(parse_events([NO_KEY]), 1, timed_out=False)[1].startswith("ProviderAuthError: Anthropic API key is missing")
    assert parse_events([UNAUTHORIZED]).cost_usd is None and parse_events([UNAUTHORIZED]).tokens == {}


def test_timeouts_crashes_and_silence() -> None:
    started = parse_events([STEP_START])
    assert classify(started, None, timed_out=True) == ("timeout", "the agent did not finish within its time limit")
    assert classify(started, -9, timed_out=False) == ("crashed", "killed by signal 9 before its session ended")
    assert classify(started, 1, timed_out=False) == ("crashed", "exited 1 before its session ended")
    assert classify(started, 0, timed_out=False) == ("error", "exited 0 without an answer")
    mid = parse_events([STEP_START, RECALL, step_finish("tool-calls")])
    assert classify(mid, 0, timed_out=False) == ("error", "the session ended with reason 'tool-calls', not an answer")
    answered = parse_events([STEP_START, TEXT, step_finish("stop")])
    assert classify(answered, 2, timed_out=False) == ("error", "the session answered but the CLI exited 2")
