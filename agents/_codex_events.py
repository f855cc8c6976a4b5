"""Reading `codex exec --json` output and codex's own session file, and classifying the run.

The stream (codex-rs/exec/src/exec_events.rs) is one JSON object per line: `thread.started`
(the thread id, codex's session id), `turn.started`, `item.started` / `item.updated` /
`item.completed` (an item is an `agent_message`, `reasoning`, `command_execution`,
`file_change`, `mcp_tool_call`, `web_search`, `collab_tool_call`, `todo_list` or a
non-fatal `error`), and per turn either `turn.completed` with its token usage or
`turn.failed` with the error; a top-level `error` reports trouble as it happens. One
`codex exec` runs one turn, however many model calls it makes.

The session file (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-...-THREAD.jsonl`) is codex's
full record of the session, the transcript we keep. The stream does not say how many model
calls the turn made, nor which model answered; the session file does (a
`token_usage_record` per model response, the model in `turn_context`), so `read_rollout`
adds those two. Its format is internal to codex: a field it lacks leaves ours unknown.

Classification never calls a run a success unless its turn completed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ledger.events import ToolCall

from ._protocol import ExitKind
from ._stream_json import ended_early, json_objects, mentions_any, with_last_error

__all__ = ["CodexSummary", "RolloutFacts", "classify", "parse_events", "read_rollout"]

# What codex says when the key is missing or refused (its own words and the API's).
_AUTH_TEXT = (
    "missing environment variable",
    "401 unauthorized",
    "403 forbidden",
    "incorrect api key",
    "invalid_api_key",
    "invalid api key",
    "not logged in",
)
# Item types that are tool calls (agent messages, reasoning, plans and to-do lists are not).
_TOOL_ITEMS = {"command_execution", "file_change", "mcp_tool_call", "web_search", "collab_tool_call"}
_FAILED = {"failed", "declined"}


@dataclass
class CodexSummary:
    thread_id: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    tokens: dict[str, int] = field(default_factory=dict)
    final_text: str = ""  # the last agent message (the answer)
    turns_started: int = 0
    turns_completed: int = 0
    turn_errors: list[str] = field(default_factory=list)  # turn.failed messages
    stream_errors: list[str] = field(default_factory=list)  # top-level `error` events (some are retries)
    item_errors: list[str] = field(default_factory=list)  # non-fatal `error` items (warnings)
    mcp_failures: list[str] = field(default_factory=list)  # mcp_tool_call items that failed
    bad_lines: int = 0

    @property
    def completed(self) -> bool:
        return self.turns_completed > 0 and not self.turn_errors


def parse_events(lines: Iterable[str | bytes]) -> CodexSummary:
    s = CodexSummary()
    tool_index: dict[str, int] = {}  # item id -> position in s.tool_calls (started, then completed)
    usage_totals: dict[str, int] = {}
    for obj in json_objects(lines):
        if obj is None:
            s.bad_lines += 1
            continue
        kind = obj.get("type")
        if kind == "thread.started" and isinstance(obj.get("thread_id"), str):
            s.thread_id = obj["thread_id"]
        elif kind == "turn.started":
            s.turns_started += 1
        elif kind == "turn.completed":
            s.turns_completed += 1
            usage = obj.get("usage")
            if isinstance(usage, dict):
                for key, value in usage.items():
                    usage_totals[key] = usage_totals.get(key, 0) + _int(value)
        elif kind == "turn.failed":
            error = obj.get("error")
            message = error.get("message") if isinstance(error, dict) else None
            s.turn_errors.append(str(message or "the turn failed"))
        elif kind == "error":
            s.stream_errors.append(str(obj.get("message", "")))
        elif kind in ("item.started", "item.updated", "item.completed"):
            item = obj.get("item")
            if isinstance(item, dict):
                _item(s, item, tool_index, done=kind == "item.completed")
    if usage_totals:
        s.tokens = _tokens(usage_totals)
    return s


def _item(s: CodexSummary, item: dict[str, Any], tool_index: dict[str, int], *, done: bool) -> None:
    kind = item.get("type")
    if kind == "agent_message":
        if done and isinstance(item.get("text"), str):
            s.final_text = item["text"]
        return
    if kind == "error":
        if done:
            s.item_errors.append(str(item.get("message", "")))
        return
    if kind not in _TOOL_ITEMS:
        return
    item_id = str(item.get("id", ""))
    name = _tool_name(item)
    failed = done and (item.get("status") in _FAILED or bool(item.get("error")))
    if item_id not in tool_index:
        tool_index[item_id] = len(s.tool_calls)
        s.tool_calls.append(ToolCall(name=name, error=failed))
    elif done:
        s.tool_calls[tool_index[item_id]] = ToolCall(name=name, error=failed)
    if done and failed and kind == "mcp_tool_call":
        error = item.get("error")
        message = error.get("message") if isinstance(error, dict) else None
        s.mcp_failures.append(f"{name}: {message or item.get('status')}")


def _tool_name(item: dict[str, Any]) -> str:
    """MCP calls by the name codex gives the model (`mcp__SERVER__TOOL`, as Claude Code names
    them too); the others by the item type codex reports (the stream does not say whether a
    command came from `exec_command` or `shell`, nor an edit from `apply_patch` or a shell)."""
    kind = str(item.get("type"))
    if kind == "mcp_tool_call":
        return f"mcp__{item.get('server', '')}__{item.get('tool', '')}"
    if kind == "collab_tool_call" and isinstance(item.get("tool"), str):
        return f"collab_tool_call:{item['tool']}"
    return kind


def _int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _tokens(usage: dict[str, int]) -> dict[str, int]:
    """swecl's token keys, as the claude adapter records them. OpenAI counts cached input
    inside `input_tokens` where Anthropic does not: `input` is the uncached part here too, so
    input + cache_read + cache_creation is the whole prompt for both. `reasoning` is the
    part of `output` the model spent reasoning."""
    cached = usage.get("cached_input_tokens", 0)
    written = usage.get("cache_write_input_tokens", 0)
    return {
        "input": max(0, usage.get("input_tokens", 0) - cached - written),
        "output": usage.get("output_tokens", 0),
        "cache_read": cached,
        "cache_creation": written,
        "reasoning": usage.get("reasoning_output_tokens", 0),
    }


@dataclass
class RolloutFacts:
    turns: int | None = None  # model responses (each a round trip to the API)
    model: str | None = None


def read_rollout(lines: Iterable[str | bytes]) -> RolloutFacts:
    """The model calls and the model of a codex session file (see the module's note)."""
    facts = RolloutFacts()
    responses: set[str] = set()
    unnamed = 0
    token_counts = 0
    for obj in json_objects(lines):
        if obj is None or not isinstance(obj.get("payload"), dict):
            continue
        kind, payload = obj.get("type"), obj["payload"]
        if kind == "turn_context" and isinstance(payload.get("model"), str):
            facts.model = payload["model"]
        elif kind == "token_usage_record":
            if isinstance(payload.get("response_id"), str):
                responses.add(payload["response_id"])
            else:
                unnamed += 1
        elif kind == "event_msg" and payload.get("type") == "token_count" and isinstance(payload.get("info"), dict):
            token_counts += 1  # older sessions: one per model response that reported usage
    if responses or unnamed:
        facts.turns = len(responses) + unnamed
    elif token_counts:
        facts.turns = token_counts
    return facts


def classify(s: CodexSummary, exit_code: int | None, *, timed_out: bool) -> tuple[ExitKind, str | None]:
    """The run's exit kind and a one-line reason (None for a clean success)."""
    if timed_out:
        return "timeout", with_last_error("the agent did not finish within its time limit", s.stream_errors)
    if s.turn_errors:
        message = s.turn_errors[-1]
        if mentions_any(message, _AUTH_TEXT):
            return "auth_failed", message
        return "error", message
    if s.completed:
        if exit_code:
            return "error", f"the turn completed but the CLI exited {exit_code}"
        return "completed", None
    return ended_early(exit_code, "turn", "a turn.completed event", s.stream_errors)
