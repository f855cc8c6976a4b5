"""One sequence's section of the report page: its learning curves, metrics and heatmaps,
and each run's article (contrast line, folded task table with its recalls and leak
flags, a(i,j) as a table, extras). The page and its stable hooks: `_html`."""

from __future__ import annotations

from projections.metrics import METRIC_NAMES, SequenceResult

from ._curves import SequenceCurves
from ._data import ReportData
from ._html_common import KIND_TEXT, TOP, Anchors, Images, signed, task_anchor
from ._matrix import Matrix, MatrixCell
from ._run_report import Recall, SequenceReport, TaskRow, VersionReport
from .present import STATE_CLASS, STATE_TEXT, esc, metric_cells, metric_head, num


CELLS_LEGEND = (
    '<p class="legend meta">Cells: <span class="cell-resolved">1</span>resolved '
    '<span class="cell-unresolved">0</span>not resolved '
    '<span class="cell-missing">?</span>missing (no valid verdict: never scored as 0) '
    '<span class="cell-na">&nbsp;</span>not evaluated</p>'
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
        "visible:</p>"
        f'<ul class="note identical">{items}</ul>'
    )


def sequence_section(data: ReportData, sequence_id: str, images: Images, anchors: Anchors) -> str:
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
        "<figcaption>Cumulative resolve rate over task order, one panel per pass and one line per run (its colour and "
        "marker the same in every panel): the initial pass a(k,k) (in order; memory on for a stage with memory, off "
        "for base), the final re-test a(N,j) (memory as of the end of the initial pass), the baseline b(j) (memory "
        "off); × under the initial panel's axis = a missing initial verdict (left out of the rate, not counted as 0)."
        "</figcaption></figure>"
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
        f'full size.</p>{CELLS_LEGEND}<div class="gallery">{gallery}</div>'
        if gallery
        else ""
    )
    articles = "".join(
        _version_article(vr, vr.sequences[sequence_id], anchors.articles[(vr.run.version, sequence_id)]) for vr in present
    )
    return (
        f'<section class="sequence" id="{esc(anchors.sequences[sequence_id])}" data-sequence="{esc(sequence_id)}">'
        f"<h2>Sequence {esc(sequence_id)} {TOP}</h2>"
        f"{figure}{_identical_note(images.lines.get(sequence_id))}"
        f'<table class="metrics"><thead>{metric_head("run", ["tasks", "missing initial / final / baseline"])}'
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
        f"{metric_cells(result.metrics, result.unmeasured)}<td class=\"num\">{missing.n_tasks}</td><td>{esc(miss)}</td></tr>"
    )


def _version_article(vr: VersionReport, seq: SequenceReport, anchor: str) -> str:
    memory = "memory on" if vr.memory_on else "memory off"
    if vr.memory_server:
        memory += f" (memory server {vr.memory_server})"
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
        text = (f"memory off (stage {vr.run.stage} has no memory): initial pass {num(mc.mem_on)} (n={mc.n_on})"
                + (f", baseline pass {num(mc.mem_off)} (n={mc.n_off})" if mc.n_off else ""))
    else:
        text = (f"memory on (initial pass) {num(mc.mem_on)} (n={mc.n_on}) vs memory off (baseline pass) "
                f"{num(mc.mem_off)} (n={mc.n_off}): Δ {signed(mc.delta)}" + (f" — {mc.reason}" if mc.reason else ""))
    return f'<p class="contrast-line">{esc(text)}</p>'


def _matrix_cell(cell: MatrixCell) -> str:
    title = cell.state if cell.pass_ is None else f"{cell.pass_}: {cell.state}" + (
        f" ({cell.status})" if cell.status else ""
    )
    return f'<td class="{STATE_CLASS[cell.state]}" title="{esc(title)}">{STATE_TEXT[cell.state]}</td>'


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
        (f"snapshot: initial {num(snap.initial)} → final {num(snap.final)} (Δ {num(snap.delta)})" if snap.retested
         else f"snapshot: initial {num(snap.initial)} — no re-test: final not measured"),
        f"tool-use efficiency: {num(tools.value, 4)} resolved per agent step "
        f"({tools.resolved} resolved / {tools.steps} steps over {tools.n} tasks)" + (f" — {tools.reason}" if tools.reason else ""),
    ]
    strata = ""
    if ex.strata:
        rows = "".join(
            f"<tr><td>difficulty {esc(key)}</td><td class=\"num\">{s.n_tasks}</td>{metric_cells(s.metrics, s.unmeasured)}</tr>"
            for key, s in ex.strata.items()
        )
        strata = f'<table class="strata"><thead>{metric_head("stratum", before=["tasks"])}</thead><tbody>{rows}</tbody></table>'
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
        kinds = ", ".join(f"{esc(KIND_TEXT.get(k, k))} {n}" for k, n in leak.by_kind.items())
        parts.append(
            f'<span data-pass="{esc(leak.pass_)}" data-hits="{leak.hits}" '
            f'data-kinds="{esc(" ".join(f"{k}:{n}" for k, n in leak.by_kind.items()))}">{esc(leak.pass_)}: {kinds}</span>'
        )
    command = f"swecl audit {vr.run.version} {task.instance_id}"
    hits = sum(leak.hits for leak in task.leaks)
    return (
        f'<td class="leak flagged" data-leaks="{hits}"><a class="flagged" href="#leakage" '
        f'title="{esc(hits)} recalled item(s) flagged; drill in: {esc(command)}">⚑ {hits}</a> '
        f'{"".join(parts)}</td>'
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
        f'<td class="{STATE_CLASS[state]}">{STATE_TEXT[state]}</td>' for state in (task.initial, task.final, task.baseline)
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
