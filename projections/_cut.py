"""`--as-of-order K`: which events of a run count as "before initial task K started".

A serial run makes its passes in one order (`commands.run._sequence.plan_passes`): the
initial pass, with each `retest-{i}` row right after initial task i, then the re-test,
then the baseline. Cutting its ledger at the seq where initial task K first started keeps
exactly the initial tasks before K and the rows `retest-{i}` with i < K.

A run with `--task-jobs N` records the same events in another order: baseline tasks may
finish long before task K starts, and a `retest-{i}` row may still run after it. Cut by
seq, such a run would show cells a serial run records later and miss cells it records
earlier, so the same experiment would score differently as of K depending on how many
workers ran it. The cut here is by position in the experiment instead: a run's events as
a serial run of the same tasks would hold them at that moment, whatever the schedule.
Grade corrections (`swecl regrade`, made after the run) stay cut by seq: as of K, a run
had not been regraded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ledger import Ledger, StreamRange

from ._passes import retest_row
from ._views import read_views


@dataclass(frozen=True)
class OrderCut:
    """Before initial task `order` started: `starts` maps each sequence that reached it to
    the seq of that first start; a sequence absent from it never reached task `order`,
    and all of its events are kept."""

    order: int
    starts: Mapping[str, int] = field(default_factory=dict)

    def keeps(self, seq: int, type_: str, event: Any) -> bool:
        """Whether the event (of one sequence: it has `sequence_id` and `pass_`) precedes the cut."""
        start = self.starts.get(event.sequence_id)
        if start is None:
            return True
        pass_ = event.pass_
        if pass_ == "initial":
            return seq < start
        row = retest_row(pass_)
        if row is not None and row < self.order:
            # The whole row: a serial run makes it before initial task row + 1 starts.
            return type_ != "grade.corrected" or seq < start
        # The re-test and the baseline: a serial run makes them after the initial pass.
        return False


def sequence_cutoffs(ledger: Ledger, version: str, order: int) -> dict[str, int]:
    """For each sequence of `version`, the seq at which its initial task `order` first
    started (a fork's task before its K: where the run it forked from started it)."""
    from ._fork import fork_links  # lazy: _fork is the outcomes' neighbour, not the cut's

    cutoffs = _first_starts(ledger, version, order, None)
    for link in fork_links(ledger, version):
        if order < link.before_order:
            for sequence_id, seq in _first_starts(ledger, link.source, order, link.upto).items():
                cutoffs[sequence_id] = min(seq, cutoffs.get(sequence_id, seq))
    return cutoffs


def _first_starts(ledger: Ledger, version: str, order: int, upto: int | None) -> dict[str, int]:
    cutoffs: dict[str, int] = {}
    # Three fields of each task.started, not the whole event (the projections' narrow views).
    started = read_views(ledger, "task.started", ("sequence_id", "order", "pass_"),
                         ranges=[StreamRange(f"run/{version}", upto=upto)])
    for seq, ev in started:
        if ev.pass_ == "initial" and ev.order == order:
            cutoffs.setdefault(ev.sequence_id, seq)
    return cutoffs


def order_cut(ledger: Ledger, version: str, order: int) -> OrderCut:
    """`--as-of-order K` of run `version`: its events as a serial run held them before initial task K started."""
    return OrderCut(order, sequence_cutoffs(ledger, version, order))
