from textkit import camel_case, kebab_case, snake_case, split_words


def test_split_words_separators():
    assert split_words("hello_big-world now") == ["hello", "big", "world", "now"]


def test_snake_case_from_camel():
    assert snake_case("parseResponse") == "parse_response"
    assert snake_case("utf8Decode") == "utf8_decode"


def test_kebab_case_from_snake():
    assert kebab_case("max_line_length") == "max-line-length"


def test_camel_case_from_snake():
    assert camel_case("parse_response_body") == "parseResponseBody"
    assert camel_case("") == ""
