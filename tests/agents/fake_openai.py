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
replays (each maximal run of model-made items is one response): deterministic whatever the
CLI's timing. Anything but `POST /v1/responses` gets an OpenAI-style 404 and is logged, so a
test sees what was asked; a request without a bearer token gets the API's 401.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Item = dict[str, Any]
Step = list[Item]

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


@dataclass
class Logged:
    method: str
    path: str
    body: Any = None
    authorization: str | None = None  # the Authorization header (kept in memory only, to assert it arrived)

    @property
    def responses_so_far(self) -> int:
        return responses_so_far(self.body)


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


@dataclass
class FakeOpenAI:
    """`script[n]` answers a request whose input replays n model responses (last one repeats).

    mode: `script` (default), `hang` (read the request, never answer), `unauthorized` (401).
    """

    script: Sequence[Step] | Callable[[dict[str, Any]], Step] = ()
    mode: str = "script"
    input_tokens: int = 100
    cached_tokens: int = 10
    output_tokens: int = 20
    reasoning_tokens: int = 5
    requests: list[Logged] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None
    _release: threading.Event = field(default_factory=threading.Event)

    @property
    def url(self) -> str:
        """The base URL a client appends `/responses` to."""
        assert self._server is not None, "start() the fake first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> FakeOpenAI:
        fake = self

        class Handler(_Handler):
            owner = fake

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._release.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def response_requests(self) -> list[Logged]:
        return [r for r in self.requests if r.method == "POST" and r.path.split("?")[0] == "/v1/responses"]

    def step_for(self, body: dict[str, Any]) -> Step:
        if callable(self.script):
            return self.script(body)
        if not self.script:
            return [text("ok")]
        n = responses_so_far(body)
        return self.script[min(n, len(self.script) - 1)]


class _Handler(BaseHTTPRequestHandler):
    owner: FakeOpenAI
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the log is `requests`
        pass

    def _json(self, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, kind: str, code: str | None, message: str) -> None:
        self._json(status, {"error": {"message": message, "type": kind, "param": None, "code": code}})

    def _log(self, body: Any = None) -> Logged:
        entry = Logged(self.command, self.path, body, self.headers.get("authorization"))
        self.owner.requests.append(entry)
        return entry

    def do_GET(self) -> None:
        self._log()
        self._error(404, "invalid_request_error", None, f"no {self.path} in this fake")

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = None
        self._log(body)
        if self.path.split("?")[0] != "/v1/responses" or not isinstance(body, dict):
            self._error(404, "invalid_request_error", None, f"no {self.path} in this fake")
            return
        if self.owner.mode == "hang":
            self.owner._release.wait()
            self.close_connection = True
            return
        if self.owner.mode == "unauthorized" or not (self.headers.get("authorization") or "").startswith("Bearer "):
            self._error(401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided.")
            return
        self._answer(body)

    def _answer(self, body: dict[str, Any]) -> None:
        turn = responses_so_far(body)
        response_id = f"resp_fake_{turn}"
        items: list[Item] = []
        for i, item in enumerate(self.owner.step_for(body)):
            item = {**item, "id": f"{_ID_PREFIX.get(item['type'], 'item')}_fake_{turn}_{i}"}
            if item["type"] in ("function_call", "custom_tool_call", "tool_search_call"):
                item["call_id"] = f"call_fake_{turn}_{i}"
            if item["type"] in ("message", "function_call", "custom_tool_call"):
                item.setdefault("status", "completed")
            items.append(item)
        o = self.owner
        usage = {
            "input_tokens": o.input_tokens,
            "input_tokens_details": {"cached_tokens": o.cached_tokens},
            "output_tokens": o.output_tokens,
            "output_tokens_details": {"reasoning_tokens": o.reasoning_tokens},
            "total_tokens": o.input_tokens + o.output_tokens,
        }
        response = {"id": response_id, "object": "response", "created_at": 0, "status": "in_progress",
                    "model": body.get("model", "gpt-fake"), "output": []}
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        sequence = 0

        def event(data: dict[str, Any]) -> None:
            nonlocal sequence
            data = {**data, "sequence_number": sequence}
            sequence += 1
            self.wfile.write(f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()

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
        self.close_connection = True


_ID_PREFIX = {"message": "msg", "function_call": "fc", "custom_tool_call": "ctc", "tool_search_call": "ts"}
