"""What a sandboxed agent can reach: its model API, through a proxy swecl runs outside.

The agent's sandbox has a network namespace of its own (`--unshare-net`: loopback only).
Its one way out is a Unix socket in a directory of its own (read-only inside), served by `EgressProxy` in swecl's
own process: it allows a connection only to a host:port of the agent's configured API
endpoints or to a host the user named (`--allow-host`), refuses every other one, and
records each (`EgressConnection`: host, port, allowed, bytes each way).

Inside the sandbox a launcher (standard library only, like the recall relay) opens the
doors before it starts the agent:

- an HTTP proxy on a loopback port, named by `HTTPS_PROXY`/`HTTP_PROXY` (and no
  `NO_PROXY`): each connection is relayed to the socket, where the proxy reads a CONNECT
  or an absolute-form plain-HTTP request and decides on its host:port;
- for an API endpoint on the host's loopback (`http://127.0.0.1:PORT`, the tests'
  fakes), a listener on the same port of the namespace's own loopback, relayed to the
  socket as a forward to that endpoint: transparent to a client that bypasses proxies
  for localhost.

Nothing else leaves: a CLI that ignores the proxy variables reaches nothing at all.
A tool that runs on the provider's side (claude's `WebSearch`) is beyond any local rule,
so each adapter switches its web tools off unless `--allow-web`.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from urllib.parse import urlsplit

from ledger.events import EgressConnection

from ._confine import stdlib_script_argv, unix_listener

__all__ = ["API_ENDPOINTS", "Egress", "EgressConnection", "EgressProxy", "EgressRules", "Rules", "endpoint_of", "endpoint_urls", "parse_allow_host"]

# Each CLI's endpoint variable and its default (the adapters read the same ones).
API_ENDPOINTS: dict[str, str] = {
    "ANTHROPIC_BASE_URL": "https://api.anthropic.com",
    "OPENAI_BASE_URL": "https://api.openai.com/v1",
    "GOOGLE_GEMINI_BASE_URL": "https://generativelanguage.googleapis.com",
}
_LOOPBACK = ("127.0.0.1", "localhost", "::1")
_MAX_HEAD = 64 * 1024  # a request head larger than this is refused
_CONNECT_TIMEOUT_S = 30.0
PROXY_VARS = ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy")
# Dropped from the agent's environment: every connection goes through the proxy and is recorded.
NO_PROXY_VARS = ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy")


@dataclass
class Egress:
    """A run's egress policy for one attempt, and what the proxy recorded under it.

    `proxied` is set once the agent ran behind the proxy (a confined sandbox); then
    `connections` holds every connection it asked for, in the order they ended.
    """

    allow_hosts: tuple[str, ...] = ()  # HOST or HOST:PORT (--allow-host)
    allow_web: bool = False  # the agents' own web tools stay on (--allow-web)
    proxied: bool = False
    allowed: list[str] = field(default_factory=list)  # host:port (or host) the proxy allowed
    connections: list[EgressConnection] = field(default_factory=list)


def endpoint_of(url: str) -> tuple[str, int] | None:
    """(host, port) of an endpoint URL; None when it names no host."""
    try:
        parts = urlsplit(url.strip())
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not host:
        return None
    return host.lower().rstrip("."), port or (80 if parts.scheme == "http" else 443)


def endpoint_urls(env: Mapping[str, str], names: Iterable[str]) -> list[str]:
    """The endpoint URLs of variables `names` in `env`, each variable's default when unset."""
    return [env.get(name) or API_ENDPOINTS[name] for name in names]


class Rules:
    """Which host:port a connection may reach, and why."""

    def __init__(self, endpoint_urls: Iterable[str], allow_hosts: Iterable[str] = ()) -> None:
        self.exact: dict[tuple[str, int], str] = {}
        self.any_port: set[str] = set()
        for url in endpoint_urls:
            found = endpoint_of(url)
            if found is not None:
                self.exact.setdefault(found, "api endpoint")
        for item in allow_hosts:
            host, port = _split_host(item)
            if port is None:
                self.any_port.add(host)
            else:
                self.exact.setdefault((host, port), "--allow-host")

    def decide(self, host: str, port: int) -> tuple[bool, str]:
        key = (host.lower().rstrip("."), port)
        if key in self.exact:
            return True, self.exact[key]
        if key[0] in self.any_port:
            return True, "--allow-host"
        return False, "not an API endpoint nor --allow-host"

    def listed(self) -> list[str]:
        return sorted({f"{h}:{p}" for h, p in self.exact} | self.any_port)

    def loopback_forwards(self) -> list[tuple[str, int]]:
        """The allowed host:ports on the host's loopback: the launcher serves each on the
        same port of the namespace's loopback."""
        return sorted((h, p) for (h, p) in self.exact if h in _LOOPBACK)


