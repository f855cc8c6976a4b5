"""spans: half-open interval arithmetic over numbers and dates (demo sequence 2).

Design (see README.md): #8 and #12 are fixed from scratch; #19 brings #8's bug back
(a rebase of an old branch) and #31 brings #12's back (a refactor that moved a sort to
one caller); #24 needs knowledge nothing earlier holds; #36 reads like the `overlaps()`
and `merge()` issues, so memory recalls their fixes first, which no longer apply, and
the agent falls back to its own (correct) attempt.
"""

from __future__ import annotations

from ._history import GOLD, Commit, DemoTask, Edit, Library

__all__ = ["SPANS"]

_PYPROJECT = '''\
[project]
name = "spans"
version = "1.2.0"
description = "Half-open intervals over numbers, dates and times, and the set algebra on them"
requires-python = ">=3.9"
license = "MIT"

[tool.pytest.ini_options]
testpaths = ["tests"]
pythonpath = ["."]
'''

_README = '''\
# spans

Half-open intervals `[start, end)` over anything ordered (ints, floats, dates,
datetimes), and the set algebra on collections of them: merge, subtract, gaps,
total length, splitting date ranges by calendar month.

```python
>>> from spans import Interval, merge, subtract
>>> merge([Interval(5, 8), Interval(1, 3), Interval(2, 4)])
[Interval(start=1, end=4), Interval(start=5, end=8)]
>>> subtract(Interval(0, 10), Interval(3, 5))
[Interval(start=0, end=3), Interval(start=5, end=10)]
```

Half-open means `[1, 3)` and `[3, 5)` touch but do not overlap, so intervals tile a
line without double counting. Run the tests with `python -m pytest`.
'''

_INIT = '''\
"""spans: half-open intervals and the set algebra on them."""

from .dates import days, month_of, split_by_month
from .interval import Interval
from .ops import gaps, merge, subtract, total_length

__all__ = ["Interval", "days", "gaps", "merge", "month_of", "split_by_month", "subtract", "total_length"]
__version__ = "1.2.0"
'''

_INTERVAL = '''\
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
'''

_OPS = '''\
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
'''

_DATES = '''\
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
    return Interval(first, _next_month(first))


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
'''

_TEST_INTERVAL = '''\
import pytest

from spans import Interval


def test_contains_is_half_open():
    interval = Interval(1, 3)
    assert 1 in interval
    assert 2.5 in interval
    assert 3 not in interval


def test_rejects_end_before_start():
    with pytest.raises(ValueError):
        Interval(5, 1)


def test_length_and_empty():
    assert Interval(2, 7).length == 5
    assert Interval(4, 4).is_empty()


def test_overlapping_intervals_overlap():
    assert Interval(1, 4).overlaps(Interval(3, 6))
    assert Interval(3, 6).overlaps(Interval(1, 4))
    assert Interval(0, 10).overlaps(Interval(2, 3))


def test_disjoint_intervals_do_not_overlap():
    assert not Interval(1, 2).overlaps(Interval(5, 6))


def test_intersection():
    assert Interval(1, 4).intersection(Interval(3, 6)) == Interval(3, 4)
    assert Interval(1, 2).intersection(Interval(5, 6)) is None


def test_hull():
    assert Interval(1, 2).hull(Interval(5, 6)) == Interval(1, 6)
'''

