"""The report page: one static HTML file, readable offline, with no script at all.

Everything the ledger provides (versions, sequence and instance ids, memory titles,
queries, statuses) is untrusted text: it goes through `esc` on its way into the page, in
text and in attributes alike. Styles are inline, images are relative files next to the
page, and the favicon is an empty data URI, so opening the page fetches nothing from any
network. No wall-clock time is printed: the same ledger gives the same bytes.

The page, top to bottom: a table of contents (`nav#toc`), the runs, the headline metrics,
the memory-on vs memory-off contrast and the leakage counts (open, never folded: they are
what a reader looks for first), then one section per sequence: its learning curves (with the
lines that coincide named under them), its metrics, a gallery of a(i,j) heatmaps, and one
article per run whose task table is folded (`details.tasks`), so 273 tasks x several runs
stay a page one can scroll.

Stable hooks for tests and scrapers: `section[data-sequence]` (one per sequence),
`article[data-version]` inside it, metric rows `tr[data-version][data-row]` (data-row is
the sequence id, or `macro` for the headline) with cells `td[data-metric][data-value]`
(data-value: the exact float, empty when not computable; a cell whose value the run's
passes did not measure reads "n/a" and says why in `data-unmeasured`); contrast rows
`tr[data-contrast][data-kind]` with `td[data-side][data-resolved][data-valid][data-tasks]`;
leakage rows `tr[data-leakage]` with `td[data-count][data-value]` and links `a[data-task]`
(`sequence:order`) to the flagged task rows; a flagged task row `tr.leaked[data-order]` has
`td.leak[data-leaks]` (its flagged items) with one `span[data-pass][data-hits][data-kinds]` per
pass (data-kinds: `kind:count` pairs); identical learning
curves `li[data-curves]` (space-separated `version:pass` keys); base vs memory stages rows
`tr[data-compare][data-row]` with `td.reading[data-p]` (the one-line reading of the resolved
rate) and `td[data-metric][data-diff][data-low][data-high]`, n/a pairs `p[data-compare-na]`;
with --group, repeat groups `tr[data-group][data-row]` with `td[data-metric][data-n][data-mean]`.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from projections.metrics import METRIC_NAMES, MetricsResult, SequenceResult

from ._comparisons import render_comparisons, render_groups
from ._curves import SequenceCurves
from ._data import (
    CellState,
    ContrastRow,
    Matrix,
    MatrixCell,
    Recall,
    ReportData,
    SequenceReport,
    Tally,
    TaskRow,
    VersionReport,
    contrast_rows,
)


@dataclass(frozen=True)
class Images:
    """Relative paths of the figures, as written next to the page, and what the curves draw."""

    curves: Mapping[str, str]
    """sequence id -> learning-curve PNG."""
    matrices: Mapping[tuple[str, str], str]
    """(version, sequence id) -> heatmap PNG."""
    lines: Mapping[str, SequenceCurves]
    """sequence id -> the lines of its learning-curve figure (for the note on identical ones)."""


@dataclass(frozen=True)
class Anchors:
    """Safe fragment ids (ledger text is not): the table of contents links to them."""

    sequences: Mapping[str, str]
    """sequence id -> its section."""
    articles: Mapping[tuple[str, str], str]
    """(version, sequence id) -> the run's article in that section."""


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def _num(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _value_attr(value: float | None) -> str:
    return "" if value is None else repr(float(value))


_CSS = """
:root { color-scheme: light; --ok: #2c7fb8; --no: #f4a261; --miss: #d9d9d9; --ink: #1d1d1f; --mute: #666; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: var(--ink);
       margin: 0 auto; padding: 1.5rem 2rem 4rem; max-width: 1400px; }
h1 { font-size: 1.6rem; margin: 0 0 .3rem; } h2 { margin-top: 2.2rem; border-bottom: 2px solid #ddd; padding-bottom: .2rem; }
h3 { margin: 1.6rem 0 .5rem; } .meta, figcaption, .note { color: var(--mute); font-size: .86rem; }
td.iid { white-space: nowrap; }
nav a { margin-right: .9rem; } code, .mono { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: .86rem; }
table { border-collapse: collapse; margin: .5rem 0 1rem; font-size: .88rem; }
th, td { border: 1px solid #ddd; padding: .25rem .5rem; text-align: left; vertical-align: top; }
th { background: #f6f6f6; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: .5rem 0 1rem; } img { max-width: 100%; height: auto; border: 1px solid #eee; }
article.version { border-left: 4px solid #e6e6e6; padding-left: 1rem; margin: 1.2rem 0 2rem; }
.cell-resolved { background: var(--ok); color: #fff; text-align: center; }
.cell-unresolved { background: var(--no); text-align: center; }
.cell-missing { background: repeating-linear-gradient(45deg, var(--miss) 0 4px, #f3f3f3 4px 8px); text-align: center; }
.cell-na { background: #fff; color: #bbb; text-align: center; }
table.matrix td, table.matrix th { padding: .1rem .35rem; min-width: 1.6rem; }
.recall { margin: 0 0 .35rem; } .recall ol { margin: .15rem 0 0; padding-left: 1.3rem; }
.unknown { color: #a33; font-style: italic; } .via { color: var(--mute); font-size: .8rem; }
.legend span { display: inline-block; padding: 0 .5rem; margin-right: .4rem; border: 1px solid #ddd; }
details { margin: .3rem 0 1rem; } summary { cursor: pointer; color: #333; }
nav#toc { background: #fafafa; border: 1px solid #e6e6e6; padding: .5rem 1rem; margin: .8rem 0; }
nav#toc ol { margin: .2rem 0; padding-left: 1.4rem; } nav#toc li { margin: .1rem 0; }
nav#toc .runs a { margin-right: .5rem; font-size: .86rem; }
.top { font-size: .8rem; font-weight: normal; margin-left: .6rem; }
.gallery { display: flex; flex-wrap: wrap; gap: .8rem; align-items: flex-start; }
.gallery figure { margin: 0; max-width: 460px; } .gallery img { width: 100%; }
details.tasks > summary { font-weight: 600; }
.contrast-line, .compare-line { margin: .2rem 0 .5rem; } .flagged { color: #a33; font-weight: 600; }
tr.leaked > td:first-child { border-left: 3px solid #a33; } td.leak { white-space: nowrap; font-size: .82rem; }
td.leak-tasks a { margin-right: .4rem; } tr.leaked:target { outline: 2px solid #a33; }
ul.identical { margin: -.4rem 0 1rem; }
"""

_STATE_TEXT: dict[CellState, str] = {"resolved": "1", "unresolved": "0", "missing": "?", "n/a": ""}
_STATE_CLASS: dict[CellState, str] = {
    "resolved": "cell-resolved",
    "unresolved": "cell-unresolved",
    "missing": "cell-missing",
    "n/a": "cell-na",
}


def render(data: ReportData, images: Images, *, anchors: Anchors) -> str:
    """The whole page."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<link rel="icon" href="data:,">',
        f"<title>swecl report: {esc(', '.join(v.label for v in data.versions))}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        _header(data, anchors),
        _runs_table(data),
        _headline(data),
        _contrast(data),
        _leakage(data, anchors),
        render_comparisons(data.comparisons, data.grouped, _TOP),
        *([render_groups(data.groups, _TOP)] if data.groups else []),
        *(_sequence_section(data, seq, images, anchors) for seq in data.sequence_ids),
        '<footer class="meta"><p>Generated by <code>swecl report</code> from the ledger alone: '
        "rebuild it at any time, nothing here is a source of truth.</p></footer>",
        "</body>",
        "</html>",
    ]
    return "\n".join(parts) + "\n"


_TOP = '<a class="top" href="#toc">contents</a>'


def _header(data: ReportData, anchors: Anchors) -> str:
    versions = ", ".join(esc(v.label) for v in data.versions)
    return (
        "<header>"
        "<h1>swecl report</h1>"
        f'<p class="meta">Ledger <code>{esc(data.ledger_id)}</code> as of seq <b>{data.head_seq}</b> · '
        f"formula set <b>{esc(data.formula)}</b> v{data.formula_version} · runs: {versions} · "
        f"{data.memory_items} memory items known</p>"
        f"{_toc(data, anchors)}"
        '<p class="legend meta">Cells: <span class="cell-resolved">1</span>resolved '
        '<span class="cell-unresolved">0</span>not resolved '
        '<span class="cell-missing">?</span>missing (no valid verdict: never scored as 0) '
        '<span class="cell-na">&nbsp;</span>not evaluated</p>'
        "</header>"
    )


def _toc(data: ReportData, anchors: Anchors) -> str:
    """Links to every part of the page: each sequence, and each run's part of it."""
    flagged = sum(vr.leakage.flagged for vr in data.versions)
    leak = f' <span class="flagged">({flagged} recalled items flagged)</span>' if flagged else " (none flagged)"
    sequences = []
    for sequence_id in data.sequence_ids:
        present = [vr for vr in data.versions if sequence_id in vr.sequences]
        tasks = max((len(vr.sequences[sequence_id].plan) for vr in present), default=0)
        runs = "".join(
            f'<a href="#{esc(anchors.articles[(vr.run.version, sequence_id)])}">{esc(vr.label)}</a>' for vr in present
        )
        sequences.append(
            f'<li><a href="#{esc(anchors.sequences[sequence_id])}">{esc(sequence_id)}</a> '
            f'<span class="meta">{tasks} tasks</span> <span class="runs">{runs}</span></li>'
        )
    return (
        '<nav id="toc" aria-label="contents"><b>Contents</b><ol>'
        '<li><a href="#runs">Runs</a></li>'
        '<li><a href="#headline">Headline metrics</a></li>'
        '<li><a href="#contrast">Memory on vs memory off</a></li>'
        f'<li><a href="#leakage">Leakage</a>{leak}</li>'
        '<li><a href="#compare">Base vs memory stages</a></li>'
        + ('<li><a href="#groups">Repeat groups</a></li>' if data.groups else "")
        +
        f'<li>Sequences<ol>{"".join(sequences)}</ol></li>'
        "</ol></nav>"
    )


def sandbox_of(config: Mapping[str, object]) -> str:
    """Where a run's agents and tests ran; runs recorded before the sandbox existed ran unconfined."""
    mode = config.get("sandbox")
    return "none (unconfined)" if mode in (None, "none") else str(mode)


def _runs_table(data: ReportData) -> str:
    head = "".join(
        f"<th>{h}</th>"
        for h in ("version", "stage", "memory", "agent", "model", "grader", "sandbox", "benchmark", "passes",
                  "seeded from", "status", "started", "leaks")
    )
    rows = []
    for vr in data.versions:
        run = vr.run
        passes = ", ".join(run.passes) + (f" (+ retest every {vr.retest_every})" if vr.retest_every else "")
        seeded = "" if run.seeded_from is None else f"{run.seeded_from}" + (
            f" @ seq {run.seeded_seq}" if run.seeded_seq is not None else ""
        )
        # Memory from the stage: base has none; the baseline pass of any run is memory off too.
        memory = f"on ({run.memory_mode})" if vr.memory_on else "off"
        cells = (
            run.version, run.stage, memory, run.agent, run.model or "", run.grader, sandbox_of(run.config),
            run.benchmark, passes, seeded, run.status, run.started_at[:19],
        )
        flagged = vr.leakage.flagged
        leaks = f'<a class="flagged" href="#leakage">{flagged}</a>' if flagged else "0"
        rows.append(f'<tr data-run="{esc(run.version)}">' + "".join(f"<td>{esc(c)}</td>" for c in cells)
                    + f'<td class="num">{leaks}</td></tr>')
    return (
        f'<section id="runs"><h2>Runs {_TOP}</h2><table><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody>'
        "</table></section>"
    )


def _metric_cells(metrics: Mapping[str, float | None], unmeasured: Mapping[str, str] | None = None) -> str:
    # data-value keeps the formula's exact output; the text says "n/a" when that output is a
    # convention the run's passes did not measure (F = 0 without a re-test), with the reason.
    gaps = unmeasured or {}
    return "".join(
        f'<td class="num" data-metric="{esc(name)}" data-value="{_value_attr(metrics.get(name))}"'
        + (f' data-unmeasured="{esc(gaps[name])}" title="not measured: {esc(gaps[name])}">n/a</td>' if name in gaps
           else f">{_num(metrics.get(name))}</td>")
        for name in METRIC_NAMES
    )


def _headline_notes(data: ReportData) -> str:
    """Under the headline: which values are not measurements, and whether CL-Scores compare."""
    items = []
    for vr in data.versions:
        by_reason: dict[str, list[str]] = {}
        for metric, why in vr.result.unmeasured.items():
            by_reason.setdefault(why, []).append(metric)
        if by_reason:
            said = "; ".join(f"{', '.join(metrics)}: {why}" for why, metrics in by_reason.items())
            items.append(f"{esc(vr.label)}: not measured, shown n/a ({esc(said)})")
    groups: dict[tuple[str, ...], list[str]] = {}
    for vr in data.versions:
        groups.setdefault(tuple(vr.run.passes), []).append(vr.label)
    if len(groups) > 1:
        said = "; ".join(f"{', '.join(versions)}: {' + '.join(passes)}" for passes, versions in groups.items())
        items.append(f"CL-Scores are not comparable across versions with different passes ({esc(said)})")
    if not items:
        return ""
    return '<ul class="note" id="unmeasured">' + "".join(f"<li>{item}</li>" for item in items) + "</ul>"


def _metric_head(first: str, extra: Iterable[str] = (), *, before: Iterable[str] = ()) -> str:
    names = (first, *before, *METRIC_NAMES, *extra)
    return "<tr>" + "".join(f"<th>{esc(n)}</th>" for n in names) + "</tr>"


def _headline(data: ReportData) -> str:
    rows = []
    for vr in data.versions:
        result: MetricsResult = vr.result
        counts = ", ".join(f"{n}" for n in sorted(set(result.macro_counts.values())))
        rows.append(
            f'<tr data-version="{esc(vr.run.version)}" data-row="macro"><td>{esc(vr.label)}</td>'
            f'{_metric_cells(result.macro, result.unmeasured)}<td class="num">{esc(counts)}</td></tr>'
        )
    return (
        f'<section id="headline"><h2>Headline: unweighted macro-average over sequences {_TOP}</h2>'
        f'<table class="metrics"><thead>{_metric_head("run", ["sequences averaged"])}</thead>'
        f'<tbody>{"".join(rows)}</tbody></table>{_headline_notes(data)}</section>'
    )


def _tally_cell(side: str, found: Tally | None, empty: str) -> str:
    if found is None:
        return f'<td data-side="{side}" class="note">{esc(empty)}</td>'
    missing = f", {found.missing} missing" if found.missing else ""
    return (
        f'<td class="num" data-side="{side}" data-resolved="{found.resolved}" data-valid="{found.valid}" '
        f'data-tasks="{found.tasks}">{found.resolved}/{found.tasks} resolved ({_num(found.rate)}{missing})</td>'
    )


def _signed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.3f}"


