"""Everything a report shows, gathered from the ledger as of one seq: pure data, no rendering.

The report is a snapshot: the ledger head is read once and every projection and scan is
cut at it, so a run appending meanwhile cannot make one table disagree with another, and
the same ledger always gives the same report.

The a(i,j) grid of a sequence of N tasks (rows i = the task after which memory was
evaluated, columns j = the task):

- the diagonal a(i,i) is the initial pass (the in-order, memory-on result);
- row i < N off the diagonal is the `retest-{i}` pass (from `--retest-every`);
- row N off the diagonal is the final `retest` pass. Its own a(N,N) cell keeps the initial
  result, as the whole diagonal does; the re-test of task N is in the task table;
- j > i is never evaluated ("n/a");
- b(j), the memory-off baseline pass, is a separate row.

A cell of a pass that was planned or ran, but has no valid verdict (infrastructure error,
ungraded, never run) is "missing", never 0; a cell of a pass nobody asked for is "n/a".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ledger import Ledger, StreamRange, SweclError
from ledger.events import MemoryRecalled, RunStarted, TaskRef
from projections import Cell, Projector, RunOutcomes, RunsProjection, RunSummary, read_views
from projections.metrics import MetricsResult, SequenceOutcomes, SequenceResult, compute

from projections import not_gradeable, outcomes, run_not_gradeable, shown_versions

CellState = Literal["resolved", "unresolved", "missing", "n/a"]


@dataclass(frozen=True)
class MatrixCell:
    state: CellState
    pass_: str | None = None
    """The pass the value comes from (None for "n/a")."""
    status: str | None = None
    """The grader's status, when the task ran ("infra_error" explains a missing cell)."""


@dataclass(frozen=True)
class MatrixRow:
    label: str
    """"1".."N" for a(i, .), "b" for the baseline."""
    cells: tuple[MatrixCell, ...]


@dataclass(frozen=True)
class Matrix:
    orders: tuple[int, ...]
    instance_ids: tuple[str, ...]
    rows: tuple[MatrixRow, ...]
    """a(1, .) .. a(N, .), in order."""
    baseline: MatrixRow | None
    """None when no baseline pass was planned or run."""


@dataclass(frozen=True)
class WrittenItem:
    """What a `memory.written` event says about an item (its first record in the ledger)."""

    item_id: str
    title: str
    kind: str
    repo: str
    source_run: str
    source_instance: str | None
    source_order: int | None
    written_seq: int


@dataclass(frozen=True)
class RecalledHit:
    rank: int
    score: float
    item_id: str
    item: WrittenItem | None
    """None: no `memory.written` for this id anywhere in the ledger."""

    @property
    def title(self) -> str:
        return self.item.title if self.item is not None else f"unknown item {self.item_id}"

    @property
    def source(self) -> str:
        if self.item is None:
            return ""
        task = self.item.source_instance or "?"
        order = f" #{self.item.source_order}" if self.item.source_order is not None else ""
        return f"{task}{order}, run {self.item.source_run}"


@dataclass(frozen=True)
class Recall:
    """One `memory.recalled` event: a recall call the agent (or harness) made."""

    seq: int
    via: str
    ranker: str
    query: str
    hits: tuple[RecalledHit, ...]


@dataclass(frozen=True)
class TaskRow:
    """One task of the initial pass, for the audit-at-a-glance table."""

    order: int
    instance_id: str
    repo: str
    difficulty: int | None
    attempt: int | None
    """The attempt in force; None when the task never started."""
    status: str
    """The grader's status, or "not run"."""
    resolved: bool | None
    initial: CellState
    final: CellState
    baseline: CellState
    turns: int | None
    cost_usd: float | None
    recalls: tuple[Recall, ...]
    """Recalls of the attempt in force, in ledger order."""


@dataclass(frozen=True)
class SequenceReport:
    sequence_id: str
    plan: tuple[TaskRef, ...]
    matrix: Matrix
    tasks: tuple[TaskRow, ...]
    inputs: SequenceOutcomes | None
    """What the formulas scored; None when the plan is empty (nothing to score)."""
    metrics: SequenceResult | None


@dataclass(frozen=True)
class VersionReport:
    run: RunSummary
    retest_every: int | None
    result: MetricsResult
    sequences: dict[str, SequenceReport]
    """In the run's sequence order."""


@dataclass(frozen=True)
class ReportData:
    ledger_id: str
    head_seq: int
    formula: str
    formula_version: int
    versions: tuple[VersionReport, ...]
    sequence_ids: tuple[str, ...]
    """Every sequence of every reported version, in first-seen order."""
    memory_items: int
    """`memory.written` item ids known to the ledger (for the recall join)."""


