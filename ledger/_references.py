"""Seed references: every `memory.seeded` must point at something this ledger holds.

The hash chain proves no event was altered; it cannot prove a seed names a run that
exists, or a position in that run's history that was already written when the seed
was recorded. A merge that left out a shard, or a hand-made ledger, can break that, and
the memory projection would then silently fold a different substrate. `check_references`
finds the first such seed, by seq.

Domain-aware but ledger-only: it knows the `run/{version}` header streams and the
`run.started` / `memory.seeded` payloads of the catalog, and nothing above the ledger.
"""

from __future__ import annotations

from .errors import IntegrityError
from ._store import Ledger
from .events import MemorySeeded, RunStarted


def _header_version(stream: str) -> str | None:
    """`V` of a run header stream `run/{V}`; None for any other stream."""
    parts = stream.split("/")
    return parts[1] if len(parts) == 2 and parts[0] == "run" and parts[1] else None


def check_references(ledger: Ledger) -> IntegrityError | None:
    """The first seed (by seq) whose reference does not hold, as `IntegrityError(seq, msg)`.

    A seed must sit on the header stream `run/{V}` of a run that started before it;
    a run seed (`source_run`) must name another run of this ledger that started before
    the seed, with `source_seq` (when recorded) between that run's start and the seed
    itself; a path seed (`source_path`) must carry its imported items as a blob this
    ledger holds. None when every seed holds.
    """
    started: dict[str, int] = {}
    seeds: list[tuple[int, str, MemorySeeded]] = []
    for rec in ledger.read(types=["run.started", "memory.seeded"]):
        version = _header_version(rec.stream)
        if rec.type == "run.started" and isinstance(rec.event, RunStarted):
            if version is not None:
                started.setdefault(version, rec.seq)
        elif isinstance(rec.event, MemorySeeded):
            seeds.append((rec.seq, rec.stream, rec.event))
    for seq, stream, ev in seeds:
        problem = _seed_problem(ledger, started, seq, stream, ev)
        if problem is not None:
            return IntegrityError(seq, f"seq {seq}: memory.seeded {problem}")
    return None


def _seed_problem(ledger: Ledger, started: dict[str, int], seq: int, stream: str, ev: MemorySeeded) -> str | None:
    target = _header_version(stream)
    if target is None:
        return f"is on stream {stream!r}, not on a run header stream run/VERSION"
    target_start = started.get(target)
    if target_start is None or target_start > seq:
        return f"seeds run {target!r}, which has no run.started before it"
    if ev.source_run is None and ev.source_path is None:
        return "names neither a source run nor a source path"
    if ev.source_run is not None:
        source = ev.source_run
        if source == target:
            return f"seeds run {target!r} from itself"
        source_start = started.get(source)
        if source_start is None:
            return f"names source run {source!r}, which is not in this ledger (a dangling seed reference)"
        if source_start > seq:
            return f"names source run {source!r}, whose run.started (seq {source_start}) comes after the seed"
        if ev.source_seq is not None:
            if ev.source_seq > seq:
                return f"reads source run {source!r} as of seq {ev.source_seq}, after the seed itself"
            if ev.source_seq < source_start:
                return (
                    f"reads source run {source!r} as of seq {ev.source_seq}, before that run started "
                    f"(seq {source_start})"
                )
    if ev.source_path is not None:
        if not ev.items:
            return f"imports from {ev.source_path!r} without the imported items blob"
        if not ledger.has_blob(ev.items):
            return f"imports from {ev.source_path!r}; its items blob {ev.items} is not in the ledger"
    return None
