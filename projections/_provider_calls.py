"""The calls a `--memory-server` run made to the user's MCP memory server, as recorded
(`memory.provider.called`), and the blob texts behind them: what `swecl show` lists for
an attempt and what `swecl audit` attributes, and the provider a run names in its
headers (`memory_server_of`). Pure reads of the ledger."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ledger import Ledger, LedgerError, StreamRange
from ledger.events import ProviderCalled

from ._runs import RunSummary

__all__ = ["EXCERPT", "blob_text", "excerpt", "json_strings", "memory_server_named", "memory_server_of", "provider_calls"]

EXCERPT = 160  # characters of an argument or a result shown on one line


def json_strings(value: object) -> list[str]:
    """Every string inside a decoded JSON value (a memory server's answer, a template), in
    document order."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in json_strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in json_strings(v)]
    return []


def memory_server_of(ledger: Ledger, run: RunSummary) -> str | None:
    """A --memory-server run's provider as its handshake named it ("memory-server 0.6.3"),
    else its recorded spec until a server answered; None for every other run."""
    return memory_server_named(ledger, run.version, run.config, run.sequences)


def memory_server_named(ledger: Ledger, version: str, config: dict[str, Any], sequences: Iterable[str]) -> str | None:
    """`memory_server_of` from a run's recorded options (`run.started.config`) and sequences."""
    spec = config.get("memory_server")
    if not spec:
        return None
    ranges = [StreamRange(f"run/{version}/{s}") for s in sequences]
    for rec in ledger.read(types=["memory.provider.started"], ranges=ranges):
        return f"{rec.event.server_name} {rec.event.server_version}".strip()
    return str(spec)


def provider_calls(ledger: Ledger, version: str, sequence_id: str) -> list[tuple[int, ProviderCalled]]:
    """(seq, event) of every call of run `version`'s sequence `sequence_id`, in ledger order
    (each host records on the run's sequence stream)."""
    ranges = [StreamRange(f"run/{version}/{sequence_id}")]
    return [(rec.seq, rec.event) for rec in ledger.read(types=["memory.provider.called"], ranges=ranges)]


def blob_text(ledger: Ledger, digest: str | None) -> str | None:
    """A blob as text; None when there is none, or it is missing (`swecl verify` says so)."""
    if not digest:
        return None
    try:
        return ledger.get_blob(digest).decode("utf-8", errors="replace")
    except LedgerError:
        return None


def excerpt(text: str | None, limit: int = EXCERPT) -> str | None:
    """`text` on one line (whitespace runs collapsed), cut at `limit` characters with "..."."""
    if text is None:
        return None
    flat = " ".join(text.split())
    return flat[:limit] + ("..." if len(flat) > limit else "")
