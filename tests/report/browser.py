"""Headless Chromium for tests: install it (Debian, as root), launch it, drive it over CDP.

The DevTools protocol is JSON over a WebSocket. `.venv` has no WebSocket library, and the
few frames CDP needs (masked client text frames; unmasked server text, continuation,
ping and close) are a page of stdlib code, so they are implemented here rather than
adding a dependency.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import socket
import struct
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from http.server import SimpleHTTPRequestHandler
from pathlib import Path
from typing import Any

from tests.debian import apt_install
from tests.loopback import loopback_server

INSTALL_LOCK = "swecl-chromium-install.lock"
_CANDIDATES = ("chromium", "chromium-browser")
_DEBIAN_PATH = "/usr/bin/chromium"

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--no-proxy-server",
    "--mute-audio",
    "--hide-scrollbars",
    "--remote-debugging-port=0",
)


def find_chromium() -> str | None:
    for name in _CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return _DEBIAN_PATH if os.access(_DEBIAN_PATH, os.X_OK) else None


def ensure_chromium() -> tuple[str | None, str]:
    """The chromium binary, installing Debian's package when missing and we are root."""
    return apt_install(["chromium"], find_chromium, INSTALL_LOCK)


# --- a minimal WebSocket client (RFC 6455, client side) -----------------------------------

_WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class WebSocketClosed(ConnectionError):
    pass


