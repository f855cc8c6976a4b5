"""Scoring many sequences with one formula set: per-sequence metrics, extras, macro headline.

The headline is the unweighted macro-average over sequences (each sequence counts once,
whatever its length); a sequence whose metric is None (not computable) is left out of
that metric's mean, and `macro_counts` says how many sequences each mean used.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from typing import TYPE_CHECKING, Any

import msgspec

from ledger.errors import SweclError
from projections.metrics._extras import SequenceExtras, sequence_extras
from projections.metrics._measured import macro_unmeasured, measured, measured_notes, unmeasured
from projections.metrics._registry import DEFAULT_FORMULA, get_formula
if TYPE_CHECKING:
    import polars as pl

from projections.metrics._vectors import (
    METRIC_NAMES,
    Lambdas,
    SequenceOutcomes,
    sequences_from_vectors_document,
)

MACRO_ROW = "macro"


class SequenceResult(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    metrics: dict[str, float | None]
    """None where not computable or not measured (`unmeasured` says why)."""
    notes: tuple[str, ...]
    extras: SequenceExtras
    unmeasured: dict[str, str] = msgspec.field(default_factory=dict)
    """metric -> why the recorded passes did not measure it (its value is a convention; see `_measured`)."""


class MetricsResult(msgspec.Struct, frozen=True, kw_only=True):
    formula: str
    formula_version: int
    lambdas: Lambdas
    sequences: dict[str, SequenceResult]
    """In the order given to `compute`."""
    macro: dict[str, float | None]
    """None where no sequence's value is computable, or where any sequence's is not measured."""
    macro_counts: dict[str, int]
    """Sequences each macro value averages (those where the metric is computable and measured)."""
    unmeasured: dict[str, str] = msgspec.field(default_factory=dict)
    """metric -> why a macro value is not a measurement (some sequence's passes did not measure it)."""


def compute(
    sequences: Sequence[SequenceOutcomes],
    formula: str = DEFAULT_FORMULA,
    lambdas: Lambdas | None = None,
) -> MetricsResult:
    formula_set = get_formula(formula)
    weights = lambdas if lambdas is not None else Lambdas()
    results: dict[str, SequenceResult] = {}
    for seq in sequences:
        if not isinstance(seq, SequenceOutcomes):
            raise TypeError(f"compute() takes SequenceOutcomes, got {type(seq).__name__}")
        if seq.name in results:
            raise SweclError(f"sequence {seq.name!r} is given twice; give each sequence once")
        score = formula_set.score(seq, weights)
        gaps = unmeasured(seq, weights)
        results[seq.name] = SequenceResult(
            name=seq.name,
            # A convention (F = 0 without a re-test) is no result: None, and `unmeasured` says why.
            metrics=measured(score.metrics, gaps),
            notes=measured_notes(score.notes, gaps),
            extras=sequence_extras(seq, formula_set, weights),
            unmeasured=gaps,
        )
    macro, counts = macro_average(result.metrics for result in results.values())
    macro_gaps = macro_unmeasured({name: item.unmeasured for name, item in results.items()})
    return MetricsResult(
        formula=formula_set.name,
        formula_version=formula_set.version,
        lambdas=weights,
        sequences=results,
        # A mean over the sequences that measured a metric would read as the run's: None.
        macro=measured(macro, macro_gaps),
        macro_counts=counts,
        unmeasured=macro_gaps,
    )


def macro_average(
    per_sequence: Iterable[Mapping[str, float | None]],
) -> tuple[dict[str, float | None], dict[str, int]]:
    sums = dict.fromkeys(METRIC_NAMES, 0.0)
    counts = dict.fromkeys(METRIC_NAMES, 0)
    for metrics in per_sequence:
        for name in METRIC_NAMES:
            value = metrics[name]
            if value is not None:
                sums[name] += value
                counts[name] += 1
    macro = {name: (sums[name] / counts[name] if counts[name] else None) for name in METRIC_NAMES}
    return macro, counts


def metrics_from_vectors_document(doc: dict, formula: str, lambdas: Lambdas | None = None) -> dict:
    """The `swecl metrics --vectors FILE --formula NAME` contract, minus the JSON I/O.

    Returns `{"sequences": {NAME: {metric: value}}, "macro": {metric: value}}`, each inner
    object with exactly the nine metric names as keys, floats at full precision, None for
    a metric that is not computable. These are the formula set's own outputs, conventions
    included (no `final` vector: F = 0, as docs/design.md section 7's table defines it):
    the caller chose the vectors. Raises `SweclError` (one line naming the sequence and
    field) for an unknown formula or a malformed document.
    """
    formula_set = get_formula(formula)
    weights = lambdas if lambdas is not None else Lambdas()
    scored = {seq.name: formula_set.score(seq, weights).metrics for seq in sequences_from_vectors_document(doc)}
    macro, _ = macro_average(scored.values())
    return {"sequences": {name: dict(metrics) for name, metrics in scored.items()}, "macro": macro}


def result_document(result: MetricsResult, *, header: bool = True) -> dict[str, Any]:
    """`result` as JSON builtins: one run's entry of `swecl metrics --json` and one formula's
    of a replay's metrics.json, so the two never disagree on what a result holds.

    A metric the passes did not measure is null, and `unmeasured` (of the macro values; per
    sequence in `unmeasured_by_sequence`) says why. `header=False` leaves out the formula,
    its version and the weights, for a document that states them once for several runs.
    """
    head: dict[str, Any] = {
        "formula": result.formula,
        "formula_version": result.formula_version,
        "lambdas": msgspec.to_builtins(result.lambdas),
    } if header else {}
    return {
        **head,
        "sequences": {name: dict(item.metrics) for name, item in result.sequences.items()},
        "macro": dict(result.macro),
        "macro_counts": dict(result.macro_counts),
        "extras": {name: msgspec.to_builtins(item.extras) for name, item in result.sequences.items()},
        "notes": {name: list(item.notes) for name, item in result.sequences.items() if item.notes},
        "unmeasured": dict(result.unmeasured),
        "unmeasured_by_sequence": {name: dict(item.unmeasured) for name, item in result.sequences.items()
                                   if item.unmeasured},
    }


_MISSING_COLUMNS = ("missing_initial", "missing_final", "missing_baseline")


def to_frame(result: MetricsResult) -> pl.DataFrame:
    """One row per sequence, then a `macro` row, for tables and CSV/parquet exports.

    Columns: sequence, formula, the nine metrics (Float64, null = not computable),
    n_tasks, and missing_initial/_final/_baseline (null = that vector was not recorded).
    The macro row carries the macro-averages and the totals of the counts over sequences.
    """
    import polars as pl  # lazily: ~0.4 s of start-up every CLI call would pay

    if MACRO_ROW in result.sequences:
        raise SweclError(
            f"sequence named {MACRO_ROW!r} would be confused with the macro row of the table; rename it"
        )
    rows: list[dict[str, object]] = []
    for name, item in result.sequences.items():
        missing = item.extras.missing
        rows.append(
            {
                "sequence": name,
                "formula": result.formula,
                **item.metrics,
                "n_tasks": missing.n_tasks,
                "missing_initial": missing.initial,
                "missing_final": missing.final,
                "missing_baseline": missing.baseline,
            }
        )
    macro_row: dict[str, object] = {"sequence": MACRO_ROW, "formula": result.formula, **result.macro}
    macro_row["n_tasks"] = sum(int(row["n_tasks"]) for row in rows)  # type: ignore[call-overload]
    for column in _MISSING_COLUMNS:
        present = [int(row[column]) for row in rows if row[column] is not None]  # type: ignore[call-overload]
        macro_row[column] = sum(present) if present else None
    rows.append(macro_row)
    schema: dict[str, pl.DataType | type[pl.DataType]] = {"sequence": pl.String, "formula": pl.String}
    schema.update({name: pl.Float64 for name in METRIC_NAMES})
    schema["n_tasks"] = pl.Int64
    schema.update({column: pl.Int64 for column in _MISSING_COLUMNS})
    return pl.from_dicts(rows, schema=schema)
