"""The learning curves of one sequence as data: which lines, their labels and styles, and
the offsets that keep identical lines visible. Pure (no matplotlib): the figure draws these,
the page lists the same coincidences under it, and the tests read them without a PNG.

Each line is a run's pass (initial a(k,k), final re-test a(N,j), baseline b(j)) as the
cumulative resolve rate after each task. Its label says the stage, the version and whether
memory was on: "plugin-blank v2 · initial, memory on" (a base run's passes and every
baseline pass are memory off). Two runs that produced the same outcomes draw the same line,
and the later one would hide the earlier: lines whose values are equal at every task are
drawn a little apart (`offset`, a few thousandths of the axis), each keeps its colour and
its marker, and its label says which line it repeats (`same_as`; the page names the groups
under the figure). The figure (`_plots.curves_figure`) draws one panel per pass, so its
legend names each run once; `LINESTYLES` is the pass's dash pattern where passes share axes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from ._rates import running_mean
from ._run_report import VersionReport, pass_has_memory

PassKind = Literal["initial", "final", "baseline"]
PASS_TEXT: dict[PassKind, str] = {"initial": "initial", "final": "final re-test", "baseline": "baseline"}
_PASS_OF: dict[PassKind, str] = {"initial": "initial", "final": "retest", "baseline": "baseline"}
LINESTYLES: dict[PassKind, str] = {"initial": "-", "final": "--", "baseline": ":"}

VERSION_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#ff7f0e")
# One marker shape per run, drawn hollow and smaller for each later run, so markers at the
# same point nest inside each other instead of covering each other.
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
OFFSET_STEP = 0.012
"""Distance between two identical lines, in resolve-rate units (the axis spans 1.15)."""
MAX_SPREAD = 0.06
"""The widest an identical group is spread, however many lines it has."""


def version_colour(index: int) -> str:
    return VERSION_COLOURS[index % len(VERSION_COLOURS)]


def version_marker(index: int) -> tuple[str, float]:
    """(marker, size in points) of the `index`-th run."""
    return MARKERS[index % len(MARKERS)], max(3.0, 8.0 - 1.2 * (index % len(MARKERS)))


@dataclass(frozen=True)
class Curve:
    version: str
    run_label: str
    """`plugin-blank v2`."""
    pass_kind: PassKind
    memory_on: bool
    values: tuple[float | None, ...]
    """Cumulative resolve rate after each task; None before the first valid verdict."""
    colour: str
    marker: str
    marker_size: float
    run_index: int
    """The run's place among those drawn (its colour and marker)."""
    offset: float = 0.0
    """Added to every value when drawn (identical lines only); 0 for a line of its own."""
    same_as: str | None = None
    """The label of the first line this one is identical to (None: it is the first, or unique)."""

    @property
    def key(self) -> str:
        """`2:initial`: the version and the pass, for the page's data attributes."""
        return f"{self.version}:{self.pass_kind}"

    @property
    def label(self) -> str:
        memory = "memory on" if self.memory_on else "memory off"
        return f"{self.run_label} · {PASS_TEXT[self.pass_kind]}, {memory}"

    @property
    def legend(self) -> str:
        return self.label if self.same_as is None else f"{self.label}  ≡ {self.same_as}"


@dataclass(frozen=True)
class Missing:
    """Tasks of a run's initial pass with no valid verdict (drawn as × under the axis)."""

    version: str
    run_label: str
    colour: str
    orders: tuple[int, ...]
    """1-based positions in the sequence."""
    row: int
    """Which of the stacked rows under the axis (runs do not cover each other's marks)."""


@dataclass(frozen=True)
class SequenceCurves:
    sequence_id: str
    n_tasks: int
    """The longest plan among the runs drawn."""
    curves: tuple[Curve, ...]
    """In drawing order: run by run, initial, final, baseline."""
    identical: tuple[tuple[Curve, ...], ...]
    """Groups of two or more lines equal at every task, each in drawing order."""
    missing: tuple[Missing, ...]


def sequence_curves(sequence_id: str, versions: Sequence[VersionReport], colours: Mapping[str, str]) -> SequenceCurves:
    """The lines of `sequence_id` for every run in `versions` that has it; `colours` per version."""
    drawn: list[Curve] = []
    missing: list[Missing] = []
    n_max = 0
    for index, vr in enumerate(versions):
        report = vr.sequences.get(sequence_id)
        inputs = report.inputs if report is not None else None
        if inputs is None:
            continue
        n_max = max(n_max, inputs.n_tasks)
        marker, size = version_marker(index)
        vectors: dict[PassKind, Sequence[int | None] | None] = {
            "initial": inputs.initial, "final": inputs.final, "baseline": inputs.baseline,
        }
        for kind, vector in vectors.items():
            if vector is None:
                continue
            drawn.append(Curve(
                version=vr.run.version, run_label=vr.label, pass_kind=kind,
                memory_on=pass_has_memory(vr.run, _PASS_OF[kind]), values=tuple(running_mean(vector)),
                colour=colours[vr.run.version], marker=marker, marker_size=size, run_index=index,
            ))
        gaps = tuple(k for k, v in enumerate(inputs.initial, start=1) if v is None)
        if gaps:
            missing.append(Missing(version=vr.run.version, run_label=vr.label, colour=colours[vr.run.version],
                                   orders=gaps, row=len(missing)))
    curves, groups = _spread_identical(drawn)
    return SequenceCurves(sequence_id=sequence_id, n_tasks=n_max, curves=curves, identical=groups,
                          missing=tuple(missing))


def _same_key(curve: Curve) -> tuple[float | None, ...]:
    # Rounded: two runs with the same outcomes give bit-equal means, but a guard costs nothing.
    return tuple(None if v is None else round(v, 9) for v in curve.values)


def _spread_identical(drawn: list[Curve]) -> tuple[tuple[Curve, ...], tuple[tuple[Curve, ...], ...]]:
    by_values: dict[tuple[float | None, ...], list[int]] = {}
    for position, curve in enumerate(drawn):
        by_values.setdefault(_same_key(curve), []).append(position)
    out = list(drawn)
    groups: list[tuple[Curve, ...]] = []
    for positions in by_values.values():
        if len(positions) < 2:
            continue
        m = len(positions)
        step = min(OFFSET_STEP, MAX_SPREAD / (m - 1))
        first = drawn[positions[0]].label
        members = []
        for k, position in enumerate(positions):
            curve = drawn[position]
            # Centred on the true values: the group's middle is where the line really is.
            offset = round((k - (m - 1) / 2) * step, 6)
            out[position] = replace(curve, offset=offset, same_as=None if k == 0 else first)
            members.append(out[position])
        groups.append(tuple(members))
    return tuple(out), tuple(groups)
