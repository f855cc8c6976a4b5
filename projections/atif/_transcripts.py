"""A recorded transcript as ATIF steps: which format it is, and the readers of the
Anthropic-message JSONL (Claude Code's session file and its stream-json) and of codex's
(its session rollout and its `exec --json` stream).

The format is read from the transcript itself, never from the agent's name (nothing
outside `agents` branches on it): every adapter keeps what its CLI wrote (scrubbed), and
the shapes differ enough to tell apart line by line. A transcript no reader knows (the
demo's, a `command` agent's output) is one agent step of text (`_transcripts_more`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ._steps import StepLog, text_of
from ._transcripts_more import gemini_session, gemini_stream, mini_trajectory, opencode_events, plain_text

__all__ = ["read_transcript", "transcript_format"]

Reader = Callable[[list[dict[str, Any]], StepLog], None]

_CODEX_ROLLOUT = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "token_usage_record"})
_OPENCODE = frozenset({"step_start", "step_finish", "tool_use", "text", "reasoning"})
_GEMINI_STREAM = frozenset({"init", "tool_use", "tool_result", "message", "result"})


def _line_format(rec: dict[str, Any]) -> str | None:
    """The transcript format one JSON line belongs to, when it tells."""
    kind = rec.get("type")
    if "payload" in rec and kind in _CODEX_ROLLOUT:
        return "codex-rollout"
    if isinstance(kind, str) and kind.split(".")[0] in ("thread", "turn", "item"):
        return "codex-exec-json"
    if isinstance(rec.get("part"), dict) and kind in _OPENCODE:
        return "opencode-json"
    if "$set" in rec or ("projectHash" in rec and "sessionId" in rec) or kind == "gemini":
        return "gemini-session"
    if isinstance(rec.get("message"), dict) or (kind == "system" and rec.get("subtype") == "init"):
        return "anthropic-messages-jsonl"
    if kind in _GEMINI_STREAM and ("tool_id" in rec or "role" in rec or "stats" in rec or "session_id" in rec):
        return "gemini-stream-json"
    return None


def transcript_format(raw: bytes) -> tuple[str, Any]:
    """(format, parsed records) of a transcript blob: `mini-swe-agent-trajectory` (one
    JSON object with `messages`), a JSON-lines format (the one most lines belong to), or
    `text`."""
    text = raw.decode("utf-8", errors="replace")
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, dict) and isinstance(whole.get("messages"), list):
        return ("gemini-session" if "sessionId" in whole else "mini-swe-agent-trajectory"), whole
    records: list[dict[str, Any]] = []
    for line in text.splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue  # a CLI's stray stderr line between its JSON lines
        if isinstance(rec, dict):
            records.append(rec)
    votes: dict[str, int] = {}
    for rec in records:
        fmt = _line_format(rec)
        if fmt is not None:
            votes[fmt] = votes.get(fmt, 0) + 1
    if not votes:
        return "text", text
    return max(votes, key=lambda f: votes[f]), records


def read_transcript(raw: bytes) -> StepLog:
    log = StepLog()
    fmt, parsed = transcript_format(raw)
    log.facts.format = fmt
    if fmt == "mini-swe-agent-trajectory":
        mini_trajectory(parsed, log)
    elif fmt == "gemini-session" and isinstance(parsed, dict):
        gemini_session(parsed["messages"], log, parsed)
    elif fmt == "text":
        plain_text(parsed, log)
    else:
        _READERS[fmt](parsed, log)
    return log


# -- Anthropic messages: Claude Code's session file and stream-json -------------------------


def _anthropic_usage(usage: Any) -> dict[str, Any]:
    if not isinstance(usage, dict):
        return {}
    ints = {k: v for k, v in usage.items() if isinstance(v, int) and not isinstance(v, bool)}
    cached = ints.get("cache_read_input_tokens", 0)
    prompt = ints.get("input_tokens", 0) + cached + ints.get("cache_creation_input_tokens", 0)
    return {"prompt_tokens": prompt, "completion_tokens": ints.get("output_tokens"), "cached_tokens": cached}


def anthropic_messages(records: list[dict[str, Any]], log: StepLog) -> None:
    """User and assistant records (`message` in the Messages API's shape); stream-json
    repeats an assistant message once per content block, so a message id seen before
    joins its step and its usage counts once."""
    seen_usage: set[str] = set()
    for rec in records:
        kind, message, time = rec.get("type"), rec.get("message"), rec.get("timestamp")
        log.facts.version = log.facts.version or rec.get("version") or rec.get("claude_code_version")
        log.facts.session_id = log.facts.session_id or rec.get("sessionId") or rec.get("session_id")
        if kind == "system" and rec.get("subtype") == "init":
            log.facts.model = log.facts.model or rec.get("model")
            continue
        if not isinstance(message, dict) or kind not in ("user", "assistant"):
            continue
        content = message.get("content")
        if kind == "user":
            _anthropic_user(content, log, time, meta=bool(rec.get("isMeta")))
            continue
        model = message.get("model") if isinstance(message.get("model"), str) else None
        log.facts.model = log.facts.model or model
        msg_id = str(message.get("id") or "")
        fresh = not (msg_id and log.steps and log.steps[-1].get("extra", {}).get("message_id") == msg_id)
        step = log.agent_step(time=time, fresh=fresh)
        if msg_id:
            step.setdefault("extra", {})["message_id"] = msg_id
        for block in content if isinstance(content, list) else [{"type": "text", "text": text_of(content)}]:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text":
                log.say(str(block.get("text") or ""), time=time, model=model)
            elif block.get("type") == "thinking":
                log.say("", time=time, reasoning=str(block.get("thinking") or ""))
            elif block.get("type") in ("tool_use", "server_tool_use"):
                log.call(str(block.get("id")), str(block.get("name")), block.get("input"), time=time)
        if msg_id not in seen_usage:
            seen_usage.add(msg_id)
            log.metrics(_anthropic_usage(message.get("usage")), step=step)


def _anthropic_user(content: Any, log: StepLog, time: Any, *, meta: bool) -> None:
    """A user record: the prompt (a string or text blocks) or tool results."""
    texts: list[str] = []
    for block in content if isinstance(content, list) else [content]:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            extra = {"is_error": True} if block.get("is_error") else None
            log.result(str(block.get("tool_use_id")), block.get("content"), time=time, extra=extra)
        elif block is not None:
            texts.append(text_of(block))
    if any(texts):
        # A meta record is the CLI's own note (a command's output, a reminder), not the user's words.
        log.add("system" if meta else "user", "\n".join(t for t in texts if t), time=time)


# -- codex: the session rollout and the exec --json stream -----------------------------------


def codex_rollout(records: list[dict[str, Any]], log: StepLog) -> None:
    for rec in records:
        payload, time = rec.get("payload"), rec.get("timestamp")
        if not isinstance(payload, dict):
            continue
        kind, item = rec.get("type"), payload.get("type")
        if kind == "session_meta":
            log.facts.version = payload.get("cli_version") or log.facts.version
            log.facts.session_id = payload.get("id") or log.facts.session_id
        elif kind == "turn_context":
            log.facts.model = payload.get("model") or log.facts.model
        elif kind == "event_msg" and item == "token_count":
            last = (payload.get("info") or {}).get("last_token_usage") if isinstance(payload.get("info"), dict) else None
            if isinstance(last, dict):
                log.metrics({"prompt_tokens": last.get("input_tokens"), "cached_tokens": last.get("cached_input_tokens"),
                             "completion_tokens": last.get("output_tokens")})
        elif kind == "response_item":
            _codex_item(payload, log, time)


def _codex_item(item: dict[str, Any], log: StepLog, time: Any) -> None:
    kind = item.get("type")
    if kind == "message":
        role, text = item.get("role"), text_of(item.get("content"))
        if role == "assistant":
            log.say(text, time=time)
        elif text:
            log.add("user" if role == "user" else "system", text, time=time)
    elif kind == "reasoning":
        summary = text_of(item.get("summary"))
        log.say("", time=time, reasoning=summary or None)
    elif kind in ("function_call", "custom_tool_call", "local_shell_call", "tool_search_call", "web_search_call"):
        name = item.get("name") or kind.removesuffix("_call")
        if item.get("namespace"):
            name = f"{item['namespace']}__{name}"
        arguments = item.get("arguments", item.get("input", item.get("action")))
        log.call(str(item.get("call_id") or item.get("id")), str(name), arguments, time=time)
    elif kind in ("function_call_output", "custom_tool_call_output", "tool_search_output"):
        log.result(str(item.get("call_id")), item.get("output", item.get("tools")), time=time)


def codex_exec(records: list[dict[str, Any]], log: StepLog) -> None:
    """`codex exec --json`: kept when the session file was not found."""
    for rec in records:
        kind, item = rec.get("type"), rec.get("item")
        if kind == "thread.started":
            log.facts.session_id = rec.get("thread_id") or log.facts.session_id
        elif kind == "turn.completed" and isinstance(rec.get("usage"), dict):
            usage = rec["usage"]
            log.metrics({"prompt_tokens": usage.get("input_tokens"), "cached_tokens": usage.get("cached_input_tokens"),
                         "completion_tokens": usage.get("output_tokens")})
        elif kind == "item.completed" and isinstance(item, dict):
            what, item_id = item.get("type"), str(item.get("id"))
            if what == "agent_message":
                log.say(str(item.get("text") or ""))
            elif what == "reasoning":
                log.say("", reasoning=str(item.get("text") or ""))
            elif what == "command_execution":
                log.call(item_id, "shell", {"command": item.get("command")})
                log.result(item_id, item.get("aggregated_output"), extra={"exit_code": item.get("exit_code")})
            elif what == "mcp_tool_call":
                log.call(item_id, f"mcp__{item.get('server')}__{item.get('tool')}", item.get("arguments"))
                log.result(item_id, item.get("result") or item.get("error"))
            elif what in ("file_change", "web_search"):
                log.call(item_id, str(what), {k: v for k, v in item.items() if k not in ("id", "type")})


_READERS: dict[str, Reader] = {
    "anthropic-messages-jsonl": anthropic_messages,
    "codex-rollout": codex_rollout,
    "codex-exec-json": codex_exec,
    "opencode-json": opencode_events,
    "gemini-session": gemini_session,
    "gemini-stream-json": gemini_stream,
}