def _contrast_row(row: ContrastRow) -> str:
    on = _tally_cell("on", row.on, "— (stage has no memory)")
    off = _tally_cell("off", row.off, "not measured")
    return (
        f'<tr data-contrast="{esc(row.version)}" data-kind="{row.kind}"><td>{esc(row.label)}</td>{on}{off}'
        f'<td class="num" data-delta="{_value_attr(row.delta)}">{_signed(row.delta)}</td><td>{esc(row.off_from)}</td></tr>'
    )


def _contrast(data: ReportData) -> str:
    """What memory changed, at first sight: each memory-on run against the same tasks with
    memory off (its own baseline pass and the base control), and each memory-off run alone."""
    rows = "".join(_contrast_row(row) for row in contrast_rows(data.versions))
    return (
        f'<section id="contrast"><h2>Memory on vs memory off {_TOP}</h2>'
        '<p class="note">Initial-pass tasks resolved with memory against the same tasks with memory off, pooled over '
        "the sequences (a task without a valid verdict is left out of the rate, never counted as 0); per sequence in each "
        "run's part of the sequence sections below. A base run has no memory: it is the memory-off side only.</p>"
        '<table class="contrast"><thead><tr><th>run</th><th>memory on: initial pass</th><th>memory off</th>'
        f"<th>Δ on − off</th><th>memory off is</th></tr></thead><tbody>{rows}</tbody></table></section>"
    )


