"""Half-open intervals: [start, end) contains start but not end."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Interval"]


@dataclass(frozen=True, order=True)
class Interval:
    """The values x with start <= x < end, for any ordered type (int, float, date...).

    Half-open intervals tile without overlap: [1, 3) and [3, 5) share no value.
    """

    start: Any
    end: Any

    def __post_init__(self) -> None:
        if self.end < self.start:
            raise ValueError(f"interval ends before it starts: [{self.start!r}, {self.end!r})")

    def __contains__(self, value: Any) -> bool:
        return self.start <= value < self.end

    @property
    def length(self) -> Any:
        return self.end - self.start

    def is_empty(self) -> bool:
        return self.start == self.end

    def overlaps(self, other: Interval) -> bool:
        """True when some value lies in both intervals."""
        return self.start <= other.end and other.start <= self.end

    def intersection(self, other: Interval) -> Interval | None:
        """The values in both intervals, or None when they do not overlap."""
        if not self.overlaps(other):
            return None
        return Interval(max(self.start, other.start), min(self.end, other.end))

    def hull(self, other: Interval) -> Interval:
        """The smallest interval containing both."""
        return Interval(min(self.start, other.start), max(self.end, other.end))
