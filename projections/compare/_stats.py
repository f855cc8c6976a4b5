"""The statistics `swecl compare` reports: an exact McNemar test and paired bootstrap
percentile intervals. Pure functions of counts and arrays; numpy only (scipy is a test
dependency, the reference these are checked against)."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

DEFAULT_SEED = 0
DEFAULT_RESAMPLES = 10_000
CONFIDENCE = 0.95
GROUP_TEST = "stratified-exact"
"""`McNemar.test` of two groups of repeats: `stratified_exact_p`."""


class McNemar(msgspec.Struct, frozen=True, kw_only=True):
    """Exact McNemar test on paired binary outcomes (resolved or not, per task).

    `b`: tasks only run A resolved; `c`: tasks only run B resolved (the discordant pairs).
    Under the null hypothesis (the two runs resolve a task with the same probability) each
    discordant pair falls either way with probability 1/2, so the two-sided exact p-value is
    that of a binomial test of `c` successes in `b + c` trials with p = 0.5; 1.0 when there is
    no discordant pair (nothing speaks against the null).
    """

    b: int
    c: int
    both: int
    """Tasks both runs resolved."""
    neither: int
    """Tasks neither run resolved."""
    p_value: float
    test: str = "mcnemar"
    """"mcnemar" (one run per side), or GROUP_TEST for two groups of repeats: then `b` counts
    the tasks A's runs resolved more often than B's, `c` the reverse, `both`/`neither` the ties
    (above 0 / at 0), and the p-value is `stratified_exact_p`'s."""
    counts_a: tuple[int, ...] = ()
    """GROUP_TEST: per task, how many of A's runs resolved it."""
    counts_b: tuple[int, ...] = ()
    runs_a: int = 1
    runs_b: int = 1

    @property
    def discordant(self) -> int:
        return self.b + self.c


