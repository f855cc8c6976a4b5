"""The compared metrics of one sequence on bootstrap resamples of its tasks, vectorised.

Each metric is written as per-task terms over the task positions k of the recorded order,
`metric = sum_k num_k / sum_k den_k` (a mean over the tasks its formula sums over), with
the formula set's own conventions for empty inputs. A resample is a row of task positions
drawn with replacement; the metric on it is the same ratio over the drawn positions (a
position drawn twice counts twice). With every position drawn once this is exactly the
formula set's value (the tests check it against `projections.metrics.compute`), so the
bootstrap distribution is that of the metric `swecl metrics` reports. What stays fixed is
what a task keeps from its place in the recorded run: its row N re-test a(N,j) (taken
after the whole sequence), whether it is the last task (no F term) or the first (no FWT
term), and its weight on the learning curve (AULC, inside CL-Score).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from projections.metrics import Lambdas, Outcome, SequenceOutcomes, get_formula

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Floats = npt.NDArray[np.float64]
    Indices = npt.NDArray[np.int64]

RESOLVED = "resolved_rate"
"""The initial-pass resolved rate: tasks resolved / tasks planned (no valid verdict = not resolved)."""

COMPARED: tuple[str, ...] = (RESOLVED, "ACC", "F", "FWT", "CL-Score")
"""What `swecl compare` reports, in order."""


def resampled_metrics(seq: SequenceOutcomes, formula: str, lambdas: Lambdas, idx: Indices) -> dict[str, Floats]:
    """metric -> its value on each resample (one per row of `idx`, task positions 0..n-1);
    NaN where the metric is undefined on that resample (no term to average). Keys: COMPARED
    and AULC (a CL-Score term)."""
    name = get_formula(formula).name  # an unknown formula is refused as `swecl metrics` refuses it
    if idx.ndim != 2 or (idx.size and (idx.min() < 0 or idx.max() >= seq.n_tasks)):
        raise ValueError(f"resample indices must be a 2-d array of positions 0..{seq.n_tasks - 1}")
    # How often each task is drawn in each resample: every sum over a resample's tasks is
    # then one matrix-vector product (the same number as summing the drawn tasks' values).
    counts = _counts(idx, seq.n_tasks)
    terms = _eval_v1(seq, counts) if name == "eval-v1" else _native(seq, counts)
    terms[RESOLVED] = resolved_rate(seq, counts)
    terms["CL-Score"] = _cl_score(terms, lambdas)
    return terms


def resolved_rate(seq: SequenceOutcomes, counts: Floats) -> Floats:
    import numpy as np

    resolved = np.array([1.0 if v == 1 else 0.0 for v in seq.initial])
    return _ratio(counts, resolved, np.ones(seq.n_tasks))


def _native(seq: SequenceOutcomes, counts: Floats) -> dict[str, Floats]:
    """projections.metrics._native: missing outcomes leave the sums they would enter."""
    import numpy as np

    n = seq.n_tasks
    ini_ok, ini = _split(seq.initial)
    fin_ok, fin = _split(seq.final_or_initial)
    out = {"ACC": _ratio(counts, fin * fin_ok, fin_ok)}
    if n <= 1:  # F = FWT = 0 by definition
        out["F"] = out["FWT"] = np.zeros(len(counts))
    else:
        positions = np.arange(n)
        f_terms = ini_ok * fin_ok * (positions < n - 1)
        out["F"] = _ratio(counts, (ini - fin) * f_terms, f_terms)
        if seq.baseline is None:
            out["FWT"] = np.zeros(len(counts))
        else:
            base_ok, base = _split(seq.baseline)
            fwt_terms = ini_ok * base_ok * (positions >= 1)
            out["FWT"] = _ratio(counts, (ini - base) * fwt_terms, fwt_terms)
    # AULC over the valid subsequence of a(i,i): the m-th valid task (of M) weighs
    # c_m = sum_{i=m..M} 1/i, and AULC = sum_m c_m a_m / sum_m c_m (sum_m c_m = M).
    valid = int(ini_ok.sum())
    weights = np.zeros(n)
    if valid:
        tail = np.cumsum((1.0 / np.arange(1, valid + 1))[::-1])[::-1]
        weights[ini_ok.astype(bool)] = tail
    out["AULC"] = _ratio(counts, weights * ini, weights)
    return out


def _eval_v1(seq: SequenceOutcomes, counts: Floats) -> dict[str, Floats]:
    """projections.metrics._eval_v1: missing outcomes count as unresolved outside ACC, and
    an empty input gives that formula's 0.0, decided again on each resample (a resample
    whose re-test outcomes are all missing falls back to the initial pass, as eval_v1 does)."""
    import numpy as np

    n = seq.n_tasks
    ini_ok, ini = _split(seq.initial)
    rows = len(counts)
    recorded = counts @ ini_ok > 0
    out = {"ACC": _ratio(counts, ini * ini_ok, ini_ok, empty=0.0)}
    zeros = np.zeros(rows)
    if n <= 1:
        out["F"] = out["FWT"] = zeros
    else:
        positions = np.arange(n)
        if seq.final is None:
            out["F"] = zeros  # final = initial
        else:
            fin_ok, fin = _split(seq.final)
            not_last = (positions < n - 1).astype(float)
            final_recorded = counts @ fin_ok > 0
            out["F"] = np.where(recorded & final_recorded, _ratio(counts, (ini - fin) * not_last, not_last), 0.0)
        if seq.baseline is None:
            out["FWT"] = zeros
        else:
            base_ok, base = _split(seq.baseline)
            not_first = (positions >= 1).astype(float)
            base_recorded = counts @ base_ok > 0
            out["FWT"] = np.where(recorded & base_recorded, _ratio(counts, (ini - base) * not_first, not_first), 0.0)
    # AULC over the full order, missing = 0: task k (1-based) weighs sum_{i=k..n} 1/i.
    weights = np.cumsum((1.0 / np.arange(1, n + 1))[::-1])[::-1]
    out["AULC"] = np.where(recorded, _ratio(counts, weights * ini, weights), 0.0)
    return out


def _cl_score(terms: dict[str, Floats], lambdas: Lambdas) -> Floats:
    """CL-Score = acc*ACC - f*F + fwt*FWT + bwt*BWT + aulc*AULC with BWT = -F, as
    projections.metrics._native.cl_score: a term weighed 0 cannot make it undefined."""
    import numpy as np

    weighed = (
        (lambdas.acc, terms["ACC"]),
        (-lambdas.f, terms["F"]),
        (lambdas.fwt, terms["FWT"]),
        (-lambdas.bwt, terms["F"]),
        (lambdas.aulc, terms["AULC"]),
    )
    total = np.zeros(len(terms["ACC"]))
    for weight, values in weighed:
        if weight != 0:
            total = total + weight * values
    return total


def _split(vector: Sequence[Outcome]) -> tuple[Floats, Floats]:
    """(1.0 where the outcome is valid, the outcome with missing as 0.0)."""
    import numpy as np

    ok = np.array([0.0 if v is None else 1.0 for v in vector])
    return ok, np.array([0.0 if v is None else float(v) for v in vector])


def _counts(idx: Indices, n: int) -> Floats:
    """(resamples, n): how many times each resample drew each task position."""
    import numpy as np

    rows = len(idx)
    flat = (idx + n * np.arange(rows)[:, None]).ravel()
    return np.bincount(flat, minlength=rows * n).reshape(rows, n).astype(float)


def _ratio(counts: Floats, num: Floats, den: Floats, empty: float = float("nan")) -> Floats:
    """sum of num over each resample's draws / sum of den; `empty` where den sums to 0."""
    import numpy as np

    top = counts @ num
    bottom = counts @ den
    out = np.full(len(counts), empty)
    np.divide(top, bottom, out=out, where=bottom > 0)
    return out