class WebSocket:
    """Client side of RFC 6455, just enough for CDP. Incoming bytes are buffered and a
    frame is consumed only once complete, so a receive timeout never desyncs the stream."""

    def __init__(self, host: str, port: int, path: str, *, timeout: float = 30.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buf = bytearray()
        key = base64.b64encode(os.urandom(16)).decode()
        request = (
            f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        self.sock.sendall(request.encode())
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, _, rest = bytes(self.buf).partition(b"\r\n\r\n")
        self.buf = bytearray(rest)
        status, *lines = head.decode("latin-1").split("\r\n")
        headers = {name.strip().lower(): value.strip() for name, _, value in (ln.partition(":") for ln in lines)}
        if " 101 " not in f"{status} ":
            raise ConnectionError(f"WebSocket upgrade refused: {status}")
        accept = base64.b64encode(hashlib.sha1((key + _WS_GUID).encode()).digest()).decode()
        if headers.get("sec-websocket-accept") != accept:
            raise ConnectionError("WebSocket upgrade: bad Sec-WebSocket-Accept")

    def close(self) -> None:
        try:
            self._send_frame(0x8, struct.pack("!H", 1000))
        except OSError:
            pass
        self.sock.close()

    def _fill(self) -> None:
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise WebSocketClosed("connection closed")
        self.buf += chunk

    def _send_frame(self, opcode: int, payload: bytes) -> None:
        header = bytearray([0x80 | opcode])
        n = len(payload)
        if n < 126:
            header.append(0x80 | n)
        elif n < 1 << 16:
            header.append(0x80 | 126)
            header += struct.pack("!H", n)
        else:
            header.append(0x80 | 127)
            header += struct.pack("!Q", n)
        mask = os.urandom(4)
        # XOR through one big integer: fast enough for any payload a test sends.
        repeated = (mask * (n // 4 + 1))[:n]
        masked = (int.from_bytes(payload, "big") ^ int.from_bytes(repeated, "big")).to_bytes(n, "big") if n else b""
        self.sock.sendall(bytes(header) + mask + masked)

    def send_text(self, text: str) -> None:
        self._send_frame(0x1, text.encode())

    def _frame(self) -> tuple[int, bool, bytes] | None:
        """The next complete frame in the buffer, consumed; None when it is not all here yet."""
        buf = self.buf
        if len(buf) < 2:
            return None
        b0, b1 = buf[0], buf[1]
        n, pos = b1 & 0x7F, 2
        if n == 126:
            if len(buf) < 4:
                return None
            n, pos = struct.unpack_from("!H", buf, 2)[0], 4
        elif n == 127:
            if len(buf) < 10:
                return None
            n, pos = struct.unpack_from("!Q", buf, 2)[0], 10
        mask = None
        if b1 & 0x80:  # servers do not mask, but a masked frame is still well formed
            if len(buf) < pos + 4:
                return None
            mask, pos = bytes(buf[pos:pos + 4]), pos + 4
        if len(buf) < pos + n:
            return None
        payload = bytes(buf[pos:pos + n])
        del buf[: pos + n]
        if mask:
            payload = bytes(c ^ mask[i % 4] for i, c in enumerate(payload))
        return b0 & 0x0F, bool(b0 & 0x80), payload

    def recv_text(self, timeout: float) -> str:
        """The next text message; `TimeoutError` when none completes within `timeout`."""
        deadline = time.monotonic() + timeout
        parts: list[bytes] = []
        while True:
            frame = self._frame()
            if frame is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("no WebSocket message in time")
                self.sock.settimeout(left)
                try:
                    self._fill()
                except socket.timeout:
                    raise TimeoutError("no WebSocket message in time") from None
                continue
            opcode, fin, payload = frame
            if opcode == 0x8:
                raise WebSocketClosed("server closed the WebSocket")
            if opcode == 0x9:
                self._send_frame(0xA, payload)
                continue
            if opcode == 0xA:
                continue
            parts.append(payload)
            if fin:
                return b"".join(parts).decode()


# --- the DevTools protocol ----------------------------------------------------------------


class CDPError(RuntimeError):
    pass


@dataclass
class CDP:
    ws: WebSocket
    events: list[dict[str, Any]] = field(default_factory=list)
    _next: int = 0

    def send(self, method: str, params: dict[str, Any] | None = None, *, session: str | None = None,
             timeout: float = 30.0) -> dict[str, Any]:
        self._next += 1
        msg: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.ws.send_text(json.dumps(msg))
        deadline = time.monotonic() + timeout
        while True:
            reply = self._recv(deadline, method)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise CDPError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def wait_for(self, method: str, *, session: str | None = None, timeout: float = 30.0) -> dict[str, Any]:
        def match(ev: dict[str, Any]) -> bool:
            return ev.get("method") == method and (session is None or ev.get("sessionId") == session)

        for ev in self.events:
            if match(ev):
                return ev
        deadline = time.monotonic() + timeout
        while True:
            ev = self._recv(deadline, method)
            if "method" in ev:
                self.events.append(ev)
                if match(ev):
                    return ev

    def drain(self, seconds: float) -> None:
        """Collect whatever events arrive within `seconds` (late console errors, requests)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                ev = json.loads(self.ws.recv_text(max(0.01, deadline - time.monotonic())))
            except (TimeoutError, socket.timeout):
                return
            if "method" in ev:
                self.events.append(ev)

    def _recv(self, deadline: float, waiting_for: str) -> dict[str, Any]:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"CDP: no answer to {waiting_for} in time")
        try:
            return json.loads(self.ws.recv_text(left))
        except (TimeoutError, socket.timeout):
            raise TimeoutError(f"CDP: no answer to {waiting_for} in time") from None


@dataclass
class Browser:
    proc: subprocess.Popen[bytes]
    cdp: CDP
    stderr_path: Path


@contextmanager
def launch(chromium: str, workdir: Path, *, timeout: float = 30.0) -> Iterator[Browser]:
    """Start headless Chromium with its own profile in `workdir` and connect to it."""
    profile = workdir / "profile"
    profile.mkdir(parents=True, exist_ok=True)
    stderr_path = workdir / "chromium.stderr"
    with stderr_path.open("wb") as err:
        proc = subprocess.Popen(
            [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
        )
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while True:
            if port_file.exists() and len(lines := port_file.read_text().split()) >= 2:
                break
            if proc.poll() is not None:
                raise RuntimeError(f"chromium exited with {proc.returncode}: {stderr_path.read_text(errors='replace')[-2000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"chromium wrote no DevToolsActivePort in {timeout} s")
            time.sleep(0.05)
        ws = WebSocket("127.0.0.1", int(lines[0]), lines[1], timeout=timeout)
        try:
            yield Browser(proc=proc, cdp=CDP(ws), stderr_path=stderr_path)
        finally:
            ws.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@contextmanager
def serve(directory: Path) -> Iterator[str]:
    """Serve `directory` on 127.0.0.1 (a free port); yields the base URL."""

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    with loopback_server(partial(Quiet, directory=str(directory))) as base:
        yield f"{base}/"


@dataclass
class PageLoad:
    url: str
    requests: list[str]
    problems: list[str]
    """Console errors, uncaught exceptions, error log entries, failed or >= 400 requests."""
    session: str


def open_page(cdp: CDP, url: str, *, width: int = 1280, height: int = 900, timeout: float = 30.0) -> PageLoad:
    """Open `url` in a fresh tab with Runtime, Log, Network and Page events on; wait for load."""
    target = cdp.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = cdp.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    for domain in ("Runtime", "Log", "Network", "Page"):
        cdp.send(f"{domain}.enable", session=session)
    cdp.send("Emulation.setDeviceMetricsOverride",
             {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session=session)
    cdp.events.clear()
    cdp.send("Page.navigate", {"url": url}, session=session, timeout=timeout)
    cdp.wait_for("Page.loadEventFired", session=session, timeout=timeout)
    cdp.drain(0.5)
    return PageLoad(url=url, requests=requests_of(cdp, session), problems=problems_of(cdp, session), session=session)


def requests_of(cdp: CDP, session: str) -> list[str]:
    return [
        ev["params"]["request"]["url"]
        for ev in cdp.events
        if ev.get("sessionId") == session and ev["method"] == "Network.requestWillBeSent"
    ]


def problems_of(cdp: CDP, session: str) -> list[str]:
    urls = {
        ev["params"]["requestId"]: ev["params"]["request"]["url"]
        for ev in cdp.events
        if ev.get("sessionId") == session and ev["method"] == "Network.requestWillBeSent"
    }
    found = []
    for ev in cdp.events:
        if ev.get("sessionId") != session:
            continue
        method, p = ev["method"], ev.get("params", {})
        if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            found.append(f"console.{p['type']}: {[a.get('value', a.get('description')) for a in p.get('args', [])]}")
        elif method == "Runtime.exceptionThrown":
            found.append(f"exception: {p['exceptionDetails'].get('text')} {p['exceptionDetails'].get('exception', {}).get('description', '')}")
        elif method == "Log.entryAdded" and p["entry"].get("level") == "error":
            found.append(f"log error ({p['entry'].get('source')}): {p['entry'].get('text')} {p['entry'].get('url', '')}")
        elif method == "Network.loadingFailed":
            found.append(f"request failed: {urls.get(p['requestId'], '?')}: {p.get('errorText')}")
        elif method == "Network.responseReceived" and p["response"].get("status", 200) >= 400:
            found.append(f"HTTP {p['response']['status']}: {p['response'].get('url')}")
    return found


def evaluate(cdp: CDP, session: str, expression: str) -> Any:
    reply = cdp.send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=session)
    if "exceptionDetails" in reply:
        raise CDPError(f"evaluate failed: {reply['exceptionDetails']}")
    return reply["result"].get("value")


def screenshot(cdp: CDP, session: str, path: Path, *, max_height: int = 6000) -> Path:
    """A PNG of the whole page (up to `max_height` CSS pixels tall)."""
    size = cdp.send("Page.getLayoutMetrics", session=session)["cssContentSize"]
    clip = {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], max_height), "scale": 1}
    data = cdp.send("Page.captureScreenshot", {"format": "png", "clip": clip, "captureBeyondViewport": True},
                    session=session, timeout=60)["data"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(data))
    return path


def click(cdp: CDP, session: str, selector: str) -> None:
    """A real mouse click (pressed, released) on the first element matching `selector`,
    scrolled into view first; near its left edge, where a `<summary>`'s text is."""
    x, y = evaluate(cdp, session, f"""(() => {{
        const e = document.querySelector({json.dumps(selector)});
        e.scrollIntoView({{block: 'center'}});
        const r = e.getBoundingClientRect();
        return [r.x + Math.min(r.width / 2, 24), r.y + r.height / 2];
    }})()""")
    for kind in ("mousePressed", "mouseReleased"):
        cdp.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1},
                 session=session)
