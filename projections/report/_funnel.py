"""The memory funnel in the report and the view (`projections.funnel`): per run a chart of
its macro funnel (tasks with dependencies, stored, retrieved, used, resolved; the unresolved
tasks by label) and a small table per sequence; a run without one says why.

Hooks for tests and scrapers: `section#funnel[data-funnel]`, per run
`div[data-funnel-version]` holding `img[data-funnel-chart]` and rows
`tr[data-funnel-row]` (the sequence id, or `macro`) with `td[data-step][data-value]`;
a run without a funnel `p[data-funnel-na]`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ._html_common import TOP
from .present import esc, file_stem

if TYPE_CHECKING:
    from projections.funnel import FunnelCounts, RunFunnel

    from ._data import ReportData

PLOTS_DIR = "plots"
STEPS = (("with_deps", "with dependencies"), ("stored", "stored"), ("retrieved", "retrieved"), ("used", "used"),
         ("resolved", "resolved"))
_GAP_COLOURS = {"storage gap": "#d7191c", "retrieval gap": "#fdae61", "use gap": "#abd9e9",
                "no dependency": "#bababa"}


def chart_name(version: str) -> str:
    """The chart's path in the report folder (the version made file-safe, as other figures)."""
    return f"{PLOTS_DIR}/funnel-{file_stem(version)}.png"


def funnel_png(f: RunFunnel, title: str) -> bytes:
    """Bars of the macro funnel's counts, then the unresolved tasks by label."""
    import matplotlib
    from matplotlib.figure import Figure

    from ._plots import _RC, COLOURS, _png

    assert f.macro is not None
    c = f.macro.counts
    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(7.5, 3.2), layout="constrained")
        ax, gaps = fig.subplots(1, 2, width_ratios=[3, 2])
        names = [label for _, label in STEPS]
        values = [getattr(c, key) for key, _ in STEPS]
        bars = ax.barh(names[::-1], values[::-1], color=COLOURS["resolved"])
        ax.bar_label(bars, padding=2, fontsize=8)
        ax.set_xlabel("tasks")
        ax.set_title("funnel (tasks with dependencies)", fontsize=9)
        labels = list(_GAP_COLOURS)
        counts = [c.labels.get(label, 0) for label in labels]
        gap_bars = gaps.barh(labels[::-1], counts[::-1], color=[_GAP_COLOURS[k] for k in labels[::-1]])
        gaps.bar_label(gap_bars, padding=2, fontsize=8)
        gaps.set_xlabel("unresolved tasks")
        gaps.set_title("where it failed", fontsize=9)
        top = max([*values, *counts, 1])
        for axis in (ax, gaps):
            axis.set_xlim(0, top * 1.15)
        fig.suptitle(title, fontsize=10)
        return _png(fig)


def funnel_files(data: ReportData) -> dict[str, bytes]:
    """The chart of each reported run that has a funnel."""
    return {chart_name(vr.run.version): funnel_png(vr.funnel, f"memory funnel of {vr.label}")
            for vr in data.versions if vr.funnel is not None and vr.funnel.na is None}


def _rate(n: int, rate: float | None) -> str:
    return f"{n} ({rate:.0%})" if rate is not None else f"{n}"


def _row(name: str, c: FunnelCounts) -> str:
    rates = {"stored": c.stored_rate, "retrieved": c.retrieved_rate, "used": c.used_rate, "resolved": c.resolved_rate}
    cells = "".join(f'<td class="num" data-step="{key}" data-value="{getattr(c, key)}">'
                    f"{_rate(getattr(c, key), rates.get(key))}</td>" for key, _ in STEPS)
    gaps = "".join(f'<td class="num" data-step="{esc(label)}" data-value="{n}">{n}</td>'
                   for label, n in c.labels.items())
    return f'<tr data-funnel-row="{esc(name)}"><td class="mono">{esc(name)}</td>{cells}{gaps}</tr>'


def funnel_table(f: RunFunnel | None) -> str:
    """One run's funnel as a table (the view's run page, and under the report's chart)."""
    if f is None:
        return '<p data-funnel-na="">no funnel: the run could not be read</p>'
    if f.na is not None:
        return f'<p data-funnel-na="">no funnel: {esc(f.na)}</p>'
    head = "".join(f"<th>{esc(label)}</th>" for _, label in STEPS) + \
        "".join(f"<th>{esc(label)}</th>" for label in _GAP_COLOURS)
    rows = [_row(s.sequence_id, s.counts) for s in f.sequences]
    if f.macro is not None and len(f.sequences) > 1:
        rows.append(_row("macro", f.macro.counts))
    return (f'<table class="funnel"><thead><tr><th>sequence</th>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>'
            '<p class="meta">stored of the tasks with dependencies, retrieved of stored, used of retrieved, '
            "resolved of the tasks with dependencies; the macro's rates are the means of the sequences'. "
            "Then the unresolved tasks by label.</p>")


def funnels_compared(runs: Sequence[tuple[str, str, RunFunnel | None]]) -> str:
    """Two or more runs' macro funnels side by side: one chart (a bar per run in each row)
    and one table (a row per run); "" when fewer than two runs have a funnel."""
    from ._funnel_svg import funnels_svg

    shown = [(v, label, f) for v, label, f in runs if f is not None and f.na is None and f.macro is not None]
    if len(shown) < 2:
        return ""
    head = "".join(f"<th>{esc(label)}</th>" for _, label in STEPS) + \
        "".join(f"<th>{esc(label)}</th>" for label in _GAP_COLOURS)
    rows = "".join(_row(label, f.macro.counts) for _, label, f in shown)  # type: ignore[union-attr]
    return (f'<div data-funnels-side-by-side=""><h3>Side by side</h3>{funnels_svg(shown)}'
            f'<table class="funnel"><thead><tr><th>run</th>{head}</tr></thead><tbody>{rows}</tbody></table>'
            '<p class="meta">Each run\'s macro funnel (counts summed over its sequences, rates the means of the '
            "sequences'). Runs over the same tasks compare directly; <code>swecl compare A B</code> names the "
            "tasks whose label changed.</p></div>")


def funnel_section(data: ReportData) -> str:
    """The report's funnel section: per run its chart and table, or why it has none."""
    parts = ['<section id="funnel" data-funnel=""><h2>Memory funnel ' + TOP + "</h2>",
             '<p class="meta">Per task of the initial pass with dependencies (earlier tasks that changed '
             "the same files): was what they learned stored, retrieved, used, and did the task resolve? "
             "<code>swecl funnel VERSION</code> has every task.</p>",
             funnels_compared([(vr.run.version, vr.label, vr.funnel) for vr in data.versions])]
    for vr in data.versions:
        f = vr.funnel
        img = ""
        if f is not None and f.na is None:
            img = f'<img data-funnel-chart="" src="{esc(chart_name(vr.run.version))}" alt="memory funnel of {esc(vr.label)}">'
        parts.append(f'<div data-funnel-version="{esc(vr.run.version)}"><h3>{esc(vr.label)}</h3>{img}'
                     f"{funnel_table(f)}</div>")
    return "".join(parts) + "</section>"
