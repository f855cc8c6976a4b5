"""`swecl audit VERSION TASK` and `swecl audit VERSION --summary`: readable or JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from ._common import PassParam, echo_json, experiment_of, results_option, run_version
from ._tables import make_console

if TYPE_CHECKING:  # the audit itself is imported when the command runs, not at `swecl --help`
    from projections.audit import AuditedHit, DatasetNote, Provenance, RunAuditSummary, TaskAudit


@click.command("audit")
@results_option
@click.argument("version", callback=run_version)
@click.argument("task_id", required=False, metavar="[TASK]")
@click.option("--pass", "pass_", type=PassParam(), default=None, metavar="P",
              help="Only recalls of this pass (default: every pass).")
@click.option("--summary", is_flag=True,
              help="The whole run instead of one task: flagged hits per flag and sequence, the most flagged tasks.")
@click.option("--all", "every", is_flag=True, help="With --summary: list every flagged task.")
@click.option("--dataset", default=None, metavar="X",
              help="Benchmark for the test-content check (default: the one the run recorded).")
@click.option("--rows", default=None, metavar="FILE", help="SWE-bench rows completing --dataset.")
@click.option("--no-dataset", is_flag=True, help="Skip the test-content check (no dataset is loaded).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def audit_cmd(ctx: click.Context, version: str, task_id: str | None, pass_: str | None, summary: bool, every: bool,
              dataset: str | None, rows: str | None, no_dataset: bool, as_json: bool) -> None:
    """Which memories influenced a task, where they came from, and whether any leaked.

    For TASK (an instance id, SEQ#ORDER such as spans#4, or #ORDER in a one-sequence
    run): every recall of every attempt (abandoned ones
    marked), each item's rank and score, its provenance (written by which task of which
    run, seeded or imported into this run, merged, superseded or pruned by which dream
    and why), whether the agent's patch reused it, and leakage flags: same-instance,
    later-task, test-content. In a --memory-server run: what the server returned to the
    task's recall calls, each line attributed to the earlier task whose write call stored
    it (or "unattributed"). With --summary: the run's flagged hits per flag and per
    sequence and its most flagged tasks (--all: every flagged task).
    """
    from projections.audit import RunAuditSummary  # lazy: the audit's folds load when the command runs

    if summary == (task_id is not None):
        raise click.UsageError("give a TASK, or --summary for the whole run (not both)")
    if every and not summary:
        raise click.UsageError("--all lists every flagged task of --summary; give --summary")
    doc = experiment_of(ctx).audit(version, task_id, pass_=pass_, summary=summary, dataset=dataset, rows=rows,
                                   no_dataset=no_dataset).audit
    if as_json:
        echo_json(doc)
    elif isinstance(doc, RunAuditSummary):
        _print_summary(doc, every=every)
    else:
        _print_task(doc)


# -- the readable view ----------------------------------------------------------------------


def _dataset_line(note: DatasetNote) -> str:
    if note.available:
        text = f"test-content check: against {note.source or 'the given secrets'}"
        return text + (f" ({note.note})" if note.note else "")
    return f"test-content check: not run: {note.note or 'no dataset'}"


def _written(p: Provenance) -> str:
    w = p.written
    task = w.instance_id or "?"
    bits = [f"v{w.run}", task]
    if w.order is not None:
        bits.append(f"order {w.order}")
    if w.pass_:
        bits.append(w.pass_)
    if w.attempt is not None:
        bits.append(f"attempt {w.attempt}")
    where = f"seq {w.seq}" if w.seq is not None else "in another ledger"
    return " ".join(bits) + f" ({where})"


def _hops(p: Provenance) -> list[str]:
    out = []
    for h in p.hops:
        if h.via == "seeded":
            out.append(f"seeded into v{h.into} from v{h.source_run} as of seq {h.source_seq} (seq {h.seq}, {h.chosen})")
        else:
            out.append(f"imported into v{h.into} from {h.path} (seq {h.seq})")
    if p.upstream:
        u = p.upstream
        out.append(f"  upstream: v{u.get('version')} of ledger {u.get('ledger_id')}, written in v{u.get('written_in')} at seq {u.get('written_seq')}")
    return out


def _decisions(p: Provenance) -> list[str]:
    out = []
    for d in p.decisions:
        if d.status in ("written", "rewritten"):
            continue
        by = f" {'into' if d.status == 'merged' else 'by'} {d.by}" if d.by else ""
        dream = f" in dream {d.dream_id} of v{d.dream_run} ({d.dream_reason})" if d.dream_id else ""
        out.append(f"{d.status}{by} at seq {d.seq}{dream}: {d.reason}")
    return out


def _reuse(hit: AuditedHit) -> str:
    r = hit.reuse
    if not r.compared:
        return f"n/a ({r.reason})"
    mark = "REUSED" if r.reused else "no"
    return f"{mark} {r.score:.2f} ({r.shared_lines}/{r.item_lines} {r.basis} lines, {len(r.shared_files)} file(s))"


def _print_task(audit: TaskAudit) -> None:
    # lazy: rich costs about 45 ms, paid only by the commands that print a table
    from rich.markup import escape
    from rich.table import Table

    from projections import task_heading

    console = make_console(highlight=False)
    console.print(
        f"[bold]audit of {escape(task_heading(audit.sequence_id, audit.order, audit.instance_id))}[/bold] "
        f"(task {audit.order} of {escape(audit.sequence_id)}, {escape(audit.repo)}) in v{escape(audit.version)} ({escape(audit.stage)})"
        + (f", pass {escape(audit.pass_filter)}" if audit.pass_filter else "")
    )
    console.print(escape(_dataset_line(audit.dataset)))
    console.print(f"reuse: the agent's patch adds at least {audit.reuse_threshold:.0%} of the lines the item's patch adds")
    flags = ", ".join(audit.flags) if audit.flags else "none"
    console.print(f"leakage flags: [{'bold red' if audit.flags else 'green'}]{flags}[/]")

    attempts = Table(title="attempts", title_justify="left")
    for col in ("pass", "attempt", "status", "in force", "verdict", "agent patch"):
        attempts.add_column(col)
    for a in audit.attempts:
        verdict = a.grade_status or ""
        status = a.status + (f" ({a.abandon_reason})" if a.abandon_reason else "")
        attempts.add_row(a.pass_, str(a.attempt), escape(status), "yes" if a.in_force else "", escape(verdict),
                         (a.agent_patch or "")[:12])
    console.print(attempts)

    if audit.counterfactuals:
        _print_counterfactuals(console, audit)
    if audit.memory_server is not None:
        _print_provider(console, audit)
        if not audit.recalls:
            return
    if not audit.recalls:
        console.print("no recalls")
        return
    _print_provenance(console, _print_recalls(console, audit))


def _print_recalls(console: Any, audit: TaskAudit) -> dict[str, AuditedHit]:
    """One table per recall of the task, its hits with what became of them; returns the
    known items recalled, each once with its first hit, for `_print_provenance`."""
    from rich.markup import escape  # lazy: as in _print_task
    from rich.table import Table

    provenance: dict[str, AuditedHit] = {}
    for r in audit.recalls:
        state = r.attempt_status + (", in force" if r.in_force else "")
        console.print(
            f"\n[bold]recall at seq {r.seq}[/bold] · {r.pass_} attempt {r.attempt} ({escape(state)}) · via {r.via} · "
            f"{escape(r.ranker)} · k={r.k} · query {escape(r.query_hash[:12])}: "
            f"{escape((r.query.splitlines() or [''])[0][:80])}"
        )
        if not r.hits:
            console.print("  no items returned")
            continue
        table = Table(show_lines=False, pad_edge=False)
        for col in ("rank", "score", "item", "title", "written by", "status (recall -> now)", "reuse", "flags"):
            table.add_column(col)
        for h in r.hits:
            if not h.known:
                table.add_row(str(h.rank), f"{h.score:.3f}", escape(h.item_id), "[dim]unknown item[/dim]", "", "", "", "")
                continue
            p = h.provenance
            assert p is not None
            provenance.setdefault(h.item_id, h)
            status = p.status_at_recall if p.status_at_recall == p.status_now else f"{p.status_at_recall} -> {p.status_now}"
            flag_text = ", ".join(sorted({f.kind for f in h.flags}))
            table.add_row(
                str(h.rank), f"{h.score:.3f}", escape(h.item_id), escape((h.title or "")[:60]), escape(_written(p)),
                escape(status), escape(_reuse(h)), f"[bold red]{escape(flag_text)}[/]" if flag_text else "",
            )
        console.print(table)
    return provenance


def _print_provenance(console: Any, provenance: dict[str, AuditedHit]) -> None:
    """Where each recalled item came from and what happened to it since it was written."""
    from rich.markup import escape  # lazy: as in _print_task

    if provenance:
        console.print("\n[bold]provenance of the recalled items[/bold]")
    for item_id, h in provenance.items():
        p = h.provenance
        assert p is not None
        console.print(f"[bold]{escape(item_id)}[/bold] {escape(h.title or '')}")
        console.print(f"  written by {escape(_written(p))}, outcome {escape(p.written.outcome or '?')}")
        for line in _hops(p):
            console.print("  " + escape(line))
        for line in _decisions(p):
            console.print("  " + escape(line))
        if p.merged_from:
            console.print("  absorbed (merged from) " + escape(", ".join(p.merged_from)))
        if p.supersedes:
            console.print("  supersedes " + escape(", ".join(p.supersedes)))
        for f in h.flags:
            console.print(f"  [bold red]{escape(f.kind)}[/]: {escape(f.detail)}")


def _print_counterfactuals(console: Any, audit: TaskAudit) -> None:
    """`swecl counterfactual`'s re-runs: per hidden item (or set), the outcome without it and the verdict."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="counterfactuals (re-runs without the items)", title_justify="left")
    for col in ("pass", "without", "run's outcome", "outcomes without", "verdict", "agent runs", "cost"):
        table.add_column(col)
    for v in audit.counterfactuals:
        outcomes = ", ".join(r.status or "unfinished" for r in v.repeats)
        cost = f"${v.cost_usd:.4f}" if v.cost_usd is not None else ""
        table.add_row(v.pass_, escape(", ".join(v.hidden)), escape(v.original_status or "no verdict"), escape(outcomes),
                      v.verdict, str(v.runs), cost)
    console.print(table)


