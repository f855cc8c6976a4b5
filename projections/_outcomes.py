"""The a(i,j) projection: every graded outcome of one run version, per sequence and pass.

Rows of a(i,j): the initial pass gives the diagonal a(i,i); the final re-test gives row
N; `retest-{i}` passes (from --retest-every) give extra rows; the baseline pass gives the
memory-off b(j). A correction event (regrade) replaces the verdict it names; the
original grade stays in the ledger.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import ClassVar

import msgspec

from ledger import Ledger, Recorded, StreamRange
from ledger.events import GradeStatus, TaskRef

from ._cut import OrderCut
from ._fork import ForkLink, Splice, fork_links
from ._passes import retest_row
from ._runner import Projection, Selection
from .metrics import SequenceOutcomes

# What counts as "no valid verdict": not the agent's doing, so never scored as a failure
# (GradeStatus.scored); the task counts missing.
INVALID_STATUSES = frozenset(s.value for s in GradeStatus if not s.scored)


class Cell(msgspec.Struct):
    """One task of one pass: its latest attempt."""

    instance_id: str
    attempt: int
    done: bool = False
    status: str | None = None
    resolved: bool | None = None
    turns: int | None = None
    cost_usd: float | None = None
    grade_event: str | None = None  # event_id of the verdict in force (grade or correction)
    started_seq: int = 0
    finished_seq: int | None = None

    @property
    def outcome(self) -> int | None:
        """1 resolved, 0 not, None: no valid verdict (unfinished, infrastructure, ungraded)."""
        if not self.done or self.resolved is None or self.status in INVALID_STATUSES:
            return None
        return 1 if self.resolved else 0


class SequenceCells(msgspec.Struct):
    plan: list[TaskRef] = msgspec.field(default_factory=list)
    passes: dict[str, dict[int, Cell]] = msgspec.field(default_factory=dict)
    # The highest attempt ever started per pass and order, abandoned ones included: the
    # next attempt is numbered after it, so its event ids never meet an earlier attempt's.
    attempts: dict[str, dict[int, int]] = msgspec.field(default_factory=dict)

    def last_attempt(self, pass_: str, order: int) -> int:
        return self.attempts.get(pass_, {}).get(order, 0)


def _outcomes_of(cells: Mapping[int, Cell], plan: list[TaskRef], excluded: Collection[str]) -> list[int | None]:
    """The cells' outcomes in plan order; a task in `excluded` has no valid outcome."""
    return [(c.outcome if (c := cells.get(t.order)) and t.instance_id not in excluded else None) for t in plan]


