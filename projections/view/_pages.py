"""The view's pages, as HTML text: runs -> run -> sequence -> one task's evidence.

Every string from the ledger (versions, ids, titles, patches, logs, transcripts) is
untrusted: it reaches the page only through `esc`, in text and attributes alike, and in
URLs only through `quote` (then `esc`). Pages carry no inline script or style, so the
server's Content-Security-Policy can forbid both.

Hooks for tests and scrapers: `body[data-head]` (the ledger seq the page shows),
`tr[data-run][data-status][data-done][data-total]` on the runs page, with the run's macro
metrics in `td[data-metric][data-value]` right after its `td.progress-cell`; `td[data-pass]`
matrix cells with their link, `tr[data-test][data-kind][data-passed]` and `pre.patch` on a
task page.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from projections import VersionMetrics, money, sequence_short_names, spend_cell, task_heading, task_label
from projections.metrics import LEGEND, marked
from projections.audit import DatasetNote, Flag
from projections.report import (Matrix, MatrixCell, SequenceReport, Tally, TaskRow, VersionReport, funnel_table,
                                funnels_compared, funnels_svg, memory_on, tally)
from projections.report.present import STATE_CLASS, STATE_TEXT, esc, metric_cells, metric_head, sandbox_of, value_attr
from projections.show import AttemptShow, ShownRecall, agent_numbers, egress_lines, is_json_lines, model_call_line

from ._progress import Progress, duration_text

if TYPE_CHECKING:
    from projections.compare import Assessment, Gain

_CLIP = 4000  # characters of one transcript entry shown before "(clipped)"


# -- links ---------------------------------------------------------------------------------


def q(text: str) -> str:
    return quote(text, safe="")


def run_href(version: str) -> str:
    return f"/run/{q(version)}"


def sequence_href(version: str, sequence_id: str) -> str:
    return f"/run/{q(version)}/seq/{q(sequence_id)}"


def task_href(version: str, instance_id: str, pass_: str = "initial", file: str | None = None) -> str:
    base = f"/run/{q(version)}/task/{q(instance_id)}" + (f"/{q(file)}" if file else "")
    return base if pass_ == "initial" else f"{base}?pass={q(pass_)}"


def _a(href: str, text: str, cls: str = "") -> str:
    return f'<a{f" class={chr(34)}{cls}{chr(34)}" if cls else ""} href="{esc(href)}">{esc(text)}</a>'


# -- the frame -----------------------------------------------------------------------------


def layout(title: str, crumbs: Iterable[tuple[str, str | None]], head: int, body: str) -> str:
    """A whole page: `crumbs` are (text, href or None for the current page)."""
    trail = '<span class="sep">/</span>'.join(_a(href, text) if href else f"<b>{esc(text)}</b>" for text, href in crumbs)
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<link rel="icon" href="data:,"><link rel="stylesheet" href="/static/view.css">',
        '<script src="/static/view.js" defer></script>',
        f"<title>{esc(title)} · swecl view</title></head>",
        f'<body data-head="{head}">',
        f'<header class="bar"><a class="brand" href="/">swecl view</a><nav class="crumbs">{trail}</nav>'
        f'<span id="live">ledger seq {head}</span></header>',
        f'<main id="main">{body}</main>',
        "</body></html>",
    ]) + "\n"


def error_page(status: int, message: str, head: int) -> str:
    return layout(f"{status}", [("runs", "/"), (str(status), None)], head,
                  f'<h1>{status}</h1><p class="error" data-error>{esc(message)}</p><p>{_a("/", "all runs")}</p>')


# -- runs ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunListing:
    row: Mapping[str, Any]
    """`projections.run_row`: what `swecl runs --json` prints for the run."""
    metrics: VersionMetrics
    progress: Progress


_HEADLINE = ("ACC", "F", "FWT", "CL-Score", "AULC")
"""The runs page's metric columns, in this order right after a run's progress."""


def progress_html(p: Progress, status: str, *, say_status: bool = True) -> str:
    """The bar and `done/total tasks`, with the time left while running; a run stopped short
    says its status after it unless `say_status` is off (the caller shows it beside)."""
    bar = f'<progress max="{p.total}" value="{p.done}"></progress> <span class="count">{p.done}/{p.total} tasks</span>'
    if p.running:
        if p.eta_s is not None and p.pace_s is not None:
            bar += f" · about {esc(duration_text(p.eta_s))} left ({esc(duration_text(p.pace_s))} per task)"
        else:
            bar += " · estimating time left"
    elif say_status and status != "finished" and p.done < p.total:
        bar += f" · {esc(status)}"
    return f'<span class="progress" data-done="{p.done}" data-total="{p.total}">{bar}</span>'


def contrast_html(vm: VersionMetrics) -> str:
    """Memory on vs off at a glance, as the report's contrast reads it: the initial pass
    (memory on for a stage with memory) against the run's own baseline pass (memory off),
    resolved over the tasks with a verdict, pooled over sequences."""
    inputs = list(vm.outcomes.to_metric_inputs(vm.not_gradeable))
    initial = tally(s.initial for s in inputs)
    baseline = [s.baseline for s in inputs if s.baseline is not None]

    def said(t: Tally) -> str:
        return f"{t.resolved}/{t.valid}" + ("" if t.rate is None else f" ({t.rate:.2f})")

    if not memory_on(vm.run):
        return f'<td data-contrast="off">memory off: {esc(said(initial))}</td>'
    if not baseline:
        return f'<td data-contrast="on">on {esc(said(initial))} · off not run</td>'
    off = tally(baseline)
    delta = "" if initial.rate is None or off.rate is None else f" · Δ {initial.rate - off.rate:+.2f}"
    return f'<td data-contrast="on">on {esc(said(initial))} · off {esc(said(off))}{esc(delta)}</td>'


def _headline_cells(vm: VersionMetrics) -> str:
    """Macro ACC, F, FWT, CL-Score and AULC as the metrics page says them: n/a (with the
    reason in a title) where the run's passes did not measure one or it is not computable."""
    macro, gaps = vm.result.macro, vm.result.unmeasured
    cells = []
    for m in _HEADLINE:
        value = macro.get(m)
        why = f' data-unmeasured="{esc(gaps[m])}" title="not measured: {esc(gaps[m])}"' if m in gaps else ""
        text = "n/a" if m in gaps or value is None else f"{value:.3f}"
        cells.append(f'<td class="num" data-metric="{esc(m)}" data-value="{value_attr(None if m in gaps else value)}"'
                     f"{why}>{text}</td>")
    return "".join(cells)