def _print_provider(console: Any, audit: TaskAudit) -> None:
    """A --memory-server run: each recall call's answer, line by line, with the earlier
    task whose write stored that line (or "unattributed")."""
    from rich.markup import escape

    console.print(f"\n[bold]memory server {escape(audit.memory_server or '')}[/bold]: "
                  "each returned line is attributed to the earliest earlier write call whose arguments hold it")
    if not audit.provider_recalls:
        console.print("no recall calls")
    for r in audit.provider_recalls:
        who = "swecl's recall" if r.via == "recall" else "the agent"
        end = f"FAILED ({r.failure}: {r.error})" if r.failure else "the tool's error answer" if r.is_error else "ok"
        console.print(f"\n[bold]recall call #{r.call}[/bold] at seq {r.seq} · {r.pass_} attempt {r.attempt} · "
                      f"{escape(r.tool)} by {who}: {escape(end)} · asked {escape(r.arguments or '')}")
        if not r.returned:
            console.print("  nothing returned")
            continue
        console.print(f"  {len(r.lines)} line(s) returned, {r.unattributed} unattributed; written by "
                      + ("no earlier task" if not r.writes else "the write calls of:"))
        for w in r.writes:
            run = f"v{w.run} " if w.run is not None and w.run != audit.version else ""
            flags = f" [bold red]{escape(', '.join(sorted({f.kind for f in w.flags})))}[/]" if w.flags else ""
            by = "" if w.via == "write" else " by the agent"  # else swecl's write step
            console.print(f"    {escape(run + w.instance_id)} (task {w.order}, {w.pass_} attempt {w.attempt}): "
                          f"{escape(w.tool)} #{w.call}{by} at seq {w.seq}, {w.lines} line(s){flags}")
            for f in w.flags:
                console.print(f"      [bold red]{escape(f.kind)}[/]: {escape(f.detail)}")
        if r.unattributed:
            # No recorded write of this ledger holds them: the server's own words, the
            # agent's calls, or a seed from data this ledger never saw written.
            console.print(f"    unattributed: {r.unattributed} line(s) no write recorded in this ledger holds")
        for f in r.unattributed_flags:
            console.print(f"      [bold red]{escape(f.kind)}[/]: {escape(f.detail)}")
        for line in r.lines:
            origin = ("unattributed" if line.write_seq is None else
                      f"{'v' + line.run + ' ' if line.run not in (None, audit.version) else ''}"
                      f"{line.instance_id} (seq {line.write_seq})")
            text = line.text if len(line.text) <= 100 else line.text[:100] + "..."
            console.print(f"  [dim]{escape(origin)}[/dim]  {escape(text)}")


