"""What the commands' terminal tables share: the console they print on and how a run and
a sequence are named in a row."""

from __future__ import annotations

from typing import Any

from .._read_documents import version_label  # noqa: F401 (a run's name in every table, and in compare's document)


def make_console(*, highlight: bool = True) -> Any:
    # lazy: rich costs about 45 ms, paid only by the commands that print a table
    from rich.console import Console

    found = Console(highlight=highlight)
    # Piped into a file or a CI log there is no terminal width to respect: print whole rows.
    return found if found.is_terminal else Console(width=200, highlight=highlight)


def short_sequence_names(names: list[str]) -> dict[str, str]:
    """`django_django_sequence` -> `django`: the part after the last `_` (the repository),
    unless two sequences of the table would then read alike (then the whole id minus `_sequence`)."""
    stripped = {n: n.removesuffix("_sequence") for n in names}
    short = {n: s.rsplit("_", 1)[-1] or s for n, s in stripped.items()}
    if len(set(short.values())) < len(set(names)):
        return stripped
    return short
