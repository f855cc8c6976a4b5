"""The memory substrate's state: every item a run version can know, with its history.

Plain msgspec Structs so the projection runner can checkpoint them by encoding. Items
are never removed: pruning, merging and superseding change an item's `status` and
append to its `history`, because "why is this memory gone" is an audit question.
"""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec

from ledger.events import MemoryContent

LIVE = "live"
PRUNED = "pruned"
MERGED = "merged"
SUPERSEDED = "superseded"
STATUSES = (LIVE, PRUNED, MERGED, SUPERSEDED)


class Hop(msgspec.Struct):
    """One step of an item's provenance: where it was written, then each run it was copied into.

    `via` is written (by a daydream in `run`), seeded (copied into `run` from its source
    run's substrate) or imported (copied into `run` from an exported folder, `path`).
    `seq` is the event that made the hop in this ledger; None for hops recorded elsewhere.
    """

    run: str
    via: str
    seq: int | None = None
    path: str | None = None


class StatusChange(msgspec.Struct):
    status: str
    seq: int
    reason: str = ""
    by: str | None = None  # merged into / superseded by
    dream_id: str | None = None


class MemoryItem(MemoryContent, kw_only=True):
    """A `memory.written` item (its `MemoryContent`) plus what the substrate has decided
    about it since."""

    # -- what the substrate knows about it -------------------------------------------
    written_seq: int = 0
    written_at: str = ""  # event time (UTC ISO), the origin of ttl_seconds
    written_in: str = ""  # the run version whose stream holds the memory.written
    written_clock: int = 0  # the task clock of its sequence when written (ttl_tasks)
    status: str = LIVE
    history: list[StatusChange] = msgspec.field(default_factory=list)
    origin: list[Hop] = msgspec.field(default_factory=list)
    merged_into: str | None = None
    merged_from: list[str] = msgspec.field(default_factory=list)
    superseded_by: str | None = None
    recall_count: int = 0

    @property
    def live(self) -> bool:
        return self.status == LIVE

    def written_datetime(self) -> datetime | None:
        return parse_time(self.written_at)


class SeedRecord(msgspec.Struct):
    """A `memory.seeded` event seen in the fold (the version's own, or one up its chain)."""

    target: str
    seq: int
    item_count: int
    source_run: str | None = None
    source_seq: int | None = None
    source_path: str | None = None
    items_blob: str | None = None
    chosen: str = "explicit"


class Rejection(msgspec.Struct):
    seq: int
    rule: str
    reason: str
    run: str
    source_instance: str | None = None
    item_id: str | None = None


class DreamRecord(msgspec.Struct):
    dream_id: str
    run: str
    reason: str
    started_seq: int
    finished_seq: int | None = None
    decisions: int = 0


class MemoryState(msgspec.Struct):
    """The substrate of one run version (and its seed chain) as of the fold's cursor."""

    version: str = ""
    items: dict[str, MemoryItem] = msgspec.field(default_factory=dict)
    seeds: list[SeedRecord] = msgspec.field(default_factory=list)
    rejected: list[Rejection] = msgspec.field(default_factory=list)
    dreams: list[DreamRecord] = msgspec.field(default_factory=list)
    # run -> sequence -> highest initial-pass order started: the task clock of ttl_tasks.
    clock: dict[str, dict[str, int]] = msgspec.field(default_factory=dict)
    # stream -> items of a path import still to come (they follow their memory.seeded).
    importing: dict[str, int] = msgspec.field(default_factory=dict)
    recalls: int = 0
    last_seq: int = 0  # the last event that changed this state

    def live_items(self, repo: str | None = None) -> list[MemoryItem]:
        """Live items (of `repo`), in item-id order."""
        return sorted(
            (i for i in self.items.values() if i.live and (repo is None or i.repo == repo)),
            key=lambda i: i.item_id,
        )

    def task_clock(self, sequence_id: str | None, *, current: tuple[str, str, int] | None = None) -> int:
        """Initial-pass tasks started in `sequence_id` across the seed chain (a seed
        adds its source's tasks to the target's; a fork's seed does not: see below).

        `current` = (run, sequence, order) of a task in progress, counted even if its
        task.started is not folded (a recall may run against a partial view).
        """
        if sequence_id is None:
            return 0
        started = {run: orders.get(sequence_id, 0) for run, orders in self.clock.items()}
        if current is not None and current[1] == sequence_id:
            started[current[0]] = max(started.get(current[0], 0), current[2])
        # A fork's tasks go on from its source's orders (tasks 1..K-1 are the source's, K..
        # its own): one clock for a fork chain, its highest order, not a sum of the two.
        forked_from = {s.target: s.source_run for s in self.seeds if s.chosen == "fork" and s.source_run}
        clocks: dict[str, int] = {}
        for run, n in started.items():
            root, seen = run, {run}
            while (up := forked_from.get(root)) is not None and up not in seen:
                root = up
                seen.add(up)
            clocks[root] = max(clocks.get(root, 0), n)
        return sum(clocks.values())

    def task_age(self, item: MemoryItem, *, current: tuple[str, str, int] | None = None) -> int:
        """Tasks of the item's sequence started since it was written (0 if it has none)."""
        if item.sequence_id is None:
            return 0
        return max(0, self.task_clock(item.sequence_id, current=current) - item.written_clock)


_TIME_FORMATS = ("%Y-%m-%dT%H:%M:%S.%fZ", "%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> datetime | None:
    for fmt in _TIME_FORMATS:
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def expired(
    state: MemoryState, item: MemoryItem, *, now: datetime, current: tuple[str, str, int] | None = None
) -> str | None:
    """Why the item has outlived its TTL (None if it has not).

    ttl_tasks counts initial-pass tasks of the item's sequence started since it was
    written: an item written after task 4 with ttl_tasks=2 is visible to tasks 5 and 6.
    ttl_seconds counts from the time of its memory.written event.
    """
    if item.ttl_tasks is not None:
        age = state.task_age(item, current=current)
        if age > item.ttl_tasks:
            return f"ttl_tasks={item.ttl_tasks} exceeded: {age} tasks since written"
    if item.ttl_seconds is not None:
        written = item.written_datetime()
        if written is not None:
            elapsed = (now - written).total_seconds()
            if elapsed > item.ttl_seconds:
                return f"ttl_seconds={item.ttl_seconds:g} exceeded: {elapsed:.0f}s since written"
    return None
