"""The HTTP side of `swecl view`: `projections.view` served on a local port.

The server is the stdlib's ThreadingHTTPServer (a page is a few folds over one local
file; nothing here needs more). It answers GET and HEAD only, and, bound to a loopback
address, only requests whose Host header names a loopback address: a web page elsewhere
cannot reach the ledger through a DNS name rebound to 127.0.0.1.
"""

from __future__ import annotations

import errno
import ipaddress
import socket
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar
from urllib.parse import urlsplit

from ledger import SweclError

__all__ = ["listen"]


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # Ctrl-C does not wait for a browser's open keep-alive connection


class _Handler(BaseHTTPRequestHandler):
    server_version = "swecl-view"
    protocol_version = "HTTP/1.1"
    view: ClassVar[Any]
    allowed_hosts: ClassVar[frozenset[str] | None]

    def do_GET(self) -> None:
        self._serve(body=True)

    def do_HEAD(self) -> None:
        self._serve(body=False)

    def _refuse_method(self) -> None:
        self._send(405, "text/plain; charset=utf-8", b"swecl view is read-only: GET and HEAD only\n", {"Allow": "GET, HEAD"})

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse_method

    def _serve(self, *, body: bool) -> None:
        host = (self.headers.get("Host") or "").strip().lower()
        if self.allowed_hosts is not None and host not in self.allowed_hosts:
            self._send(403, "text/plain; charset=utf-8", f"swecl view: host {host!r} not served\n".encode())
            return
        # lazy: the web view's modules load only for `swecl view`
        from projections.view import EVENTS_PATH

        if urlsplit(self.path).path == EVENTS_PATH:
            self._stream(body=body)
            return
        response = self.view.respond(self.path)
        self._send(response.status, response.content_type, response.body, response.headers, body=body)

    def _stream(self, *, body: bool) -> None:
        """`/api/events`: chunks written as the view yields them, until the page goes away
        (the write fails) or the server stops (this thread is a daemon)."""
        # lazy: the web view's modules load only for `swecl view`
        from projections.view import CSP, EVENT_STREAM

        self.close_connection = True  # no length: the stream ends with the connection
        try:
            self.send_response(200)
            for name, value in {"Content-Type": EVENT_STREAM, "Cache-Control": "no-store", "Connection": "close",
                                "X-Content-Type-Options": "nosniff", "Content-Security-Policy": CSP}.items():
                self.send_header(name, value)
            self.end_headers()
            if not body:
                return
            for chunk in self.view.events():
                self.wfile.write(chunk)
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the page was closed or reloaded: not an error

    def _send(self, status: int, content_type: str, data: bytes, headers: dict[str, str] | None = None, *,
              body: bool = True) -> None:
        # lazy: the web view's modules load only for `swecl view`
        from projections.view import CSP

        try:
            self.send_response(status)
            for name, value in {
                "Content-Type": content_type,
                "Content-Length": str(len(data)),
                "Cache-Control": "no-store",
                "X-Content-Type-Options": "nosniff",
                "Content-Security-Policy": CSP,
                "Referrer-Policy": "no-referrer",
                "X-Frame-Options": "DENY",
                **(headers or {}),
            }.items():
                self.send_header(name, value)
            self.end_headers()
            if body:
                self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the browser left (a reload, a closed tab): not an error

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: a page without the push stream polls every 2 s


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _allowed_hosts(host: str, port: int) -> frozenset[str] | None:
    """Host headers served: bound to loopback, the loopback names with this port; else any."""
    if not _loopback(host):
        return None
    names = {"127.0.0.1", "localhost", "[::1]", host if ":" not in host else f"[{host.strip('[]')}]"}
    return frozenset(f"{n}:{port}" for n in names) | (frozenset(names) if port == 80 else frozenset())


def listen(view: Any, host: str, port: int) -> tuple[ThreadingHTTPServer, str]:
    """A server for `view` (a `projections.view.View`) bound to `host`:`port` (0: any free
    port), and the URL it serves at; a port in use or an address that cannot be bound is
    one line."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    handler = type("Handler", (_Handler,), {"view": view, "allowed_hosts": None})
    _Server.address_family = family
    try:
        server = _Server((host.strip("[]"), port), handler)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise SweclError(f"port {port} on {host} is in use: give another with --port P (0: any free port)") from None
        raise SweclError(f"cannot listen on {host} port {port}: {exc.strerror or exc}") from None
    bound_port = server.server_address[1]
    handler.allowed_hosts = _allowed_hosts(host.strip("[]"), bound_port)
    shown_host = f"[{host.strip('[]')}]" if family == socket.AF_INET6 else host
    return server, f"http://{shown_host}:{bound_port}/"
