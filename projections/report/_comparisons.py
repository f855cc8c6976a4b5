"""The report's comparison section in HTML: base vs each memory stage, with `swecl
compare`'s numbers, and the grouped headline (each group's mean and t interval over its
runs). What they show is gathered with the rest of the report's data (`_data`,
`base_comparisons` and `report_groups`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from projections.compare import COMPARED
from projections.metrics import marked

from .present import esc

if TYPE_CHECKING:
    from projections.compare import GroupedMetrics, GroupedValue, MetricDiff, SequenceComparison

    from ._data import ReportComparison


def reading(row: SequenceComparison) -> str:
    """One line: `B − A = +0.24 [0.05, 0.43], McNemar p = 0.03` (the resolved rate), or n/a with why."""
    m = row.metrics["resolved_rate"]
    test = "McNemar" if row.mcnemar.test == "mcnemar" else "exact stratified test"
    if m.diff is None:
        return f"B − A n/a: {m.na}"
    ci = f" [{m.ci[0] + 0.0:.2f}, {m.ci[1] + 0.0:.2f}]" if m.ci else " (no interval)"
    return f"B − A = {m.diff + 0.0:+.2f}{ci}, {test} p = {row.mcnemar.p_value:.2g}"


def _diff_cell(metric: str, m: MetricDiff) -> str:
    if m.diff is None:
        return (f'<td class="num" data-metric="{esc(metric)}" data-diff="" title="{esc(m.na or "")}">n/a'
                f'<br><span class="note">{esc(m.na or "")}</span></td>')
    low, high = m.ci if m.ci else (None, None)
    ci = f" [{low:+.3f}, {high:+.3f}]" if m.ci else " (no interval)"
    flag = f' title="{esc("; ".join(m.flags))}"' if m.flags else ""
    mark = "*" if m.flags else ""
    return (f'<td class="num" data-metric="{esc(metric)}" data-diff="{m.diff!r}" data-low="{"" if low is None else repr(low)}"'
            f' data-high="{"" if high is None else repr(high)}"{flag}>{m.diff + 0.0:+.3f}{mark}{ci}</td>')


def render_comparisons(comparisons: Sequence[ReportComparison], grouped: bool, top: str) -> str:
    heads = "".join(f"<th>{esc(marked(m))}: B − A [95% CI]</th>" for m in COMPARED if m != "resolved_rate")
    parts = []
    for rc in comparisons:
        title = f"A = {esc(rc.a)}, B = {esc(rc.b)}"
        if rc.comparison is None:
            parts.append(f'<h3>{title}</h3><p class="note" data-compare-na="{esc(rc.b)}">n/a: {esc(rc.na or "")}</p>')
            continue
        c = rc.comparison
        short = {name: name for name in c.sequences}
        rows = [(short[name], row) for name, row in c.sequences.items()] + [("macro", c.macro)]
        body = "".join(
            f'<tr data-compare="{esc(rc.b)}" data-row="{esc(name if label != "macro" else "macro")}">'
            f"<td>{'<b>macro</b>' if label == 'macro' else esc(label)}</td>"
            f'<td class="reading" data-p="{row.mcnemar.p_value!r}">{esc(reading(row))}</td>'
            + "".join(_diff_cell(m, row.metrics[m]) for m in COMPARED if m != "resolved_rate")
            + "</tr>"
            for (label, row), name in zip(rows, [*c.sequences, "macro"], strict=True)
        )
        notes = "".join(f"<li>{esc(n)}</li>" for n in c.notes)
        flags = sorted({f for _, row in rows for m in row.metrics.values() for f in m.flags})
        notes += "".join(f"<li>* {esc(f)}</li>" for f in flags)
        runs = f" (A: runs {esc(', '.join(c.runs_a))}; B: runs {esc(', '.join(c.runs_b))})" if c.grouped else ""
        parts.append(
            f"<h3>{title}</h3>"
            f'<p class="compare-line">Macro resolved rate: {esc(reading(c.macro))}{runs}</p>'
            f'<table class="compare"><thead><tr><th>sequence</th><th>resolved rate↑: B − A [95% CI], test</th>{heads}'
            f"</tr></thead><tbody>{body}</tbody></table>"
            + (f'<ul class="note">{notes}</ul>' if notes else "")
        )
    if not parts:
        parts.append('<p class="note">n/a: no memory-on run in the report to compare with base.</p>')
    method = ("each side the mean of its repeats; the interval a paired bootstrap over tasks (10000 resamples, seed 0) "
              "with every run on the same draw and each group's runs averaged; the test an exact stratified "
              "permutation test over tasks (McNemar's exact test with one run per side)") if grouped else (
              "the interval a paired bootstrap over tasks (10000 resamples, seed 0); McNemar: exact, on which tasks "
              "each run resolved")
    return (
        f'<section id="compare"><h2>Base vs memory stages {top}</h2>'
        f'<p class="note">B − A as <code>swecl compare{" --group" if grouped else ""} A B</code> prints it, per sequence '
        f"and macro-averaged: {method}. A metric a run's passes did not measure is n/a with the reason.</p>"
        + "".join(parts) + "</section>"
    )


def _group_cell(metric: str, v: GroupedValue) -> str:
    if v.mean is None:
        return f'<td class="num" data-metric="{esc(metric)}" data-n="{v.n}" title="{esc(v.na or "")}">n/a</td>'
    ci = f" [{v.ci[0]:.3f}, {v.ci[1]:.3f}]" if v.ci else ""
    attrs = f' data-low="{v.ci[0]!r}" data-high="{v.ci[1]!r}"' if v.ci else ""
    return (f'<td class="num" data-metric="{esc(metric)}" data-n="{v.n}" data-mean="{v.mean!r}"{attrs}'
            f' title="{esc(v.na or "")}">{v.mean:.3f}{ci}</td>')


def render_groups(groups: Sequence[GroupedMetrics], top: str) -> str:
    heads = "".join(f"<th>{esc(marked(m))}</th>" for m in COMPARED)
    parts = []
    for g in groups:
        rows = [(name, s.metrics) for name, s in g.sequences.items()] + [("macro", g.macro)]
        body = "".join(
            f'<tr data-group="{esc(g.group.versions[0])}" data-row="{esc(name)}"><td>{esc(name)}</td>'
            f'<td class="num" data-n="{max(v.n for v in metrics.values())}">{max(v.n for v in metrics.values())}</td>'
            + "".join(_group_cell(m, metrics[m]) for m in COMPARED) + "</tr>"
            for name, metrics in rows
        )
        gaps = sorted({f"{m}: {v.na}" for _, metrics in rows for m, v in metrics.items() if v.na and m in COMPARED})
        notes = "".join(f"<li>{esc(n)}</li>" for n in [*gaps, *g.notes])
        parts.append(f"<h3>{esc(g.label)}</h3><table class=\"groups\"><thead><tr><th>sequence</th><th>n</th>{heads}"
                     f"</tr></thead><tbody>{body}</tbody></table>" + (f'<ul class="note">{notes}</ul>' if notes else ""))
    return (
        f'<section id="groups"><h2>Repeat groups: mean and 95% CI over repeats {top}</h2>'
        '<p class="note">Each group: the runs of one <code>swecl run --repeat K</code> (else runs sharing stage, agent, '
        "model, dataset, grader, passes and tasks). Mean over the n runs and the Student-t 95% interval "
        "(mean ± t(0.975, n − 1) · sd / √n), as <code>swecl metrics --group</code>; with n = 1 there is no interval."
        "</p>" + "".join(parts) + "</section>"
    )
