"""Reading `claude -p --output-format stream-json --verbose` output, and classifying the run.

One JSON object per line: `system` (init, hook_*, api_retry), `assistant` and `user`
messages (tool_use blocks and their tool_result blocks), and one final `result` with
turns, cost, usage, `terminal_reason` and `is_error`. `--output-format json` prints
only that result object, which parses the same way.

Classification never calls a run a success unless the result says it really was one: a
not-logged-in run ends `subtype: success` with `is_error: true`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ledger.events import ToolCall

from ._protocol import ExitKind

__all__ = ["StreamSummary", "classify", "ended_early", "json_objects", "mentions_any", "parse_stream", "parse_stream_text",
           "token_counter", "with_last_error"]

_AUTH_ERRORS = {"authentication_failed", "authentication_error", "oauth_org_not_allowed", "permission_error"}
_AUTH_TEXT = ("not logged in", "invalid api key", "please run /login", "oauth token")


@dataclass
class StreamSummary:
    session_id: str | None = None
    model: str | None = None  # as the init message reports it
    mcp_servers: dict[str, str] = field(default_factory=dict)  # name -> status at start-up
    tool_calls: list[ToolCall] = field(default_factory=list)
    turns: int | None = None
    cost_usd: float | None = None
    tokens: dict[str, int] = field(default_factory=dict)
    model_usage: dict[str, dict[str, Any]] = field(default_factory=dict)
    result: dict[str, Any] | None = None  # the final result event, raw
    final_text: str = ""  # the last top-level assistant text (the answer)
    assistant_errors: list[str] = field(default_factory=list)  # e.g. authentication_failed
    api_retries: list[dict[str, Any]] = field(default_factory=list)
    hooks: list[str] = field(default_factory=list)  # hook events the stream reported
    bad_lines: int = 0

    @property
    def has_result(self) -> bool:
        return self.result is not None

    @property
    def is_error(self) -> bool | None:
        return None if self.result is None else bool(self.result.get("is_error"))

    @property
    def subtype(self) -> str | None:
        return None if self.result is None else self.result.get("subtype")

    @property
    def terminal_reason(self) -> str | None:
        return None if self.result is None else self.result.get("terminal_reason")

    @property
    def result_text(self) -> str:
        value = None if self.result is None else self.result.get("result")
        return value if isinstance(value, str) else ""

    @property
    def errors(self) -> list[str]:
        value = None if self.result is None else self.result.get("errors")
        return [str(e) for e in value] if isinstance(value, list) else []

    @property
    def api_error_status(self) -> int | None:
        value = None if self.result is None else self.result.get("api_error_status")
        return value if isinstance(value, int) else None


def parse_stream_text(text: str) -> StreamSummary:
    return parse_stream(text.splitlines())


def json_objects(lines: Iterable[str | bytes]) -> Iterator[dict[str, Any] | None]:
    """The JSON object of each non-empty line of a CLI's JSON-lines output (what the CLI
    agents' streams are); None for a line that is not one (a parser counts them)."""
    for raw in lines:
        line = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        line = line.strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            yield None
            continue
        yield obj if isinstance(obj, dict) else None


def mentions_any(message: str, words: Iterable[str]) -> bool:
    """`message` holds one of `words` (lower case), whatever its own case."""
    lowered = message.lower()
    return any(w in lowered for w in words)


def with_last_error(base: str, errors: list[str]) -> str:
    """`base`, and the last of the `errors` a CLI reported on its way, if any."""
    if not errors:
        return base
    return f"{base} (last error: {errors[-1][:300]}, {len(errors)} reported)"


def ended_early(exit_code: int | None, unit: str, final_event: str, errors: list[str]) -> tuple[ExitKind, str]:
    """The exit kind of a CLI that ended before its `unit` (turn, session) did: killed,
    failed, or silent (exit 0 without its `final_event`)."""
    if exit_code is not None and exit_code < 0:
        return "crashed", f"killed by signal {-exit_code} before its {unit} ended"
    if exit_code:
        return "crashed", with_last_error(f"exited {exit_code} before its {unit} ended", errors)
    return "error", f"exited 0 without {final_event}"


