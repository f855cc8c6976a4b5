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