class RunOutcomes(msgspec.Struct):
    version: str = ""
    stage: str = ""
    started: bool = False
    sequences: dict[str, SequenceCells] = msgspec.field(default_factory=dict)

    def cell(self, sequence_id: str, pass_: str, order: int) -> Cell | None:
        seq = self.sequences.get(sequence_id)
        return None if seq is None else seq.passes.get(pass_, {}).get(order)

    def vector(
        self, sequence_id: str, pass_: str, excluded: Collection[str] = ()
    ) -> list[int | None] | None:
        """Outcomes of a pass in plan order; None when the pass never started. Tasks in
        `excluded` (not gradeable on this host) have no valid outcome."""
        seq = self.sequences[sequence_id]
        cells = seq.passes.get(pass_)
        if cells is None:
            return None
        return _outcomes_of(cells, seq.plan, excluded)

    def rows(self, sequence_id: str, excluded: Collection[str] = ()) -> dict[int, list[int | None]]:
        """Extra a(i, j<=i) rows from `retest-{i}` passes."""
        seq = self.sequences[sequence_id]
        out: dict[int, list[int | None]] = {}
        for name, cells in seq.passes.items():
            i = retest_row(name)
            if i is not None:
                out[i] = _outcomes_of(cells, seq.plan[:i], excluded)
        return dict(sorted(out.items()))

    def to_metric_inputs(self, excluded: Collection[str] = ()) -> list[SequenceOutcomes]:
        """Per-sequence vectors for the formula sets, in the run's sequence order.
        `excluded`: tasks found not gradeable on this host, missing in every pass."""
        result = []
        for sequence_id, seq in self.sequences.items():
            if not seq.plan:
                continue
            initial = self.vector(sequence_id, "initial", excluded) or [None] * len(seq.plan)
            steps = None
            initial_cells = seq.passes.get("initial", {})
            if any(c.turns is not None for c in initial_cells.values()):
                steps = [(c.turns if (c := initial_cells.get(t.order)) else None) for t in seq.plan]
            difficulty = [t.difficulty for t in seq.plan]
            result.append(
                SequenceOutcomes(
                    name=sequence_id,
                    initial=initial,
                    final=self.vector(sequence_id, "retest", excluded),
                    baseline=self.vector(sequence_id, "baseline", excluded),
                    difficulty=difficulty if all(d is not None for d in difficulty) else None,
                    steps=steps,
                    rows=self.rows(sequence_id, excluded) or None,
                )
            )
        return result

    def resolved_per_pass(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for seq in self.sequences.values():
            for pass_, cells in seq.passes.items():
                counts[pass_] = counts.get(pass_, 0) + sum(1 for c in cells.values() if c.outcome == 1)
        return counts


class OutcomeProjection(Projection[RunOutcomes]):
    name: ClassVar[str] = "outcomes"
    # 2: SequenceCells.attempts; 3: the cut of `before_order` by position (`_cut`); 4: forks
    version: ClassVar[int] = 4
    state_type: ClassVar[type] = RunOutcomes

    _TYPES = frozenset(
        {"run.started", "task.started", "task.abandoned", "agent.finished", "grade.finished", "grade.corrected", "task.finished"}
    )
    _KEY = ("sequence_id", "pass_", "order", "attempt")
    # What `apply` reads of each type (run.started: decoded in full); see `_views`.
    reads: ClassVar[Mapping[str, tuple[str, ...]] | None] = {
        "task.started": (*_KEY, "instance_id"),
        "task.abandoned": _KEY,
        "agent.finished": (*_KEY, "turns", "cost_usd"),
        "grade.finished": (*_KEY, "status", "resolved"),
        "grade.corrected": (*_KEY, "status", "resolved"),
        "task.finished": (*_KEY, "status", "resolved"),
    }

    def __init__(self, run_version: str, *, before_order: int | None = None, cutoffs: dict[str, int] | None = None,
                 forks: tuple[ForkLink, ...] = ()) -> None:
        """`before_order`/`cutoffs`: the state as it stood before task K started in each
        sequence (cutoffs maps a sequence to the seq of that start; a sequence absent from
        it had not reached K): the fold of a serial run's ledger cut there, whatever the
        schedule that made it (`_cut.OrderCut`). The plan stays whole, and the tasks not
        yet run are reported missing, never hidden. `forks`: a fork's chain
        (`_fork.fork_links`), whose forked-from tasks are this run's own."""
        self.run_version = run_version
        self.forks = tuple(forks)
        self._splice = Splice(run_version, self.forks) if self.forks else None
        self.before_order = before_order
        self.cutoffs = dict(cutoffs or {})
        self._cut = OrderCut(before_order, self.cutoffs) if before_order is not None and self.cutoffs else None

    def scope(self) -> str:
        forks = "".join(f"|fork={l.source}<{l.before_order}@{l.upto}" for l in self.forks)
        if self.before_order is None:
            return self.run_version + forks
        cuts = ",".join(f"{k}={v}" for k, v in sorted(self.cutoffs.items()))
        return f"{self.run_version}|before={self.before_order}|{cuts}{forks}"

    def selection(self) -> Selection:
        if self._splice is not None:
            return Selection(types=self._TYPES, ranges=tuple(self._splice.ranges()))
        return Selection(types=self._TYPES, ranges=(StreamRange(f"run/{self.run_version}"),))

    def initial(self) -> RunOutcomes:
        return RunOutcomes(version=self.run_version)

    def apply(self, state: RunOutcomes, rec: Recorded) -> RunOutcomes:
        ev = rec.event
        t = rec.type
        if self._splice is not None and not self._splice.keeps(rec):
            return state  # the forked-from run's own: its header, its tasks from K on
        if t == "run.started":
            state.started = True
            state.stage = ev.stage
            for sequence_id in ev.sequences:
                seq = state.sequences.setdefault(sequence_id, SequenceCells())
                # A fork's cells from its source come before its own run.started.
                seq.plan = list(ev.tasks.get(sequence_id, []))
            return state
        if self._cut is not None and not self._cut.keeps(rec.seq, t, ev):
            return state
        # get-then-create, not setdefault: setdefault would build a throwaway default on
        # every event, and this runs once per event of every run.
        seq = state.sequences.get(ev.sequence_id)
        if seq is None:
            seq = state.sequences[ev.sequence_id] = SequenceCells()
        cells = seq.passes.get(ev.pass_)
        if cells is None:
            cells = seq.passes[ev.pass_] = {}
        if t == "task.started":
            cells[ev.order] = Cell(instance_id=ev.instance_id, attempt=ev.attempt, started_seq=rec.seq)
            tried = seq.attempts.get(ev.pass_)
            if tried is None:
                tried = seq.attempts[ev.pass_] = {}
            if ev.attempt > tried.get(ev.order, 0):
                tried[ev.order] = ev.attempt
            return state
        cell = cells.get(ev.order)
        if cell is None or cell.attempt != ev.attempt:
            return state  # an event of an attempt that is not the latest: history only
        if t == "task.abandoned":
            del cells[ev.order]
        elif t == "agent.finished":
            cell.turns = ev.turns
            cell.cost_usd = ev.cost_usd
        elif t in ("grade.finished", "grade.corrected"):
            cell.status = ev.status
            cell.resolved = ev.resolved
            cell.grade_event = rec.event_id
        elif t == "task.finished":
            cell.done = True
            cell.finished_seq = rec.seq
            if cell.grade_event is None:  # graded by nothing (e.g. the agent crashed): the task says
                cell.status = ev.status
                cell.resolved = ev.resolved
        if not cells:
            del seq.passes[ev.pass_]
        return state


def outcome_projection(ledger: Ledger, version: str, *, before_order: int | None = None) -> OutcomeProjection:
    """The a(i,j) projection of `version` with its fork chain resolved (and, with
    `before_order`, cut before that initial task started in each sequence)."""
    from ._cut import sequence_cutoffs  # the cut reads the fork chain too

    forks = fork_links(ledger, version)
    if before_order is None:
        return OutcomeProjection(version, forks=forks)
    return OutcomeProjection(version, before_order=before_order, cutoffs=sequence_cutoffs(ledger, version, before_order),
                             forks=forks)
