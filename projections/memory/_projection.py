"""The memory projection: one run version's substrate, folded from its memory events.

A version's substrate is its own streams (`run/{V}` and every `run/{V}/{sequence}`) plus
its seed chain: the source run's streams up to `source_seq`, and that run's source up to
its own `source_seq`, and so on. The chain is resolved from the header streams'
`memory.seeded` events *before* folding and handed to the projection as data, so
`apply` stays a pure function of (state, event).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import ClassVar

import msgspec

from ledger import Ledger, Recorded, StreamRange
from ledger.events import memory_content

from .._runner import Folded, Projection, Projector, Selection
from ._state import (
    LIVE,
    MERGED,
    PRUNED,
    SUPERSEDED,
    DreamRecord,
    Hop,
    MemoryItem,
    MemoryState,
    Rejection,
    SeedRecord,
    StatusChange,
)

MEMORY_TYPES = frozenset(
    {
        "memory.written",
        "memory.rejected",
        "memory.recalled",
        "memory.seeded",
        "dream.started",
        "memory.pruned",
        "memory.merged",
        "memory.superseded",
        "dream.finished",
        "task.started",  # the task clock of ttl_tasks
    }
)


class SeedLink(msgspec.Struct, frozen=True):
    """`target` was seeded (at seq `at`) from `source`'s substrate as of `source_seq`."""

    target: str
    source: str
    source_seq: int
    at: int
    # A fork's seed: (sequence, seq) -- the source's stream of that sequence is read up to
    # its own seq (before the source's task K started there); its header up to `source_seq`.
    sequence_seqs: tuple[tuple[str, int], ...] = ()


def header_stream(version: str) -> str:
    return f"run/{version}"


def run_of(stream: str) -> str:
    """The run version a stream belongs to (`run/{V}` or `run/{V}/{sequence}`)."""
    parts = stream.split("/", 2)
    return parts[1] if len(parts) >= 2 and parts[0] == "run" else ""


# A fold sees the same few streams over and over: split each name once.
_run_of = functools.lru_cache(maxsize=4096)(run_of)


def resolve_seed_chain(ledger: Ledger, version: str, upto: int | None = None) -> tuple[SeedLink, ...]:
    """Every run-to-run seed link reachable from `version`, as the ledger stood at `upto`.

    A link's source is read only up to its `source_seq`, so seeds recorded in the
    source after that point are (rightly) not followed. Path seeds (exported folders)
    are not links: their items are `memory.written` events in the version's own header.
    A cycle cannot be recorded by `swecl` (seeding refuses it); one in a hand-made
    ledger is cut where it closes.
    """
    return seed_chain(
        version,
        upto,
        lambda target, limit: ledger.read(types=["memory.seeded"], streams=[header_stream(target)], upto=limit),
    )


def seed_chain(
    version: str, upto: int | None, seeds_of: Callable[[str, int | None], Iterable[Recorded]]
) -> tuple[SeedLink, ...]:
    """`resolve_seed_chain` over any source of seeds: `seeds_of(target, limit)` gives the
    `memory.seeded` events of `target`'s header stream with seq <= limit, in seq order
    (the one-pass rebuild hands in the ones it has already read)."""
    links: list[SeedLink] = []
    seen = {version}
    frontier: list[tuple[str, int | None]] = [(version, upto)]
    while frontier:
        target, limit = frontier.pop(0)
        for rec in seeds_of(target, limit):
            ev = rec.event
            if ev.source_run is None:
                continue
            source_seq = ev.source_seq if ev.source_seq is not None else rec.seq - 1
            # A source position at or after the seed event itself would let the seed
            # see its own future; the seed is "as it stood when seeded".
            source_seq = min(source_seq, rec.seq - 1)
            per_sequence = tuple(sorted((s, min(c, rec.seq - 1)) for s, c in ev.sequence_seqs.items()))
            links.append(SeedLink(target=target, source=ev.source_run, source_seq=source_seq, at=rec.seq,
                                  sequence_seqs=per_sequence))
            if ev.source_run not in seen:
                seen.add(ev.source_run)
                frontier.append((ev.source_run, source_seq))
    return tuple(links)


