"""The grouped table (`--group`): runs of one setting (`swecl run --repeat K`) as one row,
mean and t-based 95% interval over the repeats. The groups and their --json document come
from the core (`commands._jobs_read`, `commands._read_documents`)."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any

from projections.metrics import marked

from ._tables import make_console, short_sequence_names

if TYPE_CHECKING:
    from projections.compare import GroupedMetrics, GroupedValue

# The terminal table's columns (every metric is in --json): what `swecl compare` compares.
_SHOWN = ("resolved_rate", "ACC", "F", "FWT", "CL-Score")
_HEADS = {"resolved_rate": "resolved"}


def _cell(value: GroupedValue) -> str:
    if value.mean is None:
        return "n/a"
    if value.ci is None:
        return f"{value.mean:.3f}"
    # The t interval is symmetric: mean -/+ its half-width.
    return f"{value.mean:.3f} ±{(value.ci[1] - value.ci[0]) / 2:.3f}"


def _span(value: GroupedValue) -> str:
    return "n/a" if value.min is None or value.max is None else f"{value.min:.3f}-{value.max:.3f}"


def print_grouped_table(grouped: list[GroupedMetrics], console: Any = None) -> None:
    """One block per group (fits 100 columns): per sequence and macro, n and mean ± the
    half-width of the t-based 95% interval; then what is n/a and why."""
    # lazy: rich costs about 45 ms, paid only by the commands that print a table
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    console = console or make_console()
    formula = grouped[0].formula
    table = Table(title=escape(f"CL metrics by group, mean ± 95% CI over repeats ({formula} formulas)"),
                  box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    table.add_column("group / sequence", overflow="fold", max_width=16)  # the label row folds: 100 columns
    table.add_column("n", justify="right", no_wrap=True)
    for metric in _SHOWN:
        table.add_column(marked(_HEADS.get(metric, metric)), justify="right", no_wrap=True)
    gaps: dict[tuple[str, str], set[str]] = {}  # (reason, group) -> metrics
    for g in grouped:
        table.add_row(f"[bold]{escape(g.label)}[/bold]", *[""] * (len(_SHOWN) + 1))
        short = short_sequence_names(list(g.sequences))
        rows = [(f"  {escape(short[name])}", s.metrics, False) for name, s in g.sequences.items()]
        rows.append(("  [bold]macro[/bold]", g.macro, True))
        for label, metrics, bold in rows:
            cells = [str(max(v.n for v in metrics.values()))] + [_cell(metrics[m]) for m in _SHOWN]
            for m in _SHOWN:
                if metrics[m].na:
                    gaps.setdefault((metrics[m].na or "", g.label), set()).add(_HEADS.get(m, m))
            if bold:
                cells = [f"[bold]{c}[/bold]" for c in cells]
            table.add_row(label, *cells, end_section=bold)
    console.print(table)
    lines = [f"{', '.join(sorted(metrics))} n/a in {label}: {why}" for (why, label), metrics in gaps.items()]
    for g in grouped:
        lines.extend(f"{g.label}: {note}" for note in g.notes)
        if len(g.group.versions) > 1:
            over = "orders " + ", ".join(o or "dataset" for o in g.orders) if any(g.orders) else "runs"
            spread = ", ".join(f"{_HEADS.get(m, m)} {_span(g.macro[m])}" for m in _SHOWN)
            lines.append(f"{g.label} macro min-max over its {over}: {spread} "
                         "(--json: each metric's min, max and bootstrap interval)")
    lines.append("mean ± half-width of the Student-t 95% interval over the group's n runs (n=1: no interval). "
                 "Groups: the runs of one `swecl run --repeat K`, else runs sharing stage, agent, model, dataset, "
                 "grader, passes, tasks, order and fork point; `swecl run --orders N`: one run per order. --json has every "
                 "metric, sd, min, max, a bootstrap interval and each run's value.")
    width = min(console.width, 100)
    for line in lines:
        console.print(textwrap.fill(line, width=width, subsequent_indent="  "), markup=False, highlight=False)
