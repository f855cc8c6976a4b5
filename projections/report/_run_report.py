"""One run's part of the report: its records (sequences, task rows, recalls, leakage) and
how they are gathered from the ledger as of the report's head seq."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ledger import Ledger
from ledger.events import MemoryRecalled, RunStarted, TaskRef
from projections import (
    Projector,
    RunCost,
    RunOutcomes,
    RunSpend,
    RunSummary,
    VersionMetrics,
    memory_server_of,
    not_gradeable,
    outcomes,
    read_run,
    read_views,
    run_not_gradeable,
    spend_of,
)
from projections.metrics import MetricsResult, SequenceOutcomes, SequenceResult, compute
from projections.compare import Assessment, Gain

from ._matrix import CellState, Matrix, build_matrix, cell_of, planned_passes

if TYPE_CHECKING:
    from projections.funnel import RunFunnel


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
class TaskLeak:
    """The audit's flags on one pass of a task (`swecl audit VERSION --summary`'s entry), over
    the attempts that count, as the run's leakage counts are."""

    pass_: str
    hits: int
    """Flagged recalled items (an item recalled twice counts twice)."""
    by_kind: dict[str, int]
    """Flagged items per kind present, in `FLAG_KINDS` order; an item can have two."""


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
    leaks: tuple[TaskLeak, ...] = ()
    """The audit's flags on this task's recalls, per pass (any pass, not only the initial one)."""


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
class Leakage:
    """Leakage flags of a run's recalls: the counts `swecl metrics` and `swecl runs` print
    (`projections.audit.leakage_of`), over the attempts that count."""

    recalled_items: int
    """Recalled items (hits) of the counted recalls."""
    flagged: int
    """Recalled items with at least one flag."""
    by_kind: dict[str, int]
    """Flagged items per kind ("same-instance", "later-task", "test-content"); an item can have two."""
    test_content_checked: bool
    """False: the report reads no dataset, so "test-content" was not looked for (0 means "not checked")."""


@dataclass(frozen=True)
class VersionReport:
    run: RunSummary
    retest_every: int | None
    result: MetricsResult
    sequences: dict[str, SequenceReport]
    """In the run's sequence order."""
    leakage: Leakage
    scored: VersionMetrics
    """The run as `swecl metrics` scores it (what the comparison and the grouped view read)."""
    cost: RunCost | None = None
    """Its cost per solved task (initial pass), as `swecl metrics` gives it (`collect` adds it)."""
    assessed: tuple[Gain, Assessment] | None = None
    """Against its base, as `swecl metrics` says it (`swecl view`'s run page adds it)."""
    integrity: dict[str, Any] | None = None
    """The integrity flags of the run's patches, as `swecl metrics --json` gives them
    (`projections.audit.integrity_counts`, over the attempts that count)."""
    spend: RunSpend | None = None
    """What the run's agents reported spending, and its budget (`swecl runs`' spend)."""
    funnel: RunFunnel | None = None
    """The run's memory funnel (`projections.funnel`; `na` says why a run has none)."""

    @property
    def label(self) -> str:
        return run_label(self.run)

    @property
    def memory_on(self) -> bool:
        return memory_on(self.run)

    @property
    def memory_server(self) -> str | None:
        """A --memory-server run's provider ("memory-server 0.6.3"); None for every other run."""
        return self.scored.memory_server


def run_label(run: RunSummary) -> str:
    """`plugin-blank v2`: the stage first (what a reader compares), then the version as its
    folder names it; a version that is its stage's name is said once."""
    if run.version == run.stage:
        return run.stage
    return f"{run.stage} v{run.version}" if run.version.isdigit() else f"{run.stage} {run.version}"


def memory_on(run: RunSummary) -> bool:
    """Whether the run's stage has memory (base has none); its baseline pass never has."""
    return run.memory_mode != "off"


def pass_has_memory(run: RunSummary, pass_: str) -> bool:
    """initial and re-tests run with the stage's memory; the baseline pass is memory off by design."""
    return memory_on(run) and pass_ != "baseline"


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