def _spend_line(spend: Mapping[str, Any] | None) -> str:
    """What the run's agents reported spending, against its budget (`swecl runs`' spend);
    nothing for a run with no cost reported and no budget (demo, codex, gemini)."""
    if not spend or (spend.get("cost_usd") is None and spend.get("budget_usd") is None and not spend.get("memory_calls")):
        return ""
    cost = "no cost reported" if spend.get("cost_usd") is None else f"${spend['cost_usd']:.2f}"
    if spend.get("memory_calls"):  # a memory server's own model calls: apart, then both together
        cost = (f"agents {cost}, memory model {money(spend.get('memory_cost_usd'))}, "
                f"total {money(spend.get('total_cost_usd'))}")
    budget = "" if spend.get("budget_usd") is None else f" of ${spend['budget_usd']:.2f}"
    return f'<span class="sub" data-spend="{value_attr(spend.get("cost_usd"))}">spent {esc(cost + budget)}</span>'


def _breakable(text: str) -> str:
    """`text` escaped, with a line-break opportunity after each `-`, `_`, `.` and `/`: a long
    id (`swecl-demo_spans_sequence`) wraps at its parts rather than mid-word."""
    return "<wbr>".join(esc(part) for part in re.split(r"(?<=[-_./])", text))


def _run_row(item: RunListing) -> str:
    """One run on the runs page, narrow enough for a laptop screen: what does not fit a cell
    of its own shares one (stage and agent, status and progress, version and seed), a second
    line says the rest (the agent, the seed, the start's time of day), and ids wrap."""
    r, vm, version = item.row, item.metrics, str(item.row["version"])
    seeded = r["seeded_from"]
    started = str(r["started_at"])[:19].replace("T", " ")
    leaks = r["leakage"]["flagged"]
    # Short names (`spans`), the full id in the link's title: a full id wrapped over three lines a row.
    short = sequence_short_names(list(r["sequences"]))
    sequences = "".join(f'<a href="{esc(sequence_href(version, s))}" title="{esc(s)}">{_breakable(short.get(s, s))}</a>'
                        for s in r["sequences"])
    if r.get("order"):  # not the dataset's order (--order, --orders)
        sequences += f'<span class="sub" data-order="{esc(str(r["order"]))}">order {_breakable(str(r["order"]))}</span>'
    resolved = "".join(f"<span>{esc(p)}={n}</span>" for p, n in r["resolved"].items())
    # What the run cost: dollars (`-`: no agent reported a cost, never $0), tokens, attempts, wall time.
    cost = "".join(f"<span>{esc(line)}</span>" for line in spend_cell(r["spend"]).split("\n")) if r.get("spend") else ""
    return (
        f'<tr data-run="{esc(version)}" data-status="{esc(r["status"])}" data-done="{item.progress.done}" '
        f'data-total="{item.progress.total}">'
        f'<td class="ids"><a href="{esc(run_href(version))}">{_breakable(version)}</a>'
        + (f'<span class="sub">seeded from {_breakable(seeded)}</span>' if seeded else "") + "</td>"
        f'<td class="ids stage">{esc(r["stage"])}<span class="sub">{_breakable(r["agent"])}</span></td>'
        f'<td class="progress-cell"><b class="status">{esc(r["status"])}</b> '
        f"{progress_html(item.progress, r['status'], say_status=False)}{_spend_line(r.get('spend'))}</td>"
        f"{_headline_cells(vm)}"
        f'<td class="ids seqs">{sequences}</td><td class="passes">{resolved}</td>'
        f'<td class="passes cost" data-wall="{value_attr((r.get("spend") or {}).get("wall_s"))}">{cost}</td>'
        f'<td class="num{" flagged" if leaks else ""}">{leaks}</td>{contrast_html(vm)}'
        f'<td class="started" title="{esc(started)}">{esc(started[:10])}'
        f'<span class="sub">{esc(started[11:])}</span></td>'
        "</tr>"
    )


