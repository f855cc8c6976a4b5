"""What the report page's parts share: where its figures are and what its anchors are
called, the "contents" link, the words for the audit's flag kinds, and signed numbers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ._curves import SequenceCurves
from ._headline import Headline


@dataclass(frozen=True)
class Images:
    """Relative paths of the figures, as written next to the page, and what the curves draw."""

    curves: Mapping[str, str]
    """sequence id -> learning-curve PNG."""
    matrices: Mapping[tuple[str, str], str]
    """(version, sequence id) -> heatmap PNG."""
    lines: Mapping[str, SequenceCurves]
    """sequence id -> the lines of its learning-curve figure (for the note on identical ones)."""
    headline: str | None = None
    """The headline chart's PNG (`_headline`)."""
    bars: Headline | None = None
    """What the headline chart draws (its numbers are listed under it)."""


@dataclass(frozen=True)
class Anchors:
    """Safe fragment ids (ledger text is not): the table of contents links to them."""

    sequences: Mapping[str, str]
    """sequence id -> its section."""
    articles: Mapping[tuple[str, str], str]
    """(version, sequence id) -> the run's article in that section."""


# Back to the table of contents, beside every section's heading.
TOP = '<a class="top" href="#toc">contents</a>'

# The audit's flag kinds as the page words them (the leakage table, a task's leak cell).
KIND_TEXT = {"same-instance": "same instance", "later-task": "later task", "test-content": "test content"}


def task_anchor(article: str, order: int) -> str:
    """The fragment id of a task's row in a run's task table (`article` is the run's part of the sequence)."""
    return f"{article}-t{order}"


def signed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.3f}"
