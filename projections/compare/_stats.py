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
