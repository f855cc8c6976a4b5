"""A stdio memory server's process, and the MCP streams over its stdin and stdout.

The SDK's stdio transport, made here so the host knows the process group it must kill,
keeps the server's stderr in a log beside its data directory, and notices garbage on
stdout. The process starts in a session of its own, cwd its data directory, with only
`server_environment`; given a confined sandbox, inside bubblewrap with only the data
directory's folder writable and no network unless asked. On leaving `streams`, stdin is
closed, the process has `STOP_GRACE_S` to exit, then its whole group is killed and reaped.

Runs on the host's event loop (anyio, the MCP SDK): imported by `_server_host` only.
"""

from __future__ import annotations

import contextlib
import os
import shutil
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
                 sandbox: Any, network: bool) -> None:
        self.spec, self.data_dir, self.log_path = spec, data_dir, log_path
        self.environ = environ
        self.sandbox = sandbox  # a confined graders.host.Sandbox, or None: unconfined
        self.network = network
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
        argv, env = self._command()
        log = open(self.log_path, "ab")  # noqa: SIM115 - closed below
        try:
            process = await self._start(argv, env, log)
            async with self._pumps(process) as streams:
                yield streams
        finally:
            log.close()

    def _command(self) -> tuple[list[str], dict[str, str]]:
        """The argv (its program found on the server's PATH) and environment to start."""
        argv = list(self.spec.argv)
        env = server_environment(self.spec, self.data_dir, self.environ)
        if self.sandbox is not None:
            argv, env = self.sandbox.wrap(argv, cwd=self.data_dir, env=env, writable=[self.data_dir.parent],
                                          network=self.network, exposed=True)
        exe = argv[0] if os.sep in argv[0] else shutil.which(argv[0], path=env.get("PATH"))
        if exe is None:
            raise MemoryServerError(f"memory server {self.spec.redacted()!r}: command {argv[0]!r} not found on PATH")
        return [exe, *argv[1:]], env

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