def runs_page(listings: list[RunListing], head: int, ledger_path: str) -> str:
    """The front page: every run with its progress and headline metrics side by side, in
    one table that fits the window (it wraps, never scrolls sideways at 1280 pixels)."""
    cols = ("version", "stage · agent", "status · progress", *(marked(m) for m in _HEADLINE), "sequences", "resolved",
            "cost", "leaks", "memory on vs off", "started")
    rows = "".join(_run_row(item) for item in listings)
    table = (f'<table class="runs"><thead><tr>{"".join(f"<th>{c}</th>" for c in cols)}</tr></thead>'
             f'<tbody>{rows}</tbody></table>') if rows else '<p class="note">No runs yet: start one with <code>swecl run</code>.</p>'
    body = (
        f'<h1>Runs</h1><p class="meta">Ledger <code>{esc(ledger_path)}</code>, read-only. Macro-averaged native '
        "metrics (n/a: not measured by the run's passes); leaks: recalled items flagged as leakage "
        "(<code>swecl audit VERSION --summary</code>); memory on vs off: initial-pass tasks resolved with the stage's "
        "memory against the run's own baseline pass (memory off), over the tasks with a verdict. The page follows "
        f"the ledger as it grows. {esc(LEGEND)}. {_a('/funnels', 'Memory funnels side by side')}.</p>"
        f"{table}"
    )
    return layout("runs", [("runs", None)], head, body)


# -- one run -------------------------------------------------------------------------------


def _matrix_cell(version: str, matrix: Matrix, j: int, cell: MatrixCell, names: Sequence[str]) -> str:
    text = STATE_TEXT[cell.state]
    if cell.pass_ is None:
        return f'<td class="{STATE_CLASS[cell.state]}"></td>'
    title = f"{names[j]} · {cell.pass_}: {cell.state}" + (f" ({cell.status})" if cell.status else "")
    href = task_href(version, matrix.instance_ids[j], cell.pass_)
    return (f'<td class="{STATE_CLASS[cell.state]}" data-pass="{esc(cell.pass_)}" title="{esc(title)}">'
            f'<a class="cell" href="{esc(href)}">{text or "&nbsp;"}</a></td>')