class MemoryProjection(Projection[MemoryState]):
    """The substrate of `version` with a resolved seed chain (see `resolve_seed_chain`)."""

    name: ClassVar[str] = "memory"
    version: ClassVar[int] = 1
    state_type: ClassVar[type] = MemoryState
    # What the handlers read of the frequent small-need types (the task clock, recall
    # counts); every other type is decoded in full (see `projections._views`).
    reads: ClassVar[Mapping[str, tuple[str, ...]] | None] = {
        "task.started": ("sequence_id", "pass_", "order"),
        "memory.recalled": ("results.item_id",),
    }

    def __init__(self, run_version: str, chain: tuple[SeedLink, ...] = ()) -> None:
        self.run_version = run_version
        self.chain = tuple(chain)

    def scope(self) -> str:
        links = ";".join(f"{l.target}<{l.source}@{l.source_seq}#{l.at}"
                         + "".join(f",{s}@{c}" for s, c in l.sequence_seqs) for l in self.chain)
        return f"{self.run_version}|{links}"

    def selection(self) -> Selection:
        ranges = [StreamRange(header_stream(self.run_version))]
        ranges += [StreamRange(header_stream(l.source), upto=l.source_seq) for l in self.chain]
        ranges += [StreamRange(f"{header_stream(l.source)}/{s}", upto=c) for l in self.chain for s, c in l.sequence_seqs]
        return Selection(types=MEMORY_TYPES, ranges=tuple(ranges))

    def initial(self) -> MemoryState:
        return MemoryState(version=self.run_version)

    def apply(self, state: MemoryState, rec: Recorded) -> MemoryState:
        handler = _HANDLERS.get(rec.type)
        if handler is not None and handler(state, rec):
            state.last_seq = rec.seq
        return state


# Each handler returns whether it changed the state.


def _written(state: MemoryState, rec: Recorded) -> bool:
    ev = rec.event
    run = _run_of(rec.stream)
    if (
        ev.sequence_id is not None
        and ev.source_order is not None
        and ev.source_pass in (None, "initial")
        and rec.stream != header_stream(run)
    ):
        # A daydream follows its task: the clock has reached that task even if the
        # task.started is not in this fold.
        _advance_clock(state, run, ev.sequence_id, ev.source_order)
    pending = state.importing.get(rec.stream, 0)
    if pending > 0:
        seed = next(s for s in reversed(state.seeds) if s.target == run and s.source_path is not None)
        origin = [
            Hop(run=ev.source_run, via="written"),
            Hop(run=run, via="imported", seq=rec.seq, path=seed.source_path),
        ]
        if pending == 1:
            del state.importing[rec.stream]
        else:
            state.importing[rec.stream] = pending - 1
    else:
        origin = [Hop(run=run, via="written", seq=rec.seq)]
    previous = state.items.get(ev.item_id)
    item = MemoryItem(
        **memory_content(ev),
        written_seq=rec.seq,
        written_at=rec.time,
        written_in=run,
        written_clock=state.task_clock(ev.sequence_id),
        origin=origin,
    )
    if previous is not None:
        # A rewrite of a known id replaces its content; its past stays on record.
        item.history = previous.history + [StatusChange(LIVE, rec.seq, "rewritten")]
        item.recall_count = previous.recall_count
    else:
        item.history = [StatusChange(LIVE, rec.seq, "written")]
    state.items[ev.item_id] = item
    return True


def _set_status(
    state: MemoryState, item_id: str, status: str, rec: Recorded, reason: str, by: str | None, dream_id: str | None
) -> bool:
    item = state.items.get(item_id)
    if item is None:
        return False
    item.status = status
    item.history.append(StatusChange(status, rec.seq, reason, by, dream_id))
    if status == MERGED:
        item.merged_into = by
    elif status == SUPERSEDED:
        item.superseded_by = by
    return True


def _pruned(state: MemoryState, rec: Recorded) -> bool:
    ev = rec.event
    return _set_status(state, ev.item_id, PRUNED, rec, ev.reason, None, ev.dream_id)


def _merged(state: MemoryState, rec: Recorded) -> bool:
    ev = rec.event
    changed = False
    for source in ev.from_:
        if source == ev.into:
            continue
        if _set_status(state, source, MERGED, rec, ev.reason, ev.into, ev.dream_id):
            changed = True
            into = state.items.get(ev.into)
            if into is not None and source not in into.merged_from:
                into.merged_from.append(source)
    return changed