EgressRules = Rules  # as the package exports it (a memory server's egress is built from the same rules)


def _split_host(item: str) -> tuple[str, int | None]:
    """HOST, HOST:PORT or [V6]:PORT -> (host, port or None)."""
    text = item.strip().lower().rstrip(".")
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else None
    if text.count(":") == 1:
        host, _, port = text.partition(":")
        if port.isdigit():
            return host, int(port)
    return text, None


def parse_allow_host(item: str) -> str:
    """--allow-host's value, checked: a host name or address, optionally :PORT."""
    host, port = _split_host(item)
    if not host or any(c in host for c in "/ @?#") or (port is not None and not 0 < port < 65536):
        raise ValueError(f"--allow-host {item!r} is not a HOST or HOST:PORT (e.g. github.com or 10.0.0.5:8080)")
    return host if port is None else (f"[{host}]:{port}" if ":" in host else f"{host}:{port}")


_LAUNCHER = r'''
import json, os, signal, socket, subprocess, sys, threading
cfg = json.loads(sys.argv[1])
def pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass
def relay(conn, head):
    out = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        out.connect(cfg["socket"])
        out.sendall(head)
    except OSError:
        conn.close(); out.close(); return
    down = threading.Thread(target=pump, args=(out, conn), daemon=True)
    down.start()
    pump(conn, out)
    down.join()
    conn.close(); out.close()
def serve(listener, head):
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=relay, args=(conn, head), daemon=True).start()
def listen(family, addr, port):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(64)
    return s
for host, port in cfg["forwards"]:
    head = ("FORWARD %s %d\n" % (host, port)).encode()
    for family, addr in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        try:
            s = listen(family, addr, port)
        except OSError:
            continue
        threading.Thread(target=serve, args=(s, head), daemon=True).start()
proxy = listen(socket.AF_INET, "127.0.0.1", 0)
threading.Thread(target=serve, args=(proxy, b"PROXY\n"), daemon=True).start()
url = "http://127.0.0.1:%d" % proxy.getsockname()[1]
env = dict(os.environ)
for name in cfg["drop"]:
    env.pop(name, None)
for name in cfg["proxy_vars"]:
    env[name] = url
try:
    child = subprocess.Popen(sys.argv[2:], env=env)
except OSError as exc:
    # The first line an attempt's stderr holds: `_startup.not_started` reads it.
    sys.stderr.write("swecl-launcher: cannot execute %s: %s\n" % (sys.argv[2], exc.strerror or exc))
    sys.exit(127)
def forward(sig, frame):
    try:
        child.send_signal(sig)
    except OSError:
        pass
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(sig, forward)
code = child.wait()
if code < 0:
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
sys.exit(code)
'''