_KIND_TEXT = {"same-instance": "same instance", "later-task": "later task", "test-content": "test content"}


def task_anchor(article: str, order: int) -> str:
    """The fragment id of a task's row in a run's task table (`article` is the run's part of the sequence)."""
    return f"{article}-t{order}"


def _flagged_tasks(vr: VersionReport, anchors: Anchors) -> str:
    """Links to the task rows the audit flagged: the evidence, one click from the counts."""
    links = []
    for sequence_id, seq in vr.sequences.items():
        article = anchors.articles[(vr.run.version, sequence_id)]
        for task in seq.tasks:
            if task.leaks:
                hits = sum(leak.hits for leak in task.leaks)
                links.append(f'<a href="#{esc(task_anchor(article, task.order))}" data-task="{esc(sequence_id)}:{task.order}" '
                             f'title="{esc(sequence_id)} task {task.order}: {hits} flagged">'
                             f'<span class="mono">{esc(task.instance_id)}</span></a>')
    return " ".join(links)


def _leakage(data: ReportData, anchors: Anchors) -> str:
    """The leakage counts `swecl metrics` and `swecl runs` print, one row per run, and the tasks flagged."""
    rows = []
    for vr in data.versions:
        leak = vr.leakage
        counts = [("recalled", leak.recalled_items), ("flagged", leak.flagged),
                  *((kind, n) for kind, n in leak.by_kind.items())]
        cells = []
        for name, n in counts:
            shown: str = str(n)
            if name == "test-content" and not leak.test_content_checked:
                shown = '<span class="via" title="the report reads no dataset">not checked</span>'
            cls = "num flagged" if name != "recalled" and n else "num"
            cells.append(f'<td class="{cls}" data-count="{esc(name)}" data-value="{n}">{shown}</td>')
        drill = f"<code>swecl audit {esc(vr.run.version)} --summary</code>" if leak.flagged else ""
        rows.append(f'<tr data-leakage="{esc(vr.run.version)}"><td>{esc(vr.label)}</td>{"".join(cells)}'
                    f'<td class="leak-tasks">{_flagged_tasks(vr, anchors)}</td><td>{drill}</td></tr>')
    # Every run's audit reports the same kinds (`FLAG_KINDS`), in the same order.
    kinds = "".join(f"<th>{esc(_KIND_TEXT.get(k, k))}</th>" for k in data.versions[0].leakage.by_kind)
    return (
        f'<section id="leakage"><h2>Leakage {_TOP}</h2>'
        '<p class="note">A recalled memory item is flagged when it was written for the very task it was recalled for '
        "(same instance) or by a later task of the sequence (later task): only a seeded or imported memory can bring "
        "one, and it can inflate the scores (counts as in <code>swecl metrics</code>, over the attempts that count). "
        "Each flagged task links to its row in the run's task table, marked ⚑ there. "
        "Drill in: <code>swecl audit VERSION --summary</code>.</p>"
        f'<table class="leakage"><thead><tr><th>run</th><th>recalled items</th><th>flagged</th>{kinds}'
        f'<th>flagged tasks</th><th>drill in</th></tr></thead><tbody>{"".join(rows)}</tbody></table></section>'
    )


