"""The report page: one static HTML file, readable offline, with no script at all.

Everything the ledger provides (versions, sequence and instance ids, memory titles,
queries, statuses) is untrusted text: it goes through `esc` on its way into the page, in
text and in attributes alike. The style sheet is the page's own (`present.CSS`, in its
head: no style attribute, no script), images are relative files next to the page, and the
favicon is an empty data URI, so opening the page fetches nothing from any network. No
wall-clock time is printed: the same ledger gives the same bytes.

The page opens on the answer (`_verdicts`): under the title, the verdict lines (each memory
run against its base), the headline chart (`_headline`: each memory run's resolved tasks
beside its base's and its oracle's, with intervals) and each run's gain, efficiency and
cost; then the contents (`nav#toc`). Everything else is in parts folded by default
(`details.part`, opened by a click on the summary, or by following a link into them), in
this order: metrics (the headline metrics, memory on vs memory off, base vs memory stages,
repeat groups), the memory funnel, one part per sequence (built in `_html_sequence`: its
learning curves, one panel per pass, with the lines that coincide named under them, its
metrics, a gallery of a(i,j) heatmaps, and one article per run whose task table is folded
again, `details.tasks`), recalls and leakage (with the integrity flags), and the runs with
the ledger's metadata last. Folded, the page is about two screens at 1280x800; tables wider
than a phone's screen scroll inside their own box.

Stable hooks for tests and scrapers: the folded parts `details.part[id]` (`part-metrics`,
`part-funnel`, `part-seq-…`, `part-leakage`, `part-runs`); the verdict lines `p[data-verdict]`, the
headline chart `img[data-headline-chart]` and its numbers `tr[data-bar-group][data-role]`
with `td[data-resolved][data-tasks]` and `td[data-rate]`; `section[data-sequence]` (one per sequence),
`article[data-version]` inside it, metric rows `tr[data-version][data-row]` (data-row is
the sequence id, or `macro` for the headline) with cells `td[data-metric][data-value]`
(data-value: the exact float, empty when not computable; a cell whose value the run's
passes did not measure reads "n/a" and says why in `data-unmeasured`); contrast rows
`tr[data-contrast][data-kind]` with `td[data-side][data-resolved][data-valid][data-tasks]`;
leakage rows `tr[data-leakage]` with `td[data-count][data-value]` and links `a[data-task]`;
integrity rows `tr[data-integrity]` with `td[data-integrity-count][data-value]` and
`li[data-integrity-task]`
(`sequence:order`) to the flagged task rows; a flagged task row `tr.leaked[data-order]` has
`td.leak[data-leaks]` (its flagged items) with one `span[data-pass][data-hits][data-kinds]` per
pass (data-kinds: `kind:count` pairs); identical learning
curves `li[data-curves]` (space-separated `version:pass` keys); base vs memory stages rows
`tr[data-compare][data-row]` with `td.reading[data-p]` (the one-line reading of the resolved
rate) and `td[data-metric][data-diff][data-low][data-high]`, n/a pairs `p[data-compare-na]`;
with --group, repeat groups `tr[data-group][data-row]` with `td[data-metric][data-n][data-mean]`.
"""

from __future__ import annotations

from projections._task_names import task_label
from projections.metrics import MetricsResult
from projections import money

from ._comparisons import render_comparisons, render_groups
from ._data import ReportData
from ._funnel import funnel_section
from ._html_common import KIND_TEXT, TOP, Anchors, Images, signed, task_anchor
from ._html_sequence import sequence_section
from ._rates import ContrastRow, Tally, contrast_rows
from ._run_report import VersionReport
from ._verdicts import render_verdicts
from projections.metrics import LEGEND

from .present import CSS, esc, metric_cells, metric_head, num, sandbox_of, value_attr


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
        f"<style>{CSS}</style>",
        "</head>",
        '<body class="report">',
        "<header><h1>swecl report: did memory help?</h1></header>",
        render_verdicts(data, images.headline, images.bars),
        _toc(data, anchors),
        _part("part-metrics", "Metrics",
              "ACC, F, FWT, CL-Score per run; memory on vs memory off; base vs each memory stage"
              + (", repeat groups" if data.groups else ""),
              _headline(data) + _contrast(data) + render_comparisons(data.comparisons, data.grouped, TOP)
              + (render_groups(data.groups, TOP) if data.groups else "")),
        _part("part-funnel", "Memory funnel", "per run: tasks with dependencies, stored, retrieved, used, resolved",
              funnel_section(data), solo=True),
        *(_part(f"part-{anchors.sequences[seq]}", f"Sequence {seq}", _sequence_said(data, seq),
                sequence_section(data, seq, images, anchors), solo=True, cls="part sequence-part")
          for seq in data.sequence_ids),
        _part("part-leakage", "Recalls and leakage", _leakage_said(data), _leakage(data, anchors) + _integrity(data)),
        _part("part-runs", "Runs", f"{len(data.versions)} run(s): stage, memory, agent, model, passes, status, spend; "
              "the ledger", _runs_table(data), solo=True),
        '<footer class="meta"><p>Generated by <code>swecl report</code> from the ledger alone: '
        "rebuild it at any time, nothing here is a source of truth.</p></footer>",
        "</body>",
        "</html>",
    ]
    return "\n".join(parts) + "\n"


