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

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ledger import Ledger, SweclError
from ledger.events import MemoryRecalled, RunStarted, TaskRef
from projections import (
    Cell,
    Projector,
    RunOutcomes,
    RunsProjection,
    RunSpend,
    RunSummary,
    VersionMetrics,
    memory_server_of,
    not_gradeable,
    outcomes,
    read_run,
    read_views,
    run_not_gradeable,
    shown_versions,
    spend_of,
)
from projections.compare import Comparison, GroupedMetrics, compare_groups, group_members, group_runs, grouped_metrics, side_of
from projections.metrics import MetricsResult, SequenceOutcomes, SequenceResult, compute

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
    integrity: dict[str, Any] | None = None
    """The integrity flags of the run's patches, as `swecl metrics --json` gives them
    (`projections.audit.integrity_counts`, over the attempts that count)."""
    spend: RunSpend | None = None
    """What the run's agents reported spending, and its budget (`swecl runs`' spend)."""

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


@dataclass(frozen=True)
class Tally:
    """Resolved tasks of one pass, pooled over sequences; missing verdicts are left out of the rate."""

    resolved: int
    valid: int
    """Tasks with a verdict (resolved or not)."""
    tasks: int

    @property
    def rate(self) -> float | None:
        return self.resolved / self.valid if self.valid else None

    @property
    def missing(self) -> int:
        return self.tasks - self.valid


def tally(vectors: Iterable[Sequence[int | None]]) -> Tally:
    resolved = valid = tasks = 0
    for vector in vectors:
        tasks += len(vector)
        valid += sum(1 for v in vector if v is not None)
        resolved += sum(1 for v in vector if v == 1)
    return Tally(resolved=resolved, valid=valid, tasks=tasks)


@dataclass(frozen=True)
class ContrastRow:
    """One memory-on vs memory-off comparison of a run, pooled over `sequences`."""

    version: str
    label: str
    memory_on: bool
    on: Tally | None
    """The run's initial pass with memory; None for a run whose stage has no memory."""
    off: Tally | None
    """The memory-off side: the run's baseline pass, the control's initial pass, or (a
    memory-off run) its own initial pass; None when there is none (`off_from` says why)."""
    off_from: str
    """What the memory-off side is, in words."""
    kind: Literal["baseline", "control", "self"]
    sequences: tuple[str, ...]

    @property
    def delta(self) -> float | None:
        if self.on is None or self.off is None or self.on.rate is None or self.off.rate is None:
            return None
        return self.on.rate - self.off.rate


def _vectors(vr: VersionReport, pass_: Literal["initial", "baseline"], sequences: Iterable[str]) -> list[list[int | None]]:
    out = []
    for name in sequences:
        inputs = vr.sequences[name].inputs if name in vr.sequences else None
        if inputs is None:
            continue
        vector = inputs.initial if pass_ == "initial" else inputs.baseline
        if vector is not None:
            out.append(list(vector))
    return out


def contrast_rows(versions: Sequence[VersionReport]) -> list[ContrastRow]:
    """Memory on vs memory off for each run: against its own baseline pass (same run, memory
    off) and, for a run with memory, against the control: the first reported run whose stage
    has no memory (base), over the sequences both ran. A run without memory is the off side only."""
    control = next((vr for vr in versions if not vr.memory_on), None)
    rows: list[ContrastRow] = []
    for vr in versions:
        own = tuple(s for s in vr.sequences if vr.sequences[s].inputs is not None)
        if not vr.memory_on:
            rows.append(ContrastRow(
                version=vr.run.version, label=vr.label, memory_on=False, on=None,
                off=tally(_vectors(vr, "initial", own)), kind="self", sequences=own,
                off_from=f"its initial pass (stage {vr.run.stage} has no memory)",
            ))
            continue
        baseline = _vectors(vr, "baseline", own)
        rows.append(ContrastRow(
            version=vr.run.version, label=vr.label, memory_on=True, on=tally(_vectors(vr, "initial", own)),
            off=tally(baseline) if baseline else None, kind="baseline", sequences=own,
            off_from="its baseline pass b(j): the same tasks, memory off" if baseline
            else "no baseline pass was run (--passes without baseline)",
        ))
        if control is None:
            continue
        shared = tuple(s for s in own if s in control.sequences and control.sequences[s].inputs is not None)
        if shared:
            rows.append(ContrastRow(
                version=vr.run.version, label=vr.label, memory_on=True, on=tally(_vectors(vr, "initial", shared)),
                off=tally(_vectors(control, "initial", shared)), kind="control", sequences=shared,
                off_from=f"the control {control.label}: its initial pass on the same {len(shared)} sequence(s)",
            ))
    return rows


@dataclass(frozen=True)
class ReportComparison:
    a: str
    """The control's label (a run, or a group of repeats)."""
    b: str
    comparison: Comparison | None
    na: str | None = None
    """Why there is no comparison."""


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
    comparisons: tuple[ReportComparison, ...] = ()
    """Base vs each memory stage (`_comparisons`): runs, or groups of repeats with `grouped`."""
    groups: tuple[GroupedMetrics, ...] = ()
    """With `grouped`: each group of repeats, mean and t interval over its runs."""
    grouped: bool = False


