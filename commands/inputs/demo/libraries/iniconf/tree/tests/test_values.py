import pytest

from iniconf import to_bool, to_int, to_list


def test_to_bool_words():
    assert to_bool("yes") is True
    assert to_bool(" off ") is False
    assert to_bool("1") is True


def test_to_bool_rejects_other_words():
    with pytest.raises(ValueError, match="not a boolean"):
        to_bool("maybe")


def test_to_int_decimal():
    assert to_int(" 42 ") == 42
    assert to_int("10_000") == 10000


def test_to_list():
    assert to_list("a, b,,c ") == ["a", "b", "c"]
    assert to_list("") == []
