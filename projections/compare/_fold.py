"""The comparison of two runs over the same tasks: a fold over their recorded outcomes.

`compare_runs(a, b)` scores both runs with `projections.metrics.compute` (what `swecl
metrics` prints, so every point estimate is the difference of the two runs' `swecl
metrics --json` values), then bootstraps each difference over tasks and tests the
per-task resolved flags with McNemar (see the package docstring for the method).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from ledger.errors import SweclError
from projections.compare._resample import COMPARED, RESOLVED, resampled_metrics
from projections.compare._stats import (
    CONFIDENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    McNemar,
    draw_indices,
    mcnemar,
    mcnemar_exact_p,
    percentile_interval,
)
from projections.metrics import DEFAULT_FORMULA, Lambdas, MetricsResult, SequenceOutcomes, compute

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from projections._queries import VersionMetrics

    Floats = npt.NDArray[np.float64]

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
    """The runs' values as `swecl metrics --json` gives them (also when they are unmeasured conventions)."""
    diff: float | None
    """B - A; None when the difference means nothing (`na` says why)."""
    ci: tuple[float, float] | None
    """The paired bootstrap percentile interval of B - A; None when `diff` is or no resample defines it."""
    na: str | None = None
    unmeasured_a: str | None = None
    """Why A's passes did not measure the metric (its value `a` is then a convention, shown n/a)."""
    unmeasured_b: str | None = None
    flags: tuple[str, ...] = ()
    """Why the number is only partly comparable (the value still stands)."""
    undefined_resamples: int = 0
    """Resamples on which the metric is undefined in A or B (no term to average: e.g. F on a
    resample holding only the last task), left out of the interval."""


