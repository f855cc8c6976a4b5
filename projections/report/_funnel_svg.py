"""Memory funnels as one inline SVG chart: per step (tasks with dependencies, stored,
retrieved, used, resolved) and per gap label, one bar per run, so one run's funnel or
several side by side read at a glance.

SVG, not a PNG, so that the view (a live page under a Content-Security-Policy that forbids
inline style) draws it without a file: every colour and size is an SVG attribute. Every
text from the ledger goes through `esc`.

Hooks for tests and scrapers: `svg[data-funnel-svg]`, per bar `rect[data-run][data-step]
[data-value]`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .present import esc

if TYPE_CHECKING:
    from projections.funnel import RunFunnel

STEPS = (("with_deps", "with dependencies"), ("stored", "stored"), ("retrieved", "retrieved"), ("used", "used"),
         ("resolved", "resolved"))
GAPS = ("storage gap", "retrieval gap", "use gap", "no dependency")
# Colour-blind-safe (Okabe-Ito), one per run in the order given.
PALETTE = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442", "#000000")
_LABEL_W, _BAR_W, _BAR_H, _GAP, _LEGEND_H = 130, 420, 11, 7, 18


def _values(f: RunFunnel) -> dict[str, int]:
    assert f.macro is not None
    c = f.macro.counts
    return {**{key: getattr(c, key) for key, _ in STEPS}, **{label: c.labels.get(label, 0) for label in GAPS}}


def _legend(labels: list[str], width: int) -> tuple[list[str], int]:
    """One swatch per run, wrapped onto as many lines as the chart's width needs, and the
    height they take (character widths estimated: the chart has no font metrics)."""
    parts: list[str] = []
    x, y = _LABEL_W, 2
    for i, label in enumerate(labels):
        span = 24 + 7 * len(label)
        if x > _LABEL_W and x + span > width:
            x, y = _LABEL_W, y + _LEGEND_H
        parts.append(f'<rect x="{x}" y="{y}" width="10" height="10" fill="{PALETTE[i % len(PALETTE)]}"/>'
                     f'<text x="{x + 14}" y="{y + 9}" font-size="11">{esc(label)}</text>')
        x += span
    return parts, y + _LEGEND_H


def funnels_svg(runs: Sequence[tuple[str, str, RunFunnel]]) -> str:
    """One chart of the macro funnels of `runs` (version, label, funnel with counts), one
    bar per run in each row; "" when none has a funnel."""
    shown = [(v, label, _values(f)) for v, label, f in runs if f.na is None and f.macro is not None]
    if not shown:
        return ""
    rows = [*STEPS, *((label, label) for label in GAPS)]
    top = max([1, *(vals[key] for _, _, vals in shown for key, _ in rows)])
    group = len(shown) * _BAR_H + _GAP
    width = _LABEL_W + _BAR_W + 40
    legend, legend_h = _legend([label for _, label, _ in shown], width)
    height = legend_h + len(rows) * group + 14
    parts = [f'<svg data-funnel-svg="" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="memory funnel">', *legend]
    y = legend_h
    for n, (key, name) in enumerate(rows):
        if n == len(STEPS):  # a rule between the funnel and the unresolved tasks by label
            parts.append(f'<line x1="0" x2="{width}" y1="{y - 3}" y2="{y - 3}" stroke="#bbbbbb"/>')
        parts.append(f'<text x="{_LABEL_W - 6}" y="{y + group / 2}" font-size="11" text-anchor="end">'
                     f"{esc(name)}</text>")
        for i, (version, _, vals) in enumerate(shown):
            value = vals[key]
            w = round(_BAR_W * value / top, 1)
            by = y + i * _BAR_H
            parts.append(f'<rect data-run="{esc(version)}" data-step="{esc(key)}" data-value="{value}" x="{_LABEL_W}" '
                         f'y="{by}" width="{w}" height="{_BAR_H - 2}" fill="{PALETTE[i % len(PALETTE)]}"/>'
                         f'<text x="{_LABEL_W + w + 4}" y="{by + _BAR_H - 3}" font-size="10">{value}</text>')
        y += group
    parts.append(f'<text x="{_LABEL_W}" y="{height - 2}" font-size="10" fill="#555555">tasks (macro: summed over '
                 "sequences); below the rule, the unresolved tasks by label</text></svg>")
    return "".join(parts)
