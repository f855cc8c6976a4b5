"""The Wilson score interval of a rate of tasks resolved: the report's headline bars and
the leaderboard's ranking key draw the same interval from here."""

from __future__ import annotations

import math

Z95 = 1.959963984540054


def wilson(resolved: int, tasks: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of `resolved` / `tasks` (None without tasks)."""
    if tasks <= 0:
        return None
    p = resolved / tasks
    denominator = 1 + z * z / tasks
    centre = (p + z * z / (2 * tasks)) / denominator
    half = z * math.sqrt(p * (1 - p) / tasks + z * z / (4 * tasks * tasks)) / denominator
    # The interval holds p: at p = 0 or 1 the bound equals p, and rounding must not put it past p.
    return min(p, max(0.0, centre - half)), max(p, min(1.0, centre + half))
