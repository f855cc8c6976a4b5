"""A loopback fake of OpenAI's Responses API, for driving the real `codex` CLI offline.

The model API is the one boundary the tests cannot reach, so this stands in for it and
speaks the wire format codex 0.169 really parses (codex-rs/codex-api/src/sse/responses.rs):
`POST /v1/responses` with `stream: true` answers with SSE, one `event:` / `data:` pair per
event: `response.created`, then per output item `response.output_item.added`, for a message
`response.output_text.delta`, `response.output_item.done` (the item codex acts on), and
last `response.completed` with the response id and its usage (`input_tokens` with
`input_tokens_details.cached_tokens`, `output_tokens` with
`output_tokens_details.reasoning_tokens`, `total_tokens`). Output items are the API's:
an assistant `message` with `output_text` content, a `function_call` (JSON `arguments`;
MCP tools carry their `namespace`, e.g. `mcp__memory`), a `custom_tool_call` (the freeform
`apply_patch` tool: raw patch text as `input`) and a client-executed `tool_search_call`
(codex defers MCP tools behind it for models that support tool search).

Replies come from a script, picked by how many model responses the request's input already
replays (each maximal run of model-made items is one response; the server and the script
are `fake_api`'s). Anything but `POST /v1/responses` gets an OpenAI-style 404 and is logged, so a
test sees what was asked; a request without a bearer token gets the API's 401.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from typing import Any

from .fake_api import ApiHandler, FakeAPI, Logged, Step

Item = dict[str, Any]

# One of the CLI's catalog, so codex offers the tool set it offers that model on the real service.
MODEL = "gpt-5.5"
# Where the codex adapter's builtin-stage developer instructions say the memory file is.
MEMORY_PATH = re.compile(r"memory file across the tasks you do in this repository: (\S+/AGENTS\.md)")

# Items the model makes (replayed in later requests' `input`); everything else there is
# the client's (messages of other roles, tool outputs).
_MODEL_ITEMS = {"function_call", "custom_tool_call", "tool_search_call", "reasoning", "local_shell_call",
                "web_search_call"}


def text(value: str) -> Item:
    return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": value, "annotations": []}]}


def function_call(name: str, arguments: dict[str, Any], namespace: str | None = None) -> Item:
    item: Item = {"type": "function_call", "name": name, "arguments": json.dumps(arguments)}
    if namespace is not None:
        item["namespace"] = namespace
    return item


def mcp_call(server: str, tool: str, arguments: dict[str, Any]) -> Item:
    """An MCP tool as codex exposes it: the tool's own name in the namespace `mcp__SERVER`."""
    return function_call(tool, arguments, namespace=f"mcp__{server}")


def exec_command(cmd: str) -> Item:
    """codex's unified-exec shell tool."""
    return function_call("exec_command", {"cmd": cmd})


def apply_patch(patch: str) -> Item:
    """codex's freeform `apply_patch` tool (`*** Begin Patch` ... `*** End Patch`)."""
    return {"type": "custom_tool_call", "name": "apply_patch", "input": patch}


def tool_search(query: str, limit: int = 5) -> Item:
    """A client-side tool search: codex answers it with the matching deferred tools."""
    return {"type": "tool_search_call", "execution": "client", "status": "completed",
            "arguments": {"query": query, "limit": limit}}


def _is_model_item(item: Any) -> bool:
    if not isinstance(item, dict):
        return False
    kind = item.get("type")
    return kind in _MODEL_ITEMS or (kind == "message" and item.get("role") == "assistant")


def responses_so_far(body: Any) -> int:
    """Model responses the input replays: each maximal run of model-made items is one."""
    if not isinstance(body, dict) or not isinstance(body.get("input"), list):
        return 0
    count, inside = 0, False
    for item in body["input"]:
        model = _is_model_item(item)
        if model and not inside:
            count += 1
        inside = model
    return count


