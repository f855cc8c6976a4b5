"""Reading `opencode run --format json` output, and classifying the run.

The output (opencode 1.18) is one JSON object per line, each with `type`, `timestamp`,
`sessionID` and, for a part of the conversation, the `part` itself:

- `step_start`: a model call begins;
- `text`: the assistant's text (`part.text`), once complete;
- `reasoning`: its thinking (`part.text`), when the model shows it;
- `tool_use`: a finished tool call (`part.tool`, `part.callID`, `part.state.status`
  `completed` or `error`, with `input`, `output` or `error`). A call of a tool the model
  does not have is recorded as the tool `invalid`; MCP tools are named `SERVER_TOOL`;
- `step_finish`: the model call ended (`part.reason`: `tool-calls` when the agent goes on,
  `stop` when it answered), with its `tokens` (`input`, the uncached part; `output`;
  `reasoning`; `cache.read`, `cache.write`) and its `cost` in USD, priced by opencode from
  its model catalog;
- `error`: the session failed (`error.name`, e.g. `ProviderAuthError`, `APIError` with
  `data.statusCode`; `error.data.message`); the CLI then exits 1.

There is no final result event: a run succeeded when the CLI exited 0, reported no error
and its last model call ended with `stop`. Classification never calls a run a success
otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ledger.events import ToolCall

from ._protocol import ExitKind
from ._stream_json import ended_early, json_objects, mentions_any

__all__ = ["OpencodeSummary", "classify", "parse_events", "token_counter", "turn_limit_watch"]

# What opencode and the APIs say of a key that is missing or refused.
_AUTH_ERRORS = ("ProviderAuthError",)
_AUTH_STATUS = (401, 403)
_AUTH_TEXT = ("api key is missing", "invalid x-api-key", "incorrect api key", "invalid api key", "unauthorized")


@dataclass
class OpencodeSummary:
    session_id: str | None = None
    turns: int = 0  # model calls (step_finish events)
    tool_calls: list[ToolCall] = field(default_factory=list)
    tokens: dict[str, int] = field(default_factory=dict)
    cost_usd: float | None = None
    final_text: str = ""  # the assistant's text after its last tool call (the answer)
    last_reason: str | None = None  # the last step_finish's reason (stop: it answered)
    errors: list[dict[str, Any]] = field(default_factory=list)  # the `error` objects of `error` events
    bad_lines: int = 0

    @property
    def answered(self) -> bool:
        return self.last_reason == "stop" and not self.errors

    @property
    def error_message(self) -> str:
        if not self.errors:
            return ""
        error = self.errors[-1]
        data = error.get("data")
        message = data.get("message") if isinstance(data, dict) else None
        name = str(error.get("name") or "error")
        return f"{name}: {message}" if isinstance(message, str) and message else name


def _int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def parse_events(lines: Iterable[str | bytes], mcp_servers: Iterable[str] = ()) -> OpencodeSummary:
    """The summary of a run's output; tools of the MCP servers named in `mcp_servers` are
    recorded as `mcp__SERVER__TOOL`, as the other CLI agents record them (opencode names
    them `SERVER_TOOL`)."""
    s = OpencodeSummary()
    prefixes = {f"{name}_": f"mcp__{name}__" for name in mcp_servers}
    totals = {"input": 0, "output": 0, "cache_read": 0, "cache_creation": 0, "reasoning": 0}
    cost = 0.0
    priced = False
    answer: list[str] = []
    for obj in json_objects(lines):
        if obj is None:
            s.bad_lines += 1
            continue
        if s.session_id is None and isinstance(obj.get("sessionID"), str):
            s.session_id = obj["sessionID"]
        kind = obj.get("type")
        part = obj.get("part") if isinstance(obj.get("part"), dict) else {}
        if kind == "text" and isinstance(part.get("text"), str):
            answer.append(part["text"])
        elif kind == "tool_use":
            answer = []
            name = str(part.get("tool") or "")
            for prefix, ours in prefixes.items():
                if name.startswith(prefix):
                    name = ours + name[len(prefix):]
                    break
            state = part.get("state") if isinstance(part.get("state"), dict) else {}
            s.tool_calls.append(ToolCall(name=name, error=state.get("status") == "error" or name == "invalid"))
        elif kind == "step_finish":
            s.turns += 1
            s.last_reason = str(part.get("reason") or "") or None
            tokens = part.get("tokens")
            if isinstance(tokens, dict):
                cache = tokens.get("cache") if isinstance(tokens.get("cache"), dict) else {}
                totals["input"] += _int(tokens.get("input"))
                # opencode counts reasoning apart from output; swecl's `output` holds all the
                # model wrote (as the other adapters record it), `reasoning` the part of it
                totals["output"] += _int(tokens.get("output")) + _int(tokens.get("reasoning"))
                totals["reasoning"] += _int(tokens.get("reasoning"))
                totals["cache_read"] += _int(cache.get("read"))
                totals["cache_creation"] += _int(cache.get("write"))
            if isinstance(part.get("cost"), (int, float)) and not isinstance(part.get("cost"), bool):
                cost += float(part["cost"])
                priced = True
        elif kind == "error" and isinstance(obj.get("error"), dict):
            s.errors.append(obj["error"])
    if s.turns:
        s.tokens = totals
    s.cost_usd = round(cost, 10) if priced else None
    s.final_text = "\n".join(answer)
    return s


def token_counter() -> Callable[[bytes], int]:
    """A running count of the input + output tokens of a run's output, fed line by line
    while opencode runs: each model call's `step_finish` adds its own (as `parse_events`
    counts them)."""
    total = 0

    def count(line: bytes) -> int:
        nonlocal total
        if b"step_finish" in line:  # the only event with usage; most lines are not worth a parse
            tokens = parse_events([line]).tokens
            total += tokens.get("input", 0) + tokens.get("output", 0)
        return total

    return count


def turn_limit_watch(max_turns: int) -> Callable[[bytes], bool]:
    """True once a run's output has `max_turns` model calls that ended wanting another
    (`step_finish` with reason `tool-calls`): opencode has no turn limit of its own, so the
    run is ended there, before its next model call. A call that answered (`stop`) is never
    cut: the run is over anyway."""
    turns = 0

    def reached(line: bytes) -> bool:
        nonlocal turns
        if b"step_finish" not in line:
            return False
        s = parse_events([line])
        turns += s.turns
        return turns >= max_turns and s.last_reason == "tool-calls"

    return reached


def classify(s: OpencodeSummary, exit_code: int | None, *, timed_out: bool) -> tuple[ExitKind, str | None]:
    """The run's exit kind and a one-line reason (None for a clean success)."""
    if timed_out:
        base = "the agent did not finish within its time limit"
        return "timeout", f"{base} (last error: {s.error_message})" if s.errors else base
    if s.errors:
        error = s.errors[-1]
        data = error.get("data") if isinstance(error.get("data"), dict) else {}
        message = s.error_message
        if error.get("name") in _AUTH_ERRORS or data.get("statusCode") in _AUTH_STATUS or mentions_any(message, _AUTH_TEXT):
            return "auth_failed", message
        return "error", message
    if s.answered:
        if exit_code:
            return "error", f"the session answered but the CLI exited {exit_code}"
        return "completed", None
    if exit_code == 0 and s.last_reason is not None:
        return "error", f"the session ended with reason {s.last_reason!r}, not an answer"
    return ended_early(exit_code, "session", "an answer", [])
