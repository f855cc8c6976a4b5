"""The comparison of two runs over the same tasks: a fold over their recorded outcomes.

`compare_runs(a, b)` scores both runs with `projections.metrics.compute` (what `swecl
metrics` prints, so every point estimate is the difference of the two runs' `swecl
metrics --json` values), then bootstraps each difference over tasks and tests the
per-task resolved flags with McNemar (see the package docstring for the method).
`compare_groups(group_a, group_b)` does the same for two groups of repeated runs (`swecl
run --repeat K`): each side the mean of its runs, every run on the same bootstrap draw of
tasks, and the exact stratified test in McNemar's place; one run per group is `compare_runs`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import msgspec

from ledger.errors import SweclError
from projections.compare._gain import macro_gain, normalized_gain
from projections.compare._resample import COMPARED, RESOLVED, resampled_metrics
from projections.compare._stats import (
    CONFIDENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    GROUP_TEST,
    McNemar,
    draw_indices,
    mcnemar,
    mcnemar_exact_p,
    percentile_interval,
    stratified_exact_p,
)
from projections.metrics import DEFAULT_FORMULA, Lambdas, MetricsResult, SequenceOutcomes, compute

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from projections._queries import VersionMetrics

    Floats = npt.NDArray[np.float64]
    Indices = npt.NDArray[np.int64]

MACRO = "macro"
# The passes the formula sets score; `retest-K` rows (--retest-every) are carried unscored.
_SCORED_PASSES = ("initial", "retest", "baseline")


class RunSide(msgspec.Struct, frozen=True, kw_only=True):
    """One run as compared: who it is and its outcome vectors (`RunOutcomes.to_metric_inputs`)."""

    version: str
    label: str
    """How tables name it (`v2 plugin-blank`)."""
    stage: str
    passes: tuple[str, ...]
    status: str
    tasks: dict[str, tuple[str, ...]]
    """sequence -> instance ids in the run's order: what `sequences` are the outcomes of."""
    sequences: list[SequenceOutcomes]


class MetricDiff(msgspec.Struct, frozen=True, kw_only=True):
    """One metric of one sequence (or the macro row): A, B, B - A and its interval."""

    a: float | None
    b: float | None
    """The runs' values as `swecl metrics --json` gives them (None when not measured or not computable)."""
    diff: float | None
    """B - A; None when the difference means nothing (`na` says why)."""
    ci: tuple[float, float] | None
    """The paired bootstrap percentile interval of B - A; None when `diff` is or no resample defines it."""
    na: str | None = None
    unmeasured_a: str | None = None
    """Why A's passes did not measure the metric (its value `a` is then None, shown n/a)."""
    unmeasured_b: str | None = None
    flags: tuple[str, ...] = ()
    """Why the number is only partly comparable (the value still stands)."""
    undefined_resamples: int = 0
    """Resamples on which the metric is undefined in A or B (no term to average: e.g. F on a
    resample holding only the last task), left out of the interval."""