def collect(ledger: Ledger, projector: Projector, versions: Sequence[str], *, formula: str = "native",
            include_failed: bool = False, grouped: bool = False, known: Mapping[str, RunSummary] | None = None,
            items: Mapping[str, WrittenItem] | None = None) -> ReportData:
    """The report of `versions` (when empty: all runs, in ledger order, failed ones only
    with `include_failed`) as of the ledger head. `grouped`: the comparison is of groups of
    repeats (each version's whole group is reported), and the groups' metrics are added.
    `known` (the runs) and `items` (`memory_items`) as of the head, when the caller has them
    already (`swecl view` keeps them between requests): they are read from every run's events."""
    head = ledger.head()
    if known is None:
        known = projector.run(RunsProjection(), upto=head).state.runs
    if not known:
        raise SweclError(f"no runs in {ledger.path} yet: start one with `swecl run`")
    chosen = list(dict.fromkeys(versions)) if versions else shown_versions(known, include_failed)
    if not chosen:
        raise SweclError(f"every run in {ledger.path} failed: `swecl report --all` includes failed runs")
    for version in chosen:
        if version not in known:
            raise SweclError(f"no run version {version!r} in {ledger.path} (versions: {', '.join(known)})")
    if grouped and versions:
        chosen = list(dict.fromkeys(m for v in chosen for m in group_members(known, v, include_failed=include_failed)))
    if items is None:
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
        comparisons=base_comparisons(reports, grouped=grouped),
        groups=report_groups(reports) if grouped else (),
        grouped=grouped,
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
                         spend=spend_of(ledger, run.version))


def _leakage(ledger: Ledger, version: str) -> tuple[Leakage, dict[tuple[str, int], tuple[TaskLeak, ...]]]:
    """The run's leakage counts and, keyed by (sequence, order), each flagged task's flags.

    One fold of the audit (`swecl audit VERSION --summary`, over the attempts that count)
    gives both, through the function `swecl metrics` and `swecl runs` use for their counts,
    so the numbers agree. The audit reads the run as it stands, not cut at the report's
    head: on a finished run the same."""
    from projections.audit import audit_summary, leakage_counts  # lazy: as in _version_report

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


def planned_passes(run: RunSummary, retest_every: int | None, n: int) -> frozenset[str]:
    planned = set(run.passes)
    if retest_every and retest_every > 0:
        planned.update(f"retest-{i}" for i in range(retest_every, n, retest_every))
    return frozenset(planned)


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
                initial=_cell(state, sequence_id, "initial", task.order, planned).state,
                final=_cell(state, sequence_id, "retest", task.order, planned).state,
                baseline=_cell(state, sequence_id, "baseline", task.order, planned).state,
                turns=cell.turns if cell is not None else None,
                cost_usd=cell.cost_usd if cell is not None else None,
                recalls=tuple(recalls.get((sequence_id, "initial", task.order, attempt), ())) if attempt else (),
                leaks=leaks.get((sequence_id, task.order), ()),
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


# --- base vs each memory stage ----------------------------------------------------------
# The control is the first reported run whose stage has no memory (base), as in the memory
# on vs off contrast; with `--group`, the first such group of repeats. Each memory-on run
# (group) is compared with it by `projections.compare` (the very function behind `swecl
# compare`, `--group` for groups): per sequence and macro, B - A with its paired bootstrap
# interval, and the exact test (McNemar's for single runs). Pairs that cannot be compared
# (no control, different tasks) stay on the page as n/a with the reason.


def _groups_of(reports: Sequence[VersionReport], grouped: bool) -> list[list[VersionReport]]:
    if not grouped:
        return [[vr] for vr in reports]
    by_version = {vr.run.version: vr for vr in reports}
    groups = group_runs({v: vr.run for v, vr in by_version.items()}, list(by_version))
    return [[by_version[v] for v in g.versions] for g in groups]


def _label(members: list[VersionReport], grouped: bool) -> str:
    if not grouped:
        return members[0].label
    return group_runs({vr.run.version: vr.run for vr in members}, [vr.run.version for vr in members])[0].label


def base_comparisons(reports: Sequence[VersionReport], *, grouped: bool = False) -> tuple[ReportComparison, ...]:
    """The control (base) against each memory-on run, or group of repeats with `grouped`."""
    groups = _groups_of(reports, grouped)
    control = next((g for g in groups if not g[0].memory_on), None)
    treated = [g for g in groups if g[0].memory_on]
    if control is None:
        return tuple(ReportComparison(a="base", b=_label(g, grouped), comparison=None,
                                      na="no memory-off (base) run in the report to compare against")
                     for g in treated)
    a_label = _label(control, grouped)
    out = []
    for group in treated:
        b_label = _label(group, grouped)
        try:
            comparison = compare_groups([side_of(vr.scored, vr.label) for vr in control],
                                        [side_of(vr.scored, vr.label) for vr in group],
                                        formula=reports[0].result.formula, labels=(a_label, b_label))
        except SweclError as exc:
            out.append(ReportComparison(a=a_label, b=b_label, comparison=None, na=str(exc)))
            continue
        out.append(ReportComparison(a=a_label, b=b_label, comparison=comparison))
    return tuple(out)


def report_groups(reports: Sequence[VersionReport]) -> tuple[GroupedMetrics, ...]:
    found = [vr.scored for vr in reports]
    known = {vm.run.version: vm.run for vm in found}
    return tuple(grouped_metrics(g, found) for g in group_runs(known, list(known)))
