"""The `native` formula set: docs/design.md section 7, with missing outcomes excluded, never zeroed.

Per sequence of N tasks, with a(i,i) = `initial`, a(N,j) = `final` (or `initial` when there
was no re-test) and b(j) = `baseline`:

- ACC  = mean_j a(N,j)
- F    = sum_{j<N} (a(j,j) - a(N,j)) / (N-1); 0 when N <= 1
- BWT  = -F
- FWT  = sum_{j>=2} (a(j,j) - b(j)) / (N-1); 0 when N <= 1 or there is no baseline
- AULC = (1/N) sum_{i=1..N} (1/i) sum_{k<=i} a(k,k)
- CL-P = mean_i a(i,i); CL-S = 1 - F; CL-F1 = 2PS/(P+S), 0 when P+S = 0
- CL-Score = l_acc*ACC - l_f*F + l_fwt*FWT + l_bwt*BWT + l_aulc*AULC

Missing outcomes (None), precisely:

- ACC, CL-P: mean over the valid entries of the vector (denominator = valid count).
- F (and BWT, CL-S): a term j < N enters only when both a(j,j) and a(N,j) are valid; the
  denominator is the number of such terms (N-1 when nothing is missing).
- FWT: likewise, a term j >= 2 enters only when both a(j,j) and b(j) are valid.
- AULC: a task whose a(i,i) is missing is dropped from the learning curve; AULC is the
  formula above over the valid subsequence of `initial`, in order (with M valid tasks,
  (1/M) sum over the M prefix means). With nothing missing this is the formula above.
- A metric with no valid terms is None (not computable), not 0. The structural zeros stay
  zeros: N <= 1 gives F = BWT = FWT = 0 and no baseline gives FWT = 0, whatever is missing.
- CL-F1 is None when P or S is; CL-Score is None when a term with a non-zero lambda is.

With no missing outcomes every formula reduces to docs/design.md section 7's, and
reproduces its public test vectors A, B and C exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from projections.metrics._vectors import (
    METRIC_NAMES,
    Lambdas,
    Outcome,
    SequenceOutcomes,
    SequenceScore,
)

NAME = "native"
VERSION = 1
DESCRIPTION = "docs/design.md section 7: ACC over the final re-test a(N,j); missing outcomes excluded from every sum and mean"


def score_native(seq: SequenceOutcomes, lambdas: Lambdas) -> SequenceScore:
    n = seq.n_tasks
    initial = seq.initial
    final = seq.final_or_initial
    notes: list[str] = []

    acc = mean_valid(final)
    if n <= 1:
        forgetting: float | None = 0.0
        fwt: float | None = 0.0
        notes.append("N = 1: F, BWT and FWT are 0 by definition")
    else:
        forgetting = mean_paired(initial[:-1], final[:-1], lambda a, b: a - b)
        if seq.baseline is None:
            fwt = 0.0
        else:
            fwt = mean_paired(initial[1:], seq.baseline[1:], lambda a, b: a - b)
    if seq.final is None and n > 1:
        notes.append("no re-test recorded: final = initial, so F = BWT = 0")
    if seq.baseline is None:
        notes.append("no baseline (memory-off) results: FWT = 0")
    aulc = aulc_valid_subsequence(initial)
    plasticity = mean_valid(initial)
    stability = one_minus(forgetting)
    metrics = assemble(
        acc=acc,
        forgetting=forgetting,
        fwt=fwt,
        aulc=aulc,
        plasticity=plasticity,
        stability=stability,
        lambdas=lambdas,
    )
    notes.extend(missing_notes(seq, "excluded from the sums and means they enter"))
    notes.extend(not_computable_notes(metrics))
    return SequenceScore(metrics=metrics, notes=tuple(notes))


def mean_valid(vector: Sequence[Outcome]) -> float | None:
    valid = [value for value in vector if value is not None]
    if not valid:
        return None
    return sum(valid) / len(valid)


def mean_paired(
    left: Sequence[Outcome], right: Sequence[Outcome], term: Callable[[int, int], int]
) -> float | None:
    """Mean of term(l, r) over the positions where both entries are valid."""
    terms = [term(a, b) for a, b in zip(left, right, strict=True) if a is not None and b is not None]
    if not terms:
        return None
    return sum(terms) / len(terms)


def aulc_valid_subsequence(vector: Sequence[Outcome]) -> float | None:
    valid = [value for value in vector if value is not None]
    if not valid:
        return None
    running = 0
    curve = 0.0
    for i, value in enumerate(valid, start=1):
        running += value
        curve += running / i
    return curve / len(valid)


def negate(value: float | None) -> float | None:
    # 0.0 - x rather than -x: a zero F must give BWT 0.0, not -0.0 in reports and JSON.
    return None if value is None else 0.0 - value


def one_minus(value: float | None) -> float | None:
    return None if value is None else 1.0 - value


def cl_f1(plasticity: float | None, stability: float | None) -> float | None:
    if plasticity is None or stability is None:
        return None
    total = plasticity + stability
    if total == 0:
        return 0.0
    return 2.0 * plasticity * stability / total


def cl_score(
    *,
    acc: float | None,
    forgetting: float | None,
    fwt: float | None,
    bwt: float | None,
    aulc: float | None,
    lambdas: Lambdas,
) -> float | None:
    terms = (
        (lambdas.acc, acc),
        (-lambdas.f, forgetting),
        (lambdas.fwt, fwt),
        (lambdas.bwt, bwt),
        (lambdas.aulc, aulc),
    )
    total = 0.0
    for weight, value in terms:
        if weight == 0:
            # A switched-off term cannot make the score uncomputable.
            continue
        if value is None:
            return None
        total += weight * value
    return total


def assemble(
    *,
    acc: float | None,
    forgetting: float | None,
    fwt: float | None,
    aulc: float | None,
    plasticity: float | None,
    stability: float | None,
    lambdas: Lambdas,
) -> dict[str, float | None]:
    """The nine metrics from the five a set defines itself (BWT = -F, S = 1 - F given)."""
    bwt = negate(forgetting)
    values: dict[str, float | None] = {
        "ACC": acc,
        "F": forgetting,
        "BWT": bwt,
        "FWT": fwt,
        "AULC": aulc,
        "CL-P": plasticity,
        "CL-S": stability,
        "CL-F1": cl_f1(plasticity, stability),
        "CL-Score": cl_score(acc=acc, forgetting=forgetting, fwt=fwt, bwt=bwt, aulc=aulc, lambdas=lambdas),
    }
    return {name: (None if values[name] is None else float(values[name])) for name in METRIC_NAMES}


def missing_notes(seq: SequenceOutcomes, how: str) -> list[str]:
    notes = []
    for field in ("initial", "final", "baseline"):
        vector = getattr(seq, field)
        if vector is None:
            continue
        missing = sum(1 for value in vector if value is None)
        if missing:
            notes.append(f"{missing} of {len(vector)} '{field}' outcomes missing, {how}")
    return notes


_DERIVED = frozenset({"BWT", "CL-S", "CL-F1", "CL-Score"})


def not_computable_notes(metrics: dict[str, float | None]) -> list[str]:
    notes = []
    for name, value in metrics.items():
        if value is None:
            why = "a metric it is built from is not computable" if name in _DERIVED else "no valid terms"
            notes.append(f"{name} not computable: {why}")
    return notes