def _identical_note(lines: SequenceCurves | None) -> str:
    """Under the figure, in words: which lines coincide (the figure draws them a little apart)."""
    if lines is None or not lines.identical:
        return ""
    items = "".join(
        f'<li data-curves="{esc(" ".join(c.key for c in group))}">{" = ".join(esc(c.label) for c in group)}</li>'
        for group in lines.identical
    )
    return (
        '<p class="note">Identical curves (the same value after every task), drawn slightly apart so each stays '
        "visible and marked ≡ in the legend:</p>"
        f'<ul class="note identical">{items}</ul>'
    )


def _sequence_section(data: ReportData, sequence_id: str, images: Images, anchors: Anchors) -> str:
    present = [vr for vr in data.versions if sequence_id in vr.sequences]
    metric_rows = []
    notes = []
    for vr in present:
        seq = vr.sequences[sequence_id]
        metric_rows.append(_sequence_metric_row(vr, seq))
        if seq.metrics is not None and seq.metrics.notes:
            items = "".join(f"<li>{esc(n)}</li>" for n in seq.metrics.notes)
            notes.append(f"<p class=\"note\">{esc(vr.label)}:</p><ul class=\"note\">{items}</ul>")
    curve = images.curves.get(sequence_id)
    figure = (
        f'<figure><img src="{esc(curve)}" alt="learning curves of {esc(sequence_id)}">'
        "<figcaption>Cumulative resolve rate over task order, one colour and marker per run: solid = initial pass a(k,k) "
        "(in order; memory on for a stage with memory, off for base), dashed = final re-test a(N,j) (memory as of the "
        "end of the initial pass), dotted = baseline b(j) (memory off); × under the axis = a missing initial verdict "
        "(left out of the rate, not counted as 0).</figcaption></figure>"
        if curve
        else ""
    )
    gallery = "".join(
        f'<figure data-version="{esc(vr.run.version)}"><a href="{esc(src)}"><img src="{esc(src)}" '
        f'alt="a(i,j) of {esc(vr.label)} on {esc(sequence_id)}"></a><figcaption>{esc(vr.label)}</figcaption></figure>'
        for vr in present
        if (src := images.matrices.get((vr.run.version, sequence_id)))
    )
    heatmaps = (
        '<h3>a(i,j) heatmaps</h3><p class="note">Row i = memory as of task i, column j = task. Diagonal: the initial '
        "pass; rows below it: re-tests (row N: the final re-test); b: the memory-off baseline. Click a figure for "
        f'full size.</p><div class="gallery">{gallery}</div>'
        if gallery
        else ""
    )
    articles = "".join(
        _version_article(vr, vr.sequences[sequence_id], anchors.articles[(vr.run.version, sequence_id)]) for vr in present
    )
    return (
        f'<section class="sequence" id="{esc(anchors.sequences[sequence_id])}" data-sequence="{esc(sequence_id)}">'
        f"<h2>Sequence {esc(sequence_id)} {_TOP}</h2>"
        f"{figure}{_identical_note(images.lines.get(sequence_id))}"
        f'<table class="metrics"><thead>{_metric_head("run", ["tasks", "missing initial / final / baseline"])}'
        f'</thead><tbody>{"".join(metric_rows)}</tbody></table>'
        f'{"".join(notes)}'
        f"{heatmaps}"
        f"{articles}"
        "</section>"
    )


