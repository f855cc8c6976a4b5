"""What a memory server's calls are recorded under, and as: the task context a door holds,
a failed call, the server's handshake, and the events (`memory.provider.started`,
`memory.provider.called`, their recorded names) with their scrubbed blobs.

No asyncio and no MCP SDK here: the run's memory backend names a call's context and
catches a `MemoryServerError` without loading the client (`_server_host`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ledger import Ledger, blob_hash
from ledger.errors import MemoryServerError
from ledger.events import Event, ProviderCalled, ProviderStarted

if TYPE_CHECKING:
    from agents import Scrubber

    from ._server_spec import ServerSpec

__all__ = ["CallContext", "LedgerRecorder", "MemoryServerError", "Recorder", "ServerFailure", "ServerInfo",
           "called_event", "result_text", "started_event", "tool_error"]


@dataclass(frozen=True)
class CallContext:
    """The task a call is recorded under."""

    sequence_id: str
    instance_id: str
    order: int
    pass_: str = "initial"
    attempt: int = 1
    via: str = "agent"  # agent | recall | write | dream (the harness's own policy calls)


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


def result_text(result: dict[str, Any]) -> str:
    return "\n".join(c.get("text", "") for c in result.get("content") or [] if isinstance(c, dict) and c.get("type") == "text")


def tool_error(text: str) -> dict[str, Any]:
    """An MCP tool result that says `text` failed: what the caller gets of a failed call."""
    return {"content": [{"type": "text", "text": text}], "isError": True}


def started_event(spec: ServerSpec, info: ServerInfo, *, sequence_id: str, scrubber: Scrubber, confined: bool,
                  network: bool, about: Mapping[str, str | None] | None = None) -> tuple[Event, bytes]:
    """The server's handshake as recorded, and the blob of its tool listing; `about`: the
    preset, its version and the tools the harness calls (`ProviderStarted`'s fields)."""
    listing = json.dumps(info.tools, ensure_ascii=False, sort_keys=True).encode()
    event = ProviderStarted(
        sequence_id=sequence_id, transport=spec.transport, spec=scrubber.text(spec.redacted()),
        env_names=[name for name, _ in spec.env], server_name=info.server_name,
        server_version=info.server_version, protocol_version=info.protocol_version,
        tools=info.tool_names, tools_listing=blob_hash(listing), confined=confined,
        network=network or not confined, **dict(about or {}),
    )
    return event, listing


def called_event(context: CallContext, number: int, tool: str, arguments: Any, result: dict[str, Any],
                 failure: ServerFailure | None, duration: float, scrubber: Scrubber,
                 egress: Sequence[Any] = ()) -> tuple[Event, list[bytes]]:
    """One call as recorded: its arguments, result text and structured result as scrubbed
    blobs. `is_error` is the server's own error answer; a failure is `failure`'s kind."""
    blobs: list[bytes] = []

    def blob(text: str) -> str:
        data = scrubber.text(text).encode()
        blobs.append(data)
        return blob_hash(data)

    structured = result.get("structuredContent")
    event = ProviderCalled(
        sequence_id=context.sequence_id, instance_id=context.instance_id, order=context.order,
        pass_=context.pass_, attempt=context.attempt, call=number, tool=tool,
        arguments=blob(json.dumps(arguments, ensure_ascii=False, sort_keys=True)),
        result=blob(result_text(result)),
        structured=None if structured is None else blob(json.dumps(structured, ensure_ascii=False, sort_keys=True)),
        is_error=bool(result.get("isError")) and failure is None,
        error=None if failure is None else failure.message, failure=None if failure is None else failure.kind,
        duration_s=round(duration, 6), via=context.via, egress=list(egress),
    )
    return event, blobs
