"""The recording proxy of a user's MCP memory server: a stdio MCP server inside the agent's sandbox.

    python -I -S DIR/server_proxy.py --socket DIR/server.sock

The agent's MCP client starts it in place of the user's server (`--memory-server`). It
answers the handshake itself and forwards `tools/list` and `tools/call` as they are,
over the Unix socket of a door that `ServerHost` (`_server_host`) opened outside the
sandbox; the host calls the real server and records each call. So the agent sees the
server's own tools (names, descriptions, input schemas) and results, nothing else.

Standard library only, like the recall relay: it runs with the machine's interpreter
(`-I -S`), as a copy in the door's directory (in the task's scratch dir), since the
sandbox shows neither swecl's checkout nor its venv. It carries no task context: the door it connects to is the task's, so nothing
the agent can change decides what a call is recorded under. One request at a time:
the host serialises calls to the server anyway. stdout is the protocol; nothing else
prints there.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
from typing import Any

SERVER_NAME = "swecl-memory-server"
SERVER_VERSION = "1"
# The newest protocol revision this proxy knows; a client asking for another one it
# lists below gets its own back (the proxy uses nothing that differs between them).
PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
FORWARDED = ("tools/list", "tools/call")
_PARSE_ERROR, _METHOD_NOT_FOUND, _INTERNAL_ERROR = -32700, -32601, -32603


class Door:
    """The host's socket: one JSON line out, one JSON line back."""

    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.file = self.sock.makefile("rb")

    def ask(self, method: str, params: Any) -> dict[str, Any]:
        self.sock.sendall(json.dumps({"method": method, "params": params}).encode() + b"\n")
        line = self.file.readline()
        if not line:
            raise ConnectionError("the memory server's host closed the connection")
        reply = json.loads(line)
        if not isinstance(reply, dict):
            raise ConnectionError("the memory server's host answered garbage")
        return reply


def _error(id_: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}}


def handle(message: Any, door: Door) -> dict[str, Any] | None:
    """The answer to one JSON-RPC message (None for a notification or a response)."""
    if not isinstance(message, dict) or "method" not in message:
        return None  # a response to nothing we asked, or junk without an id
    id_ = message.get("id")
    method = message["method"]
    if id_ is None:
        return None  # notifications (initialized, cancelled): nothing to answer
    if method == "initialize":
        asked = (message.get("params") or {}).get("protocolVersion")
        version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
        return {"jsonrpc": "2.0", "id": id_, "result": {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": SERVER_NAME, "version": SERVER_VERSION},
        }}
    if method == "ping":
        return {"jsonrpc": "2.0", "id": id_, "result": {}}
    if method not in FORWARDED:
        return _error(id_, _METHOD_NOT_FOUND, f"method not found: {method}")
    try:
        reply = door.ask(method, message.get("params") or {})
    except (OSError, ValueError) as exc:
        # The host is gone: a tool call still gets a tool error the agent can read.
        if method == "tools/call":
            return {"jsonrpc": "2.0", "id": id_, "result": {
                "content": [{"type": "text", "text": f"memory server unavailable: {exc}"}], "isError": True}}
        return _error(id_, _INTERNAL_ERROR, f"memory server unavailable: {exc}")
    if "error" in reply:
        err = reply["error"] if isinstance(reply["error"], dict) else {"message": str(reply["error"])}
        return _error(id_, int(err.get("code", _INTERNAL_ERROR)), str(err.get("message", "error")))
    return {"jsonrpc": "2.0", "id": id_, "result": reply.get("result", {})}


def serve(socket_path: str, stdin: Any = None, stdout: Any = None) -> None:
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    door = Door(socket_path)
    for line in stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            answer: dict[str, Any] | None = _error(None, _PARSE_ERROR, "not JSON")
        else:
            answer = handle(message, door)
        if answer is not None:
            stdout.write(json.dumps(answer, ensure_ascii=False).encode() + b"\n")
            stdout.flush()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="server_proxy.py",
                                description="swecl's recording proxy of an MCP memory server (stdio)")
    p.add_argument("--socket", required=True, help="the door's Unix socket (ServerHost.door)")
    args = p.parse_args(argv)
    try:
        serve(args.socket)
    except OSError as exc:
        sys.stderr.write(f"server_proxy: cannot reach the memory server's host at {args.socket}: {exc}\n")
        sys.exit(1)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