def _missing_text(value: int | None) -> str:
    return "not run" if value is None else str(value)


def _sequence_metric_row(vr: VersionReport, seq: SequenceReport) -> str:
    label = f"<td>{esc(vr.label)}</td>"
    result: SequenceResult | None = seq.metrics
    if result is None:
        blank = "".join(f'<td class="num" data-metric="{esc(n)}" data-value="">n/a</td>' for n in METRIC_NAMES)
        return (
            f'<tr data-version="{esc(vr.run.version)}" data-row="{esc(seq.sequence_id)}">{label}{blank}'
            f'<td class="num">0</td><td>no tasks planned</td></tr>'
        )
    missing = result.extras.missing
    miss = " / ".join(_missing_text(v) for v in (missing.initial, missing.final, missing.baseline))
    return (
        f'<tr data-version="{esc(vr.run.version)}" data-row="{esc(seq.sequence_id)}">{label}'
        f"{_metric_cells(result.metrics, result.unmeasured)}<td class=\"num\">{missing.n_tasks}</td><td>{esc(miss)}</td></tr>"
    )


def _version_article(vr: VersionReport, seq: SequenceReport, anchor: str) -> str:
    memory = "memory on" if vr.memory_on else "memory off"
    return (
        f'<article class="version" id="{esc(anchor)}" data-version="{esc(vr.run.version)}">'
        f"<h3>{esc(vr.label)} · {memory} · {esc(seq.sequence_id)}</h3>"
        f"{_contrast_line(vr, seq)}"
        f"{_task_table(vr, seq, anchor)}"
        f"{_matrix_table(seq.matrix)}"
        f"{_extras(seq)}"
        "</article>"
    )