class SequenceComparison(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    tasks: int
    resolved_a: int
    resolved_b: int
    missing_a: int
    """Tasks without a valid initial verdict in A (counted as not resolved)."""
    missing_b: int
    metrics: dict[str, MetricDiff]
    mcnemar: McNemar
    sequences: int = 1
    """Sequences the row covers (the macro row: all of them)."""


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
    import numpy as np

    check_comparable(a, b)
    if resamples < 1:
        raise SweclError(f"resamples must be at least 1, got {resamples}")
    weights = lambdas if lambdas is not None else Lambdas()
    # Each run is scored in its own sequence order, exactly as `swecl metrics` scores it.
    result_a = compute(a.sequences, formula, weights)
    result_b = compute(b.sequences, formula, weights)
    seqs_b = {s.name: s for s in b.sequences}
    rng = np.random.default_rng(seed)
    rows: dict[str, SequenceComparison] = {}
    boot_a: dict[str, dict[str, Floats]] = {}
    boot_b: dict[str, dict[str, Floats]] = {}
    for seq_a in a.sequences:
        name = seq_a.name
        seq_b = seqs_b[name]
        # One draw per sequence, in A's order, shared by both runs: the pairing.
        idx = draw_indices(rng, seq_a.n_tasks, resamples)
        boot_a[name] = resampled_metrics(seq_a, formula, weights, idx)
        boot_b[name] = resampled_metrics(seq_b, formula, weights, idx)
        rows[name] = _sequence_row(a, b, seq_a, seq_b, result_a, result_b, boot_a[name], boot_b[name],
                                   formula, weights, confidence)
    macro = _macro_row(a, b, rows, result_a, result_b, boot_a, boot_b, confidence)
    return Comparison(
        a=a, b=b, formula=result_a.formula, formula_version=result_a.formula_version, lambdas=weights, seed=seed,
        resamples=resamples, confidence=confidence, sequences=rows, macro=macro, notes=tuple(_notes(a, b, rows)),
    )


def _sequence_row(
    a: RunSide, b: RunSide, seq_a: SequenceOutcomes, seq_b: SequenceOutcomes, result_a: MetricsResult,
    result_b: MetricsResult, boot_a: dict[str, Floats], boot_b: dict[str, Floats], formula: str, lambdas: Lambdas,
    confidence: float,
) -> SequenceComparison:
    name = seq_a.name
    item_a, item_b = result_a.sequences[name], result_b.sequences[name]
    resolved_a, resolved_b = _resolved(seq_a), _resolved(seq_b)
    n = seq_a.n_tasks
    acc_flag = _acc_flag(a, b, seq_a, seq_b, formula)
    metrics: dict[str, MetricDiff] = {}
    for metric in COMPARED:
        if metric == RESOLVED:
            va, vb = sum(resolved_a) / n, sum(resolved_b) / n
        else:
            va, vb = item_a.metrics[metric], item_b.metrics[metric]
        flags = [acc_flag] if acc_flag and (metric == "ACC" or (metric == "CL-Score" and lambdas.acc != 0)) else []
        metrics[metric] = _diff(a, b, va, vb, item_a.unmeasured.get(metric), item_b.unmeasured.get(metric),
                                boot_b[metric] - boot_a[metric], flags, confidence)
    return SequenceComparison(
        name=name, tasks=n, resolved_a=sum(resolved_a), resolved_b=sum(resolved_b),
        missing_a=sum(1 for v in seq_a.initial if v is None), missing_b=sum(1 for v in seq_b.initial if v is None),
        metrics=metrics, mcnemar=mcnemar(resolved_a, resolved_b),
    )


def _macro_row(
    a: RunSide, b: RunSide, rows: dict[str, SequenceComparison], result_a: MetricsResult, result_b: MetricsResult,
    boot_a: dict[str, dict[str, Floats]], boot_b: dict[str, dict[str, Floats]], confidence: float,
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
            va, vb = result_a.macro[metric], result_b.macro[metric]
            # As `macro_average`: a sequence where the metric is not computable is left out of the mean.
            used_a = [s for s in rows if result_a.sequences[s].metrics[metric] is not None]
            used_b = [s for s in rows if result_b.sequences[s].metrics[metric] is not None]
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
        metrics[metric] = _diff(a, b, va, vb, result_a.unmeasured.get(metric), result_b.unmeasured.get(metric),
                                dist, flags, confidence)
    b_count = sum(r.mcnemar.b for r in rows.values())
    c_count = sum(r.mcnemar.c for r in rows.values())
    pooled = McNemar(b=b_count, c=c_count, both=sum(r.mcnemar.both for r in rows.values()),
                     neither=sum(r.mcnemar.neither for r in rows.values()), p_value=mcnemar_exact_p(b_count, c_count))
    return SequenceComparison(
        name=MACRO, tasks=sum(r.tasks for r in rows.values()), resolved_a=sum(r.resolved_a for r in rows.values()),
        resolved_b=sum(r.resolved_b for r in rows.values()), missing_a=sum(r.missing_a for r in rows.values()),
        missing_b=sum(r.missing_b for r in rows.values()), metrics=metrics, mcnemar=pooled, sequences=len(rows),
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


def _notes(a: RunSide, b: RunSide, rows: dict[str, SequenceComparison]) -> list[str]:
    notes = []
    scored_a = [p for p in a.passes if p in _SCORED_PASSES]
    scored_b = [p for p in b.passes if p in _SCORED_PASSES]
    if scored_a != scored_b:
        notes.append(f"different passes ({a.label}: {'+'.join(scored_a)}; {b.label}: {'+'.join(scored_b)}): "
                     "a metric one run's passes did not measure is n/a")
    for side in (a, b):
        if side.status != "finished":
            notes.append(f"{side.label} is {side.status}: tasks without a verdict count as missing")
        missing = sum(r.missing_a if side is a else r.missing_b for r in rows.values())
        if missing:
            total = sum(r.tasks for r in rows.values())
            notes.append(f"{side.label}: {missing} of {total} tasks have no valid initial verdict: not resolved "
                         "in the resolved rate and McNemar; the CL metrics treat them as the formula set says")
    return notes
