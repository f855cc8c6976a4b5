"""A loopback fake of the Anthropic Messages API, for driving the real `claude` CLI offline.

The model API is the one boundary the tests cannot reach, so this stands in for it and
speaks the wire format the CLI really parses: `POST /v1/messages` with `stream: true`
answers with SSE (`message_start`, `content_block_start`, `content_block_delta` with
`text_delta` / `input_json_delta`, `content_block_stop`, `message_delta` with the stop
reason and usage, `message_stop`); without `stream` it answers one JSON message. The CLI
2.1.197 also sends `HEAD /` at start-up (a connection warm-up): answered 200. Anything
else gets an Anthropic-style 404 error and is logged, so a test sees what was asked.

Replies come from a script, picked by how many assistant turns the request's history
already holds: deterministic whatever the CLI's timing.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Block = dict[str, Any]
Step = list[Block]


def text(value: str) -> Block:
    return {"type": "text", "text": value}


def tool_use(name: str, input: dict[str, Any]) -> Block:
    return {"type": "tool_use", "name": name, "input": input}


@dataclass
class Logged:
    method: str
    path: str
    body: Any = None
    api_key: str | None = None  # the x-api-key header (kept in memory only, to assert it arrived)

    @property
    def assistant_turns(self) -> int:
        return _assistant_turns(self.body)


def _assistant_turns(body: Any) -> int:
    if not isinstance(body, dict):
        return 0
    return sum(1 for m in body.get("messages", []) if isinstance(m, dict) and m.get("role") == "assistant")


@dataclass
class FakeAnthropic:
    """`script[n]` answers a request whose history holds n assistant turns (last one repeats).

    mode: `script` (default), `hang` (read the request, never answer), `unauthorized` (401).
    """

    script: Sequence[Step] | Callable[[dict[str, Any]], Step] = ()
    mode: str = "script"
    input_tokens: int = 100
    output_tokens: int = 20
    requests: list[Logged] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None
    _release: threading.Event = field(default_factory=threading.Event)

    @property
    def url(self) -> str:
        assert self._server is not None, "start() the fake first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeAnthropic:
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

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def message_requests(self) -> list[Logged]:
        return [r for r in self.requests if r.method == "POST" and r.path.split("?")[0] == "/v1/messages"]

    def step_for(self, body: dict[str, Any]) -> Step:
        if callable(self.script):
            return self.script(body)
        if not self.script:
            return [text("ok")]
        n = _assistant_turns(body)
        return self.script[min(n, len(self.script) - 1)]


class _Handler(BaseHTTPRequestHandler):
    owner: FakeAnthropic
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

    def _error(self, status: int, kind: str, message: str) -> None:
        self._json(status, {"type": "error", "error": {"type": kind, "message": message}})

    def _log(self, body: Any = None) -> Logged:
        entry = Logged(self.command, self.path, body, self.headers.get("x-api-key"))
        self.owner.requests.append(entry)
        return entry

    def do_HEAD(self) -> None:
        self._log()
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        self._log()
        self._error(404, "not_found_error", f"no {self.path} in this fake")

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = None
        self._log(body)
        path = self.path.split("?")[0]
        if path == "/v1/messages/count_tokens":
            self._json(200, {"input_tokens": self.owner.input_tokens})
            return
        if path != "/v1/messages" or not isinstance(body, dict):
            self._error(404, "not_found_error", f"no {self.path} in this fake")
            return
        if self.owner.mode == "hang":
            self.owner._release.wait()
            self.close_connection = True
            return
        if self.owner.mode == "unauthorized":
            self._error(401, "authentication_error", "invalid x-api-key")
            return
        self._answer(body)

    def _answer(self, body: dict[str, Any]) -> None:
        turn = _assistant_turns(body)
        blocks = []
        for i, block in enumerate(self.owner.step_for(body)):
            if block["type"] == "tool_use":
                block = {**block, "id": f"toolu_fake_{turn}_{i}"}
            blocks.append(block)
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        usage = {
            "input_tokens": self.owner.input_tokens,
            "output_tokens": self.owner.output_tokens,
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
            self._json(200, {**message, "content": blocks, "stop_reason": stop, "usage": usage})
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()

        def event(name: str, data: dict[str, Any]) -> None:
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()

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
                                "usage": {"output_tokens": self.owner.output_tokens}})
        event("message_stop", {"type": "message_stop"})
        self.close_connection = True