def _contrast_line(vr: VersionReport, seq: SequenceReport) -> str:
    """This sequence's memory-on vs memory-off means, visible (not folded), labelled by the stage."""
    if seq.metrics is None:
        return ""
    mc = seq.metrics.extras.memory_contrast
    if not vr.memory_on:
        text = (f"memory off (stage {vr.run.stage} has no memory): initial pass {_num(mc.mem_on)} (n={mc.n_on})"
                + (f", baseline pass {_num(mc.mem_off)} (n={mc.n_off})" if mc.n_off else ""))
    else:
        text = (f"memory on (initial pass) {_num(mc.mem_on)} (n={mc.n_on}) vs memory off (baseline pass) "
                f"{_num(mc.mem_off)} (n={mc.n_off}): Δ {_signed(mc.delta)}" + (f" — {mc.reason}" if mc.reason else ""))
    return f'<p class="contrast-line">{esc(text)}</p>'


def _matrix_cell(cell: MatrixCell) -> str:
    title = cell.state if cell.pass_ is None else f"{cell.pass_}: {cell.state}" + (
        f" ({cell.status})" if cell.status else ""
    )
    return f'<td class="{_STATE_CLASS[cell.state]}" title="{esc(title)}">{_STATE_TEXT[cell.state]}</td>'