def _part(anchor: str, title: str, said: str, body: str, *, solo: bool = False, cls: str = "part") -> str:
    """A folded part of the page: its summary names it and says what is inside (`said`,
    plain text or markup already escaped). `solo`: one section whose heading the summary replaces."""
    return (f'<details class="{cls}{" solo" if solo else ""}" id="{esc(anchor)}"><summary><span class="part-title">'
            f'{esc(title)}</span> <span class="meta">{said}</span></summary>{body}</details>')


def _sequence_said(data: ReportData, sequence_id: str) -> str:
    present = [vr for vr in data.versions if sequence_id in vr.sequences]
    tasks = max((len(vr.sequences[sequence_id].plan) for vr in present), default=0)
    return esc(f"{tasks} tasks, {len(present)} run(s): learning curves, metrics, a(i,j) heatmaps, each run's tasks "
               "and what they recalled")


def _leakage_said(data: ReportData) -> str:
    flagged = sum(vr.leakage.flagged for vr in data.versions)
    recalled = sum(vr.leakage.recalled_items for vr in data.versions)
    said = f"{recalled} recalled items, "
    said += f'<span class="flagged">{flagged} flagged as leakage</span>' if flagged else "none flagged"
    checked = sum(v.integrity["patches_checked"] for v in data.versions if v.integrity)
    integrity = sum(v.integrity["flagged"] for v in data.versions if v.integrity)
    if checked:
        said += "; integrity flags: " + (f'<span class="flagged">{integrity} patch(es)</span>' if integrity else "none")
    return said


def _toc(data: ReportData, anchors: Anchors) -> str:
    """Links to every part of the page (a folded part opens when its link is followed):
    each sequence, and each run's part of it."""
    flagged = sum(vr.leakage.flagged for vr in data.versions)
    leak = f' <span class="flagged">({flagged} recalled items flagged)</span>' if flagged else " (none flagged)"
    sequences = []
    for sequence_id in data.sequence_ids:
        present = [vr for vr in data.versions if sequence_id in vr.sequences]
        runs = "".join(
            f'<a href="#{esc(anchors.articles[(vr.run.version, sequence_id)])}">{esc(vr.label)}</a>' for vr in present
        )
        sequences.append(
            f'<li><a href="#{esc(anchors.sequences[sequence_id])}">{esc(sequence_id)}</a> '
            f'<span class="runs">{runs}</span></li>'
        )
    return (
        '<nav id="toc" aria-label="contents"><b>Contents</b> '
        '<a href="#verdict">Verdict</a><a href="#headline">Headline metrics</a>'
        '<a href="#contrast">Memory on vs memory off</a><a href="#compare">Base vs memory stages</a>'
        + ('<a href="#groups">Repeat groups</a>' if data.groups else "")
        + '<a href="#funnel">Memory funnel</a>'
        f'<a href="#leakage">Leakage</a>{leak} <a href="#runs">Runs</a>'
        f'<ol class="sequences">{"".join(sequences)}</ol>'
        "</nav>"
    )