_TEST_OPS = '''\
from spans import Interval, gaps, merge, subtract, total_length


def test_merge_sorted_input():
    assert merge([Interval(1, 3), Interval(2, 5), Interval(7, 9)]) == [Interval(1, 5), Interval(7, 9)]


def test_merge_joins_touching_intervals():
    assert merge([Interval(1, 3), Interval(3, 5)]) == [Interval(1, 5)]


def test_merge_skips_empty_intervals():
    assert merge([Interval(2, 2), Interval(4, 6)]) == [Interval(4, 6)]


def test_subtract_disjoint():
    assert subtract(Interval(0, 5), Interval(7, 9)) == [Interval(0, 5)]


def test_subtract_overlapping_end():
    assert subtract(Interval(0, 5), Interval(3, 9)) == [Interval(0, 3)]
    assert subtract(Interval(3, 9), Interval(0, 5)) == [Interval(5, 9)]


def test_subtract_covering():
    assert subtract(Interval(2, 4), Interval(0, 10)) == []


def test_gaps():
    busy = [Interval(9, 10), Interval(12, 13)]
    assert gaps(busy, Interval(8, 17)) == [Interval(8, 9), Interval(10, 12), Interval(13, 17)]


def test_total_length_counts_overlap_once():
    assert total_length([Interval(0, 4), Interval(2, 6)]) == 6
'''

_TEST_DATES = '''\
import datetime as dt

from spans import Interval, days, month_of, split_by_month

D = dt.date


def test_days():
    assert list(days(Interval(D(2024, 2, 27), D(2024, 3, 2)))) == [
        D(2024, 2, 27), D(2024, 2, 28), D(2024, 2, 29), D(2024, 3, 1)
    ]


def test_month_of():
    assert month_of(D(2024, 2, 14)) == Interval(D(2024, 2, 1), D(2024, 3, 1))


def test_split_by_month_within_a_year():
    pieces = split_by_month(Interval(D(2024, 1, 20), D(2024, 3, 5)))
    assert pieces == [
        Interval(D(2024, 1, 20), D(2024, 2, 1)),
        Interval(D(2024, 2, 1), D(2024, 3, 1)),
        Interval(D(2024, 3, 1), D(2024, 3, 5)),
    ]
'''


def _e(path: str, old: str, new: str) -> Edit:
    return Edit(path, old, new)


_OVERLAPS_BUG = "        return self.start <= other.end and other.start <= self.end\n"
_OVERLAPS_FIX = "        return self.start < other.end and other.start < self.end\n"
_MERGE_BUG = "    for current in intervals:\n"
_MERGE_FIX = "    for current in sorted(intervals):\n"

_T8 = DemoTask(
    number=8,
    title="Touching intervals are reported as overlapping: [1, 3) and [3, 5)",
    body='''\
`Interval.overlaps()` returns `True` for intervals that only touch:

```python
>>> from spans import Interval
>>> Interval(1, 3).overlaps(Interval(3, 5))
True
>>> Interval(1, 3).intersection(Interval(3, 5))
Interval(start=3, end=3)
```

With half-open intervals `[1, 3)` and `[3, 5)` share no value, as the class docstring
itself says. We book meeting rooms with `spans` and back-to-back meetings (10:00-11:00
and 11:00-12:00) are flagged as double bookings.

Expected `overlaps()` to be `False` and `intersection()` to be `None` for touching
intervals.
''',
    difficulty=1,
    version="1.2",
    fix_message="overlaps(): touching half-open intervals do not overlap",
    fix=(_e("spans/interval.py", _OVERLAPS_BUG, _OVERLAPS_FIX),),
    tests=(
        _e(
            "tests/test_interval.py",
            '''def test_intersection():''',
            '''def test_touching_intervals_do_not_overlap():
    assert not Interval(1, 3).overlaps(Interval(3, 5))
    assert not Interval(3, 5).overlaps(Interval(1, 3))
    assert Interval(1, 3).intersection(Interval(3, 5)) is None


def test_intersection():''',
        ),
    ),
    attempt=GOLD,
    fail_to_pass=(
        "tests/test_interval.py::test_touching_intervals_do_not_overlap",
    ),
    pass_to_pass=(
        "tests/test_interval.py::test_contains_is_half_open",
        "tests/test_interval.py::test_disjoint_intervals_do_not_overlap",
        "tests/test_interval.py::test_hull",
        "tests/test_interval.py::test_intersection",
        "tests/test_interval.py::test_length_and_empty",
        "tests/test_interval.py::test_overlapping_intervals_overlap",
        "tests/test_interval.py::test_rejects_end_before_start",
    ),
    kind="new",
    expect_memory_on=True,
    expect_memory_off=True,
    notes="New bug; the bundled attempt is the gold fix. Recurred by #19.",
)