def _matrix_table(matrix: Matrix) -> str:
    if not matrix.orders:
        return '<p class="note">No tasks planned in this sequence.</p>'
    head = "<tr><th>i \\ j</th>" + "".join(
        f'<th title="{esc(iid)}">t{order}</th>' for order, iid in zip(matrix.orders, matrix.instance_ids, strict=True)
    ) + "</tr>"
    body = [
        f"<tr><th>a({esc(row.label)},·)</th>{''.join(_matrix_cell(c) for c in row.cells)}</tr>" for row in matrix.rows
    ]
    if matrix.baseline is not None:
        body.append(f"<tr><th>b(·)</th>{''.join(_matrix_cell(c) for c in matrix.baseline.cells)}</tr>")
    return (
        "<details><summary>a(i,j) as a table</summary>"
        f'<table class="matrix"><thead>{head}</thead><tbody>{"".join(body)}</tbody></table></details>'
    )


def _extras(seq: SequenceReport) -> str:
    if seq.metrics is None:
        return ""
    ex = seq.metrics.extras
    snap, tools = ex.snapshot, ex.tool_use
    lines = [
        f"snapshot: initial {_num(snap.initial)} → final {_num(snap.final)} (Δ {_num(snap.delta)})"
        + ("" if snap.retested else " — no re-test: final = initial"),
        f"tool-use efficiency: {_num(tools.value, 4)} resolved per agent step "
        f"({tools.resolved} resolved / {tools.steps} steps over {tools.n} tasks)" + (f" — {tools.reason}" if tools.reason else ""),
    ]
    strata = ""
    if ex.strata:
        rows = "".join(
            f"<tr><td>difficulty {esc(key)}</td><td class=\"num\">{s.n_tasks}</td>{_metric_cells(s.metrics)}</tr>"
            for key, s in ex.strata.items()
        )
        strata = f'<table class="strata"><thead>{_metric_head("stratum", before=["tasks"])}</thead><tbody>{rows}</tbody></table>'
    return (
        "<details><summary>snapshot phase, tool use, difficulty strata</summary>"
        f"<ul>{''.join(f'<li>{esc(line)}</li>' for line in lines)}</ul>{strata}</details>"
    )


def _recall_html(recall: Recall) -> str:
    hits = []
    for hit in recall.hits:
        cls = "" if hit.item is not None else ' class="unknown"'
        source = f' <span class="via">from {esc(hit.source)}</span>' if hit.source else ""
        hits.append(
            f'<li value="{hit.rank}"{cls} data-item="{esc(hit.item_id)}">'
            f'<span class="mono">{hit.score:.3f}</span> <b>{esc(hit.title)}</b>{source}</li>'
        )
    query = f" <q>{esc(_clip(recall.query))}</q>" if recall.query else ""
    listing = f"<ol>{''.join(hits)}</ol>" if hits else ' <span class="via">no items returned</span>'
    return f'<div class="recall"><span class="via">recall via {esc(recall.via)} · {esc(recall.ranker)}</span>{query}{listing}</div>'


