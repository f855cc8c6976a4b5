"""The steps of one ATIF trajectory as a transcript reader adds them.

Every transcript reader (`_transcripts`, `_transcripts_more`) fills a `StepLog`: user,
system and agent steps in transcript order, tool calls on the agent step that made them
and each call's result on that same step (ATIF's `observation.results[].source_call_id`
must name a call of its own step). Timestamps are kept aside (`StepLog.times`) so the
memory steps the ledger recorded can be placed among them (`_build.merge_memory`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

__all__ = ["StepLog", "TranscriptFacts", "arguments_dict", "iso_time", "parse_time", "text_of"]


@dataclass
class TranscriptFacts:
    """What a transcript says of the agent beside its steps (None: it does not say)."""

    format: str = "text"
    version: str | None = None
    model: str | None = None
    session_id: str | None = None


@dataclass
class StepLog:
    steps: list[dict[str, Any]] = field(default_factory=list)
    times: list[datetime | None] = field(default_factory=list)  # beside `steps`, for merging memory steps
    facts: TranscriptFacts = field(default_factory=TranscriptFacts)
    _step_of_call: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, source: str, message: str, *, time: Any = None, **fields: Any) -> dict[str, Any]:
        step: dict[str, Any] = {"source": source, "message": message}
        stamp = parse_time(time)
        if stamp is not None:
            step["timestamp"] = iso_time(stamp)
        step.update({k: v for k, v in fields.items() if v is not None and v != {}})
        self.steps.append(step)
        self.times.append(stamp)
        return step

    def agent_step(self, *, time: Any = None, fresh: bool = False) -> dict[str, Any]:
        """The agent step a tool call or text joins: the last step when it is the agent's
        and none of its calls has a result yet (one model response), else a new one."""
        last = self.steps[-1] if self.steps else None
        if not fresh and last is not None and last["source"] == "agent" and "observation" not in last:
            return last
        return self.add("agent", "", time=time)

    def say(self, text: str, *, time: Any = None, reasoning: str | None = None, model: str | None = None) -> None:
        if not text and not reasoning:
            return
        step = self.agent_step(time=time)
        if text:
            step["message"] = f"{step['message']}\n\n{text}" if step["message"] else text
        if reasoning:
            step["reasoning_content"] = f"{step.get('reasoning_content', '')}{reasoning}"
        if model:
            step["model_name"] = model

    def call(self, call_id: str, name: str, arguments: Any, *, time: Any = None,
             extra: dict[str, Any] | None = None) -> None:
        step = self.agent_step(time=time)
        call: dict[str, Any] = {"tool_call_id": call_id, "function_name": name, "arguments": arguments_dict(arguments)}
        if extra:
            call["extra"] = extra
        step.setdefault("tool_calls", []).append(call)
        self._step_of_call[call_id] = step

    def result(self, call_id: str | None, content: Any, *, time: Any = None,
               extra: dict[str, Any] | None = None) -> None:
        """A tool's result on the step of its call; a result of no call we saw (a
        transcript cut short at its start) becomes a system step of its own."""
        step = self._step_of_call.get(call_id or "")
        item: dict[str, Any] = {"content": text_of(content)}
        if step is not None:
            item["source_call_id"] = call_id
        else:
            step = self.add("system", "tool result", time=time)
        if extra:
            item["extra"] = extra
        step.setdefault("observation", {"results": []})["results"].append(item)

    def metrics(self, metrics: dict[str, Any], *, step: dict[str, Any] | None = None) -> None:
        """Usage of one model call, on its agent step (the last agent step by default)."""
        target = step or next((s for s in reversed(self.steps) if s["source"] == "agent"), None)
        values = {k: v for k, v in metrics.items() if v is not None}
        if target is None or not values:
            return
        merged = target.setdefault("metrics", {})
        for key, value in values.items():
            if isinstance(value, int | float) and isinstance(merged.get(key), int | float):
                merged[key] = merged[key] + value  # a step joining several records of one response
            else:
                merged[key] = value


def text_of(content: Any) -> str:
    """A message or tool result as text: strings as they are, a list of content parts
    (Anthropic, OpenAI, Gemini shapes) joined by their text, anything else as JSON."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(text_of(part) for part in content)
    if isinstance(content, dict):
        for key in ("text", "content", "output"):
            if isinstance(content.get(key), str | list):
                return text_of(content[key])
        if isinstance(content.get("functionResponse"), dict):
            return text_of(content["functionResponse"].get("response"))
    return json.dumps(content, ensure_ascii=False)


def arguments_dict(arguments: Any) -> dict[str, Any]:
    """ATIF wants a call's arguments as an object: a JSON string is parsed, a value that
    is not an object is kept under `input` (a custom tool's free text, a shell command)."""
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except json.JSONDecodeError:
            return {"input": arguments}
        arguments = parsed
    if isinstance(arguments, dict):
        return arguments
    return {} if arguments is None else {"input": arguments}


def parse_time(value: Any) -> datetime | None:
    """An ISO 8601 string or a Unix time (seconds, or milliseconds as opencode writes it)."""
    if isinstance(value, datetime):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return datetime.fromtimestamp(value / 1000 if value > 1e11 else value, UTC)
    if isinstance(value, str) and value:
        try:
            stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)
    return None


def iso_time(stamp: datetime) -> str:
    return stamp.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
