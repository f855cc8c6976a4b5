"""Calendar helpers for intervals of dates."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

from .interval import Interval

__all__ = ["days", "month_of", "split_by_month"]


def days(interval: Interval) -> Iterator[dt.date]:
    """Every date in a date interval, in order."""
    day = interval.start
    while day < interval.end:
        yield day
        day += dt.timedelta(days=1)


def month_of(day: dt.date) -> Interval:
    """The calendar month of *day*: [its first day, the first day of the next month)."""
    first = day.replace(day=1)
    return Interval(first, first.replace(month=first.month + 1))


def split_by_month(interval: Interval) -> list[Interval]:
    """Cut a date interval at month boundaries: one piece per calendar month it touches."""
    pieces: list[Interval] = []
    start = interval.start
    while start < interval.end:
        end = min(_next_month(start), interval.end)
        pieces.append(Interval(start, end))
        start = end
    return pieces


def _next_month(day: dt.date) -> dt.date:
    """The first day of the month after *day*'s month."""
    return day.replace(day=1, month=day.month + 1)
