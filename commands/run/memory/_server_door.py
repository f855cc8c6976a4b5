"""A task attempt's door to the memory server: a Unix socket the in-sandbox proxy reaches.

`ServerHost.door(directory, context)` opens one per task attempt in the task's scratch
dir, which the agent's sandbox shows, and copies `_server_proxy.py` beside it: the agent's
MCP client runs that copy with the machine's interpreter (the sandbox shows neither
swecl's checkout nor its venv). The proxy forwards `tools/list` and `tools/call` over the
socket, one JSON line each way; the door answers from the host's tool list or calls the
server through the host, under the door's task context, which nothing inside the sandbox
can change.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, Protocol, TypeVar

from agents import stdlib_script_argv

from ._server_record import CallContext, ServerInfo

__all__ = ["Door", "DoorHost"]

PROXY_SOURCE = Path(__file__).with_name("_server_proxy.py")
T = TypeVar("T")


class DoorHost(Protocol):
    """What a door needs of its host (`ServerHost`): the server's tools, its event loop,
    and the recorded call."""

    info: ServerInfo | None

    def run_on_loop(self, coro: Coroutine[Any, Any, T]) -> T: ...

    async def call_on_loop(self, context: CallContext, tool: str, arguments: Any) -> dict[str, Any]: ...


class Door:
    """One task attempt's way in: `socket_path`, and `proxy_argv`, the MCP server
    command for the agent's MCP configuration (standard library only)."""

    def __init__(self, host: DoorHost, directory: Path, context: CallContext) -> None:
        self.host = host
        self.directory = directory
        self.context = context
        self.socket_path = directory / "server.sock"
        self.proxy_path = directory / "server_proxy.py"
        self._server: asyncio.AbstractServer | None = None

    @property
    def proxy_argv(self) -> list[str]:
        return stdlib_script_argv(self.proxy_path, "--socket", str(self.socket_path))

    def __enter__(self) -> Door:
        self.directory.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(PROXY_SOURCE, self.proxy_path)
        self.socket_path.unlink(missing_ok=True)
        self._server = self.host.run_on_loop(asyncio.start_unix_server(self._serve, path=str(self.socket_path)))
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            server = self._server
            self._server = None

            async def close() -> None:
                server.close()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(server.wait_closed(), 5)

            with contextlib.suppress(Exception):
                self.host.run_on_loop(close())
        self.socket_path.unlink(missing_ok=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                reply = await self._answer(line)
                writer.write(json.dumps(reply, ensure_ascii=False).encode() + b"\n")
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def _answer(self, line: bytes) -> dict[str, Any]:
        """The reply to one request line of the proxy."""
        try:
            request = json.loads(line)
            method, params = request["method"], request.get("params") or {}
        except (ValueError, KeyError, TypeError):
            return {"error": {"code": -32700, "message": "not a request"}}
        if method == "tools/list":
            return {"result": {"tools": self.host.info.tools if self.host.info else []}}
        if method == "tools/call" and isinstance(params, dict):
            args = params.get("arguments") or {}
            return {"result": await self.host.call_on_loop(self.context, str(params.get("name", "")), args)}
        return {"error": {"code": -32601, "message": f"method not found: {method}"}}