def _superseded(state: MemoryState, rec: Recorded) -> bool:
    ev = rec.event
    return _set_status(state, ev.item_id, SUPERSEDED, rec, ev.reason, ev.by, ev.dream_id)


def _recalled(state: MemoryState, rec: Recorded) -> bool:
    state.recalls += 1
    for hit in rec.event.results:
        item = state.items.get(hit.item_id)
        if item is not None:
            item.recall_count += 1
    return True


def _rejected(state: MemoryState, rec: Recorded) -> bool:
    ev = rec.event
    state.rejected.append(
        Rejection(
            seq=rec.seq,
            rule=ev.rule,
            reason=ev.reason,
            run=run_of(rec.stream),
            source_instance=ev.source_instance,
            item_id=ev.item_id,
        )
    )
    return True


def _seeded(state: MemoryState, rec: Recorded) -> bool:
    ev = rec.event
    target = run_of(rec.stream)
    state.seeds.append(
        SeedRecord(
            target=target,
            seq=rec.seq,
            item_count=ev.item_count,
            source_run=ev.source_run,
            source_seq=ev.source_seq,
            source_path=ev.source_path,
            items_blob=ev.items,
            chosen=ev.chosen,
        )
    )
    if ev.source_run is not None:
        # Everything the source held reaches the target through this seed.
        for item in state.items.values():
            if item.origin and item.origin[-1].run == ev.source_run:
                item.origin.append(Hop(run=target, via="seeded", seq=rec.seq))
    elif ev.item_count > 0:
        state.importing[rec.stream] = state.importing.get(rec.stream, 0) + ev.item_count
    return True


def _dream_started(state: MemoryState, rec: Recorded) -> bool:
    ev = rec.event
    state.dreams.append(
        DreamRecord(dream_id=ev.dream_id, run=run_of(rec.stream), reason=ev.reason, started_seq=rec.seq)
    )
    return True


def _dream_finished(state: MemoryState, rec: Recorded) -> bool:
    ev = rec.event
    for dream in reversed(state.dreams):
        if dream.dream_id == ev.dream_id:
            dream.finished_seq = rec.seq
            dream.decisions = ev.decisions
            return True
    return False


def _task_started(state: MemoryState, rec: Recorded) -> bool:
    ev = rec.event
    if ev.pass_ != "initial":
        return False
    return _advance_clock(state, _run_of(rec.stream), ev.sequence_id, ev.order)


def _advance_clock(state: MemoryState, run: str, sequence_id: str, order: int) -> bool:
    per_run = state.clock.get(run)
    if per_run is None:  # not setdefault: that builds a throwaway dict on every event
        per_run = state.clock[run] = {}
    if per_run.get(sequence_id, 0) >= order:
        return False
    per_run[sequence_id] = order
    return True


_HANDLERS = {
    "memory.written": _written,
    "memory.pruned": _pruned,
    "memory.merged": _merged,
    "memory.superseded": _superseded,
    "memory.recalled": _recalled,
    "memory.rejected": _rejected,
    "memory.seeded": _seeded,
    "dream.started": _dream_started,
    "dream.finished": _dream_finished,
    "task.started": _task_started,
}


def memory_projection(ledger: Ledger, version: str, upto: int | None = None) -> MemoryProjection:
    """The projection of `version` with its seed chain as the ledger stood at `upto`."""
    return MemoryProjection(version, resolve_seed_chain(ledger, version, upto))


def load_memory(
    ledger: Ledger, version: str, *, upto: int | None = None, projector: Projector | None = None
) -> Folded[MemoryState]:
    """The substrate of `version` as of `upto` (default: the ledger's head).

    Equal to a fresh fold of the selected events up to `upto`: the chain is resolved
    as of the same cursor, so a seed recorded later is not part of the answer.
    """
    cursor = ledger.head() if upto is None else max(0, min(upto, ledger.head()))
    runner = projector if projector is not None else Projector(ledger)
    return runner.run(memory_projection(ledger, version, cursor), upto=cursor)
