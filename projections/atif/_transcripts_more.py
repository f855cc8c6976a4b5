"""Readers of the other transcript formats: the Gemini CLI's session file and its
stream-json, opencode's `run --format json` events, mini-swe-agent's trajectory file, and
plain text (the demo's tool log, a `command` agent's output). See `_transcripts`.
"""

from __future__ import annotations

from typing import Any

from ._steps import StepLog, text_of

__all__ = ["gemini_session", "gemini_stream", "mini_trajectory", "opencode_events", "plain_text"]


# -- Gemini CLI ------------------------------------------------------------------------------


def gemini_session(records: list[dict[str, Any]], log: StepLog, header: dict[str, Any] | None = None) -> None:
    """The session file: a header, `$set` updates (the first holds the opening messages)
    and message records, a message rewritten under the same id as it grows (its last
    record is the whole of it). A `gemini` message carries its tool calls with their results."""
    messages: dict[str, dict[str, Any]] = {}
    for rec in [header or {}, *records]:
        update = rec.get("$set")
        batch = update.get("messages") if isinstance(update, dict) else [rec] if "type" in rec else []
        for message in batch if isinstance(batch, list) else []:
            if isinstance(message, dict):
                messages[str(message.get("id") or len(messages))] = message
        log.facts.session_id = log.facts.session_id or rec.get("sessionId")
    for message in messages.values():
        kind, time = message.get("type"), message.get("timestamp")
        content = message.get("content")
        if kind == "user":
            # tool results come back as user parts too; the gemini message's calls hold them
            parts = content if isinstance(content, list) else [content]
            text = "\n".join(text_of(p) for p in parts if not (isinstance(p, dict) and "functionResponse" in p))
            if text:
                log.add("user", text, time=time)
        elif kind == "gemini":
            _gemini_message(message, log, time)
        elif kind in ("info", "error", "warning") and content:
            log.add("system", text_of(content), time=time, extra={"kind": kind})


def _gemini_message(message: dict[str, Any], log: StepLog, time: Any) -> None:
    model = message.get("model") if isinstance(message.get("model"), str) else None
    log.facts.model = log.facts.model or model
    step = log.agent_step(time=time, fresh=True)
    thoughts = message.get("thoughts")
    reasoning = "\n".join(text_of(t.get("description") or t.get("subject")) for t in thoughts
                          if isinstance(t, dict)) if isinstance(thoughts, list) else ""
    log.say(text_of(message.get("content")), time=time, reasoning=reasoning or None, model=model)
    for call in message.get("toolCalls") or []:
        if not isinstance(call, dict):
            continue
        call_id = str(call.get("id"))
        log.call(call_id, str(call.get("name")), call.get("args"), time=time)
        if "result" in call or call.get("status"):
            log.result(call_id, call.get("result"), time=call.get("timestamp") or time,
                       extra={"status": call["status"]} if call.get("status") else None)
    tokens = message.get("tokens")
    if isinstance(tokens, dict):
        log.metrics({"prompt_tokens": tokens.get("input"), "completion_tokens": tokens.get("output"),
                     "cached_tokens": tokens.get("cached")}, step=step)


def gemini_stream(records: list[dict[str, Any]], log: StepLog) -> None:
    """`gemini -p --output-format stream-json`: kept when the session file was not found."""
    for rec in records:
        kind, time = rec.get("type"), rec.get("timestamp")
        if kind == "init":
            log.facts.session_id = rec.get("session_id") or log.facts.session_id
            log.facts.model = rec.get("model") or log.facts.model
        elif kind == "message" and rec.get("role") == "user":
            log.add("user", text_of(rec.get("content")), time=time)
        elif kind == "message":
            log.say(text_of(rec.get("content")), time=time)
        elif kind == "tool_use":
            log.call(str(rec.get("tool_id")), str(rec.get("tool_name")), rec.get("parameters"), time=time)
        elif kind == "tool_result":
            log.result(str(rec.get("tool_id")), rec.get("output") or rec.get("error"), time=time,
                       extra={"status": rec.get("status")} if rec.get("status") else None)
        elif kind == "error":
            log.add("system", text_of(rec.get("message")), time=time, extra={"severity": rec.get("severity")})


# -- opencode --------------------------------------------------------------------------------