_T12 = DemoTask(
    number=12,
    title="merge() joins disjoint intervals when the input is not sorted",
    body='''\
`merge()` gives wrong results unless the intervals are already sorted by start:

```python
>>> from spans import Interval, merge
>>> merge([Interval(5, 8), Interval(1, 3)])
[Interval(start=1, end=8)]
```

`[1, 3)` and `[5, 8)` are disjoint, so the union should be both of them:
`[Interval(1, 3), Interval(5, 8)]`. Nothing in the docstring says the input must be
sorted, and `total_length()` and `gaps()` inherit the problem:

```python
>>> total_length([Interval(5, 8), Interval(1, 3)])
7
```

(should be 5).
''',
    difficulty=2,
    version="1.2",
    fix_message="merge(): sort the input before merging",
    fix=(_e("spans/ops.py", _MERGE_BUG, _MERGE_FIX),),
    tests=(
        _e(
            "tests/test_ops.py",
            '''def test_merge_joins_touching_intervals():''',
            '''def test_merge_unsorted_input():
    assert merge([Interval(5, 8), Interval(1, 3)]) == [Interval(1, 3), Interval(5, 8)]
    assert merge([Interval(5, 8), Interval(1, 3), Interval(2, 6)]) == [Interval(1, 8)]


def test_total_length_unsorted_input():
    assert total_length([Interval(5, 8), Interval(1, 3)]) == 5


def test_merge_joins_touching_intervals():''',
        ),
    ),
    attempt=GOLD,
    fail_to_pass=(
        "tests/test_ops.py::test_merge_unsorted_input",
        "tests/test_ops.py::test_total_length_unsorted_input",
    ),
    pass_to_pass=(
        "tests/test_ops.py::test_gaps",
        "tests/test_ops.py::test_merge_joins_touching_intervals",
        "tests/test_ops.py::test_merge_skips_empty_intervals",
        "tests/test_ops.py::test_merge_sorted_input",
        "tests/test_ops.py::test_subtract_covering",
        "tests/test_ops.py::test_subtract_disjoint",
        "tests/test_ops.py::test_subtract_overlapping_end",
        "tests/test_ops.py::test_total_length_counts_overlap_once",
    ),
    kind="new",
    expect_memory_on=True,
    expect_memory_off=True,
    notes="New bug; the bundled attempt is the gold fix. Recurred by #31.",
)

