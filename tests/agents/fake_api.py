"""What the loopback fakes of the model APIs share (fake_anthropic, fake_openai, fake_gemini).

Each fake is a `FakeAPI`: an HTTP server on 127.0.0.1 (a free port, a daemon thread)
that logs every request and answers the model endpoints from a script, picked by how many
model replies the request's history already holds (`turns_so_far`): deterministic
whatever the CLI's timing. A script is a list of steps (the last one repeats) or a
function of the request body. Modes: `script` (default), `hang` (read the request, never
answer, until the fake stops), `unauthorized` (the API's own 401).

A subclass names its endpoints (`is_model_call`), counts turns, answers (`answer`) and
writes the API's error shape (`error`); the HTTP plumbing is here.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

Step = list[dict[str, Any]]


@dataclass
class Logged:
    method: str
    path: str
    body: Any = None
    credential: str | None = None  # the API's key header (kept in memory only, to assert it arrived)
    turn: int = 0  # model replies the request's history already held

    @property
    def route(self) -> str:
        return self.path.split("?")[0]


@dataclass
class FakeAPI:
    """The loopback server and its script; see the module's note."""

    script: Sequence[Step] | Callable[[dict[str, Any]], Step] = ()
    mode: str = "script"
    requests: list[Logged] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None
    _release: threading.Event = field(default_factory=threading.Event)

    credential_header: ClassVar[str]  # the header the API's key arrives in
    url_path: ClassVar[str] = ""  # what `url` adds to http://host:port (the client's base URL)

    # -- what an API defines -----------------------------------------------------------------

    def is_model_call(self, method: str, route: str) -> bool:
        raise NotImplementedError

    def turns_so_far(self, body: Any) -> int:
        raise NotImplementedError

    def default_step(self) -> Step:
        raise NotImplementedError

    def answer(self, handler: ApiHandler, logged: Logged) -> None:
        raise NotImplementedError

    def error(self, handler: ApiHandler, status: int, message: str) -> None:
        handler.send_json(status, {"error": {"message": message}})

    def unauthorized(self, handler: ApiHandler) -> None:
        self.error(handler, 401, "unauthorized")

    def authorised(self, handler: ApiHandler) -> bool:
        return self.mode != "unauthorized"

    def other(self, handler: ApiHandler, logged: Logged) -> None:
        """A request that is not a model call: the API's 404 (a subclass may answer more)."""
        self.error(handler, 404, f"no {logged.path} in this fake")

    # -- the server --------------------------------------------------------------------------

    @property
    def url(self) -> str:
        assert self._server is not None, "start() the fake first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}{self.url_path}"

    def start(self) -> FakeAPI:
        fake = self

        class Handler(ApiHandler):
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

    def __enter__(self) -> FakeAPI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def api_requests(self) -> list[Logged]:
        """The model calls the CLI made, in order."""
        return [r for r in self.requests if self.is_model_call(r.method, r.route)]

    def step_for(self, body: dict[str, Any]) -> Step:
        if callable(self.script):
            return self.script(body)
        if not self.script:
            return self.default_step()
        return self.script[min(self.turns_so_far(body), len(self.script) - 1)]


class ApiHandler(BaseHTTPRequestHandler):
    owner: FakeAPI
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the log is `requests`
        pass

    def send_json(self, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_events(self) -> None:
        """The headers of a server-sent event stream; the connection closes after it."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True

    def send_event(self, data: dict[str, Any], name: str | None = None) -> None:
        head = f"event: {name}\n" if name else ""
        self.wfile.write(f"{head}data: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()

    def _handle(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = None
        owner = self.owner
        logged = Logged(self.command, self.path, body, self.headers.get(owner.credential_header),
                        owner.turns_so_far(body))
        owner.requests.append(logged)
        if not owner.is_model_call(self.command, logged.route) or not isinstance(body, dict):
            owner.other(self, logged)
        elif owner.mode == "hang":
            owner._release.wait()
            self.close_connection = True
        elif not owner.authorised(self):
            owner.unauthorized(self)
        else:
            owner.answer(self, logged)

    do_GET = do_POST = do_HEAD = _handle