def opencode_events(records: list[dict[str, Any]], log: StepLog) -> None:
    """One agent step per model call (`step_start` .. `step_finish`, with its usage and cost)."""
    for rec in records:
        part, time = rec.get("part") if isinstance(rec.get("part"), dict) else {}, rec.get("timestamp")
        kind = rec.get("type")
        log.facts.session_id = log.facts.session_id or rec.get("sessionID")
        if kind == "step_start":
            log.agent_step(time=time, fresh=True)
        elif kind == "text":
            log.say(str(part.get("text") or ""), time=time)
        elif kind == "reasoning":
            log.say("", time=time, reasoning=str(part.get("text") or ""))
        elif kind == "tool_use":
            state = part.get("state") if isinstance(part.get("state"), dict) else {}
            call_id = str(part.get("callID") or part.get("id"))
            log.call(call_id, str(part.get("tool")), state.get("input"), time=time)
            failed = state.get("status") == "error"
            log.result(call_id, state.get("error") if failed else state.get("output"), time=time,
                       extra={"status": state.get("status")} if state.get("status") else None)
        elif kind == "step_finish":
            tokens = part.get("tokens") if isinstance(part.get("tokens"), dict) else {}
            cache = tokens.get("cache") if isinstance(tokens.get("cache"), dict) else {}
            read, write = cache.get("read") or 0, cache.get("write") or 0
            prompt = (tokens.get("input") or 0) + read + write if tokens else None
            log.metrics({"prompt_tokens": prompt, "completion_tokens": tokens.get("output"),
                         "cached_tokens": read if tokens else None, "cost_usd": part.get("cost")})
        elif kind == "error":
            log.add("system", text_of(rec.get("error")), time=time)


# -- mini-swe-agent --------------------------------------------------------------------------


def mini_trajectory(data: dict[str, Any], log: StepLog) -> None:
    """Its messages in OpenAI's chat shape; a billed completion keeps LiteLLM's response
    (its usage) and price in the message's `extra`."""
    info = data.get("info") if isinstance(data.get("info"), dict) else {}
    log.facts.version = info.get("mini_version") if isinstance(info.get("mini_version"), str) else None
    for message in data.get("messages", []):
        if not isinstance(message, dict):
            continue
        role, extra = message.get("role"), message.get("extra") if isinstance(message.get("extra"), dict) else {}
        time = extra.get("timestamp")
        if role == "assistant":
            _mini_assistant(message, extra, log, time)
        elif role == "tool":
            log.result(str(message.get("tool_call_id")), message.get("content"), time=time,
                       extra={"returncode": extra["returncode"]} if "returncode" in extra else None)
        elif role in ("system", "user"):
            log.add(str(role), text_of(message.get("content")), time=time)
        elif role == "exit":
            note = {k: extra[k] for k in ("exit_status", "exception_str") if k in extra}
            log.add("system", text_of(message.get("content")) or f"exit: {note.get('exit_status', '')}",
                    time=time, extra=note)


def _mini_assistant(message: dict[str, Any], extra: dict[str, Any], log: StepLog, time: Any) -> None:
    step = log.agent_step(time=time, fresh=True)
    response = extra.get("response") if isinstance(extra.get("response"), dict) else {}
    model = response.get("model") if isinstance(response.get("model"), str) else None
    log.facts.model = log.facts.model or model
    log.say(text_of(message.get("content")), time=time, model=model)
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) and isinstance(call.get("function"), dict) else {}
        log.call(str(call.get("id")), str(function.get("name")), function.get("arguments"), time=time)
    usage = response.get("usage") if isinstance(response.get("usage"), dict) else {}
    details = usage.get("prompt_tokens_details") if isinstance(usage.get("prompt_tokens_details"), dict) else {}
    cost = extra.get("cost")
    log.metrics({"prompt_tokens": usage.get("prompt_tokens"), "completion_tokens": usage.get("completion_tokens"),
                 "cached_tokens": details.get("cached_tokens"),
                 "cost_usd": cost if isinstance(cost, int | float) and cost > 0 else None}, step=step)


# -- plain text ------------------------------------------------------------------------------


def plain_text(text: str, log: StepLog) -> None:
    """A transcript in no format we read: the agent's one step, its words as recorded
    (`_build` adds the tool calls agent.finished counted)."""
    if text.strip():
        log.add("agent", text.rstrip("\n"))