_T19 = DemoTask(
    number=19,
    title="overlaps() says [1, 3) and [3, 5) overlap again since 1.3.0",
    body='''\
Back-to-back bookings are flagged as conflicts again after upgrading to 1.3.0:

```python
>>> from spans import Interval
>>> Interval(1, 3).overlaps(Interval(3, 5))
True
```

Touching half-open intervals must not overlap. I think this was fixed before (in 1.2.x),
maybe the new `touches()` / `gap_to()` change brought it back?
''',
    difficulty=1,
    version="1.3",
    before=(
        Commit(
            "Add Interval.touches() and Interval.gap_to() (#17)",
            (
                _e("spans/interval.py", _OVERLAPS_FIX, _OVERLAPS_BUG),
                _e(
                    "spans/interval.py",
                    '''    def hull(self, other: Interval) -> Interval:
        """The smallest interval containing both."""
        return Interval(min(self.start, other.start), max(self.end, other.end))
''',
                    '''    def hull(self, other: Interval) -> Interval:
        """The smallest interval containing both."""
        return Interval(min(self.start, other.start), max(self.end, other.end))

    def touches(self, other: Interval) -> bool:
        """True when one interval ends exactly where the other starts."""
        return self.end == other.start or other.end == self.start

    def gap_to(self, other: Interval) -> Any:
        """The distance between two disjoint intervals (zero when they touch or overlap)."""
        if self.end <= other.start:
            return other.start - self.end
        if other.end <= self.start:
            return self.start - other.end
        return self.start - self.start
''',
                ),
                _e(
                    "tests/test_interval.py",
                    '''def test_hull():''',
                    '''def test_touches_and_gap_to():
    assert Interval(1, 3).touches(Interval(3, 5))
    assert Interval(1, 3).gap_to(Interval(6, 8)) == 3
    assert Interval(6, 8).gap_to(Interval(1, 3)) == 3


def test_hull():''',
                ),
                _e("pyproject.toml", 'version = "1.2.0"', 'version = "1.3.0"'),
                _e("spans/__init__.py", '__version__ = "1.2.0"', '__version__ = "1.3.0"'),
            ),
        ),
    ),
    fix_message="overlaps(): restore strict comparisons lost in #17",
    fix=(_e("spans/interval.py", _OVERLAPS_BUG, _OVERLAPS_FIX),),
    tests=(
        _e(
            "tests/test_interval.py",
            '''def test_intersection():''',
            '''def test_back_to_back_bookings_do_not_overlap():
    morning, noon = Interval(10, 11), Interval(11, 12)
    assert not morning.overlaps(noon)
    assert morning.touches(noon)


def test_intersection():''',
        ),
    ),
    # Plausible but wrong: makes only one of the two comparisons strict.
    attempt=(
        _e(
            "spans/interval.py",
            _OVERLAPS_BUG,
            "        return self.start < other.end and other.start <= self.end\n",
        ),
    ),
    fail_to_pass=(
        "tests/test_interval.py::test_back_to_back_bookings_do_not_overlap",
        "tests/test_interval.py::test_touching_intervals_do_not_overlap",
    ),
    pass_to_pass=(
        "tests/test_interval.py::test_contains_is_half_open",
        "tests/test_interval.py::test_disjoint_intervals_do_not_overlap",
        "tests/test_interval.py::test_hull",
        "tests/test_interval.py::test_intersection",
        "tests/test_interval.py::test_length_and_empty",
        "tests/test_interval.py::test_overlapping_intervals_overlap",
        "tests/test_interval.py::test_rejects_end_before_start",
        "tests/test_interval.py::test_touches_and_gap_to",
    ),
    kind="recurrence",
    recurs=8,
    expect_memory_on=True,
    expect_memory_off=False,
    notes="#17 (an old branch) restored #8's comparisons; #8's fix applies verbatim.",
)

_T24 = DemoTask(
    number=24,
    title="split_by_month() crashes with 'month must be in 1..12' for ranges through December",
    body='''\
Splitting any date range that contains a December raises:

```python
>>> import datetime as dt
>>> from spans import Interval, split_by_month
>>> split_by_month(Interval(dt.date(2023, 12, 15), dt.date(2024, 1, 10)))
Traceback (most recent call last):
  ...
  File ".../spans/dates.py", line 40, in _next_month
    return day.replace(day=1, month=day.month + 1)
ValueError: month must be in 1..12
```

`month_of(dt.date(2023, 12, 5))` fails the same way. Expected
`[Interval(2023-12-15, 2024-01-01), Interval(2024-01-01, 2024-01-10)]`.
''',
    difficulty=3,
    version="1.3",
    fix_message="_next_month(): roll over into January of the next year",
    fix=(
        _e(
            "spans/dates.py",
            "    return day.replace(day=1, month=day.month + 1)\n",
            "    if day.month == 12:\n"
            "        return dt.date(day.year + 1, 1, 1)\n"
            "    return day.replace(day=1, month=day.month + 1)\n",
        ),
    ),
    tests=(
        _e(
            "tests/test_dates.py",
            '''def test_split_by_month_within_a_year():''',
            '''def test_split_by_month_across_new_year():
    pieces = split_by_month(Interval(D(2023, 12, 15), D(2024, 1, 10)))
    assert pieces == [Interval(D(2023, 12, 15), D(2024, 1, 1)), Interval(D(2024, 1, 1), D(2024, 1, 10))]


def test_month_of_december():
    assert month_of(D(2023, 12, 5)) == Interval(D(2023, 12, 1), D(2024, 1, 1))


def test_split_by_month_within_a_year():''',
        ),
    ),
    # Plausible but wrong: wraps the month but forgets the year.
    attempt=(
        _e(
            "spans/dates.py",
            "    return day.replace(day=1, month=day.month + 1)\n",
            "    return day.replace(day=1, month=day.month % 12 + 1)\n",
        ),
    ),
    fail_to_pass=(
        "tests/test_dates.py::test_month_of_december",
        "tests/test_dates.py::test_split_by_month_across_new_year",
    ),
    pass_to_pass=(
        "tests/test_dates.py::test_days",
        "tests/test_dates.py::test_month_of",
        "tests/test_dates.py::test_split_by_month_within_a_year",
    ),
    kind="new",
    expect_memory_on=False,
    expect_memory_off=False,
    notes="Not solvable from memory: nothing earlier touches dates.py; the bundled attempt forgets the year.",
)

