"""The leaderboard as data: what the caller hands in (`BoardEntry`, one run of one bundle)
and what `build_leaderboard` makes of it (groups of comparable runs, ranked rows, the
reasons groups were kept apart). Pure data: the page (`_html`) and the tests read it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class BoardEntry:
    """One run of one bundle, as `swecl leaderboard` read it (and checked it, or not)."""

    bundle: str
    """The bundle's file name (shown, and the id for links)."""
    metrics: dict[str, Any]
    """One element of `swecl metrics --json`'s "versions" list, as is."""
    formula: str
    """The metrics JSON's top-level "formula"."""
    formula_version: int
    """The metrics JSON's top-level "formula_version"."""
    dataset: str
    """The dataset's content hash (or its name when it has no hash)."""
    dataset_name: str
    """What to show: `swecl-demo`, `SWE-Bench-CL`."""
    model: str | None
    memory_system: str
    """`none`, `swecl memory`, or the memory server's name@version."""
    checked: bool | None
    """True: `swecl check` passed; False: it failed; None: not checked."""
    check_note: str
    """One line: why it failed / "not checked" / "hash chain, metrics re-derived"."""
    key: str | None
    """The signer's key fingerprint, when signed and the signature verified."""
    report_href: str | None
    """A relative link to the run's HTML report inside the output dir, if any."""
    bundle_href: str | None
    """A relative link to the bundle file, if copied."""


@dataclass(frozen=True)
class Figure:
    """One number as the board shows it: its value, its 95% interval when it has one, and
    why it has no value (never shown as a number then)."""

    value: float | None
    ci: tuple[float, float] | None = None
    na: str = ""
    """Why there is no value ("no re-test pass", "not reported: ..."); empty when there is one."""


@dataclass(frozen=True)
class Row:
    """One run in one ranking (the macro row of a group, or one of its sequences)."""

    entry: BoardEntry
    rank: int | None
    """1 is first; rows with the same figures share a rank; None: not ranked (`unranked`)."""
    unranked: str
    """Why the row has no rank (its check failed, or it has no initial-pass verdicts); empty when ranked."""
    resolved: int
    tasks: int
    rate: Figure
    """Initial-pass tasks resolved / planned, with its Wilson score interval: the ranking key."""
    cl_score: Figure
    acc: Figure
    forgetting: Figure
    gain: Figure
    """Normalized gain over the run's base, with its bootstrap interval."""
    efficiency: Figure
    """Memory efficiency, with its bootstrap interval."""
    cost: Figure
    """USD per solved task; no value when the agent reported no cost (never $0)."""
    leakage_flagged: int | None
    near_first: bool
    """The row's rate interval overlaps the first row's: the data do not separate them."""

    @property
    def version(self) -> str:
        return str(self.entry.metrics.get("version", "?"))

    @property
    def stage(self) -> str:
        return str(self.entry.metrics.get("stage", "?"))

    @property
    def agent(self) -> str:
        return str(self.entry.metrics.get("agent") or "unknown agent")


@dataclass(frozen=True)
class Ranking:
    """One table: the runs of a group ranked over its macro row or over one sequence."""

    scope: str
    """"macro", or the sequence id."""
    rows: tuple[Row, ...]

    @property
    def first(self) -> Row | None:
        return next((r for r in self.rows if r.rank == 1), None)


@dataclass(frozen=True)
class GroupKey:
    """What runs must share to be ranked together."""

    dataset: str
    passes: tuple[str, ...]
    formula: str
    formula_version: int
    sequences: tuple[tuple[str, int], ...]
    """(sequence id, tasks planned) of every sequence the run covers, sorted."""


@dataclass(frozen=True)
class Group:
    key: GroupKey
    dataset_name: str
    anchor: str
    """A safe fragment id for the group's section."""
    macro: Ranking
    sequences: tuple[Ranking, ...]
    apart: str
    """One line: why this group is not ranked with the first group (empty for the first group)."""

    @property
    def label(self) -> str:
        tasks = sum(n for _, n in self.key.sequences)
        return (f"{self.dataset_name} · passes {'+'.join(self.key.passes) or 'none'} · formula "
                f"{self.key.formula} v{self.key.formula_version} · {len(self.key.sequences)} sequence(s), {tasks} tasks")


@dataclass(frozen=True)
class Leaderboard:
    groups: tuple[Group, ...]
    entries: int
    rule: str
    """How rows are ranked, as the page states it."""