def matrix_html(version: str, matrix: Matrix, sequence_id: str, sequences: Sequence[str]) -> str:
    """a(i,j) with every evaluated cell a link to that task's attempt in that pass, each
    task named as every output names it (`spans#4 swecl-demo__spans-24`)."""
    if not matrix.orders:
        return '<p class="note">No tasks planned in this sequence.</p>'
    names = [task_heading(sequence_id, order, iid, sequences)
             for order, iid in zip(matrix.orders, matrix.instance_ids, strict=True)]
    head = "<tr><th>i \\ j</th>" + "".join(
        f'<th title="{esc(name)}">{_a(task_href(version, iid), f"t{order}")}</th>'
        for order, iid, name in zip(matrix.orders, matrix.instance_ids, names, strict=True)
    ) + "</tr>"
    body = [f"<tr><th>a({esc(row.label)},·)</th>"
            f"{''.join(_matrix_cell(version, matrix, j, c, names) for j, c in enumerate(row.cells))}</tr>"
            for row in matrix.rows]
    if matrix.baseline is not None:
        body.append(f"<tr><th>b(·)</th>"
                    f"{''.join(_matrix_cell(version, matrix, j, c, names) for j, c in enumerate(matrix.baseline.cells))}</tr>")
    return f'<table class="matrix"><thead>{head}</thead><tbody>{"".join(body)}</tbody></table>'


_LEGEND = ('<p class="legend meta">Cells: <span class="cell-resolved">1</span>resolved '
           '<span class="cell-unresolved">0</span>not resolved <span class="cell-missing">?</span>missing '
           "(no valid verdict, never scored as 0). Click a cell for that attempt's evidence.</p>")


def _metrics_table(vr: VersionReport, sequences: Iterable[str]) -> str:
    rows = []
    for sequence_id in sequences:
        seq = vr.sequences[sequence_id]
        if seq.metrics is None:
            continue
        rows.append(f'<tr data-row="{esc(sequence_id)}"><td>{_a(sequence_href(vr.run.version, sequence_id), sequence_id)}</td>'
                    f"{metric_cells(seq.metrics.metrics, seq.metrics.unmeasured)}</tr>")
    rows.append(f'<tr data-row="macro"><td><b>macro</b></td>{metric_cells(vr.result.macro, vr.result.unmeasured)}</tr>')
    return (f'<table class="metrics"><thead>{metric_head("sequence")}</thead><tbody>{"".join(rows)}</tbody></table>'
            f'<p class="legend meta">{esc(LEGEND)}</p>')


def _run_facts(vr: VersionReport, status: str, progress: Progress) -> str:
    run = vr.run
    passes = ", ".join(run.passes) + (f" (+ retest every {vr.retest_every})" if vr.retest_every else "")
    facts = [f"stage <b>{esc(run.stage)}</b>", f"memory on ({esc(run.memory_mode)})" if vr.memory_on else "memory off",
             *([f'memory server <b data-memory-server="{esc(vr.memory_server)}">{esc(vr.memory_server)}</b>']
               if vr.memory_server else []),
             f"agent {esc(run.agent)}", *([f"model {esc(run.model)}"] if run.model else []), f"grader {esc(run.grader)}",
             f"sandbox {esc(sandbox_of(run.config))}", f"benchmark {esc(run.benchmark)}", f"passes {esc(passes)}",
             *([f"seeded from {esc(run.seeded_from)}"] if run.seeded_from is not None else [])]
    when = [f"started {esc(run.started_at[:19])}", *([f"finished {esc(run.finished_at[:19])}"] if run.finished_at else [])]
    leak = vr.leakage
    leaks = (f'<span class="flagged">{leak.flagged} of {leak.recalled_items} recalled items flagged as leakage</span> '
             f"(<code>swecl audit {esc(run.version)} --summary</code>)" if leak.flagged
             else f"{leak.recalled_items} recalled items, none flagged")
    return (f'<p class="meta">{" · ".join(facts)}</p>'
            f'<p>status <b data-status="{esc(status)}">{esc(status)}</b> · {progress_html(progress, status)} · '
            f'{" · ".join(when)}</p><p>{leaks}</p>{_integrity_line(vr)}{assessment_html(vr, vr.assessed)}')


def _integrity_line(vr: VersionReport) -> str:
    """Beside the leakage line: the patches with integrity flags (a flag never changes a verdict)."""
    found = vr.integrity
    if not found or not found["flagged"]:
        return ""
    kinds = ", ".join(f"{k} {n}" for k, n in found["by_kind"].items() if n)
    tasks = ", ".join(sorted({t["instance_id"] for t in found["tasks"]}))
    return (f'<p data-integrity="{found["flagged"]}"><span class="flagged">{found["flagged"]} of '
            f'{found["patches_checked"]} patches with integrity flags</span> ({esc(kinds)}): {esc(tasks)}</p>')


