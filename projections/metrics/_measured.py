"""Which metrics a sequence's recorded passes actually measured.

The formula sets fill a metric the passes could not measure with a conventional value
(docs/design.md section 7: no re-test means final = initial, so F = BWT = 0 and CL-S = 1;
no baseline means FWT = 0). Those values stay in the formula sets' own outputs (their
contract: `FormulaSet.score`, `swecl metrics --vectors`), but a reader must not take them
for measurements: `unmeasured` says which metrics rest on such a convention, and why, and
`measured` puts None in their place. `compute` (behind every table and JSON document of a
run) keeps only measured values, so a script reading `--json` finds null where the table
prints n/a, never the convention.

- F, BWT, CL-S and CL-F1 (CL-S is 1 - F) need a re-test pass with a valid outcome.
- FWT needs a baseline (memory-off) pass with a valid outcome.
- CL-Score needs every term it weighs (non-zero lambda) measured.
- N = 1: F, BWT and FWT are 0 by definition whatever the passes, so they count as measured.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from projections.metrics._vectors import METRIC_NAMES, Lambdas, Outcome, SequenceOutcomes

NEEDS_RETEST: tuple[str, ...] = ("F", "BWT", "CL-S", "CL-F1")
NEEDS_BASELINE: tuple[str, ...] = ("FWT",)


def unmeasured(seq: SequenceOutcomes, lambdas: Lambdas) -> dict[str, str]:
    """metric -> why the recorded passes did not measure it (empty: everything measured)."""
    out: dict[str, str] = {}
    if seq.n_tasks > 1:
        retest_gap = _pass_gap(seq.final, "re-test")
        if retest_gap is not None:
            out.update(dict.fromkeys(NEEDS_RETEST, retest_gap))
        baseline_gap = _pass_gap(seq.baseline, "baseline")
        if baseline_gap is not None:
            out.update(dict.fromkeys(NEEDS_BASELINE, baseline_gap))
    weighed = [name for name, weight in (("F", lambdas.f), ("FWT", lambdas.fwt), ("BWT", lambdas.bwt))
               if weight != 0 and name in out]
    if weighed:
        out["CL-Score"] = f"{', '.join(weighed)} not measured"
    return {name: out[name] for name in METRIC_NAMES if name in out}


def measured(metrics: Mapping[str, float | None], gaps: Mapping[str, str]) -> dict[str, float | None]:
    """`metrics` with None for each metric in `gaps` (its value is a convention, not a measurement)."""
    return {name: (None if name in gaps else value) for name, value in metrics.items()}


def _pass_gap(vector: Sequence[Outcome] | None, what: str) -> str | None:
    if vector is None:
        return f"no {what} pass"
    if all(value is None for value in vector):
        return f"the {what} pass has no valid outcome"
    return None


def macro_unmeasured(per_sequence: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """A macro value is unmeasured when any sequence's is: its mean would mix a convention in."""
    out: dict[str, str] = {}
    for name in METRIC_NAMES:
        lacking = [seq for seq, gaps in per_sequence.items() if name in gaps]
        if not lacking:
            continue
        why = "; ".join(sorted({per_sequence[seq][name] for seq in lacking}))
        if len(lacking) < len(per_sequence):
            why += f" (in {', '.join(lacking)})"
        out[name] = why
    return out
