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