def _visible_html(vr: VersionReport) -> str:
    """What the run's sandbox showed its agent and tests (run.started.visible), folded."""
    from projections.show import visible_lines  # the same lines `swecl show` prints

    visible = vr.run.visible
    parts = []
    for who, title in (("agent", "the agent"), ("tests", "the tests")):
        lines = "".join(f"<li><code>{esc(line)}</code></li>" for line in visible_lines(visible, who))
        parts.append(f"<p>{title}:</p><ul>{lines}</ul>")
    summary = "What the sandbox showed" + ("" if visible is not None else " (not recorded)")
    return f'<details class="visible" data-visible><summary>{summary}</summary>{"".join(parts)}</details>'


def assessment_html(vr: VersionReport, assessed: tuple[Gain, Assessment] | None) -> str:
    """The run against its base (the verdict line, the normalized gain and memory efficiency
    with their intervals, as `swecl metrics` prints them) and its cost per solved task."""
    from projections import cost_line
    from projections.compare import efficiency_line, gain_line

    parts = []
    if assessed is not None:
        gain, assessment = assessed
        if assessment.verdict:
            parts.append(f'<p class="verdict" data-verdict="{esc(vr.run.version)}"><b>{esc(assessment.verdict)}</b></p>')
        parts.append(f'<p class="note" data-gain="{value_attr(gain.macro)}">{esc(gain_line(vr.label, gain, assessment, {}))}</p>')
        parts.append(f'<p class="note" data-efficiency="{value_attr(assessment.efficiency.macro)}">'
                     f"{esc(efficiency_line(vr.label, assessment.efficiency, {}))}</p>")
    if vr.cost is not None:
        parts.append(f'<p class="note" data-cost="{value_attr(vr.cost.run.usd_per_solved)}">'
                     f"{esc(cost_line(vr.label, vr.cost))}</p>")
    return "".join(parts)


def _funnel_chart(vr: VersionReport) -> str:
    f = vr.funnel
    return "" if f is None or f.na is not None else funnels_svg([(vr.run.version, vr.label, f)])


def funnels_page(reports: list[VersionReport], head: int) -> str:
    """`/funnels`: the memory funnels of every run side by side (a chart and a table), and
    the runs without one with the reason."""
    compared = funnels_compared([(vr.run.version, vr.label, vr.funnel) for vr in reports])
    missing = "".join(f"<li>{_a(run_href(vr.run.version), vr.label)}: "
                      f"{esc(vr.funnel.na if vr.funnel is not None and vr.funnel.na else 'no funnel: the run could not be read')}</li>"
                      for vr in reports if vr.funnel is None or vr.funnel.na is not None)
    body = ("<h1>Memory funnels</h1><p class=\"meta\">Per task of the initial pass with dependencies: was what "
            "the earlier tasks learned stored, retrieved, used, and did the task resolve? (<code>swecl funnel "
            "VERSION</code>; <code>swecl compare A B</code> names the tasks whose label changed.)</p>"
            + (compared or '<p class="note">Fewer than two runs have a funnel.</p>')
            + (f"<h2>Runs without a funnel</h2><ul>{missing}</ul>" if missing else ""))
    return layout("memory funnels", [("runs", "/"), ("memory funnels", None)], head, body)


def run_page(vr: VersionReport, status: str, progress: Progress, head: int) -> str:
    version = vr.run.version
    parts = [f"<h1>{esc(vr.label)}</h1>", _run_facts(vr, status, progress), _visible_html(vr),
             "<h2>Metrics (native)</h2>", _metrics_table(vr, vr.sequences), _LEGEND,
             "<h2>Memory funnel</h2>", _funnel_chart(vr), funnel_table(vr.funnel),
             '<p class="meta">' + _a("/funnels", "every run's funnel side by side") + "</p>"]
    for sequence_id, seq in vr.sequences.items():
        parts.append(f"<h2>{_a(sequence_href(version, sequence_id), sequence_id)} "
                     f'<span class="meta">{len(seq.plan)} tasks</span></h2>'
                     f"{matrix_html(version, seq.matrix, sequence_id, list(vr.sequences))}")
    return layout(vr.label, [("runs", "/"), (vr.label, None)], head, "".join(parts))


# -- one sequence of a run -----------------------------------------------------------------


