"""What the commands' terminal tables share: the console they print on and how a run and
a sequence are named in a row."""

from __future__ import annotations

import os
from typing import Any

from .._read_documents import version_label  # noqa: F401 (a run's name in every table, and in compare's document)


def make_console(*, highlight: bool = True) -> Any:
    # lazy: rich costs about 45 ms, paid only by the commands that print a table
    from rich.console import Console

    found = Console(highlight=highlight)
    if found.is_terminal:
        return found
    # Piped into a file or a CI log there is no terminal width to respect: print whole rows,
    # unless COLUMNS says how wide (a script's own terminal, the tests).
    columns = os.environ.get("COLUMNS", "")
    return Console(width=int(columns) if columns.isdigit() and int(columns) > 0 else 200, highlight=highlight)


def prose_width() -> int:
    """How wide lines of prose are: the terminal's width (COLUMNS), at most 100."""
    import shutil

    return max(40, min(shutil.get_terminal_size((100, 24)).columns, 100))


def short_sequence_names(names: list[str]) -> dict[str, str]:
    """`django_django_sequence` -> `django`: the part after the last `_` (the repository),
    unless two sequences of the table would then read alike (then the whole id minus `_sequence`).
    The same names a task's `SEQ#ORDER` uses (`projections._task_names`)."""
    from projections import sequence_short_names

    return sequence_short_names(names)


def compact_table(title: str | None = None, **kwargs: Any) -> Any:
    """A table that fits 100 columns: a rule under the header, no outer edges, no padding
    at the edges, two spaces between columns (five fewer per column than rich's default box)."""
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    kwargs.setdefault("padding", (0, 1, 0, 0))  # two spaces between columns
    return Table(title=escape(title) if title else None, box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False,
                 **kwargs)


def word_widths(rows: list[list[str]], headers: list[str]) -> list[int]:
    """Per column, its longest word (header or cell): the narrowest it can be without
    breaking a word, for `min_width` (rich then wraps cells at spaces, never mid-word)."""
    widths = [max((len(w) for w in h.split()), default=0) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], max((len(w) for w in str(cell).split()), default=0))
    return widths


def add_fitted_columns(table: Any, headers: list[str], rows: list[list[str]], *, wrap: tuple[str, ...] = (),
                       right: tuple[str, ...] = ()) -> None:
    """Columns that never cut a word: each column not in `wrap` as wide as its widest cell
    (rich never narrows a fixed width), the `wrap` ones at least their longest word, folding
    at spaces into what is left. `right`: right-justified columns (numbers)."""
    words = word_widths(rows, headers)
    for i, header in enumerate(headers):
        justify = "right" if header in right else "left"
        if header in wrap:
            table.add_column(header, min_width=words[i], justify=justify)
        else:
            whole = max([len(header), *(len(r[i]) for r in rows)])
            table.add_column(header, width=whole, no_wrap=True, justify=justify)
