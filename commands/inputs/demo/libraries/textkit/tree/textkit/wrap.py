"""Wrapping and truncating plain text to a column width."""

from __future__ import annotations

__all__ = ["fill", "truncate", "wrap"]


def wrap(text: str, width: int = 70, *, indent: str = "", subsequent_indent: str | None = None) -> list[str]:
    """Split *text* into lines of at most *width* characters.

    Runs of whitespace separate words. *indent* starts the first line and
    *subsequent_indent* (default: *indent*) every later line; both count toward
    *width*. A word longer than the room on a line is split across lines.
    """
    if subsequent_indent is None:
        subsequent_indent = indent
    room = width - max(len(indent), len(subsequent_indent))
    if room < 1:
        raise ValueError(f"width {width} leaves no room for text after the indent")
    lines: list[str] = []
    line: list[str] = []
    prefix = indent
    used = len(prefix)
    for word in _words(text, room):
        if line and used + 1 + len(word) > width:
            lines.append(prefix + " ".join(line))
            prefix = subsequent_indent
            line, used = [], len(prefix)
        used += len(word) + (1 if line else 0)
        line.append(word)
    if line:
        lines.append(prefix + " ".join(line))
    return lines


def fill(text: str, width: int = 70, **options: str) -> str:
    """`wrap`, joined into one string with newlines."""
    return "\n".join(wrap(text, width, **options))


def truncate(text: str, width: int, *, ellipsis: str = "...") -> str:
    """Cut *text* to at most *width* characters, marking the cut with *ellipsis*."""
    if width < 0:
        raise ValueError(f"width must not be negative, got {width}")
    if len(text) <= width:
        return text
    return text[:width] + ellipsis


def _words(text: str, room: int) -> list[str]:
    """The words of *text*; a word longer than *room* is cut into pieces that fit."""
    words = []
    for word in text.split():
        if len(word) <= room:
            words.append(word)
    return words