def _task_row(version: str, task: TaskRow) -> str:
    resolved = {True: "yes", False: "no", None: "—"}[task.resolved]
    outcome_cells = "".join(
        f'<td class="{STATE_CLASS[state]}">'
        + (_a(task_href(version, task.instance_id, pass_), STATE_TEXT[state] or " ", "cell") if state != "n/a" else "")
        + "</td>"
        for state, pass_ in ((task.initial, "initial"), (task.final, "retest"), (task.baseline, "baseline"))
    )
    recalled = sum(len(r.hits) for r in task.recalls)
    return (
        f'<tr data-order="{task.order}"><td class="num">{task.order}</td>'
        f'<td class="mono iid">{_a(task_href(version, task.instance_id), task.instance_id)}</td>'
        f'<td class="num">{"" if task.difficulty is None else task.difficulty}</td>'
        f"<td>{esc(task.status)}{esc(f' (attempt {task.attempt})' if task.attempt and task.attempt > 1 else '')}</td>"
        f"<td>{resolved}</td>{outcome_cells}"
        f'<td class="num">{"" if task.turns is None else task.turns}</td>'
        f'<td class="num">{"" if task.cost_usd is None else f"{task.cost_usd:.4f}"}</td>'
        f'<td class="num">{recalled}</td></tr>'
    )


def sequence_page(vr: VersionReport, seq: SequenceReport, status: str, head: int) -> str:
    version = vr.run.version
    head_cells = "".join(f"<th>{h}</th>" for h in ("#", "instance", "difficulty", "status", "resolved", "initial",
                                                      "final", "baseline", "turns", "cost $", "memories recalled"))
    tasks = "".join(_task_row(version, t) for t in seq.tasks)
    body = (
        f'<h1>{esc(seq.sequence_id)} <span class="meta">in {esc(vr.label)} ({esc(status)})</span></h1>'
        f"{_metrics_table(vr, [seq.sequence_id])}"
        f"<h2>a(i,j)</h2>{_LEGEND}{matrix_html(version, seq.matrix, seq.sequence_id, list(vr.sequences))}"
        f'<h2>Tasks (initial pass)</h2><table class="tasks"><thead><tr>{head_cells}</tr></thead><tbody>{tasks}</tbody></table>'
    )
    return layout(f"{seq.sequence_id} · {vr.label}", [("runs", "/"), (vr.label, run_href(version)), (seq.sequence_id, None)],
                  head, body)


# -- one task's evidence -------------------------------------------------------------------


def _tests_html(shown: AttemptShow) -> str:
    if not shown.tests:
        return '<p class="note">No per-test results recorded.</p>'
    counted = [t for t in shown.tests if not t.excluded]
    failing = [t for t in counted if not t.passed]
    rows = "".join(
        f'<tr class="{"excluded" if t.excluded else "ok" if t.passed else "fail"}" data-test="{esc(t.name)}" '
        f'data-kind="{esc(t.kind)}" data-passed="{str(t.passed).lower()}">'
        f'<td class="mark">{"excluded" if t.excluded else "ok" if t.passed else "FAIL"}</td><td>{esc(t.kind)}</td>'
        f'<td>{esc(t.result)}</td><td class="mono">{esc(t.name)}</td></tr>'
        for t in shown.tests
    )
    return (f"<p>{len(counted) - len(failing)}/{len(counted)} listed tests pass; failing: {len(failing)}</p>"
            f'<table class="tests"><thead><tr><th></th><th>kind</th><th>result</th><th>test</th></tr></thead>'
            f"<tbody>{rows}</tbody></table>")


def _recall_html(r: ShownRecall, flags: list[Flag]) -> str:
    marks = "".join(f'<span class="flag" title="{esc(f.detail)}" data-flag="{esc(f.kind)}">{esc(f.kind)}</span>'
                    for f in flags)
    if not r.known:
        return (f'<li value="{r.rank}" class="unknown" data-item="{esc(r.item_id)}">{marks}'
                f"<code>{esc(r.item_id)}</code> (score {r.score:.3f}): not in this run's substrate</li>")
    origin = (f" · from {esc(r.source_instance)}" + (f" in v{esc(r.source_run)}" if r.source_run else "")
              if r.source_instance else "")
    body = (f'<details data-key="recall-{r.seq}-{r.rank}"><summary>{esc(r.short or "")}</summary>'
            f'<pre class="wrap">{esc(r.body or "")}</pre></details>') if r.body else ""
    return (f'<li value="{r.rank}" data-item="{esc(r.item_id)}">{marks}<b>{esc(r.title or r.item_id)}</b> '
            f'<span class="via">score {r.score:.3f} · {esc(r.kind or "?")} · outcome {esc(r.outcome or "?")}{origin} · '
            f"<code>{esc(r.item_id)}</code></span>{body}</li>")


