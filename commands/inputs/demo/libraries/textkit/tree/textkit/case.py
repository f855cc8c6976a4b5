"""Re-casing identifiers: snake_case, kebab-case, camelCase."""

from __future__ import annotations

import re

__all__ = ["camel_case", "kebab_case", "snake_case", "split_words"]

# A boundary is a run of separators, or a change of case inside a word:
# "parseHTTPResponse" is parse | HTTP | Response, "utf8Decode" is utf8 | Decode,
# "XMLHttpRequest" is XML | Http | Request.
_BOUNDARY = re.compile(r"[\s_\-]+|(?<=[a-z0-9])(?=[A-Z])")


def split_words(name: str) -> list[str]:
    """The words of an identifier written in any common case."""
    return [word for word in _BOUNDARY.split(name) if word]


def snake_case(name: str) -> str:
    """"parseHTTPResponse" -> "parse_http_response"."""
    return "_".join(word.lower() for word in split_words(name))


def kebab_case(name: str) -> str:
    """"parseHTTPResponse" -> "parse-http-response"."""
    return "-".join(word.lower() for word in split_words(name))


def camel_case(name: str) -> str:
    """"parse_http_response" -> "parseHttpResponse"."""
    words = split_words(name)
    if not words:
        return ""
    return words[0].lower() + "".join(word.capitalize() for word in words[1:])