def version_report(
    ledger: Ledger, projector: Projector, run: RunSummary, items: Mapping[str, WrittenItem], head: int, formula: str
) -> VersionReport:
    state = outcomes(ledger, projector, run.version, upto=head)
    excluded = run_not_gradeable(state, not_gradeable(ledger))
    inputs = state.to_metric_inputs(excluded)  # missing, never the agent's 0
    result = compute(inputs, formula)
    by_name = {seq.name: seq for seq in inputs}
    retest_every = _retest_every(ledger, run.version, head)
    recalls = _recalls(ledger, run.version, items, head)
    leakage, task_leaks = _leakage(ledger, run.version)
    sequences: dict[str, SequenceReport] = {}
    for sequence_id in [*run.sequences, *(s for s in state.sequences if s not in run.sequences)]:
        cells = state.sequences.get(sequence_id)
        plan = tuple(cells.plan) if cells is not None else ()
        planned = planned_passes(run, retest_every, len(plan))
        sequences[sequence_id] = SequenceReport(
            sequence_id=sequence_id,
            plan=plan,
            matrix=build_matrix(state, sequence_id, planned),
            tasks=_task_rows(state, sequence_id, planned, recalls, task_leaks),
            inputs=by_name.get(sequence_id),
            metrics=result.sequences.get(sequence_id),
        )
    # lazy: the CLI imports this module at start-up; the audit's folds load when a report is built
    from projections.audit import integrity_counts, integrity_of

    return VersionReport(run=run, retest_every=retest_every, result=result, sequences=sequences,
                         leakage=leakage,
                         scored=VersionMetrics(run, state, result, excluded, memory_server_of(ledger, run)),
                         integrity=integrity_counts(integrity_of(ledger, run.version)),
                         spend=spend_of(ledger, run.version), funnel=funnel_of(ledger, run.version, head))


def _leakage(ledger: Ledger, version: str) -> tuple[Leakage, dict[tuple[str, int], tuple[TaskLeak, ...]]]:
    """The run's leakage counts and, keyed by (sequence, order), each flagged task's flags.

    One fold of the audit (`swecl audit VERSION --summary`, over the attempts that count)
    gives both, through the function `swecl metrics` and `swecl runs` use for their counts,
    so the numbers agree. The audit reads the run as it stands, not cut at the report's
    head: on a finished run the same."""
    from projections.audit import audit_summary, leakage_counts  # lazy: as in version_report

    summary = audit_summary(ledger, version, counted_only=True)
    found = leakage_counts(summary)
    leakage = Leakage(recalled_items=found["recalled_items"], flagged=found["flagged"], by_kind=dict(found["by_kind"]),
                      test_content_checked=found["test_content_checked"])
    tasks: dict[tuple[str, int], list[TaskLeak]] = {}
    for flagged in summary.flagged:  # in sequence, pass, order order
        tasks.setdefault((flagged.sequence_id, flagged.order), []).append(
            TaskLeak(pass_=flagged.pass_, hits=flagged.hits, by_kind=dict(flagged.by_kind)))
    return leakage, {key: tuple(found) for key, found in tasks.items()}


def _retest_every(ledger: Ledger, version: str, head: int) -> int | None:
    for rec in ledger.read(types=["run.started"], streams=[f"run/{version}"], upto=head):
        if isinstance(rec.event, RunStarted):
            return rec.event.retest_every
    return None


def _recalls(
    ledger: Ledger, version: str, items: Mapping[str, WrittenItem], head: int
) -> dict[tuple[str, str, int, int], list[Recall]]:
    """Recall events of the run, keyed by (sequence, pass, order, attempt); a fork's tasks
    before K recalled in its source's streams (`read_run`)."""
    found: dict[tuple[str, str, int, int], list[Recall]] = {}
    for rec in read_run(ledger, version, ["memory.recalled"], upto=head):
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


def _task_rows(
    state: RunOutcomes,
    sequence_id: str,
    planned: frozenset[str],
    recalls: dict[tuple[str, str, int, int], list[Recall]],
    leaks: dict[tuple[str, int], tuple[TaskLeak, ...]],
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
                initial=cell_of(state, sequence_id, "initial", task.order, planned).state,
                final=cell_of(state, sequence_id, "retest", task.order, planned).state,
                baseline=cell_of(state, sequence_id, "baseline", task.order, planned).state,
                turns=cell.turns if cell is not None else None,
                cost_usd=cell.cost_usd if cell is not None else None,
                recalls=tuple(recalls.get((sequence_id, "initial", task.order, attempt), ())) if attempt else (),
                leaks=leaks.get((sequence_id, task.order), ()),
            )
        )
    return tuple(rows)


def funnel_of(ledger: object, version: str, head: int) -> RunFunnel | None:
    """The run's funnel as of the report's head; None when it cannot be read (a damaged
    ledger already says so elsewhere)."""
    from ledger import SweclError
    from projections.funnel import funnel

    try:
        return funnel(ledger, version, upto=head)  # type: ignore[arg-type]
    except SweclError:
        return None