SUMMARY_TASKS = 5  # the most flagged tasks `--summary` lists; `--all` lists every one


def _print_summary(summary: RunAuditSummary, *, every: bool = False) -> None:
    """The run's audit in the lines a person reads: the counts, flagged hits per flag and
    per sequence, and the few most flagged tasks; `every` (`--all`): every flagged task."""
    import textwrap

    # lazy: rich costs about 45 ms, paid only by the commands that print a table
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    from projections import sequence_short_names, task_label

    console = make_console(highlight=False)
    width = min(console.width, 100)

    def prose(text: str) -> None:
        console.print(textwrap.fill(text, width=width, subsequent_indent="  ", break_on_hyphens=False), markup=False,
                      highlight=False)

    console.print(f"[bold]audit of v{escape(summary.version)}[/bold] ({escape(summary.stage)})")
    prose(_dataset_line(summary.dataset))
    kinds = ", ".join(f"{k}={n}" for k, n in summary.by_kind.items())
    server = (f" ({summary.provider_recalls} recall call(s) to the memory server returned {summary.provider_hits} "
              "item(s): attributed writes, and unattributed lines as one per call)") if summary.provider_recalls else ""
    prose(f"{summary.recalls} recall(s), {summary.hits} item(s) returned{server}, {summary.reused_hits} reused by the "
          f"agent (>= {summary.reuse_threshold:.0%} of their added lines), {summary.flagged_hits} flagged ({kinds})")
    if not summary.flagged:
        console.print("[green]no flagged tasks[/green]")
        return
    sequences = list(dict.fromkeys(f.sequence_id for f in summary.flagged))
    short = sequence_short_names(sequences)
    kinds_present = [k for k, n in summary.by_kind.items() if n] or list(summary.by_kind)
    # Flagged hits per flag and per sequence (the source of the flagged tasks).
    table = Table(title="flagged hits per flag and sequence", title_justify="left", box=box.SIMPLE_HEAD,
                  pad_edge=False, show_edge=False)
    table.add_column("sequence", no_wrap=True)
    table.add_column("tasks", justify="right", no_wrap=True)
    table.add_column("task-passes", justify="right", no_wrap=True)
    for kind in kinds_present:
        table.add_column(kind, justify="right", no_wrap=True)
    table.add_column("reused", justify="right", no_wrap=True)
    for seq in sequences:
        of_seq = [f for f in summary.flagged if f.sequence_id == seq]
        table.add_row(escape(short[seq]), str(len({f.order for f in of_seq})), str(len(of_seq)),
                      *[str(sum(f.by_kind.get(k, 0) for f in of_seq)) for k in kinds_present],
                      str(sum(len(f.reused_items) for f in of_seq)))
    console.print(table)
    prose("tasks: flagged tasks; task-passes: a flagged task in each pass it ran in; the flags: flagged hits "
          "(an item recalled twice counts twice); reused: flagged items the agent's patch reused")
    ranked = summary.flagged if every else sorted(summary.flagged, key=lambda f: (-f.hits, -len(f.items)))
    shown = ranked if every else ranked[:SUMMARY_TASKS]
    heading = ("every flagged task, in each pass" if every or len(shown) == len(ranked)
               else f"the {len(shown)} most flagged of {len(ranked)} (a task in a pass; every one: --all)")
    console.print(f"[bold]{heading}[/bold]")
    for f in shown:
        label = task_label(f.sequence_id, f.order, sequences)
        counts = ", ".join(f"{k} {n}" for k, n in f.by_kind.items() if n) or ", ".join(f.kinds)
        items = ", ".join(f.items[:2]) + (f" +{len(f.items) - 2}" if len(f.items) > 2 else "")
        reused = f"; reused {len(f.reused_items)}" if f.reused_items else ""
        attempts = ",".join(str(a) for a in f.attempts)
        prose(f"{label} {f.instance_id} ({f.pass_} attempt {attempts}): {counts}{reused}; items {items}")
    console.print(f"one task's recalls in full: swecl audit {summary.version} {task_label(shown[0].sequence_id, shown[0].order, sequences)}",
                  markup=False, highlight=False)
