"""Reading `gemini -p --output-format stream-json` output and the CLI's session file, and
classifying the run.

The stream (packages/core/src/output/stream-json-formatter.ts of @google/gemini-cli 0.61)
is one JSON object per line: `init` (the session id and the model), `message` (the user's
prompt, then the assistant's text in `delta` pieces), `tool_use` (`tool_name`, `tool_id`,
`parameters`), `tool_result` (`tool_id`, `status` success or error, `output`, `error`),
`error` (`severity` warning or error: retries, loop detection, blocked content) and one
final `result`: `status` success or error, the `error` (`type`, the error class's name,
and `message`) when it failed, and `stats` (`input_tokens` with the `cached` part and the
uncached `input`, `output_tokens`, `tool_calls`, per model).

The session file (`$GEMINI_CLI_HOME/.gemini/tmp/PROJECT/chats/session-*.jsonl`) is the CLI's
full record of the session, the transcript we keep; the stream does not say how many model
calls the session made, the session file does (one `gemini` message per model response),
so `read_session` adds that. Its format is internal to the CLI: a field it lacks leaves
ours unknown.

Classification never calls a run a success unless its result says so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ledger.events import ToolCall

from ._protocol import ExitKind
from ._stream_json import ended_early, json_objects, mentions_any, with_last_error

__all__ = ["GeminiSummary", "classify", "parse_events", "read_session"]

# What the CLI and the API say when the key is missing or refused.
_AUTH_TEXT = (
    "api key not valid",
    "api_key_invalid",
    "gemini_api_key environment variable not found",
    "please set an auth method",
    "unauthenticated",
    "permission_denied",
)


@dataclass
class GeminiSummary:
    session_id: str | None = None
    model: str | None = None  # as the init event reports it
    tool_calls: list[ToolCall] = field(default_factory=list)
    tokens: dict[str, int] = field(default_factory=dict)
    final_text: str = ""  # the assistant's text after its last tool call (the answer)
    result: dict[str, Any] | None = None  # the final result event, raw
    errors: list[str] = field(default_factory=list)  # `error` events of severity error
    warnings: list[str] = field(default_factory=list)  # `error` events of severity warning
    bad_lines: int = 0

    @property
    def succeeded(self) -> bool:
        return self.result is not None and self.result.get("status") == "success"

    @property
    def error_type(self) -> str:
        error = (self.result or {}).get("error")
        return str(error.get("type") or "") if isinstance(error, dict) else ""

    @property
    def error_message(self) -> str:
        error = (self.result or {}).get("error")
        return str(error.get("message") or "") if isinstance(error, dict) else ""


def gemini_tool_name(server: str, tool: str) -> str:
    """The function name the CLI offers the model for MCP tool `tool` of `server`
    (`generateValidName` of @google/gemini-cli-core 0.61): `mcp_SERVER_TOOL`, every
    character outside letters, digits and `_-.:` made `_`, and a name over 63 characters
    cut to its first and last 30 around `...`."""
    name = re.sub(r"[^a-zA-Z0-9_\-.:]", "_", f"mcp_{server}_{tool}")
    if not re.match(r"[a-zA-Z_]", name):
        name = "_" + name
    return name if len(name) <= 63 else name[:30] + "..." + name[-30:]


def parse_events(lines: Iterable[str | bytes], mcp_servers: Iterable[str] = (),
                 mcp_tools: Mapping[str, Iterable[str]] | None = None) -> GeminiSummary:
    """The summary of a stream; tools of the MCP servers named in `mcp_servers` are recorded
    as `mcp__SERVER__TOOL`, as the other CLI agents record them (the CLI names them
    `mcp_SERVER_TOOL`, which cannot be split back when names hold `_`). `mcp_tools`
    (server -> its tools, where known: a user's memory server) gives back the server's own
    name of a tool the CLI renamed (`gemini_tool_name`: an odd character, a long name)."""
    s = GeminiSummary()
    prefixes = {f"mcp_{name}_": f"mcp__{name}__" for name in mcp_servers}
    exact = {gemini_tool_name(server, tool): f"mcp__{server}__{tool}"
             for server, tools in (mcp_tools or {}).items() for tool in tools}
    tool_index: dict[str, int] = {}  # tool_id -> position in s.tool_calls
    answer: list[str] = []
    for obj in json_objects(lines):
        if obj is None:
            s.bad_lines += 1
            continue
        kind = obj.get("type")
        if kind == "init":
            if isinstance(obj.get("session_id"), str):
                s.session_id = obj["session_id"]
            if isinstance(obj.get("model"), str):
                s.model = obj["model"]
        elif kind == "message" and obj.get("role") == "assistant" and isinstance(obj.get("content"), str):
            answer.append(obj["content"])
        elif kind == "tool_use":
            answer = []
            name = str(obj.get("tool_name") or "")
            if name in exact:
                name = exact[name]
            else:
                for prefix, ours in prefixes.items():
                    if name.startswith(prefix):
                        name = ours + name[len(prefix):]
                        break
            tool_index[str(obj.get("tool_id"))] = len(s.tool_calls)
            s.tool_calls.append(ToolCall(name=name))
        elif kind == "tool_result":
            at = tool_index.get(str(obj.get("tool_id")))
            if at is not None and obj.get("status") == "error":
                s.tool_calls[at] = ToolCall(name=s.tool_calls[at].name, error=True)
        elif kind == "error":
            target = s.errors if obj.get("severity") == "error" else s.warnings
            target.append(str(obj.get("message", "")))
        elif kind == "result":
            s.result = obj
            stats = obj.get("stats")
            if isinstance(stats, dict):
                s.tokens = _tokens(stats)
    s.final_text = "".join(answer)
    return s


def _int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _tokens(stats: dict[str, Any]) -> dict[str, int]:
    """swecl's token keys, as the claude adapter records them: `input` is the uncached part
    (the CLI's `input`), so input + cache_read is the whole prompt; Gemini reports no cache
    writes apart."""
    if not any(k in stats for k in ("input_tokens", "output_tokens")):
        return {}
    cached = _int(stats.get("cached"))
    uncached = _int(stats["input"]) if "input" in stats else max(0, _int(stats.get("input_tokens")) - cached)
    return {"input": uncached, "output": _int(stats.get("output_tokens")), "cache_read": cached, "cache_creation": 0}


def read_session(lines: Iterable[str | bytes]) -> int | None:
    """Model responses in a session file: its `gemini` messages (None when it has none)."""
    responses: set[str] = set()
    unnamed = 0
    for obj in json_objects(lines):
        if obj is None or obj.get("type") != "gemini":
            continue
        if isinstance(obj.get("id"), str):
            responses.add(obj["id"])
        else:
            unnamed += 1
    return (len(responses) + unnamed) or None


# The CLI's exit codes (packages/cli/src/utils/errors.ts) for what it refuses before a
# session starts, when it prints no result event, only a message on stderr.
_AUTH_EXIT = 41  # FATAL_AUTHENTICATION_ERROR: no key, or an auth method it cannot use


def classify(s: GeminiSummary, exit_code: int | None, *, timed_out: bool, stderr: str = "") -> tuple[ExitKind, str | None]:
    """The run's exit kind and a one-line reason (None for a clean success)."""
    if timed_out:
        return "timeout", with_last_error("the agent did not finish within its time limit", s.errors or s.warnings)
    if s.succeeded:
        if exit_code:
            return "error", f"the session succeeded but the CLI exited {exit_code}"
        return "completed", None
    if s.result is not None:
        message = s.error_message or (s.errors[-1] if s.errors else "the session ended with status error")
        if "TurnLimited" in s.error_type:
            return "max_turns", message
        if "Authentication" in s.error_type or mentions_any(message, _AUTH_TEXT):
            return "auth_failed", message
        return "error", message
    if exit_code == _AUTH_EXIT:
        said = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
        about_key = [ln for ln in said if "API_KEY" in ln or mentions_any(ln, _AUTH_TEXT)]
        return "auth_failed", (about_key or said or [f"exited {exit_code}: no usable credentials"])[-1][:500]
    return ended_early(exit_code, "session", "a result event", s.errors or s.warnings)
