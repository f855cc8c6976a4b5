"""A loopback fake of OpenAI's Chat Completions API, for driving the real mini-swe-agent
(through LiteLLM) offline.

The model API is the one boundary the tests cannot reach, so this stands in for it and
speaks the wire format the OpenAI Python SDK (which LiteLLM's `openai/` provider calls)
really parses: `POST /v1/chat/completions`, not streamed (mini-swe-agent asks for one
whole completion a step), answered with one JSON `chat.completion`: `id`, `created`,
`model`, `choices[0]` with the assistant `message` (`content`, and `tool_calls` of type
`function` with an `id`, a `name` and JSON `arguments`) and its `finish_reason`
(`tool_calls` or `stop`), and `usage` (`prompt_tokens` with
`prompt_tokens_details.cached_tokens`, `completion_tokens` with
`completion_tokens_details.reasoning_tokens`, `total_tokens`). The key arrives as a bearer
token; a request without one gets the API's own 401 `invalid_api_key` error.

Replies come from a script, picked by how many assistant messages the request's
`messages` already hold (the server and the script are `fake_api`'s). A step is a list of
tool calls (`bash(...)`), or one `text(...)` message.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .fake_api import ApiHandler, FakeAPI, Logged, Step

# In LiteLLM's bundled cost map, so the run's cost is LiteLLM's own price of the usage.
MODEL = "openai/gpt-4o-mini"
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"  # mini-swe-agent's way to finish


def bash(command: str) -> dict[str, Any]:
    """A call of mini-swe-agent's one tool."""
    return {"type": "bash", "command": command}


def text(value: str) -> dict[str, Any]:
    """A reply without a tool call (mini-swe-agent calls it a format error and asks again)."""
    return {"type": "text", "text": value}


def turns_so_far(body: Any) -> int:
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return 0
    return sum(1 for m in body["messages"] if isinstance(m, dict) and m.get("role") == "assistant")


def tool_results(body: dict[str, Any]) -> list[str]:
    """The tool messages the request sends back, in order."""
    return [str(m.get("content")) for m in body.get("messages", []) if isinstance(m, dict) and m.get("role") == "tool"]


@dataclass
class FakeChat(FakeAPI):
    """`script[n]` answers a request whose messages hold n assistant messages (last one repeats)."""

    prompt_tokens: int = 100
    cached_tokens: int = 10
    completion_tokens: int = 20
    reasoning_tokens: int = 5

    credential_header = "authorization"
    url_path = "/v1"  # the base URL the SDK appends `/chat/completions` to

    def is_model_call(self, method: str, route: str) -> bool:
        return method == "POST" and route == "/v1/chat/completions"

    def turns_so_far(self, body: Any) -> int:
        return turns_so_far(body)

    def default_step(self) -> Step:
        return [bash(SUBMIT)]

    def error(self, handler: ApiHandler, status: int, message: str) -> None:
        code = "invalid_api_key" if status == 401 else None
        handler.send_json(status, {"error": {"message": message, "type": "invalid_request_error", "param": None,
                                             "code": code}})

    def authorised(self, handler: ApiHandler) -> bool:
        return super().authorised(handler) and (handler.headers.get("authorization") or "").startswith("Bearer ")

    def unauthorized(self, handler: ApiHandler) -> None:
        self.error(handler, 401, "Incorrect API key provided.")

    def answer(self, handler: ApiHandler, logged: Logged) -> None:
        body, turn = logged.body, logged.turn
        step = self.step_for(body)
        calls = [
            {"id": f"call_fake_{turn}_{i}", "type": "function",
             "function": {"name": "bash", "arguments": json.dumps({"command": s["command"]})}}
            for i, s in enumerate(step) if s["type"] == "bash"
        ]
        words = "".join(s["text"] for s in step if s["type"] == "text")
        message: dict[str, Any] = {"role": "assistant", "content": words or None, "refusal": None}
        if calls:
            message["tool_calls"] = calls
        handler.send_json(200, {
            "id": f"chatcmpl-fake-{turn}",
            "object": "chat.completion",
            "created": 1_700_000_000 + turn,
            "model": str(body.get("model", "gpt-fake")),
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "total_tokens": self.prompt_tokens + self.completion_tokens,
                "prompt_tokens_details": {"cached_tokens": self.cached_tokens, "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": self.reasoning_tokens, "audio_tokens": 0,
                                              "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
            },
            "system_fingerprint": "fp_fake",
        })