class SequenceComparison(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    tasks: int
    resolved_a: float
    """Tasks A resolved (an int for one run; for a group, the mean over its runs)."""
    resolved_b: float
    missing_a: float
    """Tasks without a valid initial verdict in A (counted as not resolved; a group: the mean)."""
    missing_b: float
    metrics: dict[str, MetricDiff]
    mcnemar: McNemar
    sequences: int = 1
    """Sequences the row covers (the macro row: all of them)."""
    gain: float | None = None
    """B's normalized gain over A, A as the base: (rate B - rate A) / (1 - rate A) of the initial-pass
    resolve rates (group means); None where A's is 1. The macro row: the mean of the sequences' gains."""


class Comparison(msgspec.Struct, frozen=True, kw_only=True):
    a: RunSide
    b: RunSide
    formula: str
    formula_version: int
    lambdas: Lambdas
    seed: int
    resamples: int
    confidence: float
    sequences: dict[str, SequenceComparison]
    """In A's sequence order."""
    macro: SequenceComparison
    """Each metric's unweighted mean over sequences (as `swecl metrics`), resampled per sequence;
    McNemar on all tasks pooled."""
    notes: tuple[str, ...]
    runs_a: tuple[str, ...] = ()
    """The run versions A stands for: one, or the repeats of a group (its values are their means)."""
    runs_b: tuple[str, ...] = ()
    paired_from: int | None = None
    """A fork and its source (or two forks of one run): compared over the tasks of this order on."""

    @property
    def grouped(self) -> bool:
        return len(self.runs_a) > 1 or len(self.runs_b) > 1


def side_of(vm: VersionMetrics, label: str) -> RunSide:
    """A run as `swecl metrics` loaded it (`projections.metrics_for`): the same vectors, with
    the tasks found not gradeable on this host missing in every pass."""
    return RunSide(
        version=vm.run.version,
        label=label,
        stage=vm.run.stage,
        passes=tuple(vm.run.passes),
        status=vm.run.status,
        tasks={name: tuple(t.instance_id for t in cells.plan) for name, cells in vm.outcomes.sequences.items()
               if cells.plan},
        sequences=vm.outcomes.to_metric_inputs(vm.not_gradeable),
    )


def check_comparable(a: RunSide, b: RunSide) -> None:
    """Refuse (SweclError, one line) what no number can compare: one run twice, a run without
    the initial pass every compared number rests on, or different tasks or task orders."""
    if a.version == b.version:
        raise SweclError(f"compare needs two different runs: both are {a.label}")
    for side in (a, b):
        if not side.tasks:
            raise SweclError(f"{side.label} plans no task: nothing to compare")
        if "initial" not in side.passes:
            raise SweclError(f"{side.label} has no initial pass ({'+'.join(side.passes)}): "
                             "the resolved rate, McNemar and every CL metric rest on it")
    head = f"{a.label} and {b.label} are not over the same tasks"
    for one, other in ((a, b), (b, a)):
        only = [name for name in one.tasks if name not in other.tasks]
        if only:
            raise SweclError(f"{head}: sequence {only[0]} is only in {one.label}")
    for name, ids_a in a.tasks.items():
        ids_b = b.tasks[name]
        if len(ids_a) != len(ids_b):
            raise SweclError(f"{head}: sequence {name} has {len(ids_a)} tasks in {a.label}, {len(ids_b)} in {b.label}")
        if ids_a != ids_b:
            j = next(k for k, (x, y) in enumerate(zip(ids_a, ids_b, strict=True)) if x != y)
            # Order matters too: a continual-learning score depends on what came before each task.
            how = " (the same tasks in another order)" if sorted(ids_a) == sorted(ids_b) else ""
            raise SweclError(f"{head}: sequence {name} task t{j + 1} is {ids_a[j]} in {a.label}, "
                             f"{ids_b[j]} in {b.label}{how}")


def compare_runs(
    a: RunSide,
    b: RunSide,
    *,
    formula: str = DEFAULT_FORMULA,
    lambdas: Lambdas | None = None,
    seed: int = DEFAULT_SEED,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = CONFIDENCE,
) -> Comparison:
    """B - A per sequence and macro-averaged, with paired bootstrap intervals (reproducible:
    the same seed, runs and options give the same numbers) and exact McNemar tests."""
    return compare_groups([a], [b], formula=formula, lambdas=lambdas, seed=seed, resamples=resamples,
                          confidence=confidence)


def compare_groups(
    group_a: Sequence[RunSide],
    group_b: Sequence[RunSide],
    *,
    formula: str = DEFAULT_FORMULA,
    lambdas: Lambdas | None = None,
    seed: int = DEFAULT_SEED,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = CONFIDENCE,
    labels: tuple[str, str] | None = None,
) -> Comparison:
    """B - A of two groups of repeated runs (`swecl run --repeat K`), each group's value the
    mean of its runs' values; one run per group is `compare_runs`, number for number.

    The interval: a bootstrap over tasks that keeps each drawn task's repeats together. Each
    resample draws the tasks of a sequence with replacement (one draw shared by every run of
    both groups: paired by task), scores every run on the draw, and averages each group's runs.
    Tasks are the sampled unit (the benchmark is a sample of tasks); the repeats of a task are
    nested in it, so resampling tasks carries the run-to-run noise into the interval through the
    per-task averages, and resampling repeats as well would count that noise twice. A t-interval
    over the K repeats of B - A would only see run-to-run noise (K is small: 2 to 5), never
    the task sampling, and lose the pairing by task. The test is `stratified_exact_p` (tasks
    as strata, exact conditional permutation of each task's runs; McNemar's exact test when
    each group is one run). `labels` names the groups (default: their first runs' labels)."""
    import numpy as np

    runs_a, runs_b = list(group_a), list(group_b)
    if not runs_a or not runs_b:
        raise SweclError("compare needs at least one run on each side")
    if labels is not None:
        runs_a[0] = msgspec.structs.replace(runs_a[0], label=labels[0])
        runs_b[0] = msgspec.structs.replace(runs_b[0], label=labels[1])
    a, b = runs_a[0], runs_b[0]
    shared = [r.version for r in runs_a if r.version in {x.version for x in runs_b}]
    if shared and (len(runs_a) > 1 or len(runs_b) > 1):
        raise SweclError(f"compare needs two different groups: run {shared[0]} is in both {a.label} and {b.label}")
    check_comparable(a, b)
    for lead, members in ((a, runs_a), (b, runs_b)):
        for member in members[1:]:
            check_comparable(lead, member)  # every repeat over the same tasks, in the same order
    if resamples < 1:
        raise SweclError(f"resamples must be at least 1, got {resamples}")
    weights = lambdas if lambdas is not None else Lambdas()
    # Each run is scored in its own sequence order, exactly as `swecl metrics` scores it.
    results_a = [compute(r.sequences, formula, weights) for r in runs_a]
    results_b = [compute(r.sequences, formula, weights) for r in runs_b]
    rng = np.random.default_rng(seed)
    rows: dict[str, SequenceComparison] = {}
    boot_a: dict[str, dict[str, Floats]] = {}
    boot_b: dict[str, dict[str, Floats]] = {}
    for seq_a in a.sequences:
        name = seq_a.name
        seqs_a = [_sequence(r, name) for r in runs_a]
        seqs_b = [_sequence(r, name) for r in runs_b]
        # One draw per sequence, in A's order, shared by every run of both groups: the pairing.
        idx = draw_indices(rng, seq_a.n_tasks, resamples)
        boot_a[name] = _group_resampled(seqs_a, formula, weights, idx)
        boot_b[name] = _group_resampled(seqs_b, formula, weights, idx)
        rows[name] = _sequence_row(a, b, seqs_a, seqs_b, results_a, results_b, boot_a[name], boot_b[name],
                                   formula, weights, confidence)
    macro = _macro_row(a, b, rows, results_a, results_b, boot_a, boot_b, confidence)
    return Comparison(
        a=a, b=b, formula=results_a[0].formula, formula_version=results_a[0].formula_version, lambdas=weights,
        seed=seed, resamples=resamples, confidence=confidence, sequences=rows, macro=macro,
        notes=tuple(_notes(runs_a, runs_b, rows)), runs_a=tuple(r.version for r in runs_a),
        runs_b=tuple(r.version for r in runs_b),
    )


def _sequence(run: RunSide, name: str) -> SequenceOutcomes:
    return next(s for s in run.sequences if s.name == name)


def _group_resampled(seqs: list[SequenceOutcomes], formula: str, lambdas: Lambdas, idx: Indices) -> dict[str, Floats]:
    """Each metric on each resample, averaged over the group's runs (NaN where any run's is
    undefined: the group mean needs every repeat)."""
    import numpy as np

    per_run = [resampled_metrics(seq, formula, lambdas, idx) for seq in seqs]
    if len(per_run) == 1:
        return per_run[0]
    return {metric: np.mean([values[metric] for values in per_run], axis=0) for metric in per_run[0]}


def _mean(values: list[float | None]) -> float | None:
    """A group's value: the mean of its runs' (None when any run's is: not computable)."""
    if any(v is None for v in values):
        return None
    return sum(v for v in values if v is not None) / len(values)


def _count(values: list[int]) -> float:
    """A count over a group: the run's own when one run (an int, as before), else the mean."""
    return values[0] if len(values) == 1 else sum(values) / len(values)


def _sequence_row(
    a: RunSide, b: RunSide, seqs_a: list[SequenceOutcomes], seqs_b: list[SequenceOutcomes],
    results_a: list[MetricsResult], results_b: list[MetricsResult], boot_a: dict[str, Floats],
    boot_b: dict[str, Floats], formula: str, lambdas: Lambdas, confidence: float,
) -> SequenceComparison:
    seq_a, seq_b = seqs_a[0], seqs_b[0]
    name = seq_a.name
    resolved_a = [_resolved(s) for s in seqs_a]
    resolved_b = [_resolved(s) for s in seqs_b]
    n = seq_a.n_tasks
    acc_flag = _acc_flag(a, b, seq_a, seq_b, formula)
    metrics: dict[str, MetricDiff] = {}
    for metric in COMPARED:
        if metric == RESOLVED:
            va: float | None = _mean([sum(r) / n for r in resolved_a])
            vb: float | None = _mean([sum(r) / n for r in resolved_b])
        else:
            va = _mean([res.sequences[name].metrics[metric] for res in results_a])
            vb = _mean([res.sequences[name].metrics[metric] for res in results_b])
        flags = [acc_flag] if acc_flag and (metric == "ACC" or (metric == "CL-Score" and lambdas.acc != 0)) else []
        metrics[metric] = _diff(a, b, va, vb, _gap(results_a, metric, name), _gap(results_b, metric, name),
                                boot_b[metric] - boot_a[metric], flags, confidence)
    return SequenceComparison(
        name=name, tasks=n, resolved_a=_count([sum(r) for r in resolved_a]),
        resolved_b=_count([sum(r) for r in resolved_b]),
        missing_a=_count([sum(1 for v in s.initial if v is None) for s in seqs_a]),
        missing_b=_count([sum(1 for v in s.initial if v is None) for s in seqs_b]),
        metrics=metrics, mcnemar=_test(resolved_a, resolved_b),
        gain=normalized_gain(metrics[RESOLVED].b, metrics[RESOLVED].a),
    )


def _gap(results: list[MetricsResult], metric: str, sequence: str | None = None) -> str | None:
    """Why a run of the group did not measure `metric` (the first run that did not)."""
    for res in results:
        gaps = res.unmeasured if sequence is None else res.sequences[sequence].unmeasured
        if metric in gaps:
            return gaps[metric]
    return None


def _test(resolved_a: list[list[bool]], resolved_b: list[list[bool]]) -> McNemar:
    """McNemar on one run each; for groups, the exact stratified test on per-task counts (b:
    tasks A's runs resolved more often than B's, c: the reverse; both/neither: tied, above 0 or at 0)."""
    if len(resolved_a) == 1 and len(resolved_b) == 1:
        return mcnemar(resolved_a[0], resolved_b[0])
    counts_a = [sum(flags) for flags in zip(*resolved_a, strict=True)]
    counts_b = [sum(flags) for flags in zip(*resolved_b, strict=True)]
    return _group_test(counts_a, len(resolved_a), counts_b, len(resolved_b))


def _group_test(counts_a: list[int], runs_a: int, counts_b: list[int], runs_b: int) -> McNemar:
    rates = [(x / runs_a, y / runs_b) for x, y in zip(counts_a, counts_b, strict=True)]
    return McNemar(
        b=sum(1 for x, y in rates if x > y), c=sum(1 for x, y in rates if y > x),
        both=sum(1 for x, y in rates if x == y and x > 0), neither=sum(1 for x, y in rates if x == y == 0),
        p_value=stratified_exact_p(counts_a, runs_a, counts_b, runs_b), test=GROUP_TEST,
        counts_a=tuple(counts_a), counts_b=tuple(counts_b), runs_a=runs_a, runs_b=runs_b,
    )


def _macro_row(
    a: RunSide, b: RunSide, rows: dict[str, SequenceComparison], results_a: list[MetricsResult],
    results_b: list[MetricsResult], boot_a: dict[str, dict[str, Floats]], boot_b: dict[str, dict[str, Floats]],
    confidence: float,
) -> SequenceComparison:
    import numpy as np

    metrics: dict[str, MetricDiff] = {}
    for metric in COMPARED:
        if metric == RESOLVED:
            # Not in `swecl metrics`' macro: the same unweighted mean over sequences as its headline.
            rates_a = {s: r.resolved_a / r.tasks for s, r in rows.items()}
            rates_b = {s: r.resolved_b / r.tasks for s, r in rows.items()}
            va: float | None = sum(rates_a.values()) / len(rows)
            vb: float | None = sum(rates_b.values()) / len(rows)
            used_a = used_b = list(rows)
        else:
            va = _mean([res.macro[metric] for res in results_a])
            vb = _mean([res.macro[metric] for res in results_b])
            # As `macro_average`: a sequence where the metric is not computable is left out of the mean.
            used_a = [s for s in rows if all(res.sequences[s].metrics[metric] is not None for res in results_a)]
            used_b = [s for s in rows if all(res.sequences[s].metrics[metric] is not None for res in results_b)]
        flags = sorted({f for r in rows.values() for f in r.metrics[metric].flags})
        if used_a != used_b:
            flags.append(f"the macro of {a.label} averages {len(used_a)} sequences, of {b.label} {len(used_b)} "
                         f"({metric} is not computable in the others)")
        if used_a and used_b:
            # Each sequence resampled on its own (a stratified bootstrap): resample r of the
            # macro is the mean of resample r of each sequence.
            dist = np.mean([boot_b[s][metric] for s in used_b], axis=0) - np.mean([boot_a[s][metric] for s in used_a], axis=0)
        else:
            dist = np.full(len(next(iter(boot_a.values()))[metric]), np.nan)
        metrics[metric] = _diff(a, b, va, vb, _gap(results_a, metric), _gap(results_b, metric), dist, flags, confidence)
    tests = [r.mcnemar for r in rows.values()]
    if all(t.test == "mcnemar" for t in tests):
        b_count = sum(t.b for t in tests)
        c_count = sum(t.c for t in tests)
        pooled = McNemar(b=b_count, c=c_count, both=sum(t.both for t in tests), neither=sum(t.neither for t in tests),
                         p_value=mcnemar_exact_p(b_count, c_count))
    else:
        pooled = _group_test([x for t in tests for x in t.counts_a], tests[0].runs_a,
                             [y for t in tests for y in t.counts_b], tests[0].runs_b)
    return SequenceComparison(
        name=MACRO, tasks=sum(r.tasks for r in rows.values()), resolved_a=sum(r.resolved_a for r in rows.values()),
        resolved_b=sum(r.resolved_b for r in rows.values()), missing_a=sum(r.missing_a for r in rows.values()),
        missing_b=sum(r.missing_b for r in rows.values()), metrics=metrics, mcnemar=pooled, sequences=len(rows),
        gain=macro_gain([r.gain for r in rows.values()]),
    )


def _diff(
    a: RunSide, b: RunSide, va: float | None, vb: float | None, gap_a: str | None, gap_b: str | None,
    dist: Floats, flags: list[str], confidence: float,
) -> MetricDiff:
    import numpy as np

    # A metric a run's passes did not measure holds a convention (F = 0 without a re-test):
    # a difference involving it would be a number about nothing.
    gaps = [f"{side.label}: {gap}" for side, gap in ((a, gap_a), (b, gap_b)) if gap]
    if gaps:
        return MetricDiff(a=va, b=vb, diff=None, ci=None, na="not measured (" + "; ".join(gaps) + ")",
                          unmeasured_a=gap_a, unmeasured_b=gap_b)
    lacking = [side.label for side, value in ((a, va), (b, vb)) if value is None]
    if va is None or vb is None:
        return MetricDiff(a=va, b=vb, diff=None, ci=None, na=f"not computable in {' and '.join(lacking)}")
    undefined = int(np.count_nonzero(~np.isfinite(dist)))
    interval = percentile_interval(dist, confidence)
    if interval is None:
        return MetricDiff(a=va, b=vb, diff=vb - va, ci=None, flags=tuple(flags), undefined_resamples=undefined,
                          na="no interval: the metric is undefined on every resample")
    return MetricDiff(a=va, b=vb, diff=vb - va, ci=interval, flags=tuple(flags), undefined_resamples=undefined)


def _resolved(seq: SequenceOutcomes) -> list[bool]:
    """Per task: resolved in the initial pass (no valid verdict = not resolved, as `swecl
    metrics` counts `solved`)."""
    return [v == 1 for v in seq.initial]


def _acc_flag(a: RunSide, b: RunSide, seq_a: SequenceOutcomes, seq_b: SequenceOutcomes, formula: str) -> str | None:
    """native ACC is over the re-test a(N,j) when there is one, else over a(i,i): with a
    re-test in one run only, the two ACCs are of different passes."""
    if formula != "native" or (seq_a.final is None) == (seq_b.final is None):
        return None
    without, with_ = (a, b) if seq_a.final is None else (b, a)
    return (f"ACC of {without.label} is over its initial pass (no re-test), "
            f"of {with_.label} over its re-test a(N,j)")


def _notes(runs_a: list[RunSide], runs_b: list[RunSide], rows: dict[str, SequenceComparison]) -> list[str]:
    a, b = runs_a[0], runs_b[0]
    notes = []
    scored_a = [p for p in a.passes if p in _SCORED_PASSES]
    scored_b = [p for p in b.passes if p in _SCORED_PASSES]
    if scored_a != scored_b:
        notes.append(f"different passes ({a.label}: {'+'.join(scored_a)}; {b.label}: {'+'.join(scored_b)}): "
                     "a metric one run's passes did not measure is n/a")
    grouped = len(runs_a) > 1 or len(runs_b) > 1
    for side, members in ((a, runs_a), (b, runs_b)):
        for run in members:
            if run.status != "finished":
                who = f"{side.label}: run {run.version}" if grouped else side.label
                notes.append(f"{who} is {run.status}: tasks without a verdict count as missing")
        missing = sum(r.missing_a if side is a else r.missing_b for r in rows.values())
        if missing:
            total = sum(r.tasks for r in rows.values())
            mean = " (mean over its runs)" if len(members) > 1 else ""
            shown = f"{missing:g}" if isinstance(missing, float) else str(missing)
            notes.append(f"{side.label}: {shown} of {total} tasks{mean} have no valid initial verdict: not resolved "
                         "in the resolved rate and the test; the CL metrics treat them as the formula set says")
    return notes