def _patch_html(text: str) -> str:
    lines = []
    for line in text.splitlines():
        cls = ("file" if line.startswith(("diff --git", "--- ", "+++ ")) else "hunk" if line.startswith("@@")
               else "add" if line.startswith("+") else "del" if line.startswith("-") else "")
        lines.append(f'<span class="{cls}">{esc(line)}</span>' if cls else esc(line))
    return '<pre class="patch">' + "\n".join(lines) + "</pre>"


def _clip(text: str, limit: int = _CLIP) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n… ({len(text) - limit} more characters: see the raw file)"


def _content_text(content: Any) -> str:
    """A message's content (a string, or blocks) as text."""
    if isinstance(content, str):
        return content
    parts = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "tool_use":
            parts.append(f"→ {block.get('name', '?')} {json.dumps(block.get('input', {}), ensure_ascii=False, indent=1)}")
        elif kind == "tool_result":
            parts.append("← " + _content_text(block.get("content", "")))
        elif kind == "thinking":
            parts.append("(thinking) " + str(block.get("thinking", "")))
        else:
            parts.append(json.dumps(block, ensure_ascii=False))
    return "\n".join(parts)


def transcript_html(text: str) -> str:
    """A stream-json transcript as turns (who, then what), each clipped; any other text as it is."""
    if not is_json_lines(text):
        return f'<pre class="wrap">{esc(_clip(text, 200_000))}</pre>'
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        obj = json.loads(line)
        kind = str(obj.get("type", "?"))
        if kind in ("assistant", "user"):
            said = _content_text((obj.get("message") or {}).get("content"))
        elif kind == "result":
            said = str(obj.get("result", "")) + "\n" + ", ".join(
                f"{k} {obj[k]}" for k in ("subtype", "num_turns", "total_cost_usd", "duration_ms", "is_error") if k in obj)
        else:
            said = json.dumps(obj, ensure_ascii=False)
        who = kind + (f" ({obj['subtype']})" if kind == "system" and "subtype" in obj else "")
        out.append(f'<div class="turn {esc(kind)}"><span class="who">{esc(who)}</span>'
                   f'<pre class="wrap">{esc(_clip(said))}</pre></div>')
    return "".join(out)


def _agent_html(shown: AttemptShow) -> str:
    error = f'<p class="error">error: {esc(shown.agent_error)}</p>' if shown.agent_error else ""
    final = (f'<pre class="wrap">{esc(shown.final_message.rstrip())}</pre>' if shown.final_message
             else '<p class="note">No final message recorded.</p>')
    network = "".join(f"<li>{esc(line)}</li>" for line in egress_lines(shown))
    # A memory server's own model calls (through swecl's gateway): the memory's spend, beside the agent's.
    models = "".join(f"<li>{esc(model_call_line(m))}</li>" for m in shown.model_calls)
    memory = f'<h3>The memory server\'s own model calls</h3><ul class="model-calls">{models}</ul>' if models else ""
    return (f"<p>{esc(', '.join(agent_numbers(shown)))}</p>{error}<h3>Final message</h3>{final}"
            f'<h3>Network</h3><ul class="egress">{network}</ul>{memory}')


