"""Set algebra on collections of intervals."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .interval import Interval

__all__ = ["gaps", "merge", "subtract", "total_length"]


def merge(intervals: Iterable[Interval]) -> list[Interval]:
    """The union of *intervals* as sorted, disjoint intervals; touching ones are joined."""
    merged: list[Interval] = []
    for current in intervals:
        if current.is_empty():
            continue
        if merged and current.start <= merged[-1].end:
            merged[-1] = merged[-1].hull(current)
        else:
            merged.append(current)
    return merged


def subtract(interval: Interval, other: Interval) -> list[Interval]:
    """The parts of *interval* outside *other*: none, one or two intervals."""
    if not interval.overlaps(other):
        return [interval]
    if other.start > interval.start:
        return [Interval(interval.start, other.start)]
    if other.end < interval.end:
        return [Interval(other.end, interval.end)]
    return []


def gaps(intervals: Iterable[Interval], within: Interval) -> list[Interval]:
    """The parts of *within* that none of *intervals* covers."""
    holes: list[Interval] = []
    cursor = within.start
    for interval in merge(intervals):
        if interval.end <= cursor:
            continue
        if interval.start >= within.end:
            break
        if interval.start > cursor:
            holes.append(Interval(cursor, interval.start))
        cursor = max(cursor, interval.end)
    if cursor < within.end:
        holes.append(Interval(cursor, within.end))
    return holes


def total_length(intervals: Iterable[Interval], zero: Any = 0) -> Any:
    """The length of the union of *intervals*, overlaps counted once.

    *zero* is the empty length: 0 for numbers, `timedelta(0)` for dates and times.
    """
    total = zero
    for interval in merge(intervals):
        total = total + interval.length
    return total