_T31 = DemoTask(
    number=31,
    title="merge() returns overlapping results for unsorted input again (1.4.0)",
    body='''\
After 1.4.0, `merge()` is wrong again on unsorted input, like the old "merge() joins
disjoint intervals when the input is not sorted" issue:

```python
>>> from spans import Interval, merge, total_length
>>> merge([Interval(5, 8), Interval(1, 3)])
[Interval(start=1, end=8)]
>>> total_length([Interval(5, 8), Interval(1, 3)])
7
```

`gaps()` is fine, which makes me think the sort moved from `merge()` into `gaps()`.
''',
    difficulty=2,
    version="1.4",
    before=(
        Commit(
            "Sort once in gaps() instead of in merge() (#29)",
            (
                _e("spans/ops.py", _MERGE_FIX, _MERGE_BUG),
                _e(
                    "spans/ops.py",
                    "    for interval in merge(intervals):\n        if interval.end <= cursor:\n",
                    "    for interval in merge(sorted(intervals)):\n        if interval.end <= cursor:\n",
                ),
                _e("pyproject.toml", 'version = "1.3.0"', 'version = "1.4.0"'),
                _e("spans/__init__.py", '__version__ = "1.3.0"', '__version__ = "1.4.0"'),
            ),
        ),
    ),
    fix_message="merge(): sort its own input again",
    fix=(_e("spans/ops.py", _MERGE_BUG, _MERGE_FIX),),
    tests=(
        _e(
            "tests/test_ops.py",
            '''def test_merge_joins_touching_intervals():''',
            '''def test_merge_unsorted_many():
    intervals = [Interval(20, 25), Interval(1, 2), Interval(10, 12), Interval(11, 15)]
    assert merge(intervals) == [Interval(1, 2), Interval(10, 15), Interval(20, 25)]


def test_merge_joins_touching_intervals():''',
        ),
    ),
    attempt=None,
    fail_to_pass=(
        "tests/test_ops.py::test_merge_unsorted_input",
        "tests/test_ops.py::test_merge_unsorted_many",
        "tests/test_ops.py::test_total_length_unsorted_input",
    ),
    pass_to_pass=(
        "tests/test_ops.py::test_gaps",
        "tests/test_ops.py::test_merge_joins_touching_intervals",
        "tests/test_ops.py::test_merge_skips_empty_intervals",
        "tests/test_ops.py::test_merge_sorted_input",
        "tests/test_ops.py::test_subtract_covering",
        "tests/test_ops.py::test_subtract_disjoint",
        "tests/test_ops.py::test_subtract_overlapping_end",
        "tests/test_ops.py::test_total_length_counts_overlap_once",
    ),
    kind="recurrence",
    recurs=12,
    expect_memory_on=True,
    expect_memory_off=False,
    notes="#29 moved the sort out of merge(); #12's fix applies verbatim. Bundled attempt: empty.",
)

