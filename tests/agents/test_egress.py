"""Agents reach only their model API: a sandboxed agent's one way out is the egress proxy,
which allows its API endpoints and --allow-host, refuses the rest and records each
connection (real bwrap, real processes, loopback servers standing for the API and for a
code host that serves a task's fix)."""

from __future__ import annotations

import shlex
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agents._command import CommandAgent
from agents._egress import Egress, Rules, parse_allow_host
from agents._protocol import AgentInput, Budget
from commands.run import RunOptions, SandboxOptions
from graders.host import sandbox_for
from ledger import SweclError
from ledger.events import EgressConnection


class Recording:
    """A loopback HTTP server that answers `body` to anything and keeps each request's path."""

    def __init__(self, body: bytes) -> None:
        self.paths: list[str] = []
        recording = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                recording.paths.append(self.path)
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_GET

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def servers() -> Iterator[Callable[[bytes], Recording]]:
    started: list[Recording] = []

    def start(body: bytes) -> Recording:
        started.append(Recording(body))
        return started[-1]

    yield start
    for server in started:
        server.close()


# The command agent: calls its API, then tries to fetch the fix from the code host through
# the proxy it was given, then straight to the port, then a public address.
AGENT = """\
import os, socket, sys, urllib.request
code_host = sys.argv[1]
print("api:", urllib.request.urlopen(os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages", data=b"{}").read().decode())
try:
    print("proxied:", urllib.request.urlopen(code_host + "/fix.patch").read().decode())
except Exception as exc:
    print("proxied refused:", exc)
port = int(code_host.rsplit(":", 1)[1])
for where in (("127.0.0.1", port), ("192.0.2.1", 80)):
    try:
        socket.create_connection(where, timeout=10).close()
        print("direct reached", where)
    except OSError as exc:
        print("direct refused:", exc.errno)
"""


def _run(make_input: Callable[..., AgentInput], tmp_path: Path, code_host: Recording, egress: Egress) -> str:
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    agent = CommandAgent(f"{shlex.quote(sys.executable)} {shlex.quote(str(script))} {code_host.url}")
    inp = make_input(sandbox=sandbox_for("bwrap"), egress=egress, budget=Budget(timeout_s=120))
    result = agent.run(inp)
    assert result.exit == "completed", (result.error, result.transcript)
    return result.transcript.decode()


def test_a_sandboxed_agent_reaches_its_api_and_not_the_code_host(
    make_input: Callable[..., AgentInput], tmp_path: Path, servers: Callable[[bytes], Recording],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api, code_host = servers(b"model says hi"), servers(b"the gold patch")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
    for name in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    egress = Egress()
    out = _run(make_input, tmp_path, code_host, egress)

    assert "api: model says hi" in out and api.paths == ["/v1/messages"]
    assert "proxied refused: HTTP Error 403" in out and "the gold patch" not in out
    assert "direct reached" not in out and out.count("direct refused") == 2
    assert code_host.paths == []  # the code host received nothing
    assert egress.proxied and f"127.0.0.1:{api.port}" in egress.allowed
    by_port = {c.port: c for c in egress.connections}
    api_conn, refused = by_port[api.port], by_port[code_host.port]
    assert api_conn.allowed and api_conn.reason == "api endpoint" and api_conn.bytes_up > 0 and api_conn.bytes_down > 0
    assert refused == EgressConnection(host="127.0.0.1", port=code_host.port, allowed=False,
                                       reason="not an API endpoint nor --allow-host")


def test_allow_host_lets_the_agent_reach_a_named_host(
    make_input: Callable[..., AgentInput], tmp_path: Path, servers: Callable[[bytes], Recording],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api, code_host = servers(b"model says hi"), servers(b"the gold patch")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
    egress = Egress(allow_hosts=(f"127.0.0.1:{code_host.port}",))
    out = _run(make_input, tmp_path, code_host, egress)
    assert "proxied: the gold patch" in out and code_host.paths == ["/fix.patch"]
    reached = [c for c in egress.connections if c.port == code_host.port]
    assert reached and all(c.allowed and c.reason == "--allow-host" for c in reached), reached
    # connections are listed in the order they ended: the proxied fetch (bytes both ways)
    # may end after the direct connect that follows it (a loopback --allow-host is
    # forwarded into the sandbox; that connect sends nothing)
    assert any(c.bytes_up > 0 and c.bytes_down > 0 for c in reached), reached


def test_rules_allow_endpoints_by_host_and_port_and_named_hosts() -> None:
    rules = Rules(["https://api.anthropic.com", "http://127.0.0.1:8123/v1"], ["github.com", "10.0.0.5:8080"])
    assert rules.decide("API.anthropic.com.", 443) == (True, "api endpoint")
    assert rules.decide("api.anthropic.com", 80)[0] is False
    assert rules.decide("127.0.0.1", 8123)[0] and not rules.decide("127.0.0.1", 8124)[0]
    assert rules.decide("github.com", 22) == (True, "--allow-host")
    assert rules.decide("10.0.0.5", 8080)[0] and not rules.decide("10.0.0.5", 8081)[0]
    assert rules.loopback_forwards() == [("127.0.0.1", 8123)]


@pytest.mark.parametrize("bad", ["", "http://github.com", "a b", "host:99999", "user@host"])
def test_a_bad_allow_host_is_refused_in_one_line(bad: str) -> None:
    with pytest.raises(ValueError, match="--allow-host") as info:
        parse_allow_host(bad)
    assert "\n" not in str(info.value)
    assert parse_allow_host("GitHub.com") == "github.com" and parse_allow_host("[::1]:80") == "[::1]:80"


def test_run_options_refuse_a_bad_allow_host_and_record_the_good_ones() -> None:
    with pytest.raises(SweclError, match="--allow-host 'https://github.com' is not a HOST") as info:
        RunOptions(stage="base", sandbox=SandboxOptions(allow_hosts=["https://github.com"], mode="none")).validate()
    assert "\n" not in str(info.value)
    opts = RunOptions(stage="base", sandbox=SandboxOptions(allow_hosts=["github.com", "10.0.0.5:8080"], allow_web=True,
                                                         mode="none"))
    opts.validate()
    assert opts.to_config()["allow_hosts"] == ["github.com", "10.0.0.5:8080"] and opts.to_config()["allow_web"] is True
