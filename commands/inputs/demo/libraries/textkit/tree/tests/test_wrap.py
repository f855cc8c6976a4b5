import pytest

from textkit import fill, truncate, wrap


def test_wrap_breaks_at_width():
    text = "The quick brown fox jumps over the lazy dog"
    assert wrap(text, 15) == ["The quick brown", "fox jumps over", "the lazy dog"]


def test_wrap_collapses_whitespace():
    assert wrap("  a\tb \n c  ", 10) == ["a b c"]


def test_wrap_empty_text():
    assert wrap("", 10) == []


def test_wrap_indent():
    assert wrap("one two three", 9, indent="> ") == ["> one two", "> three"]


def test_wrap_rejects_width_without_room():
    with pytest.raises(ValueError):
        wrap("text", 2, indent="  ")


def test_fill_joins_lines():
    assert fill("aaa bbb ccc", 7) == "aaa bbb\nccc"


def test_truncate_short_text_unchanged():
    assert truncate("short", 10) == "short"
    assert truncate("exactly10!", 10) == "exactly10!"


def test_truncate_rejects_negative_width():
    with pytest.raises(ValueError):
        truncate("text", -1)
