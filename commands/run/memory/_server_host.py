"""The host of a user's MCP memory server, outside the agent's sandbox.

`ServerHost` starts the server of a `ServerSpec` (or connects to its URL), does the
MCP handshake with the SDK's client, and keeps the server's name, version and tools. It
opens doors (`_server_door`): a Unix socket per task attempt in a directory the agent's
sandbox shows, where `_server_proxy` (the agent's MCP server, copied there) connects.
Every tool call through a door is forwarded to the server and recorded as
`memory.provider.called` under that door's task context, which the host holds: nothing
inside the sandbox says what a call is recorded under.

A stdio server (`_server_stdio`) runs in a session of its own with cwd its private data
directory, an environment of only HOME, PATH, LANG, LOGNAME, USER, SHELL, TERM,
PYTHONPYCACHEPREFIX and the mapped variables (none of swecl's keys), inside bubblewrap
when a confined `Sandbox` is given (the data directory writable, no network unless
`network`), and never outlives the `with` block: stdin closed, then the whole process
group killed and reaped.

A call the server does not answer in time, a server that exits or writes something that
is not JSON-RPC on stdout: the caller gets a tool error, the call is recorded with
`failure`, and `failures` lists it, so the run can call the task's outcome infrastructure
(never the agent's 0). After a crash or garbage the server is gone: every later call
fails the same way at once.

With a model endpoint, the host runs the server's recording model gateway
(`_model_gateway`) from before the server starts until after it stopped, tells it the
task in flight before each call, and records its calls through a recorder of its own
(`model_recorder`: the gateway's requests come on threads of its own).

The SDK is asynchronous; the host runs its own event loop on a thread, and the ledger
connection of its recorder is used on that thread only.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import threading
import time
from collections.abc import AsyncIterator, Coroutine, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

# The SDK is imported here, with this module, in the thread that imports it, never by the
# host's thread. anyio parses its own source into an AST when imported (its lazy
# importer), and on CPython 3.11 two threads making ASTs at once can fail with
# "SystemError: AST constructor recursion depth mismatch" (CPython gh-106905): the host's
# thread importing the SDK while the caller imported a module (or pytest rewrote one)
# did, once. The module itself is lazy: only a run with a memory server loads it.
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED

from agents import Scrubber
from graders.host import kill_group, session_leader_reaped
from ledger.events import Event

from ._model_gateway import ModelGateway
from ._server_door import Door
from ._server_record import (
    CallContext,
    MemoryServerError,
    Recorder,
    ServerFailure,
    ServerInfo,
    called_event,
    started_event,
    tool_error,
)
from ._server_spec import ServerSpec
from ._server_stdio import STOP_GRACE_S, StdioServer

__all__ = ["ServerHost"]

T = TypeVar("T")
Answer = tuple[dict[str, Any] | None, ServerFailure | None]  # a call's result, or its failure


def _leaf(exc: BaseException) -> BaseException:
    """What went wrong inside the task groups of the SDK and anyio: a MemoryServerError of
    ours if there is one, else the first leaf (never "unhandled errors in a TaskGroup")."""
    if not isinstance(exc, BaseExceptionGroup):
        return exc
    leaves = [_leaf(e) for e in exc.exceptions]
    return next((e for e in leaves if isinstance(e, MemoryServerError)), leaves[0] if leaves else exc)


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
        sandbox: Any = None,  # graders.host.Sandbox: confined when given and not mode none
        network: bool = False,
        environ: dict[str, str] | None = None,
        about: dict[str, str | None] | None = None,  # recorded with the handshake (`started_event`)
        model_endpoint: str | None = None,
        model_recorder: Recorder | None = None,
        allow_hosts: tuple[str, ...] = (),
    ) -> None:
        self.spec = spec
        self.data_dir = Path(data_dir).resolve()
        self.recorder = recorder
        self.sequence_id = sequence_id
        self.call_timeout_s = call_timeout_s
        self.start_timeout_s = start_timeout_s
        self.sandbox = sandbox
        self.network = network
        self.about = dict(about or {})
        self.log_path = self.data_dir.parent / "server.log"
        self.info: ServerInfo | None = None
        self.failures: list[ServerFailure] = []
        self.calls = 0
        self._egress_seen = 0  # how many of the egress proxy's connections are recorded
        # A URL server is the user's to run: no process of swecl's.
        self._stdio = None if spec.url is not None else StdioServer(
            spec, self.data_dir, self.log_path, environ=environ, sandbox=sandbox if self.confined else None,
            network=network, allow_hosts=allow_hosts)
        self.model_recorder = model_recorder
        self.gateway: ModelGateway | None = None if model_endpoint is None else ModelGateway(
            model_endpoint, self._record_model_call, sequence_id=sequence_id)
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

    @property
    def pid(self) -> int | None:
        """The stdio server's process (its group's leader), once started; None for a URL."""
        return self._stdio.pid if self._stdio is not None else None

    # -- lifecycle --------------------------------------------------------------------------

    def __enter__(self) -> ServerHost:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        (self.data_dir.parent / "tmp").mkdir(parents=True, exist_ok=True)
        if self.gateway is not None:
            self.gateway.__enter__()
            if self._stdio is not None:
                self._stdio.model_gateway = self.gateway.url
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
            self._thread.join(timeout=STOP_GRACE_S + 15)
            self._thread = None
        self._kill_group()
        if self.gateway is not None:
            self.gateway.close()  # after the server: its last calls are answered and recorded
        for recorder in (self.recorder, self.model_recorder):
            if recorder is not None:
                with contextlib.suppress(Exception):
                    recorder.close()

    def _kill_group(self) -> None:
        """The last word: whatever is left of the server's process group dies."""
        pid = self.pid
        if pid is None:
            return
        kill_group(pid, None)
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)  # the loop's child watcher has usually reaped it
        session_leader_reaped(pid)

    def run_on_loop(self, coro: Coroutine[Any, Any, T]) -> T:
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
        """The connection, on the host's loop, from the handshake until `close`."""
        self._stop = asyncio.Event()
        self._lock = asyncio.Lock()
        async with contextlib.AsyncExitStack() as stack:
            read, write = await stack.enter_async_context(self._transport())
            session = await stack.enter_async_context(ClientSession(read, write))
            self.info = await self._handshake(session)
            self._session = session
            self._ready.set()
            await self._stop.wait()

    async def _handshake(self, session: ClientSession) -> ServerInfo:
        """The MCP handshake and the server's whole tool list, or a one-line error."""
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
        except Exception as exc:  # noqa: BLE001 - any SDK or transport failure at start
            raise MemoryServerError(f"memory server {self.spec.redacted()!r} failed the MCP handshake: "
                                    f"{self._why(exc)}{self._last_words()}") from None
        info = init.server_info
        return ServerInfo(server_name=info.name, server_version=info.version or "",
                          protocol_version=str(init.protocol_version), tools=tools)

    @contextlib.asynccontextmanager
    async def _transport(self) -> AsyncIterator[tuple[Any, Any]]:
        if self._stdio is None:
            assert self.spec.url is not None
            async with streamable_http_client(self.spec.url) as streams:
                yield streams[0], streams[1]
            return
        async with self._stdio.streams() as streams:
            yield streams

    # -- why it failed ------------------------------------------------------------------------

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
        stdio = self._stdio
        if stdio is not None and stdio.garbage is not None:
            return f"it wrote non-JSON-RPC output: {stdio.garbage!r}"
        if stdio is not None and stdio.exited():
            return f"it exited (code {stdio.returncode})"
        return str(exc) or type(exc).__name__

    def _broken(self) -> bool:
        return self._stdio is not None and self._stdio.broken()

    # -- calls ------------------------------------------------------------------------------

    def door(self, directory: Path, context: CallContext) -> Door:
        """A door for one task attempt (a context manager): see `Door`."""
        return Door(self, directory, context)

    def call(self, context: CallContext, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """A call from swecl itself (the recall, write and dream policy), recorded like the agent's."""
        return self.run_on_loop(self.call_on_loop(context, tool, arguments))

    @contextlib.contextmanager
    def idle(self) -> Iterator[None]:
        """No call runs while this is held: take snapshots under it."""
        assert self._loop is not None and self._lock is not None
        self.run_on_loop(self._lock.acquire())
        try:
            yield
        finally:
            self._loop.call_soon_threadsafe(self._lock.release)

    async def call_on_loop(self, context: CallContext, tool: str, arguments: Any) -> dict[str, Any]:
        """One call, on the host's loop: one at a time, answered or failed, recorded."""
        assert self._lock is not None
        async with self._lock:
            self.calls += 1
            number = self.calls
            started = time.monotonic()
            if self.gateway is not None:
                self.gateway.set_context(context)  # its model calls now are this call's task's
            if self._dead is not None:
                result, failure = None, ServerFailure(
                    "unavailable", f"the memory server is gone ({self._dead.message})", number, context)
            else:
                result, failure = await self._call_server(context, number, tool, arguments)
            if failure is not None:
                self.failures.append(failure)
                result = tool_error(failure.message)
            assert result is not None
            self._record_call(context, number, tool, arguments, result, failure, time.monotonic() - started)
            return result

    async def _call_server(self, context: CallContext, number: int, tool: str, arguments: Any) -> Answer:
        try:
            answer = await asyncio.wait_for(self._session.call_tool(tool, arguments), self.call_timeout_s)
        except (TimeoutError, asyncio.TimeoutError):
            return None, ServerFailure("timeout", f"the memory server did not answer {tool} within "
                                       f"{self.call_timeout_s:g} s", number, context)
        except Exception as exc:  # noqa: BLE001 - whatever the SDK raises, the call failed
            return await self._call_failed(context, number, tool, exc)
        return answer.model_dump(mode="json", by_alias=True, exclude_none=True), None

    async def _call_failed(self, context: CallContext, number: int, tool: str, exc: Exception) -> Answer:
        """What the SDK's exception during a call means: the server's own error answer, or
        the server gone (garbage on its stdout, or it crashed), for every later call too."""
        if isinstance(exc, MCPError) and exc.error.code != CONNECTION_CLOSED and not self._broken():
            # The server answered with a JSON-RPC error (an unknown tool, bad arguments):
            # its answer, to the agent, not a failure of the run.
            return tool_error(f"{tool}: {exc.error.message}"), None
        for _ in range(100):  # up to 1 s for the reader or the exit to tell why
            if self._broken():
                break
            await asyncio.sleep(0.01)
        garbage = self._stdio.garbage if self._stdio is not None else None
        if garbage is not None:
            failure = ServerFailure("garbage", f"the memory server wrote non-JSON-RPC output: {garbage!r}",
                                    number, context)
        else:
            failure = ServerFailure("crashed", f"the memory server failed during {tool}: {self._why(exc)}",
                                    number, context)
        self._dead = failure
        return None, failure

    # -- recording --------------------------------------------------------------------------

    def _record_started(self) -> None:
        if self.recorder is None or self.info is None:
            return
        event, listing = started_event(self.spec, self.info, sequence_id=self.sequence_id, scrubber=self._scrubber,
                                       confined=self.confined, network=self.network, about=self.about)
        self.run_on_loop(self._record(event, [listing]))

    async def _record(self, event: Event, blobs: Sequence[bytes]) -> None:
        assert self.recorder is not None
        self.recorder.record(event, blobs)

    def _record_model_call(self, event: Event) -> None:
        if self.model_recorder is not None:
            self.model_recorder.record(event, [])

    def _new_connections(self) -> list[Any]:
        """The confined server's egress connections that ended since the last call recorded."""
        egress = self._stdio.egress if self._stdio is not None else None
        if egress is None:
            return []
        ended = list(egress.connections[self._egress_seen:])  # the proxy's threads only append
        self._egress_seen += len(ended)
        return ended

    def _record_call(self, context: CallContext, number: int, tool: str, arguments: Any, result: dict[str, Any],
                     failure: ServerFailure | None, duration: float) -> None:
        if self.recorder is None:
            return
        event, blobs = called_event(context, number, tool, arguments, result, failure, duration, self._scrubber,
                                    self._new_connections())
        self.recorder.record(event, blobs)