def collect(ledger: Ledger, projector: Projector, versions: Sequence[str], *, formula: str = "native",
            include_failed: bool = False) -> ReportData:
    """The report of `versions` (when empty: all runs, in ledger order, failed ones only
    with `include_failed`) as of the ledger head."""
    head = ledger.head()
    known = projector.run(RunsProjection(), upto=head).state.runs
    if not known:
        raise SweclError(f"no runs in {ledger.path} yet: start one with `swecl run`")
    chosen = list(dict.fromkeys(versions)) if versions else shown_versions(known, include_failed)
    if not chosen:
        raise SweclError(f"every run in {ledger.path} failed: `swecl report --all` includes failed runs")
    for version in chosen:
        if version not in known:
            raise SweclError(f"no run version {version!r} in {ledger.path} (versions: {', '.join(known)})")
    items = memory_items(ledger, upto=head)
    reports = tuple(_version_report(ledger, projector, known[v], items, head, formula) for v in chosen)
    sequence_ids = tuple(dict.fromkeys(s for vr in reports for s in vr.sequences))
    first = reports[0].result
    return ReportData(
        ledger_id=ledger.ledger_id,
        head_seq=head,
        formula=first.formula,
        formula_version=first.formula_version,
        versions=reports,
        sequence_ids=sequence_ids,
        memory_items=len(items),
    )


def memory_items(ledger: Ledger, *, upto: int | None = None) -> dict[str, WrittenItem]:
    """Every item id the ledger has a `memory.written` for, from its first record.

    Items are looked up across the whole ledger, not only the run's own streams: a seeded
    run recalls items written by its source run, or imported into its header stream.
    Only the fields shown are decoded (the projections' narrow views): not the bodies.
    """
    found: dict[str, WrittenItem] = {}
    for seq, ev in read_views(ledger, "memory.written", _ITEM_FIELDS, upto=upto):
        if ev.item_id in found:
            continue
        found[ev.item_id] = WrittenItem(
            item_id=ev.item_id,
            title=ev.title,
            kind=ev.kind,
            repo=ev.repo,
            source_run=ev.source_run,
            source_instance=ev.source_instance,
            source_order=ev.source_order,
            written_seq=seq,
        )
    return found


_ITEM_FIELDS = ("item_id", "title", "kind", "repo", "source_run", "source_instance", "source_order")


def _version_report(
    ledger: Ledger, projector: Projector, run: RunSummary, items: dict[str, WrittenItem], head: int, formula: str
) -> VersionReport:
    state = outcomes(ledger, projector, run.version, upto=head)
    inputs = state.to_metric_inputs(run_not_gradeable(state, not_gradeable(ledger)))  # missing, never the agent's 0
    result = compute(inputs, formula)
    by_name = {seq.name: seq for seq in inputs}
    retest_every = _retest_every(ledger, run.version, head)
    recalls = _recalls(ledger, run.version, items, head)
    sequences: dict[str, SequenceReport] = {}
    for sequence_id in [*run.sequences, *(s for s in state.sequences if s not in run.sequences)]:
        cells = state.sequences.get(sequence_id)
        plan = tuple(cells.plan) if cells is not None else ()
        planned = _planned_passes(run, retest_every, len(plan))
        sequences[sequence_id] = SequenceReport(
            sequence_id=sequence_id,
            plan=plan,
            matrix=build_matrix(state, sequence_id, planned),
            tasks=_task_rows(state, sequence_id, planned, recalls),
            inputs=by_name.get(sequence_id),
            metrics=result.sequences.get(sequence_id),
        )
    return VersionReport(run=run, retest_every=retest_every, result=result, sequences=sequences)


def _retest_every(ledger: Ledger, version: str, head: int) -> int | None:
    for rec in ledger.read(types=["run.started"], streams=[f"run/{version}"], upto=head):
        if isinstance(rec.event, RunStarted):
            return rec.event.retest_every
    return None


def _planned_passes(run: RunSummary, retest_every: int | None, n: int) -> frozenset[str]:
    planned = set(run.passes)
    if retest_every and retest_every > 0:
        planned.update(f"retest-{i}" for i in range(retest_every, n, retest_every))
    return frozenset(planned)


