"""The report's figures: a(i,j) heatmaps and learning curves, as PNG bytes (matplotlib, Agg).

Figures are drawn through the object API on an Agg canvas, never pyplot: no global figure
state, no GUI backend chosen behind a caller's back. Titles and labels carry ledger text
(sequence ids, versions), so mathtext is off: a `$` in a name is a dollar sign, not TeX.
Same data, same matplotlib: same bytes (no timestamp is written into the PNG).
"""

from __future__ import annotations

import io
import math
import warnings
from collections.abc import Sequence

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PatchCollection
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

from ._curves import SequenceCurves
from ._headline import Headline
from ._matrix import CellState, Matrix, MatrixRow

COLOURS: dict[CellState, str] = {
    "resolved": "#2c7fb8",  # blue / orange rather than green / red: legible to most colour-blind readers
    "unresolved": "#f4a261",
    "missing": "#d9d9d9",
    "n/a": "#ffffff",
}
_RGB: dict[CellState, tuple[float, float, float]] = {state: to_rgb(colour) for state, colour in COLOURS.items()}
MARKS: dict[CellState, str] = {"resolved": "1", "unresolved": "0", "missing": "?", "n/a": ""}
_RC = {
    "text.parse_math": False,
    "font.size": 9,
}
_PNG_METADATA = {"Software": None}
_ANNOTATE_UP_TO = 30  # tasks; past that the 0/1 marks are too small to read


def _png(fig: Figure) -> bytes:
    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        # A glyph the bundled font lacks (a CJK sequence name) is drawn as a box; say nothing.
        warnings.filterwarnings("ignore", message="Glyph .* missing from font")
        fig.savefig(buffer, format="png", dpi=100, metadata=_PNG_METADATA)
    return buffer.getvalue()


def _ticks(n: int) -> list[int]:
    step = max(1, math.ceil(n / 25))
    return [k for k in range(1, n + 1) if k == 1 or k % step == 0 or k == n]


def matrix_png(matrix: Matrix, title: str) -> bytes:
    """The a(i,j) grid (rows 1..N) and, below a gap, the baseline row b(j)."""
    n = len(matrix.orders)
    rows: list[tuple[float, MatrixRow]] = [(float(i), row) for i, row in enumerate(matrix.rows)]
    if matrix.baseline is not None:
        rows.append((n + 0.5, matrix.baseline))
    height_units = (n + 1.5) if matrix.baseline is not None else max(n, 1)
    side = min(12.0, 2.2 + 0.32 * max(n, 1))
    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(side + 1.4, min(14.0, 2.3 + 0.32 * height_units)), layout="constrained")
        ax = fig.add_subplot()
        ax.set_aspect("equal")
        annotate = n <= _ANNOTATE_UP_TO
        # Each block of rows (the grid, the baseline) is one mesh of cells coloured by state:
        # a patch per cell made a 50-task grid 2,600 Python objects to build, transform and
        # draw, a third of the report's time. Only missing cells, hatched, are patches.
        blocks = [(0.0, list(matrix.rows))]
        if matrix.baseline is not None:
            blocks.append((n + 0.5, [matrix.baseline]))
        hatched: list[Rectangle] = []
        for top, block in blocks:
            if not block or n == 0:
                continue
            colours = np.array([[_RGB[cell.state] for cell in row.cells] for row in block], dtype=float)
            ax.pcolormesh(np.arange(n + 1), top + np.arange(len(block) + 1), colours, edgecolors="#bbbbbb",
                          linewidth=0.5)
            for r, row in enumerate(block):
                for x, cell in enumerate(row.cells):
                    if cell.state == "missing":
                        hatched.append(Rectangle((x, top + r), 1, 1))
                    if annotate and cell.state != "n/a":
                        colour = "white" if cell.state == "resolved" else "#222222"
                        ax.text(x + 0.5, top + r + 0.5, MARKS[cell.state], ha="center", va="center", color=colour,
                                fontsize=8)
        if hatched:
            ax.add_collection(
                PatchCollection(hatched, facecolors=COLOURS["missing"], edgecolors="#555555", linewidths=0.5, hatch="///")
            )
        ax.set_xlim(0, max(n, 1))
        ax.set_ylim(rows[-1][0] + 1 if rows else 1, 0)
        ticks = _ticks(n)
        ax.set_xticks([k - 0.5 for k in ticks], [f"t{k}" for k in ticks])
        ax.xaxis.tick_top()
        shown = {str(k) for k in ticks}
        yticks = [(y + 0.5, f"a({row.label},·)") for y, row in rows[:n] if row.label in shown]
        if matrix.baseline is not None:
            yticks.append((rows[-1][0] + 0.5, "b(·) baseline"))
        ax.set_yticks([y for y, _ in yticks], [label for _, label in yticks])
        ax.set_xlabel("task j (order in the sequence)")
        ax.set_ylabel("memory as of task i")
        ax.tick_params(length=0)
        for spine in ax.spines.values():
            spine.set_visible(False)
        ax.set_title(title, fontsize=10)
        legend = [
            Patch(facecolor=COLOURS["resolved"], edgecolor="#bbbbbb", label="1 resolved"),
            Patch(facecolor=COLOURS["unresolved"], edgecolor="#bbbbbb", label="0 not resolved"),
            Patch(facecolor=COLOURS["missing"], edgecolor="#555555", hatch="///", label="? missing (no valid verdict)"),
            Patch(facecolor=COLOURS["n/a"], edgecolor="#bbbbbb", label="not evaluated"),
        ]
        fig.legend(handles=legend, loc="outside lower center", ncols=2, frameon=False, fontsize=8)
        return _png(fig)


