"""Reading mini-swe-agent's trajectory file (`-o PATH`, format `mini-swe-agent-1.1`).

One JSON object, rewritten after every step: `info` (`exit_status`: `Submitted` when the
model finished, `LimitsExceeded`, `RepeatedFormatError`, or the class name of the
exception that ended the run, with `model_stats.instance_cost` and `.api_calls`) and
`messages`, the conversation (`info.submission`: what the model's last command printed
after `COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`, the blind mode's diff): `system`, `user` (the task, and a format error's reminder),
`assistant` (the model's message, `tool_calls` in the OpenAI shape), `tool` (a command's
result), and last `exit`. Every billed completion keeps LiteLLM's whole response in its
message's `extra.response` (its `usage`, OpenAI-shaped whatever the provider) and LiteLLM's
price of it in `extra.cost` (0 when LiteLLM has no price for the model); an assistant
message also has `extra.actions` (the commands), a tool message `extra.returncode`; the
exit message's `extra` has `exception_str` when an exception ended the run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ledger.events import ToolCall

__all__ = ["TOOL_NAME", "Trajectory", "read_trajectory"]

TOOL_NAME = "bash"  # mini-swe-agent's one tool


@dataclass
class Trajectory:
    exit_status: str = ""
    exception: str | None = None  # what ended the run, when an exception did
    turns: int = 0  # billed model completions (a reply without a tool call counts too)
    tool_calls: list[ToolCall] = field(default_factory=list)
    tokens: dict[str, int] = field(default_factory=dict)
    cost_usd: float | None = None  # None: LiteLLM priced no completion
    model: str | None = None
    final_text: str | None = None  # the model's last words beside its commands
    submission: str = ""  # the output of its submitting command after the marker line
    compact: bytes = b""  # the whole trajectory as one JSON line (the transcript kept)


def read_trajectory(raw: bytes) -> Trajectory | None:
    """The facts of a trajectory file's text; None when it is not one."""
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        return None
    info = data.get("info") if isinstance(data.get("info"), dict) else {}
    facts = Trajectory(exit_status=str(info.get("exit_status") or ""),
                       submission=info["submission"] if isinstance(info.get("submission"), str) else "",
                       compact=json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode())
    usage_sum = {"prompt": 0, "cached": 0, "written": 0, "output": 0, "reasoning": 0}
    cost = 0.0
    for message in data["messages"]:
        if not isinstance(message, dict):
            continue
        extra = message.get("extra") if isinstance(message.get("extra"), dict) else {}
        role = message.get("role")
        response = extra.get("response")
        if isinstance(response, dict):
            facts.turns += 1
            cost += _number(extra.get("cost"))
            _add_usage(usage_sum, response.get("usage"))
            if isinstance(response.get("model"), str) and response["model"]:
                facts.model = response["model"]
        if role == "assistant" and isinstance(message.get("content"), str) and message["content"].strip():
            facts.final_text = message["content"].strip()
        elif role == "tool":
            returncode = extra.get("returncode")
            facts.tool_calls.append(ToolCall(TOOL_NAME, error=returncode != 0))
        elif role == "exit" and isinstance(extra.get("exception_str"), str):
            facts.exception = extra["exception_str"]
    if facts.turns:
        facts.tokens = {
            # OpenAI's prompt_tokens hold the cached part: `input` is the rest, as the
            # other adapters record it (input + cache_read + cache_creation = the prompt)
            "input": max(0, usage_sum["prompt"] - usage_sum["cached"] - usage_sum["written"]),
            "output": usage_sum["output"],
            "cache_read": usage_sum["cached"],
            "cache_creation": usage_sum["written"],
            "reasoning": usage_sum["reasoning"],
        }
    facts.cost_usd = cost if cost > 0 else None
    return facts


def _add_usage(total: dict[str, int], usage: Any) -> None:
    if not isinstance(usage, dict):
        return
    prompt_details = usage.get("prompt_tokens_details") if isinstance(usage.get("prompt_tokens_details"), dict) else {}
    output_details = (usage.get("completion_tokens_details")
                      if isinstance(usage.get("completion_tokens_details"), dict) else {})
    total["prompt"] += _count(usage.get("prompt_tokens"))
    total["output"] += _count(usage.get("completion_tokens"))
    total["cached"] += _count(prompt_details.get("cached_tokens"))
    # LiteLLM's Anthropic usage adds the prompt it wrote to the cache (inside prompt_tokens)
    total["written"] += _count(usage.get("cache_creation_input_tokens"))
    total["reasoning"] += _count(output_details.get("reasoning_tokens"))


def _count(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 0


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 0.0
