"""Parsing INI-style text: [sections], key = value lines, comments."""

from __future__ import annotations

import re
from pathlib import Path

from .errors import ParseError

__all__ = ["Config", "load", "loads"]

Config = dict[str, dict[str, str]]

_SECTION = re.compile(r"\[(?P<name>[^\]]+)\]")
_ENTRY = re.compile(r"(?P<key>[^=:\s][^=:]*?)\s*[=:]\s*(?P<value>.*)")


def loads(text: str) -> Config:
    """{section: {key: value}} from INI text; keys before any section go to "DEFAULT".

    Keys are case-insensitive (stored in lower case). Lines starting with "#" or ";"
    are comments, and so is the rest of a line after " #" or " ;".
    """
    config: Config = {"DEFAULT": {}}
    section = config["DEFAULT"]
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        match = _SECTION.fullmatch(line)
        if match:
            section = config.setdefault(match["name"].strip(), {})
            continue
        match = _ENTRY.fullmatch(line)
        if match is None:
            raise ParseError(f"line {number}: expected 'key = value' or '[section]', got {raw!r}")
        section[match["key"].strip().lower()] = _value(match["value"])
    return config


def _value(text: str) -> str:
    """A value as written, without an inline comment or surrounding whitespace."""
    return text.strip()


def load(path: str | Path) -> Config:
    """`loads` of a UTF-8 file."""
    return loads(Path(path).read_text(encoding="utf-8"))
