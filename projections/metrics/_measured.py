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
- N = 1: F, BWT and FWT are 0 by definition whatever the passes, so they count as measured;
  not in a difficulty stratum (`stratum=True`): its one task is part of a sequence whose
  passes either ran or did not.

`measured_notes` rewrites the formula sets' notes that state a convention as a value ("no
re-test recorded: final = initial, so F = BWT = 0") to say the value is not measured.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from projections.metrics._vectors import METRIC_NAMES, Lambdas, Outcome, SequenceOutcomes

NEEDS_RETEST: tuple[str, ...] = ("F", "BWT", "CL-S", "CL-F1")
NEEDS_BASELINE: tuple[str, ...] = ("FWT",)


def unmeasured(seq: SequenceOutcomes, lambdas: Lambdas, *, stratum: bool = False) -> dict[str, str]:
    """metric -> why the recorded passes did not measure it (empty: everything measured).
    `stratum`: `seq` is a difficulty stratum of a sequence, where one task is no reason to
    call F or FWT measured: the pass that measures it must have run (a stratum of one task
    with no baseline pass has no FWT, not FWT = 0)."""
    out: dict[str, str] = {}
    if seq.n_tasks > 1 or stratum:
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


_CONVENTION_NOTES: dict[str, tuple[str, str]] = {
    "no re-test recorded: final = initial, so F = BWT = 0":
        ("F", "no re-test recorded: F, BWT, CL-S and CL-F1 are not measured (n/a)"),
    "every re-test outcome is missing: final = initial, as eval_v1 does":
        ("F", "every re-test outcome is missing: F, BWT, CL-S and CL-F1 are not measured (n/a)"),
    "no baseline (memory-off) results: FWT = 0": ("FWT", "no baseline (memory-off) results: FWT is not measured (n/a)"),
    "every baseline outcome is missing: FWT = 0, as eval_v1 does":
        ("FWT", "every baseline outcome is missing: FWT is not measured (n/a)"),
}
_ONE_TASK = "N = 1: F, BWT and FWT are 0 by definition"


def measured_notes(notes: Sequence[str], gaps: Mapping[str, str]) -> tuple[str, ...]:
    """The formula set's `notes`, each one that states a convention the passes did not
    measure (F = 0 without a re-test, FWT = 0 without a baseline) said as not measured, as
    the values beside it are (n/a)."""
    out = []
    for note in notes:
        if note == _ONE_TASK and ("F" in gaps or "FWT" in gaps):
            missing = [m for m in ("F", "BWT", "FWT") if m in gaps]
            defined = [m for m in ("F", "BWT", "FWT") if m not in gaps]
            out.append(f"one task: {', '.join(missing)} not measured (n/a: the pass was not run)"
                       + (f"; {', '.join(defined)} 0 by definition" if defined else ""))
            continue
        metric, said = _CONVENTION_NOTES.get(note, ("", note))
        out.append(said if metric in gaps else note)
    return tuple(out)