def _nan(values: Sequence[float | None], offset: float = 0.0) -> list[float]:
    return [math.nan if v is None else v + offset for v in values]


def curves_png(curves: SequenceCurves) -> bytes:
    """The learning curves of one sequence as a PNG (see `curves_figure`)."""
    with matplotlib.rc_context(_RC):
        return _png(curves_figure(curves))


PANEL_TITLES = {"initial": "initial pass a(k,k)", "final": "final re-test a(N,j)", "baseline": "baseline b(j), memory off"}


def curves_figure(curves: SequenceCurves) -> Figure:
    """Cumulative resolve rate over task order: one panel per pass (initial pass a(k,k),
    final re-test a(N,j), baseline b(j), each only when some run has it), one line per run
    in each, the run's colour and marker the same in every panel. The legend names the runs
    once, the panel titles say the pass. Identical lines are drawn slightly apart (see
    `_curves`; the page names them under the figure). Missing initial verdicts are marked ×
    under the initial panel's axis, one row per run, never drawn as 0. The figure is
    returned undrawn (tests read its lines and legend).
    """
    with matplotlib.rc_context(_RC):
        n_max = max(curves.n_tasks, 1)
        kinds = [k for k in ("initial", "final", "baseline") if any(c.pass_kind == k for c in curves.curves)]
        panels = max(len(kinds), 1)
        fig = Figure(figsize=(min(12.0, 3.2 + 3.0 * panels), 3.6), layout="constrained")
        axes = fig.subplots(1, panels, sharey=True, squeeze=False)[0]
        handles: dict[str, Line2D] = {}
        xs_all = list(range(1, n_max + 1))
        # Past 25 tasks a marker on every point is a smear: one every `every` tasks, each run
        # starting at another task, so the markers of runs on the same values sit side by side.
        every = max(1, math.ceil(n_max / 25))
        bottom = -0.1
        for gap in curves.missing:
            bottom = min(bottom, -0.05 - 0.02 * gap.row - 0.04)
        for ax, kind in zip(axes, kinds, strict=False):
            for curve in (c for c in curves.curves if c.pass_kind == kind):
                xs = xs_all[: len(curve.values)]
                ax.plot(xs, _nan(curve.values, curve.offset), color=curve.colour, linestyle="-", linewidth=1.6,
                        marker=curve.marker, markersize=curve.marker_size, markerfacecolor="none", markeredgewidth=1.0,
                        label=curve.legend, markevery=(curve.run_index % every, every))
                handles.setdefault(curve.version, Line2D([], [], color=curve.colour, marker=curve.marker,
                                                         markerfacecolor="none", label=curve.run_label))
            if kind == "initial":
                for gap in curves.missing:
                    y = -0.05 - 0.02 * gap.row
                    ax.plot(list(gap.orders), [y] * len(gap.orders), linestyle="none", marker="x", color=gap.colour,
                            markersize=6, label=f"{gap.run_label}: missing initial verdict")
            ax.set_title(PANEL_TITLES[kind], fontsize=9)
        for ax in axes:
            ax.set_xlim(0.5, n_max + 0.5)
            ax.set_ylim(bottom, 1.08)
            ticks = _ticks(n_max)
            ax.set_xticks(ticks, [str(k) for k in ticks])
            ax.set_xlabel("task order k")
            ax.axhline(0, color="#cccccc", linewidth=0.6)
            ax.grid(axis="y", color="#eeeeee", linewidth=0.6)
        axes[0].set_ylabel("cumulative resolve rate")
        fig.suptitle(f"learning curves: {curves.sequence_id}", fontsize=10)
        legend = list(handles.values())
        if curves.missing:
            legend.append(Line2D([], [], color="#555555", marker="x", linestyle="none",
                                 label="× missing initial verdict (run's colour)"))
        if legend:
            fig.legend(handles=legend, loc="outside lower center", ncols=min(len(legend), 5), frameon=False, fontsize=8)
        else:
            axes[0].text(0.5, 0.5, "no tasks to plot", transform=axes[0].transAxes, ha="center", va="center")
        return fig


