"""The host of a user's MCP memory server, outside the agent's sandbox.

`ServerHost` starts the server of a `ServerSpec` (or connects to its URL), does the
MCP handshake with the SDK's client, and keeps the server's name, version and tools. It
opens doors: a Unix socket per task attempt in a directory the agent's sandbox shows,
where `_server_proxy` (the agent's MCP server, copied there) connects. Every tool call
through a door is forwarded to the server and recorded as `memory.provider.called`
under that door's task context, which the host holds: nothing inside the sandbox says
what a call is recorded under.

A stdio server runs in a session of its own with cwd its private data directory, an
environment of only HOME, PATH, LANG, LOGNAME, USER, SHELL, TERM, PYTHONPYCACHEPREFIX
and the mapped variables (none of swecl's keys), inside bubblewrap when a confined
`Sandbox` is given (the data directory writable, no network unless `network`), and
never outlives the `with` block: stdin closed, then the whole process group killed and
reaped.

A call the server does not answer in time, a server that exits or writes something that
is not JSON-RPC on stdout: the caller gets a tool error, the call is recorded with
`failure`, and `failures` lists it, so the run can call the task's outcome infrastructure
(never the agent's 0). After a crash or garbage the server is gone: every later call
fails the same way at once.

The SDK is asynchronous; the host runs its own event loop on a thread, and the ledger
connection of its recorder is used on that thread only.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
import shutil
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

import msgspec

from graders import kill_group, session_leader_reaped, starting_session_leader
from ledger import Ledger, SweclError, blob_hash
from ledger.events import Event, ProviderCalled, ProviderStarted

from agents import Scrubber, stdlib_script_argv

from ._server_spec import ServerSpec

__all__ = ["CallContext", "Door", "LedgerRecorder", "MemoryServerError", "ServerFailure", "ServerHost", "ServerInfo"]

# PYTHONPYCACHEPREFIX says only where bytecode is kept, not what runs: without it a
# Python server in the sandbox (its files read-only) compiles every import at each start.
_ENV_KEPT = ("HOME", "PATH", "LANG", "LC_ALL", "LOGNAME", "USER", "SHELL", "TERM", "PYTHONPYCACHEPREFIX")
_STOP_GRACE_S = 2.0  # after stdin closes, before the group is killed


def _leaf(exc: BaseException) -> BaseException:
    """What went wrong inside the task groups of the SDK and anyio: a MemoryServerError of ours
    if there is one, else the first leaf (never "unhandled errors in a TaskGroup")."""
    if not isinstance(exc, BaseExceptionGroup):
        return exc
    leaves = [_leaf(e) for e in exc.exceptions]
    return next((e for e in leaves if isinstance(e, MemoryServerError)), leaves[0] if leaves else exc)


class MemoryServerError(SweclError):
    """The memory server could not be started or used: an infrastructure problem of
    the run, not the agent's."""


@dataclass(frozen=True)
class CallContext:
    """The task a call is recorded under."""

    sequence_id: str
    instance_id: str
    order: int
    pass_: str = "initial"
    attempt: int = 1
    via: str = "agent"  # agent | recall | write (the harness's own policy calls)


@dataclass(frozen=True)
class ServerFailure:
    kind: str  # crashed | timeout | garbage | unavailable
    message: str
    call: int
    context: CallContext | None


@dataclass(frozen=True)
class ServerInfo:
    server_name: str
    server_version: str
    protocol_version: str
    tools: list[dict[str, Any]]  # as listed: name, description, inputSchema, ...

    @property
    def tool_names(self) -> list[str]:
        return [t["name"] for t in self.tools]


class Recorder(Protocol):
    def record(self, event: Event, blobs: Sequence[bytes]) -> None: ...
    def close(self) -> None: ...


class LedgerRecorder:
    """Appends to `run/{version}/{sequence}` of the ledger at `path`, through a
    connection of its own (opened on first use, on the thread that uses it)."""

    def __init__(self, path: str | os.PathLike[str], version: str, sequence_id: str) -> None:
        self.path = Path(path)
        self.stream = f"run/{version}/{sequence_id}"
        self._ledger: Ledger | None = None

    def record(self, event: Event, blobs: Sequence[bytes]) -> None:
        if self._ledger is None:
            self._ledger = Ledger.open(self.path)
        self._ledger.append(self.stream, [event], blobs=list(blobs))

    def close(self) -> None:
        if self._ledger is not None:
            self._ledger.close()
            self._ledger = None


