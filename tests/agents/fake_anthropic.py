"""A loopback fake of the Anthropic Messages API, for driving the real `claude` CLI offline.

The model API is the one boundary the tests cannot reach, so this stands in for it and
speaks the wire format the CLI really parses: `POST /v1/messages` with `stream: true`
answers with SSE (`message_start`, `content_block_start`, `content_block_delta` with
`text_delta` / `input_json_delta`, `content_block_stop`, `message_delta` with the stop
reason and usage, `message_stop`); without `stream` it answers one JSON message. The CLI
2.1.197 also sends `HEAD /` at start-up (a connection warm-up): answered 200. Anything
else gets an Anthropic-style 404 error and is logged, so a test sees what was asked.

Replies come from a script, picked by how many assistant turns the request's history
already holds (the server and the script are `fake_api`'s).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .fake_api import ApiHandler, FakeAPI, Logged, Step

Block = dict[str, Any]
__all__ = ["OPENCODE_MODEL", "Block", "FakeAnthropic", "Logged", "Step", "text", "tool_results", "tool_use"]

# A model of opencode's bundled catalog (so it prices the fake's tokens), as --model names it.
OPENCODE_MODEL = "anthropic/claude-sonnet-4-5"


def text(value: str) -> Block:
    return {"type": "text", "text": value}


def tool_use(name: str, input: dict[str, Any]) -> Block:
    return {"type": "tool_use", "name": name, "input": input}


def tool_results(body: dict[str, Any]) -> list[Any]:
    """The `tool_result` blocks a request sends back, in order."""
    return [b for m in body.get("messages", []) if isinstance(m, dict) and isinstance(m.get("content"), list)
            for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]


def _assistant_turns(body: Any) -> int:
    if not isinstance(body, dict):
        return 0
    return sum(1 for m in body.get("messages", []) if isinstance(m, dict) and m.get("role") == "assistant")


@dataclass
class FakeAnthropic(FakeAPI):
    """`script[n]` answers a request whose history holds n assistant turns (last one repeats)."""

    input_tokens: int = 100
    output_tokens: int = 20

    credential_header = "x-api-key"

    def is_model_call(self, method: str, route: str) -> bool:
        return method == "POST" and route == "/v1/messages"

    def turns_so_far(self, body: Any) -> int:
        return _assistant_turns(body)

    def default_step(self) -> Step:
        return [text("ok")]

    def error(self, handler: ApiHandler, status: int, message: str) -> None:
        kind = {401: "authentication_error", 404: "not_found_error"}.get(status, "api_error")
        handler.send_json(status, {"type": "error", "error": {"type": kind, "message": message}})

    def unauthorized(self, handler: ApiHandler) -> None:
        self.error(handler, 401, "invalid x-api-key")

    def other(self, handler: ApiHandler, logged: Logged) -> None:
        if logged.method == "HEAD":  # the CLI's connection warm-up
            handler.send_response(200)
            handler.send_header("content-length", "0")
            handler.end_headers()
        elif logged.method == "POST" and logged.route == "/v1/messages/count_tokens":
            handler.send_json(200, {"input_tokens": self.input_tokens})
        else:
            super().other(handler, logged)

    def answer(self, handler: ApiHandler, logged: Logged) -> None:
        body, turn = logged.body, logged.turn
        blocks = []
        for i, block in enumerate(self.step_for(body)):
            if block["type"] == "tool_use":
                block = {**block, "id": f"toolu_fake_{turn}_{i}"}
            blocks.append(block)
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        usage = {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }
        message = {
            "id": f"msg_fake_{turn}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "claude-fake"),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {**usage, "output_tokens": 1},
        }
        if not body.get("stream"):
            handler.send_json(200, {**message, "content": blocks, "stop_reason": stop, "usage": usage})
            return
        handler.start_events()

        def event(name: str, data: dict[str, Any]) -> None:
            handler.send_event(data, name)

        event("message_start", {"type": "message_start", "message": message})
        for i, block in enumerate(blocks):
            if block["type"] == "text":
                event("content_block_start", {"type": "content_block_start", "index": i,
                                              "content_block": {"type": "text", "text": ""}})
                event("content_block_delta", {"type": "content_block_delta", "index": i,
                                              "delta": {"type": "text_delta", "text": block["text"]}})
            else:
                event("content_block_start", {"type": "content_block_start", "index": i,
                                              "content_block": {"type": "tool_use", "id": block["id"],
                                                                "name": block["name"], "input": {}}})
                event("content_block_delta", {"type": "content_block_delta", "index": i,
                                              "delta": {"type": "input_json_delta",
                                                        "partial_json": json.dumps(block["input"])}})
            event("content_block_stop", {"type": "content_block_stop", "index": i})
        event("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                "usage": {"output_tokens": self.output_tokens}})
        event("message_stop", {"type": "message_stop"})