def _runs_table(data: ReportData) -> str:
    head = "".join(
        f"<th>{h}</th>"
        for h in ("version", "stage", "memory", "agent", "model", "grader", "sandbox", "benchmark", "passes",
                  "seeded from", "status", "started", "spend", "leaks")
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
        if vr.memory_server:  # the user's MCP server in place of swecl's memory (--memory-server)
            memory += f", memory server {vr.memory_server}"
        cells = (
            run.version, run.stage, memory, run.agent, run.model or "", run.grader, sandbox_of(run.config),
            run.benchmark, passes, seeded, run.status, run.started_at[:19], _spend_text(vr),
        )
        flagged = vr.leakage.flagged
        leaks = f'<a class="flagged" href="#leakage">{flagged}</a>' if flagged else "0"
        rows.append(f'<tr data-run="{esc(run.version)}">' + "".join(f"<td>{esc(c)}</td>" for c in cells)
                    + f'<td class="num">{leaks}</td></tr>')
    return (
        f'<section id="runs"><h2>Runs {TOP}</h2>'
        f'<p class="meta">Ledger <code>{esc(data.ledger_id)}</code> as of seq <b>{data.head_seq}</b> · '
        f"formula set <b>{esc(data.formula)}</b> v{data.formula_version} · {data.memory_items} memory items known</p>"
        f'<table><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></section>'
    )


def _spend_text(vr: VersionReport) -> str:
    """The run's reported cost against its budget: "-" where no agent reported a cost."""
    spend = vr.spend
    if spend is None or (spend.cost_usd is None and spend.budget_usd is None and not spend.memory_calls):
        return "-"
    cost = "no cost reported" if spend.cost_usd is None else f"${spend.cost_usd:.2f}"
    if spend.memory_calls:  # a memory server's own model calls: apart, then both together
        cost = f"agents {cost}, {spend.memory_line()}, total {money(spend.total_cost_usd)}"
    return cost + ("" if spend.budget_usd is None else f" of ${spend.budget_usd:.2f}")


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
    items.extend(esc(line) for line in _drivers(data))
    if not items:
        return ""
    return '<ul class="note" id="unmeasured">' + "".join(f"<li>{item}</li>" for item in items) + "</ul>"


def _drivers(data: ReportData) -> list[str]:
    """Where CL-Score ranks a run above one that solved more tasks: the terms that make the difference."""
    from projections.metrics import ScoredRun, score_drivers

    scored = []
    for vr in data.versions:
        counts = [(sum(1 for v in (s.inputs.initial if s.inputs else ()) if v == 1), len(s.plan))
                  for s in vr.sequences.values()]
        scored.append(ScoredRun(label=vr.label, metrics=vr.result.macro, solved=sum(x for x, _ in counts),
                                tasks=sum(n for _, n in counts)))
    return score_drivers(scored, data.versions[0].result.lambdas) if scored else []


def _headline(data: ReportData) -> str:
    rows = []
    for vr in data.versions:
        result: MetricsResult = vr.result
        counts = ", ".join(f"{n}" for n in sorted(set(result.macro_counts.values())))
        rows.append(
            f'<tr data-version="{esc(vr.run.version)}" data-row="macro"><td>{esc(vr.label)}</td>'
            f'{metric_cells(result.macro, result.unmeasured)}<td class="num">{esc(counts)}</td></tr>'
        )
    return (
        f'<section id="headline"><h2>Headline: unweighted macro-average over sequences {TOP}</h2>'
        f'<p class="note legend-direction">{esc(LEGEND)}</p>'
        f'<table class="metrics"><thead>{metric_head("run", ["sequences averaged"])}</thead>'
        f'<tbody>{"".join(rows)}</tbody></table>{_headline_notes(data)}</section>'
    )


def _tally_cell(side: str, found: Tally | None, empty: str) -> str:
    if found is None:
        return f'<td data-side="{side}" class="note">{esc(empty)}</td>'
    missing = f", {found.missing} missing" if found.missing else ""
    return (
        f'<td class="num" data-side="{side}" data-resolved="{found.resolved}" data-valid="{found.valid}" '
        f'data-tasks="{found.tasks}">{found.resolved}/{found.tasks} resolved ({num(found.rate)}{missing})</td>'
    )


def _contrast_row(row: ContrastRow) -> str:
    on = _tally_cell("on", row.on, "— (stage has no memory)")
    off = _tally_cell("off", row.off, "not measured")
    return (
        f'<tr data-contrast="{esc(row.version)}" data-kind="{row.kind}"><td>{esc(row.label)}</td>{on}{off}'
        f'<td class="num" data-delta="{value_attr(row.delta)}">{signed(row.delta)}</td><td>{esc(row.off_from)}</td></tr>'
    )


def _contrast(data: ReportData) -> str:
    """What memory changed, at first sight: each memory-on run against the same tasks with
    memory off (its own baseline pass and the base control), and each memory-off run alone."""
    rows = "".join(_contrast_row(row) for row in contrast_rows(data.versions))
    return (
        f'<section id="contrast"><h2>Memory on vs memory off {TOP}</h2>'
        '<p class="note">Initial-pass tasks resolved with memory against the same tasks with memory off, pooled over '
        "the sequences (a task without a valid verdict is left out of the rate, never counted as 0); per sequence in each "
        "run's part of the sequence sections below. A base run has no memory: it is the memory-off side only.</p>"
        '<table class="contrast"><thead><tr><th>run</th><th>memory on: initial pass</th><th>memory off</th>'
        f"<th>Δ on − off</th><th>memory off is</th></tr></thead><tbody>{rows}</tbody></table></section>"
    )


def _flagged_tasks(vr: VersionReport, anchors: Anchors) -> str:
    """Links to the task rows the audit flagged: the evidence, one click from the counts."""
    links = []
    for sequence_id, seq in vr.sequences.items():
        article = anchors.articles[(vr.run.version, sequence_id)]
        for task in seq.tasks:
            if task.leaks:
                hits = sum(leak.hits for leak in task.leaks)
                links.append(f'<a href="#{esc(task_anchor(article, task.order))}" data-task="{esc(sequence_id)}:{task.order}" '
                             f'title="{esc(task_label(sequence_id, task.order, list(vr.sequences)))}: {hits} flagged">'
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
                    f'<td class="leak-tasks">{_flagged_tasks(vr, anchors)}</td><td class="drill">{drill}</td></tr>')
    # Every run's audit reports the same kinds (`FLAG_KINDS`), in the same order.
    kinds = "".join(f"<th>{esc(KIND_TEXT.get(k, k))}</th>" for k in data.versions[0].leakage.by_kind)
    return (
        f'<section id="leakage"><h2>Leakage {TOP}</h2>'
        '<p class="note">A recalled memory item is flagged when it was written for the very task it was recalled for '
        "(same instance) or by a later task of the sequence (later task): only a seeded or imported memory can bring "
        "one, and it can inflate the scores (counts as in <code>swecl metrics</code>, over the attempts that count). "
        "Each flagged task links to its row in the run's task table, marked ⚑ there. "
        "Drill in: <code>swecl audit VERSION --summary</code>.</p>"
        f'<table class="leakage"><thead><tr><th>run</th><th>recalled items</th><th>flagged</th>{kinds}'
        f'<th>flagged tasks</th><th>drill in</th></tr></thead><tbody>{"".join(rows)}</tbody></table></section>'
    )


def _integrity(data: ReportData) -> str:
    """The integrity flags of the runs' patches, beside the leakage counts: one row per run,
    then each flagged task with where (a flag never changes a verdict)."""
    rows = []
    for vr in data.versions:
        found = vr.integrity
        if found is None:
            continue
        cells = [f'<td class="num" data-integrity-count="checked" data-value="{found["patches_checked"]}">{found["patches_checked"]}</td>',
                 f'<td class="num{" flagged" if found["flagged"] else ""}" data-integrity-count="flagged" '
                 f'data-value="{found["flagged"]}">{found["flagged"]}</td>']
        cells += [f'<td class="num{" flagged" if n else ""}" data-integrity-count="{esc(k)}" data-value="{n}">{n}</td>'
                  for k, n in found["by_kind"].items()]
        where = "".join(
            f'<li data-integrity-task="{esc(t["instance_id"])}">{esc(t["instance_id"])} ({esc(t["pass"])}, attempt '
            f'{t["attempt"]}): ' + "; ".join(f'{esc(f["kind"])}: {esc(f["detail"])}' for f in t["flags"]) + "</li>"
            for t in found["tasks"])
        rows.append(f'<tr data-integrity="{esc(vr.run.version)}"><td>{esc(vr.label)}</td>{"".join(cells)}'
                    f'<td><ul class="integrity-tasks">{where}</ul></td></tr>')
    if not rows:
        return ""
    kinds = "".join(f"<th>{esc(k)}</th>" for k in next(v.integrity for v in data.versions if v.integrity)["by_kind"])
    return (
        f'<section id="integrity"><h2>Integrity flags {TOP}</h2>'
        '<p class="note">A patch is flagged when its library code (not a test file) reaches into the test machinery: '
        "imports pytest internals, touches bytecode caches, names the task's FAIL_TO_PASS tests, calls os._exit or "
        "installs a trace hook. A flag never changes a verdict; it says where to look "
        "(<code>swecl show VERSION TASK</code>). Counts over the attempts that count, as in <code>swecl metrics</code>.</p>"
        f'<table class="integrity"><thead><tr><th>run</th><th>patches checked</th><th>flagged</th>{kinds}'
        f'<th>flagged tasks</th></tr></thead><tbody>{"".join(rows)}</tbody></table></section>'
    )