def _recalls(
    ledger: Ledger, version: str, items: dict[str, WrittenItem], head: int
) -> dict[tuple[str, str, int, int], list[Recall]]:
    """Recall events of the run, keyed by (sequence, pass, order, attempt)."""
    found: dict[tuple[str, str, int, int], list[Recall]] = {}
    for rec in ledger.read(types=["memory.recalled"], ranges=[StreamRange(f"run/{version}")], upto=head):
        ev = rec.event
        if not isinstance(ev, MemoryRecalled):
            continue
        hits = tuple(
            RecalledHit(rank=h.rank, score=h.score, item_id=h.item_id, item=items.get(h.item_id))
            for h in sorted(ev.results, key=lambda h: (h.rank, h.item_id))
        )
        recall = Recall(seq=rec.seq, via=ev.via, ranker=ev.ranker, query=ev.query, hits=hits)
        found.setdefault((ev.sequence_id, ev.pass_, ev.order, ev.attempt), []).append(recall)
    return found


def cell_state(cell: Cell | None, *, planned: bool) -> CellState:
    """One outcome as a cell: "missing" when a planned/run task has no valid verdict."""
    outcome = cell.outcome if cell is not None else None
    if outcome == 1:
        return "resolved"
    if outcome == 0:
        return "unresolved"
    return "missing" if (planned or cell is not None) else "n/a"


def _cell(state: RunOutcomes, sequence_id: str, pass_: str, order: int, planned: frozenset[str]) -> MatrixCell:
    cell = state.cell(sequence_id, pass_, order)
    seq = state.sequences.get(sequence_id)
    ran = seq is not None and pass_ in seq.passes
    kind = cell_state(cell, planned=pass_ in planned or ran)
    if kind == "n/a":
        return MatrixCell("n/a")
    return MatrixCell(kind, pass_=pass_, status=cell.status if cell is not None else None)


def build_matrix(state: RunOutcomes, sequence_id: str, planned: frozenset[str]) -> Matrix:
    seq = state.sequences.get(sequence_id)
    plan = list(seq.plan) if seq is not None else []
    n = len(plan)
    rows: list[MatrixRow] = []
    for i in range(1, n + 1):
        off_diagonal = "retest" if i == n else f"retest-{i}"
        cells = []
        for j, task in enumerate(plan, start=1):
            if j > i:
                cells.append(MatrixCell("n/a"))
            elif j == i:
                cells.append(_cell(state, sequence_id, "initial", task.order, planned))
            else:
                cells.append(_cell(state, sequence_id, off_diagonal, task.order, planned))
        rows.append(MatrixRow(label=str(i), cells=tuple(cells)))
    baseline = None
    ran_baseline = seq is not None and "baseline" in seq.passes
    if "baseline" in planned or ran_baseline:
        baseline = MatrixRow(
            label="b", cells=tuple(_cell(state, sequence_id, "baseline", t.order, planned) for t in plan)
        )
    return Matrix(
        orders=tuple(t.order for t in plan),
        instance_ids=tuple(t.instance_id for t in plan),
        rows=tuple(rows),
        baseline=baseline,
    )


def _task_rows(
    state: RunOutcomes,
    sequence_id: str,
    planned: frozenset[str],
    recalls: dict[tuple[str, str, int, int], list[Recall]],
) -> tuple[TaskRow, ...]:
    seq = state.sequences.get(sequence_id)
    if seq is None:
        return ()
    rows = []
    for task in seq.plan:
        cell = state.cell(sequence_id, "initial", task.order)
        attempt = cell.attempt if cell is not None else None
        if cell is None:
            status = "not run"
        elif not cell.done:
            status = "unfinished"
        else:
            status = cell.status or "unknown"
        rows.append(
            TaskRow(
                order=task.order,
                instance_id=task.instance_id,
                repo=task.repo,
                difficulty=task.difficulty,
                attempt=attempt,
                status=status,
                resolved=cell.resolved if cell is not None and cell.done else None,
                initial=_cell(state, sequence_id, "initial", task.order, planned).state,
                final=_cell(state, sequence_id, "retest", task.order, planned).state,
                baseline=_cell(state, sequence_id, "baseline", task.order, planned).state,
                turns=cell.turns if cell is not None else None,
                cost_usd=cell.cost_usd if cell is not None else None,
                recalls=tuple(recalls.get((sequence_id, "initial", task.order, attempt), ())) if attempt else (),
            )
        )
    return tuple(rows)


def running_mean(vector: Sequence[int | None]) -> list[float | None]:
    """Cumulative resolve rate after each task: the mean of the valid outcomes so far.

    A missing outcome is left out (never counted as 0); before the first valid outcome
    the rate is undefined (None).
    """
    out: list[float | None] = []
    total = valid = 0
    for value in vector:
        if value is not None:
            total += value
            valid += 1
        out.append(total / valid if valid else None)
    return out
