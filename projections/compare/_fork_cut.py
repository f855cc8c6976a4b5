"""Comparing a fork with its source (or two forks of one run): paired over the tasks from K on.

The tasks before K of a fork are its source's very events (`projections._fork`): compared
with the source, or with another fork of it, those tasks are the same outcomes on both
sides and every difference is zero by construction. Counted in, they would shrink every
interval and dilute every difference, so the comparison is over the tasks from K on, where
the two runs differ, and says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from ledger import Ledger
from projections._fork import fork_links
from projections.metrics import SequenceOutcomes

from ._fold import RunSide


def shared_before(ledger: Ledger, a: str, b: str) -> int | None:
    """K when the initial tasks before K of runs `a` and `b` are the same events (one is a
    fork of the other, or both are forks of one run), the largest such K; None if none."""
    def reach(version: str) -> dict[str, float]:
        # run -> the order before which `version`'s initial tasks are that run's events
        out: dict[str, float] = {version: float("inf")}
        for link in fork_links(ledger, version):
            out[link.source] = max(out.get(link.source, 0), link.before_order)
        return out

    ra, rb = reach(a), reach(b)
    common = [min(ra[s], rb[s]) for s in ra.keys() & rb.keys()]
    best = max(common, default=None)
    return None if best is None or best == float("inf") or best < 2 else int(best)


def from_order(side: RunSide, plans: Mapping[str, Sequence[int]], order: int) -> RunSide:
    """`side` over the tasks of order >= `order` only (`plans`: each sequence's task orders)."""
    sequences = []
    tasks = {}
    for seq in side.sequences:
        orders = list(plans[seq.name])
        p = next((i for i, o in enumerate(orders) if o >= order), len(orders))
        sequences.append(_tail(seq, p))
        tasks[seq.name] = side.tasks[seq.name][p:]
    return msgspec.structs.replace(side, sequences=sequences, tasks=tasks)


def _tail(seq: SequenceOutcomes, p: int) -> SequenceOutcomes:
    def cut(values: list | None) -> list | None:
        return None if values is None else list(values[p:])

    # The extra a(i, j<=i) rows are left out: a row is a prefix of the sequence, which the
    # cut no longer starts at (they are carried unscored).
    return msgspec.structs.replace(seq, initial=list(seq.initial[p:]), final=cut(seq.final), baseline=cut(seq.baseline),
                                   difficulty=cut(seq.difficulty), steps=cut(seq.steps), rows=None)