def mcnemar_exact_p(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value: 2 * P(X <= min(b, c)) for X ~ Binomial(b + c, 1/2),
    capped at 1. Computed with exact rationals: no cancellation, whatever b + c is."""
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be non-negative, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    # The binomial with p = 1/2 is symmetric, so the two tails are equal: doubling one is
    # exactly scipy.stats.binomtest's two-sided p (which sums both tails) for this case.
    tail = Fraction(sum(math.comb(n, i) for i in range(k + 1)), 2**n)
    return float(min(Fraction(1), 2 * tail))


def mcnemar(a_resolved: list[bool], b_resolved: list[bool]) -> McNemar:
    """The test on two runs' per-task resolved flags, paired by position (the same task)."""
    if len(a_resolved) != len(b_resolved):
        raise ValueError(f"paired outcomes differ in length: {len(a_resolved)} vs {len(b_resolved)}")
    pairs = list(zip(a_resolved, b_resolved, strict=True))
    b = sum(1 for x, y in pairs if x and not y)
    c = sum(1 for x, y in pairs if y and not x)
    both = sum(1 for x, y in pairs if x and y)
    return McNemar(b=b, c=c, both=both, neither=len(pairs) - b - c - both, p_value=mcnemar_exact_p(b, c))


def draw_indices(rng: np.random.Generator, n_tasks: int, resamples: int) -> npt.NDArray[np.int64]:
    """`resamples` bootstrap resamples of task positions 0..n-1 (one row each, drawn with
    replacement). Drawn as scipy.stats.bootstrap draws them (one `integers(0, n, (R, n))`
    call), so with the same generator state the resamples are identical to scipy's."""
    return rng.integers(0, n_tasks, (resamples, n_tasks))


def percentile_interval(
    distribution: npt.NDArray[np.float64], confidence: float = CONFIDENCE
) -> tuple[float, float] | None:
    """The percentile bootstrap interval (linear interpolation between order statistics, as
    numpy's and scipy's default quantile). Resamples where the statistic is undefined (NaN:
    e.g. a resample holding no term of F) are left out; None when none is defined."""
    import numpy as np

    finite = distribution[np.isfinite(distribution)]
    if finite.size == 0:
        return None
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(finite, [alpha, 1.0 - alpha])
    return float(low), float(high)


def t_quantile(probability: float, df: int) -> float:
    """The `probability` quantile of Student's t with `df` (a positive integer) degrees of
    freedom, for probability in (0.5, 1): the t with P(|T| < t) = 2 * probability - 1.

    P(|T| < t) has a closed form for integer df (Abramowitz & Stegun 26.7.3 and 26.7.4,
    theta = atan(t / sqrt(df))); it rises with theta on [0, pi/2), so bisection on theta finds
    the quantile to machine precision. Checked against scipy.stats.t.ppf in the tests."""
    if df < 1 or int(df) != df:
        raise ValueError(f"degrees of freedom must be a positive integer, got {df}")
    if not 0.5 < probability < 1.0:
        raise ValueError(f"probability must be in (0.5, 1), got {probability}")
    target = 2.0 * probability - 1.0
    low, high = 0.0, math.pi / 2
    for _ in range(200):
        mid = (low + high) / 2
        if _t_central(mid, int(df)) < target:
            low = mid
        else:
            high = mid
    return math.sqrt(df) * math.tan((low + high) / 2)


def _t_central(theta: float, df: int) -> float:
    """P(|T| < sqrt(df) tan(theta)) for Student's t with df degrees of freedom."""
    s, c = math.sin(theta), math.cos(theta)
    if df % 2 == 1:
        total, term = 0.0, c
        for k in range(1, (df - 1) // 2 + 1):
            # cos + (2/3) cos^3 + (2*4)/(3*5) cos^5 + ..., up to cos^(df-2)
            total += term
            term *= c * c * (2 * k) / (2 * k + 1)
        return (2 / math.pi) * (theta + s * total) if df > 1 else 2 * theta / math.pi
    total, term = 0.0, 1.0
    for k in range(1, df // 2 + 1):
        # 1 + (1/2) cos^2 + (1*3)/(2*4) cos^4 + ..., up to cos^(df-2)
        total += term
        term *= c * c * (2 * k - 1) / (2 * k)
    return s * total


class TInterval(msgspec.Struct, frozen=True, kw_only=True):
    """Mean and t-based interval of a few repeated measurements (the runs of a repeat group)."""

    n: int
    mean: float | None
    sd: float | None
    """Sample standard deviation (n - 1 in the denominator); None with n < 2."""
    ci: tuple[float, float] | None
    """mean -/+ t(1 - alpha/2, n - 1) * sd / sqrt(n); None with n < 2 (one run is no interval)."""


def t_interval(values: list[float], confidence: float = CONFIDENCE) -> TInterval:
    """The mean of `values` with its Student-t interval (as scipy.stats.t.interval with
    loc = mean, scale = the standard error): the repeats are treated as independent draws of
    the run-to-run distribution of the metric, which is what a repeat is."""
    n = len(values)
    if n == 0:
        return TInterval(n=0, mean=None, sd=None, ci=None)
    mean = math.fsum(values) / n
    if n == 1:
        return TInterval(n=1, mean=mean, sd=None, ci=None)
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile(1.0 - (1.0 - confidence) / 2.0, n - 1) * sd / math.sqrt(n)
    return TInterval(n=n, mean=mean, sd=sd, ci=(mean - half, mean + half))


def stratified_exact_p(resolved_a: list[int], runs_a: int, resolved_b: list[int], runs_b: int) -> float:
    """Two-sided exact p of an exact conditional permutation test for two groups of repeated
    runs over the same tasks; with one run per group it equals `mcnemar_exact_p`.

    Per task j, A resolved it in `resolved_a[j]` of its `runs_a` runs and B in `resolved_b[j]`
    of `runs_b`. Under the null (A and B resolve each task with the same probability, runs
    independent), a task's runs_a + runs_b outcomes are exchangeable between the groups, so
    given the task's total t_j, B's count is hypergeometric (t_j successes among
    runs_a + runs_b, runs_b drawn), independently across tasks (tasks are the strata). The
    statistic is D = sum_j (b_j / runs_b - a_j / runs_a), the summed difference of the
    per-task resolved rates, whose null mean is 0; p = P(|D| >= |observed D|), from the
    exact null distribution of sum_j b_j (a convolution of the hypergeometrics)."""
    import numpy as np

    if len(resolved_a) != len(resolved_b):
        raise ValueError(f"paired outcomes differ in length: {len(resolved_a)} vs {len(resolved_b)}")
    if runs_a < 1 or runs_b < 1:
        raise ValueError("each group needs at least one run")
    total = runs_a + runs_b
    dist = np.ones(1)  # P(sum of b_j so far = k), k = 0.. ; tasks with a fixed count shift it
    shift = 0  # the b_j of tasks whose count the margins fix
    observed_b = sum(resolved_b)
    sum_t = 0
    for a_j, b_j in zip(resolved_a, resolved_b, strict=True):
        if not (0 <= a_j <= runs_a and 0 <= b_j <= runs_b):
            raise ValueError(f"counts out of range: {a_j} of {runs_a}, {b_j} of {runs_b}")
        t = a_j + b_j
        sum_t += t
        low, high = max(0, t - runs_a), min(t, runs_b)
        if low == high:
            shift += low
            continue
        pmf = np.array([math.comb(t, k) * math.comb(total - t, runs_b - k) for k in range(low, high + 1)], dtype=float)
        shift += low
        dist = np.convolve(dist, pmf / pmf.sum())
    # |D| >= |D_obs|  <=>  |T * total - sum_t * runs_b| >= |T_obs * total - sum_t * runs_b|, T = sum_j b_j
    # (D = (T * total - sum_t * runs_b) / (runs_a * runs_b)): exact integer comparisons.
    values = (np.arange(len(dist)) + shift) * total - sum_t * runs_b
    observed = abs(observed_b * total - sum_t * runs_b)
    if observed == 0:
        return 1.0  # every outcome reaches |D| >= 0 (summing the floats could say 0.9999999999999999)
    p = float(dist[np.abs(values) >= observed].sum())
    return min(1.0, p)
