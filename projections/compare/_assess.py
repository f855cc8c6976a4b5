"""A memory run against its base, as a reader wants it: the normalized gain with its
interval, the memory efficiency against the oracle run, and the verdict line.

`assess_run` serves `swecl metrics` (the base of each sequence found by `_gain`), and
`assess_comparison` serves `swecl compare A B` (A the base). Both end in
`_verdict.verdict_line`. The gain's interval is the efficiency's bootstrap with an oracle
that resolves every task ((mem - base) / (1 - base)): the same draws, the same seed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import msgspec

from projections.compare._efficiency import (
    NO_ORACLE,
    ORACLE_HINT,
    Efficiency,
    PairedTasks,
    bootstrap,
    efficiency_of,
    resolved_by_task,
)
from projections.compare._stats import DEFAULT_RESAMPLES, DEFAULT_SEED
from projections.compare._verdict import VerdictInputs, paired_counts, verdict_line

if TYPE_CHECKING:
    from projections._outcomes import RunOutcomes
    from projections._runs import RunSummary
    from projections.compare._fold import Comparison
    from projections.compare._gain import Gain

Interval = tuple[float, float] | None


class Assessment(msgspec.Struct, frozen=True, kw_only=True):
    """A memory run against its base: the gain's intervals, the efficiency, the verdict line."""

    gain_ci: dict[str, Interval]
    """sequence -> the normalized gain's percentile bootstrap interval (None: undefined)."""
    gain_macro_ci: Interval
    efficiency: Efficiency
    verdict: str | None
    """None: no base to judge against."""

    def document(self) -> dict[str, object]:
        return {"gain_ci": {k: None if v is None else list(v) for k, v in self.gain_ci.items()},
                "gain_macro_ci": None if self.gain_macro_ci is None else list(self.gain_macro_ci),
                "memory_efficiency": self.efficiency.document(), "verdict": self.verdict}


def run_label(run: RunSummary) -> str:
    """`v3 plugin-accum` (as the tables name a run)."""
    shown = f"v{run.version}" if run.version.isdigit() else run.version
    return shown if run.stage == run.version else f"{shown} {run.stage}"


def gain_intervals(paired: Sequence[PairedTasks], *, resamples: int = DEFAULT_RESAMPLES,
                   seed: int = DEFAULT_SEED) -> tuple[dict[str, Interval], Interval]:
    """The normalized gain's intervals: the efficiency's bootstrap with an oracle that resolves every task."""
    tops = [msgspec.structs.replace(p, oracle=(True,) * len(p.mem)) for p in paired]
    per, (macro, _) = bootstrap(tops, resamples=resamples, seed=seed)
    return {name: ci for name, (ci, _) in per.items()}, macro


def _missing(outcomes: RunOutcomes, sequence: str, excluded: Mapping[str, str]) -> int:
    seq = outcomes.sequences.get(sequence)
    vector = outcomes.vector(sequence, "initial", excluded) or ([None] * len(seq.plan) if seq else [])
    return sum(1 for v in vector if v is None)


