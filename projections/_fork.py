"""Forks (`swecl run --fork V@K`): a run whose initial pass before order K is V's.

A fork records `run.forked` (source V, order K) on its header stream and runs from task K
on. V's events of the initial pass before K (and its `retest-{i}` rows, i < K: a serial
run makes them before task K) are the fork's too, by reference: they stay in V's streams,
and a read of the fork's task events splices them in. Only events of one task (they name
a sequence, a pass and an order) are spliced: V's header (its run.started, its seeds) and
its memory stay V's; the fork's memory is a seed of its own (`memory.seeded`, chosen
"fork"). V is read as the ledger stood at the fork's `run.forked`, so what V does later (a
resume, a regrade) does not change the fork. A fork of a fork follows the chain: each
hop takes its source's events before the smallest K on the way, as of the earliest fork.

`fork_links` resolves the chain before a fold, so a projection's `apply` stays a pure
function of (state, event) given the links as data, as the memory seed chain is.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import msgspec

from ledger import Ledger, Recorded, StreamRange

from ._passes import retest_row


class ForkLink(msgspec.Struct, frozen=True):
    """The fork's task events include `source`'s of orders before `before_order`, up to seq `upto`."""

    source: str
    before_order: int
    upto: int


def fork_links(ledger: Ledger, version: str, upto: int | None = None) -> tuple[ForkLink, ...]:
    """Every run `version`'s task events reach through `run.forked`, as of `upto`."""
    links: list[ForkLink] = []
    seen = {version}
    frontier: list[tuple[str, int | None, int | None]] = [(version, None, upto)]
    while frontier:
        target, order_limit, seq_limit = frontier.pop(0)
        for rec in ledger.read(types=["run.forked"], streams=[f"run/{target}"], upto=seq_limit):
            ev = rec.event
            if ev.source_run in seen:
                continue  # a cycle only a hand-made ledger holds: cut where it closes
            seen.add(ev.source_run)
            before = ev.order if order_limit is None else min(ev.order, order_limit)
            link = ForkLink(source=ev.source_run, before_order=before, upto=rec.seq)
            links.append(link)
            frontier.append((ev.source_run, before, rec.seq))
    return tuple(links)


def fork_of(ledger: Ledger, version: str) -> tuple[str, int] | None:
    """(V, K) when `version` is a fork of V at K (its own `run.forked`), else None."""
    for rec in ledger.read(types=["run.forked"], streams=[f"run/{version}"]):
        return rec.event.source_run, rec.event.order
    return None


def spliced(link: ForkLink, seq: int, event: Any) -> bool:
    """Whether an event of `link.source`'s streams is one of the fork's own tasks."""
    if seq > link.upto:
        return False
    order = getattr(event, "order", None)
    pass_ = getattr(event, "pass_", None)
    if order is None or pass_ is None or getattr(event, "sequence_id", None) is None:
        return False
    if pass_ == "initial":
        return order < link.before_order
    row = retest_row(pass_)
    return row is not None and row < link.before_order


def run_of_stream(stream: str) -> str:
    parts = stream.split("/", 2)
    return parts[1] if len(parts) >= 2 and parts[0] == "run" else ""


class Splice:
    """Which events of a run's selection are its own: its streams whole, and the forked-from tasks."""

    def __init__(self, version: str, links: Sequence[ForkLink]) -> None:
        self.version = version
        self.by_source = {link.source: link for link in links}

    def ranges(self) -> list[StreamRange]:
        return [StreamRange(f"run/{self.version}")] + [
            StreamRange(f"run/{link.source}", upto=link.upto) for link in self.by_source.values()
        ]

    def keeps(self, rec: Recorded) -> bool:
        run = run_of_stream(rec.stream)
        if run == self.version:
            return True
        link = self.by_source.get(run)
        return link is not None and spliced(link, rec.seq, rec.event)


def read_run(ledger: Ledger, version: str, types: Iterable[str] | None = None, *, upto: int | None = None,
             links: Sequence[ForkLink] | None = None) -> Iterator[Recorded]:
    """A run's events of `types` in seq order, a fork's forked-from tasks spliced in: what a
    read of `run/{version}` gives every projection that gathers a run's task events."""
    splice = Splice(version, fork_links(ledger, version) if links is None else links)
    if not splice.by_source:
        yield from ledger.read(types=types, ranges=[StreamRange(f"run/{version}")], upto=upto)
        return
    for rec in ledger.read(types=types, ranges=splice.ranges(), upto=upto):
        if splice.keeps(rec):
            yield rec