def task_page(shown: AttemptShow, label: str, flags: Mapping[tuple[int, int], list[Flag]], dataset: DatasetNote,
              passes: list[str], run_status: str, head: int, files: Iterable[str]) -> str:
    """One attempt whole: verdict, tests, recalled memory (with leak flags), agent, patch,
    test output, transcript, prompt; `label` names the run (`run_label`), `passes` are the
    passes this task ran (a link each), `flags` the audit's leak flags by (recall seq, rank),
    `dataset` whether its test-content check ran."""
    v, iid = shown.version, shown.instance_id
    attempts = f"attempt {shown.attempt}" + (f" of {len(shown.attempts)}" if len(shown.attempts) > 1 else "")
    verdict = {True: ("RESOLVED", "yes"), False: ("NOT RESOLVED", "no"), None: ("no verdict", "")}[shown.resolved]
    pass_links = " ".join(f"<b>{esc(p)}</b>" if p == shown.pass_ else _a(task_href(v, iid, p), p) for p in passes)
    raw = " · ".join(_a(task_href(v, iid, shown.pass_, name), name) for name in files)
    outcome = (
        f'<p><span class="verdict {verdict[1]}" data-resolved="{esc(str(shown.resolved).lower())}">{verdict[0]}</span>: '
        f"status {esc(shown.grade_status or '-')}" + (f", grader {esc(shown.grader)}" if shown.grader else "")
        + (" (corrected by a regrade)" if shown.corrected else "")
        + (f", test exit code {shown.test_exit_code}" if shown.test_exit_code is not None else "") + "</p>"
        + (f'<p class="error">error: {esc(shown.grade_error)}</p>' if shown.grade_error else "")
        # Beside the verdict, never changing it: where a reader should look in the patch.
        + "".join(f'<p class="flagged" data-integrity-flag="{esc(f.kind)}">integrity flag {esc(f.kind)}: '
                  f"{esc(f.detail)}</p>" for f in shown.integrity_flags)
    )
    recalls = ("<ol>" + "".join(_recall_html(r, flags.get((r.seq, r.rank), [])) for r in shown.recalls) + "</ol>"
               if shown.recalls else '<p class="note">None.</p>')
    if shown.patch:
        patch = _patch_html(shown.patch)
    else:
        patch = '<p class="note">' + ("No patch recorded." if not shown.patch_blob else "Empty." if shown.patch is not None
                                      else "The patch's blob is missing from the ledger: run <code>swecl verify</code>.") + "</p>"
    log = f"<pre>{esc(shown.log)}</pre>" if shown.log is not None else '<p class="note">No test log recorded.</p>'
    transcript = (transcript_html(shown.transcript) if shown.transcript is not None
                  else '<p class="note">No transcript recorded.</p>')
    prompt = (f'<details data-key="prompt"><summary>Prompt</summary><pre class="wrap">{esc(shown.prompt)}</pre></details>'
              if shown.prompt is not None else "")
    body = (
        f'<h1><span class="task-label">{esc(task_label(shown.sequence_id, shown.order))}</span> {esc(iid)}</h1>'
        f'<p class="meta">task {shown.order} of {_a(sequence_href(v, shown.sequence_id), shown.sequence_id)} '
        f"({esc(shown.repo)}) · run {_a(run_href(v), label)} ({esc(run_status)}) · agent {esc(shown.agent)}"
        f'{" · model " + esc(shown.model) if shown.model else ""} · {esc(attempts)}: {esc(shown.status)}'
        + (f" ({esc(shown.abandon_reason)})" if shown.abandon_reason else "") + "</p>"
        f'<p class="passes">pass: {pass_links}</p><p class="meta">raw files: {raw}</p>'
        f'<section id="outcome"><h2>Outcome</h2>{outcome}{_tests_html(shown)}</section>'
        f'<section id="memory"><h2>Recalled memory</h2><p class="meta" data-test-content="{str(dataset.available).lower()}">'
        f"Leak flags (<code>swecl audit {esc(v)} {esc(iid)}</code>): same-instance, later-task, test-content; "
        + (f"test content checked against {esc(dataset.source or 'the dataset')}" + (f" ({esc(dataset.note)})" if dataset.note else "")
           if dataset.available else f"test content not checked: {esc(dataset.note or 'no dataset')}") + ".</p>"
        f"{recalls}</section>"
        f'<section id="agent"><h2>Agent</h2>{_agent_html(shown)}</section>'
        f'<section id="patch"><h2>Patch (the agent\'s diff)</h2>{patch}</section>'
        f'<section id="log"><h2>Test output</h2>{log}</section>'
        f'<section id="transcript"><h2>Transcript</h2>{prompt}{transcript}</section>'
    )
    return layout(f"{iid} · {label}", [("runs", "/"), (label, run_href(v)),
                                       (shown.sequence_id, sequence_href(v, shown.sequence_id)), (f"{iid} ({shown.pass_})", None)],
                  head, body)


__all__ = ["RunListing", "error_page", "layout", "matrix_html", "run_href", "run_page", "runs_page",
           "sequence_href", "sequence_page", "task_href", "task_page", "transcript_html"]