def assess_run(run: RunSummary, outcomes: RunOutcomes, excluded: Mapping[str, str], gain: Gain,
               known: Mapping[str, RunSummary], others: Mapping[str, RunOutcomes],
               others_excluded: Mapping[str, Mapping[str, str]], *, flagged: int | None = None,
               resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> Assessment:
    """`swecl metrics`: `run` against the base run of each sequence (`gain`'s), `others`
    holding the base and oracle runs' outcomes; `flagged`: its recalled items flagged as leakage."""
    bases = {name: g.base_version for name, g in gain.sequences.items()}
    eff = efficiency_of(run, outcomes, excluded, known, bases, others, others_excluded, resamples=resamples, seed=seed)
    paired: list[PairedTasks] = []
    missing_a = missing_b = 0
    for name, base in bases.items():
        if base is None:
            continue
        own, other = resolved_by_task(outcomes, name, excluded), resolved_by_task(others[base], name,
                                                                                  others_excluded.get(base, {}))
        ids = [i for i in own if i in other]
        paired.append(PairedTasks(name=name, mem=tuple(own[i] for i in ids), base=tuple(other[i] for i in ids),
                                  oracle=()))
        missing_a += _missing(others[base], name, others_excluded.get(base, {}))
        missing_b += _missing(outcomes, name, excluded)
    gain_ci, gain_macro_ci = gain_intervals(paired, resamples=resamples, seed=seed)
    if gain.na is not None or not paired:
        return Assessment(gain_ci=gain_ci, gain_macro_ci=gain_macro_ci, efficiency=eff, verdict=None)
    gained, lost, p = paired_counts([x for p_ in paired for x in p_.base], [x for p_ in paired for x in p_.mem])
    used = sorted({b for b in bases.values() if b is not None}, key=list(known).index)
    first = known[used[0]]
    inputs = VerdictInputs(
        a=", ".join(run_label(known[v]) for v in used), b=run_label(run), b_version=run.version, gained=gained,
        lost=lost, tasks=sum(len(p_.mem) for p_ in paired), p_value=p, gain=gain.macro, gain_ci=gain_macro_ci,
        efficiency=eff.macro, efficiency_ci=eff.ci, efficiency_na=eff.na, flagged=flagged,
        no_verdict_a=missing_a, no_verdict_b=missing_b, passes_a=tuple(first.passes), passes_b=tuple(run.passes),
        order_a=first.task_order, order_b=run.task_order)
    return Assessment(gain_ci=gain_ci, gain_macro_ci=gain_macro_ci, efficiency=eff, verdict=verdict_line(inputs))


def assess_comparison(comparison: Comparison, run_b: RunSummary, outcomes_b: RunOutcomes, excluded_b: Mapping[str, str],
                      known: Mapping[str, RunSummary], others: Mapping[str, RunOutcomes],
                      others_excluded: Mapping[str, Mapping[str, str]], *, oracle: str | None = None,
                      flagged: int | None = None, order_a: str | None = None) -> Assessment:
    """`swecl compare A B`: B against A as its base, over the tasks the comparison paired;
    the efficiency's oracle is `oracle` when given, else found for B (`others` holds A's and
    the oracle candidates' outcomes)."""
    a, b = comparison.a, comparison.b
    bases = {name: a.version for name in comparison.sequences}
    eff = efficiency_of(run_b, outcomes_b, excluded_b, known, bases, others, others_excluded, oracle=oracle,
                        resamples=comparison.resamples, seed=comparison.seed)
    paired = [PairedTasks(name=sa.name, mem=tuple(v == 1 for v in sb.initial), base=tuple(v == 1 for v in sa.initial),
                          oracle=())
              for sa, sb in zip(a.sequences, b.sequences, strict=True)]
    gain_ci, gain_macro_ci = gain_intervals(paired, resamples=comparison.resamples, seed=comparison.seed)
    m = comparison.macro
    inputs = VerdictInputs(
        a=a.label, b=b.label, b_version=b.version, gained=m.mcnemar.c, lost=m.mcnemar.b,
        tasks=sum(len(p.mem) for p in paired), p_value=m.mcnemar.p_value, gain=m.gain, gain_ci=gain_macro_ci,
        efficiency=eff.macro, efficiency_ci=eff.ci, efficiency_na=eff.na, flagged=flagged,
        no_verdict_a=round(m.missing_a), no_verdict_b=round(m.missing_b), passes_a=a.passes, passes_b=b.passes,
        order_a=order_a, order_b=run_b.task_order, paired_from=comparison.paired_from)
    return Assessment(gain_ci=gain_ci, gain_macro_ci=gain_macro_ci, efficiency=eff, verdict=verdict_line(inputs))


def _ci(ci: Interval) -> str:
    return "" if ci is None else f" [{ci[0]:.3f}, {ci[1]:.3f}]"


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def gain_line(label: str, gain: Gain, assessment: Assessment | None, short: Mapping[str, str]) -> str:
    """`normalized gain of v2 over base 1 (...): textkit=0.500 [..], ..., macro=0.667 [..]`."""
    cis = {} if assessment is None else assessment.gain_ci
    bases = sorted({g.base_version for g in gain.sequences.values() if g.base_version})
    cells = ", ".join(f"{short.get(name, name)}={_num(g.gain)}{_ci(cis.get(name))}" for name, g in gain.sequences.items())
    macro = _num(gain.macro) + ("" if assessment is None else _ci(assessment.gain_macro_ci))
    return (f"normalized gain of {label} over base {', '.join(bases)} ((mem - base) / (1 - base), initial-pass "
            f"resolve rates, 95% bootstrap CI): {cells}, macro={macro}")


def efficiency_line(label: str, eff: Efficiency, short: Mapping[str, str]) -> str:
    """`memory efficiency of v2 (...): textkit=0.500 [..] (oracle 5), ..., macro=...`, or n/a with the reason."""
    head = f"memory efficiency of {label} ((mem - base) / (oracle - base), initial-pass resolve rates"
    if eff.macro is None and not any(r.efficiency is not None for r in eff.sequences.values()):
        hint = f": {ORACLE_HINT}" if eff.na == NO_ORACLE else ""
        return f"{head}): n/a ({eff.na}{hint})"
    cells = ", ".join(
        f"{short.get(name, name)}=" + (f"{_num(r.efficiency)}{_ci(r.ci)} (oracle {r.oracle_version})"
                                       if r.efficiency is not None else f"n/a ({r.na})")
        for name, r in eff.sequences.items())
    return f"{head}, 95% bootstrap CI): {cells}, macro={_num(eff.macro)}{_ci(eff.ci)}"