class _Garbage(Exception):
    pass


def server_environment(spec: ServerSpec, data_dir: Path, environ: dict[str, str] | None = None) -> dict[str, str]:
    """What a stdio server's process gets: a few neutral variables, the mapped ones."""
    base = os.environ if environ is None else environ
    env = {k: base[k] for k in _ENV_KEPT if k in base}
    env["TMPDIR"] = str(data_dir.parent / "tmp")
    env.update(spec.env_for(data_dir))
    return env


def _result_text(result: dict[str, Any]) -> str:
    return "\n".join(c.get("text", "") for c in result.get("content") or [] if isinstance(c, dict) and c.get("type") == "text")


def _tool_error(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


class Door:
    """One task attempt's way in: `socket_path`, and `proxy_argv`, the MCP server
    command for the agent's MCP configuration (standard library only)."""

    def __init__(self, host: ServerHost, directory: Path, context: CallContext) -> None:
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
        shutil.copyfile(Path(__file__).with_name("_server_proxy.py"), self.proxy_path)
        self.socket_path.unlink(missing_ok=True)
        self._server = self.host._run(asyncio.start_unix_server(self._serve, path=str(self.socket_path)))
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
                self.host._run(close())
        self.socket_path.unlink(missing_ok=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                try:
                    request = json.loads(line)
                    method, params = request["method"], request.get("params") or {}
                except (ValueError, KeyError, TypeError):
                    reply: dict[str, Any] = {"error": {"code": -32700, "message": "not a request"}}
                else:
                    if method == "tools/list":
                        reply = {"result": {"tools": self.host.info.tools if self.host.info else []}}
                    elif method == "tools/call" and isinstance(params, dict):
                        args = params.get("arguments") or {}
                        reply = {"result": await self.host._call(self.context, str(params.get("name", "")), args)}
                    else:
                        reply = {"error": {"code": -32601, "message": f"method not found: {method}"}}
                writer.write(json.dumps(reply, ensure_ascii=False).encode() + b"\n")
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


def _load_sdk() -> None:
    """Import, in the calling thread, every SDK module the host's thread uses.

    anyio parses its own source into an AST when imported (its lazy importer), and on
    CPython 3.11 two threads making ASTs at once can fail with "SystemError: AST
    constructor recursion depth mismatch" (CPython gh-106905): the host's thread importing
    the SDK while the caller imported a module (or pytest rewrote one) did, once. Imported
    here first, the thread only runs code. Still lazy for the module: only a run with a
    memory server pays for the SDK."""
    import anyio  # noqa: F401
    import mcp_types  # noqa: F401
    from mcp.client.session import ClientSession  # noqa: F401
    from mcp.client.streamable_http import streamable_http_client  # noqa: F401
    from mcp.shared.exceptions import MCPError  # noqa: F401
    from mcp.shared.message import SessionMessage  # noqa: F401


class ServerHost:
    """One memory server for one run's sequence; see the module's docstring."""

    def __init__(
        self,
        spec: ServerSpec,
        data_dir: Path,
        recorder: Recorder | None = None,
        *,
        sequence_id: str,
        call_timeout_s: float = 60.0,
        start_timeout_s: float = 120.0,
        sandbox: Any = None,  # graders.Sandbox: confined when given and not mode none
        network: bool = False,
        environ: dict[str, str] | None = None,
    ) -> None:
        self.spec = spec
        self.data_dir = Path(data_dir).resolve()
        self.recorder = recorder
        self.sequence_id = sequence_id
        self.call_timeout_s = call_timeout_s
        self.start_timeout_s = start_timeout_s
        self.sandbox = sandbox
        self.network = network
        self.environ = environ
        self.log_path = self.data_dir.parent / "server.log"
        self.info: ServerInfo | None = None
        self.failures: list[ServerFailure] = []
        self.calls = 0
        self.pid: int | None = None
        self._dead: ServerFailure | None = None
        self._scrubber = Scrubber()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._start_error: BaseException | None = None
        self._stop: asyncio.Event | None = None
        self._session: Any = None
        self._lock: asyncio.Lock | None = None

    @property
    def confined(self) -> bool:
        return self.sandbox is not None and getattr(self.sandbox, "confined", False) and self.spec.transport == "stdio"

    # -- lifecycle --------------------------------------------------------------------------

    def __enter__(self) -> ServerHost:
        _load_sdk()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        (self.data_dir.parent / "tmp").mkdir(parents=True, exist_ok=True)
        self._thread = threading.Thread(target=self._thread_main, name="memory-server", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._start_error is not None:
            self.close()
            err = _leaf(self._start_error)
            if isinstance(err, MemoryServerError):
                raise err
            raise MemoryServerError(f"memory server {self.spec.redacted()!r} did not start: "
                                f"{self._why(err)}{self._last_words()}")
        self._record_started()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stop.set)
        if self._thread is not None:
            self._thread.join(timeout=_STOP_GRACE_S + 15)
            self._thread = None
        self._kill_group()
        if self.recorder is not None:
            with contextlib.suppress(Exception):
                self.recorder.close()

    def _kill_group(self) -> None:
        """The last word: whatever is left of the server's process group dies."""
        if self.pid is None:
            return
        kill_group(self.pid, None)
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(self.pid, os.WNOHANG)  # the loop's child watcher has usually reaped it
        session_leader_reaped(self.pid)

    def _run(self, coro: Any) -> Any:
        """Run a coroutine on the host's loop from another thread and wait for it."""
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def _thread_main(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._main())
        except BaseException as exc:  # noqa: BLE001 - reported to the starting thread
            if not self._ready.is_set():
                self._start_error = exc
        finally:
            self._ready.set()
            with contextlib.suppress(Exception):
                loop.run_until_complete(loop.shutdown_asyncgens())
            # Transports and protocols hold each other in cycles: finalised by a later
            # collection, on a closed loop, they raise there, inside whatever code ran.
            # Collected now, they close on their own loop.
            gc.collect()
            loop.close()

    async def _main(self) -> None:
        from mcp.client.session import ClientSession

        self._stop = asyncio.Event()
        self._lock = asyncio.Lock()
        async with contextlib.AsyncExitStack() as stack:
            read, write = await stack.enter_async_context(self._transport())
            session = await stack.enter_async_context(ClientSession(read, write))
            try:
                init = await asyncio.wait_for(session.initialize(), self.start_timeout_s)
                tools: list[dict[str, Any]] = []
                cursor: str | None = None
                while True:
                    listed = await asyncio.wait_for(session.list_tools(cursor=cursor) if cursor else session.list_tools(),
                                                    self.start_timeout_s)
                    tools += [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools]
                    cursor = getattr(listed, "next_cursor", None)
                    if not cursor:
                        break
            except (TimeoutError, asyncio.TimeoutError):
                raise MemoryServerError(f"memory server {self.spec.redacted()!r} did not answer the MCP handshake "
                                    f"within {self.start_timeout_s:g} s{self._last_words()}") from None
            except _Garbage as exc:
                raise MemoryServerError(f"memory server {self.spec.redacted()!r} wrote non-JSON-RPC output: {exc}") from None
            except Exception as exc:  # noqa: BLE001 - any SDK or transport failure at start
                raise MemoryServerError(f"memory server {self.spec.redacted()!r} failed the MCP handshake: "
                                    f"{self._why(exc)}{self._last_words()}") from None
            info = init.server_info
            self.info = ServerInfo(server_name=info.name, server_version=info.version or "",
                                     protocol_version=str(init.protocol_version), tools=tools)
            self._session = session
            self._ready.set()
            await self._stop.wait()

    def _last_words(self) -> str:
        """The last line the server wrote on stderr, for the one-line error: a server that
        dies at start (a missing module, a bad flag, an unset variable) says why there, and
        the user should not have to open the log to learn it. Scrubbed like what is recorded."""
        try:
            with open(self.log_path, "rb") as fh:
                fh.seek(0, os.SEEK_END)
                fh.seek(max(0, fh.tell() - 4096))
                tail = fh.read().decode("utf-8", "replace")
        except OSError:
            tail = ""
        lines = [" ".join(line.split()) for line in tail.splitlines() if line.strip()]
        if not lines:
            return f" (its stderr, empty: {self.log_path})"
        last = self._scrubber.text(lines[-1])
        return f"; its stderr ends: {last[:300]!r} (all of it: {self.log_path})"

    def _why(self, exc: BaseException) -> str:
        if self._garbage is not None:
            return f"it wrote non-JSON-RPC output: {self._garbage!r}"
        if self._exited():
            return f"it exited (code {self._returncode})"
        return str(exc) or type(exc).__name__

    _garbage: str | None = None
    _returncode: int | None = None
    _process: Any = None

    def _broken(self) -> bool:
        return self._garbage is not None or self._exited()

    def _exited(self) -> bool:
        proc = self._process
        if proc is not None and proc.returncode is not None:
            self._returncode = proc.returncode
            return True
        return False

    @contextlib.asynccontextmanager
    async def _transport(self) -> AsyncIterator[tuple[Any, Any]]:
        if self.spec.url is not None:
            from mcp.client.streamable_http import streamable_http_client

            async with streamable_http_client(self.spec.url) as streams:
                yield streams[0], streams[1]
            return
        async with self._stdio() as streams:
            yield streams

    @contextlib.asynccontextmanager
    async def _stdio(self) -> AsyncIterator[tuple[Any, Any]]:
        """The SDK's stdio transport, made here so the host knows the process group it
        must kill, keeps the server's stderr in a log, and notices garbage on stdout."""
        import anyio
        import mcp_types as types
        from mcp.shared.message import SessionMessage

        argv = list(self.spec.argv)
        env = server_environment(self.spec, self.data_dir, self.environ)
        if self.confined:
            argv, env = self.sandbox.wrap(argv, cwd=self.data_dir, env=env, writable=[self.data_dir.parent],
                                          network=self.network, exposed=True)
        exe = argv[0] if os.sep in argv[0] else shutil.which(argv[0], path=env.get("PATH"))
        if exe is None:
            raise MemoryServerError(f"memory server {self.spec.redacted()!r}: command {argv[0]!r} not found on PATH")
        log = open(self.log_path, "ab")  # noqa: SIM115 - closed below
        try:
            # its exit is the loop's child watcher's to read (graders.reap_zombies)
            with starting_session_leader() as leader:
                process = await anyio.open_process([exe, *argv[1:]], env=env, cwd=str(self.data_dir), stderr=log,
                                                   start_new_session=True)
                leader(process.pid)
        except OSError as exc:
            log.close()
            raise MemoryServerError(f"memory server {self.spec.redacted()!r} cannot be started: {exc}") from None
        self._process = process
        self.pid = process.pid
        read_w, read_r = anyio.create_memory_object_stream[Any](16)
        write_w, write_r = anyio.create_memory_object_stream[Any](16)

        async def reader() -> None:
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
                                message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                            except ValueError:
                                # Not the protocol: the stream is broken for good. Ending it
                                # fails every pending request at once instead of by timeout.
                                self._garbage = line[:200].decode("utf-8", "replace")
                                return
                            await read_w.send(SessionMessage(message))

        async def writer() -> None:
            async with write_r:
                with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                    async for message in write_r:
                        data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                        await process.stdin.send(data.encode())

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(reader)
                tg.start_soon(writer)
                try:
                    yield read_r, write_w
                finally:
                    with anyio.CancelScope(shield=True):
                        with contextlib.suppress(Exception):
                            await process.stdin.aclose()
                        with anyio.move_on_after(_STOP_GRACE_S):
                            await process.wait()
                        kill_group(process.pid, None)  # what ignored the closed stdin
                        with anyio.move_on_after(5):
                            await process.wait()
                        # Its pipes closed while the loop runs: a pipe transport left open is
                        # closed by the garbage collector later, on a closed loop, raising
                        # inside whatever ran then (see `_load_sdk`).
                        with contextlib.suppress(Exception), anyio.move_on_after(5):
                            await process.aclose()
                    tg.cancel_scope.cancel()
        finally:
            log.close()

    # -- calls ------------------------------------------------------------------------------

    def door(self, directory: Path, context: CallContext) -> Door:
        """A door for one task attempt (a context manager): see `Door`."""
        return Door(self, directory, context)

    def call(self, context: CallContext, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """A call from swecl itself (the recall and write policy), recorded like the agent's."""
        return self._run(self._call(context, tool, arguments))

    @contextlib.contextmanager
    def idle(self) -> Iterator[None]:
        """No call runs while this is held: take snapshots under it."""
        assert self._loop is not None and self._lock is not None
        self._run(self._lock.acquire())
        try:
            yield
        finally:
            self._loop.call_soon_threadsafe(self._lock.release)

    async def _call(self, context: CallContext, tool: str, arguments: Any) -> dict[str, Any]:
        assert self._lock is not None
        async with self._lock:
            self.calls += 1
            number = self.calls
            started = time.monotonic()
            result: dict[str, Any] | None = None
            failure: ServerFailure | None = self._dead
            if failure is None:
                try:
                    answer = await asyncio.wait_for(self._session.call_tool(tool, arguments), self.call_timeout_s)
                    result = answer.model_dump(mode="json", by_alias=True, exclude_none=True)
                except (TimeoutError, asyncio.TimeoutError):
                    failure = ServerFailure("timeout", f"the memory server did not answer {tool} within "
                                              f"{self.call_timeout_s:g} s", number, context)
                except Exception as exc:  # noqa: BLE001 - whatever the SDK raises, the call failed
                    from mcp.shared.exceptions import MCPError
                    from mcp_types import CONNECTION_CLOSED

                    if isinstance(exc, MCPError) and exc.error.code != CONNECTION_CLOSED and not self._broken():
                        # The server answered with a JSON-RPC error (an unknown tool, bad
                        # arguments): its answer, to the agent, not a failure of the run.
                        result = _tool_error(f"{tool}: {exc.error.message}")
                    for _ in range(0 if result is not None else 100):  # up to 1 s for the reader or the exit to tell why
                        if self._garbage is not None or self._exited():
                            break
                        await asyncio.sleep(0.01)
                    if result is not None:
                        pass
                    elif self._garbage is not None:
                        failure = ServerFailure("garbage", f"the memory server wrote non-JSON-RPC output: {self._garbage!r}",
                                                  number, context)
                    else:
                        failure = ServerFailure("crashed", f"the memory server failed during {tool}: {self._why(exc)}",
                                                  number, context)
                    self._dead = failure if failure is not None else self._dead
            else:
                failure = ServerFailure("unavailable", f"the memory server is gone ({failure.message})", number, context)
            if failure is not None:
                self.failures.append(failure)
                result = _tool_error(failure.message)
            assert result is not None
            self._record_call(context, number, tool, arguments, result, failure, time.monotonic() - started)
            return result

    # -- recording --------------------------------------------------------------------------

    def _record_started(self) -> None:
        if self.recorder is None or self.info is None:
            return
        listing = json.dumps(self.info.tools, ensure_ascii=False, sort_keys=True).encode()
        event = ProviderStarted(
            sequence_id=self.sequence_id, transport=self.spec.transport, spec=self._scrubber.text(self.spec.redacted()),
            env_names=[name for name, _ in self.spec.env], server_name=self.info.server_name,
            server_version=self.info.server_version, protocol_version=self.info.protocol_version,
            tools=self.info.tool_names, tools_listing=blob_hash(listing), confined=self.confined,
            network=self.network or not self.confined,
        )
        self._run(self._record(event, [listing]))

    async def _record(self, event: Event, blobs: Sequence[bytes]) -> None:
        assert self.recorder is not None
        self.recorder.record(event, blobs)

    def _record_call(self, context: CallContext, number: int, tool: str, arguments: Any, result: dict[str, Any],
                     failure: ServerFailure | None, duration: float) -> None:
        if self.recorder is None:
            return
        blobs: list[bytes] = []

        def blob(text: str) -> str:
            data = self._scrubber.text(text).encode()
            blobs.append(data)
            return blob_hash(data)

        structured = result.get("structuredContent")
        event = ProviderCalled(
            sequence_id=context.sequence_id, instance_id=context.instance_id, order=context.order,
            pass_=context.pass_, attempt=context.attempt, call=number, tool=tool,
            arguments=blob(json.dumps(arguments, ensure_ascii=False, sort_keys=True)),
            result=blob(_result_text(result)),
            structured=None if structured is None else blob(json.dumps(structured, ensure_ascii=False, sort_keys=True)),
            is_error=bool(result.get("isError")) and failure is None,
            error=None if failure is None else failure.message, failure=None if failure is None else failure.kind,
            duration_s=round(duration, 6), via=context.via,
        )
        self.recorder.record(event, blobs)


def decode_listing(data: bytes) -> list[dict[str, Any]]:
    """The tools of a `memory.provider.started` event's `tools_listing` blob."""
    return msgspec.json.decode(data)