def parse_stream(lines: Iterable[str | bytes]) -> StreamSummary:
    s = StreamSummary()
    tool_index: dict[str, int] = {}  # tool_use id -> position in s.tool_calls
    message_usage: dict[str, dict[str, Any]] = {}  # assistant message id -> usage (dedup: one API message can span lines)
    top_level_ids: list[str] = []
    for obj in json_objects(lines):
        if obj is None:
            s.bad_lines += 1
            continue
        kind = obj.get("type")
        if isinstance(obj.get("session_id"), str) and s.session_id is None:
            s.session_id = obj["session_id"]
        if kind == "system":
            _system(s, obj)
        elif kind == "assistant":
            _assistant(s, obj, tool_index, message_usage, top_level_ids)
        elif kind == "user":
            _user(s, obj, tool_index)
        elif kind == "result":
            s.result = obj
            if isinstance(obj.get("session_id"), str):
                s.session_id = obj["session_id"]
    _totals(s, message_usage, top_level_ids)
    return s


def token_counter() -> Callable[[bytes], int]:
    """A running count of a stream's input + output tokens, fed line by line while the CLI
    runs: what its assistant messages reported so far (one usage per message id, as
    `parse_stream` counts a run with no result), subagents' messages included."""
    s = StreamSummary()
    tool_index: dict[str, int] = {}
    message_usage: dict[str, dict[str, Any]] = {}
    top_level_ids: list[str] = []

    def count(line: bytes) -> int:
        for obj in json_objects([line]):
            if obj is not None and obj.get("type") == "assistant":
                _assistant(s, obj, tool_index, message_usage, top_level_ids)
        return sum(_int(u.get("input_tokens")) + _int(u.get("output_tokens")) for u in message_usage.values())

    return count


def _system(s: StreamSummary, obj: dict[str, Any]) -> None:
    sub = obj.get("subtype")
    if sub == "init":
        if isinstance(obj.get("model"), str):
            s.model = obj["model"]
        for server in obj.get("mcp_servers") or []:
            if isinstance(server, dict) and "name" in server:
                s.mcp_servers[str(server["name"])] = str(server.get("status", ""))
    elif sub == "api_retry":
        s.api_retries.append({k: obj.get(k) for k in ("attempt", "error_status", "error")})
    elif sub == "hook_response" and isinstance(obj.get("hook_event"), str):
        s.hooks.append(obj["hook_event"])


def _assistant(
    s: StreamSummary,
    obj: dict[str, Any],
    tool_index: dict[str, int],
    message_usage: dict[str, dict[str, Any]],
    top_level_ids: list[str],
) -> None:
    msg = obj.get("message") or {}
    if isinstance(obj.get("error"), str):
        s.assistant_errors.append(obj["error"])
    content = msg.get("content") if isinstance(msg, dict) else None
    texts: list[str] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_use":
            use_id = str(block.get("id", ""))
            if use_id not in tool_index:
                tool_index[use_id] = len(s.tool_calls)
                s.tool_calls.append(ToolCall(name=str(block.get("name", "")), error=False))
        elif block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
    msg_id = msg.get("id") if isinstance(msg, dict) else None
    synthetic = isinstance(msg, dict) and msg.get("model") == "<synthetic>"
    if isinstance(msg_id, str) and not synthetic:
        if isinstance(msg.get("usage"), dict):
            message_usage[msg_id] = msg["usage"]
        if obj.get("parent_tool_use_id") is None and msg_id not in top_level_ids:
            top_level_ids.append(msg_id)
    if texts and obj.get("parent_tool_use_id") is None:
        s.final_text = "".join(texts)