class EgressProxy:
    """The proxy behind `directory/egress.sock`: decides each connection by `rules` and
    appends what it saw to `egress.connections` when the connection ends."""

    def __init__(self, rules: Rules, egress: Egress, directory: Path) -> None:
        self.rules = rules
        self.egress = egress
        self.directory = directory
        self.socket_path = directory / "egress.sock"
        self.launcher_path = directory / "egress_launcher.py"
        self._sock: socket.socket | None = None
        self._threads: list[threading.Thread] = []
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False

    def launcher_argv(self, argv: Sequence[str]) -> list[str]:
        """`argv` started by the launcher, inside the sandbox, behind its proxy and forwards."""
        cfg = {"socket": str(self.socket_path), "forwards": self.rules.loopback_forwards(),
               "proxy_vars": list(PROXY_VARS), "drop": list(NO_PROXY_VARS)}
        return stdlib_script_argv(self.launcher_path, json.dumps(cfg), *argv)

    def __enter__(self) -> EgressProxy:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.launcher_path.write_text(_LAUNCHER, encoding="utf-8")
        self._sock = unix_listener(self.socket_path, 64)
        self.egress.proxied = True
        self.egress.allowed = self.rules.listed()
        self._start(self._accept)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Stop accepting, end the connections still open (the agent is gone), and wait
        for each to be recorded."""
        with self._lock:
            self._closed = True
            still_open = list(self._open)
        for sock in [s for s in (self._sock,) if s is not None] + still_open:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._sock is not None:
            self._sock.close()
        for thread in list(self._threads):
            thread.join(timeout=5)
        self.socket_path.unlink(missing_ok=True)

    def _start(self, target: object, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, name="egress-proxy", daemon=True)  # type: ignore[arg-type]
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def _track(self, sock: socket.socket) -> bool:
        with self._lock:
            if self._closed:
                return False
            self._open.add(sock)
            return True

    def _untrack(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.discard(sock)
        sock.close()

    def _accept(self) -> None:
        assert self._sock is not None
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            if not self._track(conn):
                conn.close()
                return
            self._start(self._serve, conn)

    def _record(self, host: str, port: int, allowed: bool, reason: str, up: int = 0, down: int = 0) -> None:
        with self._lock:
            self.egress.connections.append(
                EgressConnection(host=host, port=port, allowed=allowed, bytes_up=up, bytes_down=down, reason=reason)
            )

    def _serve(self, conn: socket.socket) -> None:
        try:
            head, rest = _read_until(conn, b"\n", 1024)
            if head is None:
                return
            words = head.decode("ascii", "replace").split()
            if len(words) == 3 and words[0] == "FORWARD" and words[2].isdigit():
                self._tunnel(conn, words[1], int(words[2]), rest, reply=None)
            elif words == ["PROXY"]:
                self._proxy(conn, rest)
        except OSError:
            pass
        finally:
            self._untrack(conn)

    def _proxy(self, conn: socket.socket, data: bytes) -> None:
        head, body = _read_until(conn, b"\r\n\r\n", _MAX_HEAD, data)
        if head is None:
            return
        lines = head.decode("latin-1").split("\r\n")
        request = lines[0].split()
        if len(request) != 3:
            conn.sendall(_response(400, "Bad Request", "swecl egress proxy: not an HTTP request\n"))
            return
        method, target, version = request
        if method.upper() == "CONNECT":
            host, port = _split_host(target)
            if not host or port is None:
                conn.sendall(_response(400, "Bad Request", "swecl egress proxy: CONNECT needs HOST:PORT\n"))
                return
            self._tunnel(conn, host, port, body, reply=b"HTTP/1.1 200 Connection established\r\n\r\n")
            return
        found = endpoint_of(target) if target.lower().startswith("http://") else None
        if found is None:
            conn.sendall(_response(400, "Bad Request", "swecl egress proxy: only CONNECT and http:// requests\n"))
            return
        parts = urlsplit(target)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        # One request per connection: the origin server sees origin-form and closes after it.
        kept = [ln for ln in lines[1:] if ln and ln.split(":", 1)[0].strip().lower()
                not in ("connection", "proxy-connection", "proxy-authorization", "keep-alive")]
        first = "\r\n".join([f"{method} {path} {version}", *kept, "Connection: close", "", ""]).encode("latin-1")
        self._tunnel(conn, *found, first + body, reply=None)

    def _tunnel(self, conn: socket.socket, host: str, port: int, first: bytes, *, reply: bytes | None) -> None:
        allowed, reason = self.rules.decide(host, port)
        if not allowed:
            self._record(host, port, False, reason)
            if reply is not None or first.startswith(tuple(m.encode() for m in _METHODS)):
                conn.sendall(_response(403, "Forbidden", f"swecl: egress to {host}:{port} is not allowed "
                                                        "(the agent reaches only its model API; see --allow-host)\n"))
            return
        try:
            upstream = socket.create_connection((host, port), timeout=_CONNECT_TIMEOUT_S)
        except OSError as exc:
            self._record(host, port, True, f"{reason}; connect failed: {exc.strerror or exc}")
            if reply is not None:
                conn.sendall(_response(502, "Bad Gateway", f"swecl egress proxy: {host}:{port}: {exc}\n"))
            return
        upstream.settimeout(None)
        if not self._track(upstream):
            upstream.close()
            return
        counts = [0, 0]
        try:
            if reply is not None:
                conn.sendall(reply)
            if first:
                upstream.sendall(first)
                counts[0] += len(first)
            down = threading.Thread(target=_pump, args=(upstream, conn, counts, 1), daemon=True)
            down.start()
            _pump(conn, upstream, counts, 0)
            down.join()
        finally:
            self._untrack(upstream)
            self._record(host, port, True, reason, counts[0], counts[1])


_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")


def _pump(src: socket.socket, dst: socket.socket, counts: list[int], index: int) -> None:
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
            counts[index] += len(data)
    except OSError:
        pass
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def _read_until(conn: socket.socket, mark: bytes, limit: int, data: bytes = b"") -> tuple[bytes | None, bytes]:
    """(what comes before `mark`, what came after it); None when the peer closed or sent
    more than `limit` bytes without it."""
    buf = bytearray(data)
    while mark not in buf:
        if len(buf) > limit:
            return None, b""
        chunk = conn.recv(65536)
        if not chunk:
            return None, b""
        buf += chunk
    head, _, rest = bytes(buf).partition(mark)
    return head, rest


def _response(code: int, phrase: str, text: str) -> bytes:
    body = text.encode()
    return (f"HTTP/1.1 {code} {phrase}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n").encode() + body