# The headline's bars: memory off, memory on, the oracle's reference memory. Blue and orange
# as the heatmaps' resolved / not resolved, the oracle grey and hatched: told apart without colour.
HEADLINE_COLOURS = {"base": "#f4a261", "memory": "#2c7fb8", "oracle": "#8c8c8c", "run": "#2c7fb8"}
_HEADLINE_HATCH = {"oracle": "//"}


def headline_png(found: Headline) -> bytes:
    """The headline chart as a PNG (see `headline_figure`)."""
    with matplotlib.rc_context(_RC):
        return _png(headline_figure(found))


def headline_figure(found: Headline) -> Figure:
    """One bar group per run: initial-pass tasks resolved (rate, k/n on the bar) of the base,
    the run and its oracle, with 95% intervals; the run's normalized gain under its name."""
    with matplotlib.rc_context(_RC):
        groups = found.groups
        width_in = min(12.0, max(6.0, 2.5 * len(groups) + 1.0))
        fig = Figure(figsize=(width_in, 3.5), layout="constrained")
        ax = fig.add_subplot()
        slots = max((len(g.bars) for g in groups), default=1)
        bar_w = 0.8 / slots
        seen: dict[str, Rectangle] = {}
        ticks: list[str] = []
        for x, group in enumerate(groups):
            start = x - bar_w * (len(group.bars) - 1) / 2
            for k, bar in enumerate(group.bars):
                rate, ci = bar.rate, bar.ci
                role = bar.role if bar.role != "run" else ("memory" if bar.memory_on else "base")
                colour = HEADLINE_COLOURS[role]
                (rect,) = ax.bar(start + k * bar_w, rate or 0.0, width=bar_w * 0.92, color=colour,
                                 edgecolor="#444444", linewidth=0.6, hatch=_HEADLINE_HATCH.get(role))
                seen.setdefault(role, rect)
                if ci is not None:
                    low, high = max(0.0, (rate or 0.0) - ci[0]), max(0.0, ci[1] - (rate or 0.0))  # never below 0
                    ax.errorbar(start + k * bar_w, rate or 0.0, yerr=[[low], [high]],
                                color="#222222", capsize=3, linewidth=1)
                ax.text(start + k * bar_w, 0.02, f"{bar.resolved}/{bar.tasks}", ha="center", va="bottom", fontsize=8,
                        color="white" if role == "memory" else "#111111")
            gain = "" if group.gain is None else f"\ngain {group.gain:+.2f}" + (
                "" if group.gain_ci is None else f" [{group.gain_ci[0]:+.2f}, {group.gain_ci[1]:+.2f}]")
            if len(groups) > 4:  # narrow groups: the interval on a line of its own
                gain = gain.replace(" [", "\n[")
            ticks.append(group.label + gain)
        ax.set_xticks(range(len(groups)), ticks)
        ax.set_xlim(-0.6, max(len(groups), 1) - 0.4)
        ax.set_ylim(0, 1.2)
        ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
        ax.set_ylabel("initial-pass resolve rate")
        ax.grid(axis="y", color="#eeeeee", linewidth=0.6)
        ax.set_axisbelow(True)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        def named(role: str, fallback: str) -> str:
            labels = {b.label for g in groups for b in g.bars if b.role == role}
            if not labels:  # a memory-off run of its own, not a base beside another
                return fallback
            return f"{labels.pop()} ({fallback})" if len(labels) == 1 else f"{role} ({fallback})"

        names = {"base": named("base", "memory off"),
                 "memory": "memory on", "oracle": named("oracle", "reference memory")}
        handles = [Patch(facecolor=HEADLINE_COLOURS[r], edgecolor="#444444", hatch=_HEADLINE_HATCH.get(r),
                         label=names[r]) for r in ("base", "memory", "oracle") if r in seen]
        handles.append(Line2D([], [], color="#222222", marker="|", linestyle="-", label="95% interval"))
        fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), frameon=False, fontsize=8)
        ax.set_title("initial-pass tasks resolved" + (": memory run vs base and oracle" if found.compared else ""),
                     fontsize=10)
        if not groups:
            ax.text(0.5, 0.5, "no runs to plot", transform=ax.transAxes, ha="center", va="center")
        return fig
