import pytest

from iniconf import ParseError, loads


def test_sections_and_keys():
    config = loads("[server]\nhost = example.org\nport: 8080\n")
    assert config["server"] == {"host": "example.org", "port": "8080"}


def test_keys_before_first_section_go_to_default():
    assert loads("name = demo\n[a]\nx = 1\n")["DEFAULT"] == {"name": "demo"}


def test_keys_are_case_insensitive():
    assert loads("[a]\nMaxSize = 10\n")["a"] == {"maxsize": "10"}


def test_comment_lines_are_skipped():
    assert loads("# top\n[a]\n; note\nx = 1\n")["a"] == {"x": "1"}


def test_value_keeps_inner_hash_without_space():
    assert loads("[a]\ncolor = #ff0000\nlang = C#\n")["a"] == {"color": "#ff0000", "lang": "C#"}


def test_bad_line_is_reported_with_its_number():
    with pytest.raises(ParseError, match="line 2"):
        loads("[a]\nthis is not an entry\n")
