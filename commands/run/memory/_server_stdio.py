"""A stdio memory server's process, and the MCP streams over its stdin and stdout.

The SDK's stdio transport, made here so the host knows the process group it must kill,
keeps the server's stderr in a log beside its data directory, and notices garbage on
stdout. The process starts in a session of its own, cwd its data directory, with only
`server_environment`; given a confined sandbox, inside bubblewrap with only the data
directory's folder writable and no network unless asked. On leaving `streams`, stdin is
closed, the process has `STOP_GRACE_S` to exit, then its whole group is killed and reaped.

A confined server without a network of its own that has a model gateway (`_model_gateway`)
or hosts it may reach (`--memory-allow-host`) gets the agents' egress (`agents.EgressProxy`):
a stdlib launcher starts it behind a Unix socket to swecl's proxy, which lets through only
the gateway (served on the same loopback port inside its namespace) and those hosts. Its
`{model_gateway}` URL then works unchanged, and its model API itself is out of reach.

Runs on the host's event loop (anyio, the MCP SDK): imported by `_server_host` only.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO, Any

import anyio
import mcp_types
from mcp.shared.message import SessionMessage

from graders.host import kill_group, starting_session_leader

from ._server_record import MemoryServerError
from ._server_spec import ServerSpec, server_environment

__all__ = ["STOP_GRACE_S", "StdioServer"]

STOP_GRACE_S = 2.0  # after stdin closes, before the group is killed


class StdioServer:
    """One stdio server process: `pid` once started, `garbage` (the first line on stdout
    that was not JSON-RPC, which ends the stream), `exited()` with `returncode`."""

    def __init__(self, spec: ServerSpec, data_dir: Path, log_path: Path, *, environ: dict[str, str] | None,
                 sandbox: Any, network: bool, model_gateway: str | None = None,
                 allow_hosts: tuple[str, ...] = ()) -> None:
        self.spec, self.data_dir, self.log_path = spec, data_dir, log_path
        self.environ = environ
        self.sandbox = sandbox  # a confined graders.host.Sandbox, or None: unconfined
        self.network = network
        self.model_gateway = model_gateway  # the gateway's URL (`{model_gateway}`), set before `streams`
        self.allow_hosts = allow_hosts
        self.egress: Any = None  # agents.Egress: what the confined server's egress proxy saw
        self.pid: int | None = None
        self.garbage: str | None = None
        self.returncode: int | None = None
        self._process: Any = None

    def exited(self) -> bool:
        proc = self._process
        if proc is not None and proc.returncode is not None:
            self.returncode = proc.returncode
            return True
        return False

    def broken(self) -> bool:
        return self.garbage is not None or self.exited()

    @contextlib.asynccontextmanager
    async def streams(self) -> AsyncIterator[tuple[Any, Any]]:
        """The server started, and (read stream, write stream) of SessionMessages."""
        with contextlib.ExitStack() as doors:  # the egress proxy, closed once the process is gone
            argv, env = self._command(doors)
            log = open(self.log_path, "ab")  # noqa: SIM115 - closed below
            try:
                process = await self._start(argv, env, log)
                async with self._pumps(process) as streams:
                    yield streams
            finally:
                log.close()

    def _command(self, doors: contextlib.ExitStack) -> tuple[list[str], dict[str, str]]:
        """The argv (its program found on the server's PATH) and environment to start."""
        argv = list(self.spec.argv)
        env = server_environment(self.spec, self.data_dir, self.environ, self.model_gateway)
        if self.sandbox is not None and not self.network and (self.model_gateway or self.allow_hosts):
            argv, env = self._behind_egress(argv, env, doors)
        elif self.sandbox is not None:
            argv, env = self.sandbox.wrap(argv, cwd=self.data_dir, env=env, writable=[self.data_dir.parent],
                                          readable=named_files(argv), network=self.network, exposed=True)
        return [self._program(argv[0], env), *argv[1:]], env

    def _program(self, name: str, env: dict[str, str]) -> str:
        exe = name if os.sep in name else shutil.which(name, path=env.get("PATH"))
        if exe is None:
            raise MemoryServerError(f"memory server {self.spec.redacted()!r}: command {name!r} not found on PATH")
        return exe

    def _behind_egress(self, argv: list[str], env: dict[str, str],
                       doors: contextlib.ExitStack) -> tuple[list[str], dict[str, str]]:
        """`argv` in the sandbox behind the agents' egress: only the gateway and the allowed
        hosts reachable. The proxy's socket and launcher in a folder of their own, read-only
        inside (not the data directory: a socket there would be snapshotted)."""
        from agents import Egress, EgressProxy, EgressRules  # lazy: only a confined server with a gateway

        exe = self._program(argv[0], env)
        door = Path(doors.enter_context(tempfile.TemporaryDirectory(prefix="swecl-memory-egress-")))
        self.egress = Egress(allow_hosts=self.allow_hosts)
        rules = EgressRules([self.model_gateway] if self.model_gateway else [], self.allow_hosts)
        proxy = doors.enter_context(EgressProxy(rules, self.egress, door))
        return self.sandbox.wrap(proxy.launcher_argv([exe, *argv[1:]]), cwd=self.data_dir, env=env,
                                 writable=[self.data_dir.parent], readable=[door, *named_files(argv)],
                                 network=False, programs=[exe],
                                 exposed=True)

    async def _start(self, argv: list[str], env: dict[str, str], log: IO[bytes]) -> Any:
        try:
            # its exit is the loop's child watcher's to read (graders.host.reap_zombies)
            with starting_session_leader() as leader:
                process = await anyio.open_process(argv, env=env, cwd=str(self.data_dir), stderr=log,
                                                   start_new_session=True)
                leader(process.pid)
        except OSError as exc:
            raise MemoryServerError(f"memory server {self.spec.redacted()!r} cannot be started: {exc}") from None
        self._process = process
        self.pid = process.pid
        return process

    @contextlib.asynccontextmanager
    async def _pumps(self, process: Any) -> AsyncIterator[tuple[Any, Any]]:
        """Stdout read into messages and messages written to stdin, each by a task; the
        process stopped when the caller is done, whatever happened."""
        read_w, read_r = anyio.create_memory_object_stream[Any](16)
        write_w, write_r = anyio.create_memory_object_stream[Any](16)
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._read, process, read_w)
            tg.start_soon(self._write, process, write_r)
            try:
                yield read_r, write_w
            finally:
                with anyio.CancelScope(shield=True):
                    await self._stop(process)
                tg.cancel_scope.cancel()

    async def _read(self, process: Any, read_w: Any) -> None:
        buffer = b""
        async with read_w:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
                async for chunk in process.stdout:
                    buffer += chunk
                    while b"\n" in buffer:
                        line, buffer = buffer.split(b"\n", 1)
                        if not line.strip():
                            continue
                        try:
                            message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                        except ValueError:
                            # Not the protocol: the stream is broken for good. Ending it
                            # fails every pending request at once instead of by timeout.
                            self.garbage = line[:200].decode("utf-8", "replace")
                            return
                        await read_w.send(SessionMessage(message))

    async def _write(self, process: Any, write_r: Any) -> None:
        async with write_r:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                async for message in write_r:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await process.stdin.send(data.encode())

    async def _stop(self, process: Any) -> None:
        """Stdin closed, a grace to exit, then the whole group killed and the process reaped."""
        with contextlib.suppress(Exception):
            await process.stdin.aclose()
        with anyio.move_on_after(STOP_GRACE_S):
            await process.wait()
        kill_group(process.pid, None)  # what ignored the closed stdin
        with anyio.move_on_after(5):
            await process.wait()
        # Its pipes closed while the loop runs: a pipe transport left open is closed by the
        # garbage collector later, on a closed loop, raising inside whatever ran then (see
        # `_server_host._load_sdk`).
        with contextlib.suppress(Exception), anyio.move_on_after(5):
            await process.aclose()


def named_files(argv: list[str]) -> list[str]:
    """The files the command line names by absolute path after its program (a script the
    program runs: `python /opt/mem0_mcp.py`, `node /srv/server/index.js`): shown read-only
    to a confined server, which otherwise sees its program's install only. The file alone,
    not its folder: what lies beside it stays unseen."""
    return [arg for arg in argv[1:] if os.path.isabs(arg) and os.path.isfile(arg)]
