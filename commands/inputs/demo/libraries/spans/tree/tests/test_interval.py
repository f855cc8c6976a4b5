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