def tool_outputs(body: dict[str, Any]) -> list[str]:
    """The outputs of tool calls the request sends back (function and custom tools), in order."""
    out: list[str] = []
    for item in body.get("input", []):
        if isinstance(item, dict) and item.get("type") in ("function_call_output", "custom_tool_call_output"):
            value = item.get("output")
            out.append(value if isinstance(value, str) else json.dumps(value))
    return out


def write_agents_md(body: dict[str, Any], line: str) -> list[Item]:
    """A model's first move in the builtin stage: add `line` to the memory file its
    developer instructions name, keeping what the file already held (codex showed it)."""
    found = MEMORY_PATH.search(json.dumps(body))
    assert found, "the builtin stage's instructions name the memory file"
    path = found.group(1)
    held = re.search(r"<INSTRUCTIONS>\\n(.*?)\\n</INSTRUCTIONS>", json.dumps(body))
    before = json.loads(f'"{held.group(1)}"') + "\n" if held else ""
    return [exec_command(f"printf %s {shlex.quote(before + line)} > {shlex.quote(path)}")]


@dataclass
class FakeOpenAI(FakeAPI):
    """`script[n]` answers a request whose input replays n model responses (last one repeats)."""

    input_tokens: int = 100
    cached_tokens: int = 10
    output_tokens: int = 20
    reasoning_tokens: int = 5

    credential_header = "authorization"
    url_path = "/v1"  # the base URL a client appends `/responses` to

    def is_model_call(self, method: str, route: str) -> bool:
        return method == "POST" and route == "/v1/responses"

    def turns_so_far(self, body: Any) -> int:
        return responses_so_far(body)

    def default_step(self) -> Step:
        return [text("ok")]

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
        response_id = f"resp_fake_{turn}"
        items: list[Item] = []
        for i, item in enumerate(self.step_for(body)):
            item = {**item, "id": f"{_ID_PREFIX.get(item['type'], 'item')}_fake_{turn}_{i}"}
            if item["type"] in ("function_call", "custom_tool_call", "tool_search_call"):
                item["call_id"] = f"call_fake_{turn}_{i}"
            if item["type"] in ("message", "function_call", "custom_tool_call"):
                item.setdefault("status", "completed")
            items.append(item)
        usage = {
            "input_tokens": self.input_tokens,
            "input_tokens_details": {"cached_tokens": self.cached_tokens},
            "output_tokens": self.output_tokens,
            "output_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
            "total_tokens": self.input_tokens + self.output_tokens,
        }
        response = {"id": response_id, "object": "response", "created_at": 0, "status": "in_progress",
                    "model": body.get("model", "gpt-fake"), "output": []}
        handler.start_events()
        sequence = 0

        def event(data: dict[str, Any]) -> None:
            nonlocal sequence
            data = {**data, "sequence_number": sequence}
            sequence += 1
            handler.send_event(data, data["type"])

        event({"type": "response.created", "response": response})
        event({"type": "response.in_progress", "response": response})
        for i, item in enumerate(items):
            if item["type"] == "message":
                event({"type": "response.output_item.added", "output_index": i,
                       "item": {**item, "status": "in_progress", "content": []}})
                for c, part in enumerate(item["content"]):
                    event({"type": "response.content_part.added", "item_id": item["id"], "output_index": i,
                           "content_index": c, "part": {**part, "text": ""}})
                    event({"type": "response.output_text.delta", "item_id": item["id"], "output_index": i,
                           "content_index": c, "delta": part["text"]})
                    event({"type": "response.output_text.done", "item_id": item["id"], "output_index": i,
                           "content_index": c, "text": part["text"]})
                    event({"type": "response.content_part.done", "item_id": item["id"], "output_index": i,
                           "content_index": c, "part": part})
            else:
                event({"type": "response.output_item.added", "output_index": i, "item": item})
            event({"type": "response.output_item.done", "output_index": i, "item": item})
        event({"type": "response.completed",
               "response": {**response, "status": "completed", "output": items, "usage": usage}})


_ID_PREFIX = {"message": "msg", "function_call": "fc", "custom_tool_call": "ctc", "tool_search_call": "ts"}
