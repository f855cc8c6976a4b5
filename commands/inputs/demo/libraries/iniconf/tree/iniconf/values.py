"""Typed readings of config values (every value is a string until you ask)."""

from __future__ import annotations

__all__ = ["to_bool", "to_int", "to_list"]

_TRUE = frozenset({"1", "yes", "true", "on"})
_FALSE = frozenset({"0", "no", "false", "off"})


def to_bool(value: str) -> bool:
    """True for 1/yes/true/on, False for 0/no/false/off, in any letter case."""
    word = value.strip()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise ValueError(f"not a boolean: {value!r}")


def to_int(value: str) -> int:
    """The value as an integer; underscores between digits are allowed ("10_000")."""
    return int(value.strip())


def to_list(value: str, sep: str = ",") -> list[str]:
    """The *sep*-separated items of the value, stripped; empty items are dropped."""
    return [item.strip() for item in value.split(sep) if item.strip()]