def _clip(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _leak_cell(vr: VersionReport, task: TaskRow) -> str:
    """⚑ and the audit's flags of this task, per pass: kinds with their counts (`hits` per kind)."""
    if not task.leaks:
        return '<td class="leak"></td>'
    parts = []
    for leak in task.leaks:
        kinds = ", ".join(f"{esc(_KIND_TEXT.get(k, k))} {n}" for k, n in leak.by_kind.items())
        parts.append(
            f'<span data-pass="{esc(leak.pass_)}" data-hits="{leak.hits}" '
            f'data-kinds="{esc(" ".join(f"{k}:{n}" for k, n in leak.by_kind.items()))}">{esc(leak.pass_)}: {kinds}</span>'
        )
    command = f"swecl audit {vr.run.version} {task.instance_id}"
    hits = sum(leak.hits for leak in task.leaks)
    return (
        f'<td class="leak flagged" data-leaks="{hits}"><a class="flagged" href="#leakage" '
        f'title="{esc(hits)} recalled item(s) flagged; drill in: {esc(command)}">⚑ {hits}</a> '
        f'{"; ".join(parts)}</td>'
    )


def _task_row(vr: VersionReport, task: TaskRow, anchor: str) -> str:
    memory_on = vr.memory_on
    if task.recalls:
        recalled = "".join(_recall_html(r) for r in task.recalls)
    else:
        recalled = f'<span class="via">{"no recall" if memory_on else "memory off"}</span>'
    resolved = {True: "yes", False: "no", None: "—"}[task.resolved]
    attempt = f" (attempt {task.attempt})" if task.attempt and task.attempt > 1 else ""
    outcome_cells = "".join(
        f'<td class="{_STATE_CLASS[state]}">{_STATE_TEXT[state]}</td>' for state in (task.initial, task.final, task.baseline)
    )
    # Only flagged rows get an id: the leakage section links to them, nothing else does.
    row_id = f' id="{esc(task_anchor(anchor, task.order))}" class="leaked"' if task.leaks else ""
    return (
        f'<tr data-order="{task.order}"{row_id}><td class="num">{task.order}</td>'
        f'<td class="mono iid">{esc(task.instance_id)}</td>'
        f'<td class="num">{"" if task.difficulty is None else task.difficulty}</td>'
        f"<td>{esc(task.status)}{esc(attempt)}</td><td>{resolved}</td>{outcome_cells}"
        f"{_leak_cell(vr, task)}"
        f'<td class="num">{"" if task.turns is None else task.turns}</td>'
        f"<td>{recalled}</td></tr>"
    )


def _task_table(vr: VersionReport, seq: SequenceReport, anchor: str) -> str:
    """The run's tasks of this sequence, folded: the summary line says what is inside, flagged tasks included."""
    if not seq.tasks:
        return ""
    memory_on = vr.memory_on
    head = "".join(
        f"<th>{h}</th>"
        for h in ("#", "instance", "difficulty", "status", "resolved", "initial", "final", "baseline", "leak flags",
                  "turns", "memories recalled (rank, score, title, source task)")
    )
    rows = "".join(_task_row(vr, task, anchor) for task in seq.tasks)
    resolved = sum(1 for t in seq.tasks if t.initial == "resolved")
    unresolved = sum(1 for t in seq.tasks if t.initial == "unresolved")
    recalls = sum(len(t.recalls) for t in seq.tasks)
    said = f"{len(seq.tasks)} tasks: {resolved} resolved, {unresolved} not resolved"
    if missing := len(seq.tasks) - resolved - unresolved:
        said += f", {missing} missing"
    said += f"; {recalls} recalls" if memory_on else "; memory off"
    leaked = sum(1 for t in seq.tasks if t.leaks)
    flag = f' <span class="flagged" data-leaked-tasks="{leaked}">⚑ {leaked} flagged by the audit</span>' if leaked else ""
    return (
        f'<details class="tasks"><summary>Tasks of {esc(vr.label)} (initial pass): {esc(said)}{flag}</summary>'
        f'<table class="tasks"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></details>'
    )
