"""The memory server's own model calls, seen and counted: a recording gateway.

Memory systems (mem0, cognee, graphiti ...) call an LLM and an embedding model of their
own through an OpenAI-compatible API. `ModelGateway` is an HTTP reverse proxy on the
host's loopback that the server takes as that API's base URL (`{model_gateway}` in a
`--memory-env` value): each request is forwarded to `--memory-model-endpoint` (the real
API, or a test's fake), its answer streamed back as it comes, and the call recorded as
`memory.model.called` under the task in flight (`context`, which the server's host sets
before each tool call: the server's model calls happen during its tool calls).

`{model_gateway}` stands for the endpoint's base URL: a request for `/chat/completions`
goes to ENDPOINT/chat/completions; one whose path already starts with the endpoint's
path (`{model_gateway}/v1` for an endpoint ending in `/v1`) is not given it twice.

What is recorded is never a header, a key or a body: the endpoint's host, the path, the
model the request named, the kind, the status, the tokens of the answer's `usage` (a
streamed answer's last chunk that has one) and their price (`_model_prices`). The
Authorization header passes through to the endpoint, as the user's key must.

A confined server reaches the gateway through its sandbox's egress (`_server_stdio`):
the gateway is then the one place its model calls can go.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from ledger.events import Event, MemoryModelCalled

from ._model_prices import model_cost
from ._server_record import CallContext

__all__ = ["ModelGateway", "call_kind", "usage_of"]

_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate", "te",
                  "trailer", "transfer-encoding", "upgrade", "host", "accept-encoding", "content-length"})
_KEPT_MAX = 64 * 1024 * 1024  # an answer longer than this is passed on, its usage not read
_UPSTREAM_TIMEOUT_S = 600.0


def call_kind(path: str) -> str:
    """chat, embeddings or other, by the API path."""
    route = path.split("?", 1)[0].rstrip("/")
    if route.endswith("/embeddings"):
        return "embeddings"
    if route.endswith(("/chat/completions", "/completions", "/responses", "/messages")):
        return "chat"
    return "other"


def _tokens(usage: Any) -> tuple[int | None, int | None]:
    if not isinstance(usage, dict):
        return None, None

    def first(*names: str) -> int | None:
        for name in names:
            value = usage.get(name)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        return None

    return first("prompt_tokens", "input_tokens"), first("completion_tokens", "output_tokens")


def usage_of(body: bytes, streamed: bool) -> tuple[tuple[int | None, int | None], str | None]:
    """((input, output) tokens, the answer's model) of an answer: a JSON body's `usage`, or
    a server-sent-event stream's last chunk with one. None where not reported."""
    if not streamed:
        try:
            doc = json.loads(body)
        except ValueError:
            return (None, None), None
        if not isinstance(doc, dict):
            return (None, None), None
        model = doc.get("model")
        return _tokens(doc.get("usage")), model if isinstance(model, str) else None
    tokens: tuple[int | None, int | None] = (None, None)
    model: str | None = None
    for line in body.splitlines():
        if not line.startswith(b"data:"):
            continue
        try:
            chunk = json.loads(line[5:].strip())
        except ValueError:
            continue  # `[DONE]`, a keep-alive
        if isinstance(chunk, dict):
            model = chunk.get("model") if isinstance(chunk.get("model"), str) else model
            if isinstance(chunk.get("usage"), dict):
                tokens = _tokens(chunk["usage"])
    return tokens, model


class ModelGateway:
    """The gateway of one memory server host; `url` once entered. `record` appends one event."""

    def __init__(self, endpoint: str, record: Callable[[Event], None], *, sequence_id: str) -> None:
        parts = urlsplit(endpoint)
        self.scheme = parts.scheme.lower()
        self.upstream_host = parts.hostname or ""
        self.upstream_port = parts.port
        self.netloc = (f"[{self.upstream_host}]" if ":" in self.upstream_host else self.upstream_host) + (
            f":{parts.port}" if parts.port else "")
        self.prefix = parts.path.rstrip("/")
        self._record = record
        self.context = CallContext(sequence_id=sequence_id, instance_id="", order=0, via="start")
        self.calls = 0
        self.unrecorded: list[str] = []  # why an event could not be appended (the call itself went through)
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "the gateway is not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> ModelGateway:
        gateway = self

        class Handler(_Handler):
            pass

        Handler.gateway = gateway
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="memory-model-gateway", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def set_context(self, context: CallContext) -> None:
        """The task in flight: what the next model calls are recorded under."""
        with self._lock:
            self.context = context

    def upstream_path(self, path: str) -> str:
        if self.prefix and (path == self.prefix or path.startswith(self.prefix + "/")):
            return path
        return self.prefix + (path if path.startswith("/") else "/" + path)

    def connection(self) -> http.client.HTTPConnection:
        if self.scheme == "https":
            return http.client.HTTPSConnection(self.upstream_host, self.upstream_port, timeout=_UPSTREAM_TIMEOUT_S)
        return http.client.HTTPConnection(self.upstream_host, self.upstream_port, timeout=_UPSTREAM_TIMEOUT_S)

    def finished(self, method: str, path: str, request: Any, status: int | None, answer: bytes | None,
                 streamed: bool, started: float, error: str | None) -> None:
        """One call recorded: what it was, and what its answer said it used."""
        model = request.get("model") if isinstance(request, dict) and isinstance(request.get("model"), str) else None
        (tokens_in, tokens_out), answered_model = usage_of(answer, streamed) if answer else ((None, None), None)
        model = model or answered_model
        with self._lock:
            self.calls += 1
            context, number = self.context, self.calls
        event = MemoryModelCalled(
            sequence_id=context.sequence_id, instance_id=context.instance_id, order=context.order,
            pass_=context.pass_, attempt=context.attempt, via=context.via, call=number, host=self.netloc,
            method=method, path=path.split("?", 1)[0], model=model, kind=call_kind(path), stream=streamed,
            status=status, tokens_in=tokens_in, tokens_out=tokens_out,
            cost_usd=model_cost(model, tokens_in, tokens_out) if status is not None and status < 400 else None,
            duration_s=round(time.monotonic() - started, 6), error=error)
        try:
            with self._lock:
                self._record(event)
        except Exception as exc:  # noqa: BLE001 - the server's call went through; say what was lost
            self.unrecorded.append(f"{type(exc).__name__}: {exc}")


class _Handler(BaseHTTPRequestHandler):
    """One request: read, forward, stream back, record. One request per connection."""

    gateway: ModelGateway
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass  # the ledger has the calls; stderr is the run's

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        self._forward()

    do_GET = do_PUT = do_DELETE = do_PATCH = do_POST  # noqa: N815

    def _body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _forward(self) -> None:
        gateway, started = self.gateway, time.monotonic()
        self.close_connection = True
        body = self._body()
        try:
            request = json.loads(body) if body else None
        except ValueError:
            request = None
        streamed = isinstance(request, dict) and request.get("stream") is True
        path = gateway.upstream_path(self.path)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
        headers["Host"], headers["Accept-Encoding"] = gateway.netloc, "identity"  # usage must be readable
        conn = gateway.connection()
        try:
            conn.request(self.command, path, body=body, headers=headers)
            response = conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            why = f"{gateway.netloc}: {exc.strerror if isinstance(exc, OSError) and exc.strerror else exc}"
            self._refuse(why)
            gateway.finished(self.command, path, request, None, None, streamed, started, why)
            return
        try:
            streamed = streamed or "text/event-stream" in (response.getheader("Content-Type") or "")
            answer, error = self._relay(response)
        finally:
            conn.close()
        gateway.finished(self.command, path, request, response.status, answer, streamed, started, error)

    def _relay(self, response: http.client.HTTPResponse) -> tuple[bytes | None, str | None]:
        """The endpoint's answer passed on as it arrives; what of it was kept, and a broken relay's why."""
        self.send_response_only(response.status, response.reason)
        for name, value in response.getheaders():
            if name.lower() not in _HOP:
                self.send_header(name, value)
        length = response.getheader("Content-Length")
        if length is not None and response.getheader("Transfer-Encoding") is None:
            self.send_header("Content-Length", length)
        self.send_header("Connection", "close")
        self.end_headers()
        kept: bytearray | None = bytearray()
        try:
            while True:
                data = response.read1(65536)
                if not data:
                    break
                self.wfile.write(data)
                self.wfile.flush()
                if kept is not None:
                    kept += data
                    if len(kept) > _KEPT_MAX:
                        kept = None
        except (OSError, http.client.HTTPException) as exc:
            return (bytes(kept) if kept is not None else None), f"relay broken: {exc}"
        return (bytes(kept) if kept is not None else None), None

    def _refuse(self, why: str) -> None:
        payload = json.dumps({"error": {"message": f"swecl model gateway: the endpoint cannot be reached ({why})",
                                        "type": "gateway_error"}}).encode()
        with contextlib.suppress(OSError):
            self.send_response_only(502, "Bad Gateway")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(payload)