def _user(s: StreamSummary, obj: dict[str, Any], tool_index: dict[str, int]) -> None:
    msg = obj.get("message") or {}
    content = msg.get("content") if isinstance(msg, dict) else None
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            pos = tool_index.get(str(block.get("tool_use_id", "")))
            if pos is not None and block.get("is_error"):
                s.tool_calls[pos] = ToolCall(name=s.tool_calls[pos].name, error=True)


def _int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _totals(s: StreamSummary, message_usage: dict[str, dict[str, Any]], top_level_ids: list[str]) -> None:
    r = s.result
    if r is not None:
        if isinstance(r.get("num_turns"), int):
            s.turns = r["num_turns"]
        if isinstance(r.get("total_cost_usd"), (int, float)):
            s.cost_usd = float(r["total_cost_usd"])
        if isinstance(r.get("modelUsage"), dict):
            s.model_usage = {str(k): v for k, v in r["modelUsage"].items() if isinstance(v, dict)}
    if s.model_usage:
        # modelUsage covers every model the run called (side calls, subagents); the
        # result's `usage` can be empty when a limit stopped the run (seen with budget).
        keys = (("input", "inputTokens"), ("output", "outputTokens"),
                ("cache_read", "cacheReadInputTokens"), ("cache_creation", "cacheCreationInputTokens"))
        s.tokens = {ours: sum(_int(u.get(theirs)) for u in s.model_usage.values()) for ours, theirs in keys}
        return
    usages: list[dict[str, Any]]
    if r is not None and isinstance(r.get("usage"), dict):
        usages = [r["usage"]]
    else:
        # No result (killed, crashed): what the streamed messages reported so far.
        usages = list(message_usage.values())
        if s.turns is None and top_level_ids:
            s.turns = len(top_level_ids)
    keys2 = (("input", "input_tokens"), ("output", "output_tokens"),
             ("cache_read", "cache_read_input_tokens"), ("cache_creation", "cache_creation_input_tokens"))
    if usages:
        s.tokens = {ours: sum(_int(u.get(theirs)) for u in usages) for ours, theirs in keys2}


def classify(s: StreamSummary, exit_code: int | None, *, timed_out: bool) -> tuple[ExitKind, str | None]:
    """The run's exit kind and a one-line reason (None for a clean success)."""
    if timed_out:
        return "timeout", _last_api_trouble(s, "the agent did not finish within its time limit")
    if s.result is None:
        if exit_code is not None and exit_code < 0:
            return "crashed", f"killed by signal {-exit_code} before any result"
        if exit_code:
            return "crashed", _last_api_trouble(s, f"exited {exit_code} without a result")
        return "error", "exited 0 without a result event"
    text = s.result_text or "; ".join(s.errors)
    if s.is_error and _is_auth(s):
        return "auth_failed", text or "authentication failed"
    subtype = s.subtype or ""
    reason = s.terminal_reason or ""
    if subtype == "error_max_turns" or reason == "max_turns":
        return "max_turns", "; ".join(s.errors) or "reached the turn limit"
    if "budget" in subtype or "budget" in reason:
        return "budget", "; ".join(s.errors) or "reached the cost limit"
    if s.is_error or subtype != "success":
        return "error", text or f"result {subtype or 'without subtype'} is an error"
    if exit_code:
        return "error", f"result says success but the CLI exited {exit_code}"
    return "completed", None


def _is_auth(s: StreamSummary) -> bool:
    if s.api_error_status in (401, 403):
        return True
    if any(e in _AUTH_ERRORS for e in s.assistant_errors):
        return True
    lowered = s.result_text.lower()
    return any(t in lowered for t in _AUTH_TEXT)


def _last_api_trouble(s: StreamSummary, base: str) -> str:
    if not s.api_retries:
        return base
    last = s.api_retries[-1]
    return f"{base} (last API error: {last.get('error')} {last.get('error_status')}, {len(s.api_retries)} retries)"