_T36 = DemoTask(
    number=36,
    title="subtract() loses the right part when the other interval lies inside",
    body='''\
`subtract(a, b)` should return the parts of `a` outside `b`. When `b` lies strictly
inside `a` (they overlap, but `b` touches neither end), only the left part comes back:

```python
>>> from spans import Interval, subtract
>>> subtract(Interval(0, 10), Interval(3, 5))
[Interval(start=0, end=3)]
```

Expected `[Interval(0, 3), Interval(5, 10)]`, as in the README. The overlapping cases
at either end and the disjoint case are fine.
''',
    difficulty=2,
    version="1.4",
    fix_message="subtract(): keep both sides when the other interval lies inside",
    fix=(
        _e(
            "spans/ops.py",
            '''    if other.start > interval.start:
        return [Interval(interval.start, other.start)]
    if other.end < interval.end:
        return [Interval(other.end, interval.end)]
    return []
''',
            '''    pieces = []
    if other.start > interval.start:
        pieces.append(Interval(interval.start, other.start))
    if other.end < interval.end:
        pieces.append(Interval(other.end, interval.end))
    return pieces
''',
        ),
    ),
    tests=(
        _e(
            "tests/test_ops.py",
            '''def test_subtract_covering():''',
            '''def test_subtract_inside():
    assert subtract(Interval(0, 10), Interval(3, 5)) == [Interval(0, 3), Interval(5, 10)]


def test_subtract_covering():''',
        ),
    ),
    # A correct fix written differently from the gold one.
    attempt=(
        _e(
            "spans/ops.py",
            '''    if other.start > interval.start:
        return [Interval(interval.start, other.start)]
    if other.end < interval.end:
        return [Interval(other.end, interval.end)]
    return []
''',
            '''    left = [Interval(interval.start, other.start)] if other.start > interval.start else []
    right = [Interval(other.end, interval.end)] if other.end < interval.end else []
    return left + right
''',
        ),
    ),
    fail_to_pass=(
        "tests/test_ops.py::test_subtract_inside",
    ),
    pass_to_pass=(
        "tests/test_ops.py::test_gaps",
        "tests/test_ops.py::test_merge_joins_touching_intervals",
        "tests/test_ops.py::test_merge_skips_empty_intervals",
        "tests/test_ops.py::test_merge_sorted_input",
        "tests/test_ops.py::test_merge_unsorted_input",
        "tests/test_ops.py::test_merge_unsorted_many",
        "tests/test_ops.py::test_subtract_covering",
        "tests/test_ops.py::test_subtract_disjoint",
        "tests/test_ops.py::test_subtract_overlapping_end",
        "tests/test_ops.py::test_total_length_counts_overlap_once",
        "tests/test_ops.py::test_total_length_unsorted_input",
    ),
    kind="new",
    expect_memory_on=True,
    expect_memory_off=True,
    notes=(
        "New bug worded like the overlaps() and merge() issues: the fixes memory ranks first "
        "(#8/#19's, #12's) no longer apply, so the agent falls back to its own attempt (correct, "
        "not the gold text)."
    ),
)

SPANS = Library(
    name="spans",
    initial_message="spans 1.2.0: intervals, merge/subtract/gaps, calendar months",
    initial=(
        Edit("README.md", None, _README),
        Edit("pyproject.toml", None, _PYPROJECT),
        Edit("spans/__init__.py", None, _INIT),
        Edit("spans/interval.py", None, _INTERVAL),
        Edit("spans/ops.py", None, _OPS),
        Edit("spans/dates.py", None, _DATES),
        Edit("tests/test_interval.py", None, _TEST_INTERVAL),
        Edit("tests/test_ops.py", None, _TEST_OPS),
        Edit("tests/test_dates.py", None, _TEST_DATES),
    ),
    tasks=(_T8, _T12, _T19, _T24, _T31, _T36),
    start=1709546400,  # 2024-03-04 10:00 UTC
)
