"""The funnel as text: the table of `swecl funnel` (within 100 columns), the lines of
`swecl show`, and the side by side of two runs (`swecl compare`)."""

from __future__ import annotations

import textwrap
from typing import Any

import msgspec

from projections._task_names import sequence_short_names, task_heading

from ._model import FunnelCounts, FunnelDifference, RunFunnel, Source, TaskFunnel

WIDTH = 100
_NAME = 28
def _head(width: int = _NAME) -> str:
    return (f"{'sequence':<{width}} {'tasks':>5} {'deps':>5} {'stored':>10} {'retrieved':>10} {'used':>10} "
            f"{'resolved':>10} {'gaps S/R/U/N':>12}")
LEGEND = ("stored: of the tasks with dependencies; retrieved: of stored; used: of retrieved; resolved: of "
          "the tasks with dependencies; gaps: storage / retrieval / use / no dependency (unresolved tasks)")


def _cell(n: int, rate: float | None) -> str:
    return f"{n} ({rate:.0%})" if rate is not None else f"{n} (n/a)"


def _row(name: str, c: FunnelCounts, width: int = _NAME) -> str:
    if len(name) > width:
        name = name[: width - 1] + "~"
    gaps = "/".join(str(c.labels.get(label, 0)) for label in
                    ("storage gap", "retrieval gap", "use gap", "no dependency"))
    return (f"{name:<{width}} {c.tasks:>5} {c.with_deps:>5} {_cell(c.stored, c.stored_rate):>10} "
            f"{_cell(c.retrieved, c.retrieved_rate):>10} {_cell(c.used, c.used_rate):>10} "
            f"{_cell(c.resolved, c.resolved_rate):>10} {gaps:>12}")


def funnel_table_lines(f: RunFunnel, width: int = WIDTH) -> list[str]:
    """`swecl funnel V`: a row per sequence and the macro (counts summed, rates the mean of
    the sequences'), then the legend."""
    lines = [f"memory funnel of v{f.version} ({f.stage}, memory: {f.memory}), initial pass, as of seq {f.upto}"]
    if f.na is not None:
        return lines + [f"no funnel: {f.na}"]
    # Short sequence names (`spans`, as a task's SEQ#ORDER names it): the table fits 80 columns.
    short = sequence_short_names([s.sequence_id for s in f.sequences])
    macro = "macro" if len(f.sequences) > 1 and f.macro is not None else ""
    name = min(_NAME, max([len("sequence"), len(macro), *(len(n) for n in short.values())]))
    lines += [_head(name)]
    lines += [_row(short[s.sequence_id], s.counts, name) for s in f.sequences]
    if macro:
        lines.append(_row(macro, f.macro.counts, name))  # type: ignore[union-attr]
    return lines + _wrap(LEGEND + "; macro: counts summed, rates the mean of the sequences'", width=width)


def _wrap(text: str, indent: str = "", width: int = WIDTH) -> list[str]:
    out, line = [], indent
    for word in text.split():
        if len(line) + len(word) + 1 > width and line.strip():
            out.append(line.rstrip())
            line = indent
        line += word + " "
    return out + ([line.rstrip()] if line.strip() else [])


def _sources(sources: list[Source]) -> str:
    return ", ".join(f"{s.ref} ({s.instance_id})" if s.kind != "history" else s.instance_id for s in sources) or "none"


def task_funnel_lines(f: RunFunnel, instance_id: str) -> list[str]:
    """`swecl show V TASK`: the task's label and what stands behind each step."""
    if f.na is not None:
        return [f"no funnel: {f.na}"]
    t = f.task(instance_id)
    if t is None:
        return ["not in the run's plan"]
    if t.attempt is None:
        return ["not run in the initial pass"]
    return _task_lines(t)


def _task_lines(t: TaskFunnel) -> list[str]:
    label = t.label or ("resolved" if t.resolved else "-")
    lines = [f"label: {label}  (stored {_yes(t.stored)}, retrieved {_yes(t.retrieved)}, used {_yes(t.used)}"
             f"{' by ' + t.used_by if t.used_by else ''}, resolved {_yes(t.resolved)})"]
    if not t.dependencies:
        return lines + ["dependencies: none"]
    lines += _wrap("dependencies: " + ", ".join(t.dependencies))
    lines += _wrap(f"stored: {_sources(t.stored_from)}", "  ")
    lines += _wrap(f"retrieved: {_sources(t.retrieved_from)}", "  ")
    lines += _wrap(f"used: {_sources(t.used_from)}; the patch touches {', '.join(t.touched) or 'nothing'}", "  ")
    return lines


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def format_funnel_difference(diff: FunnelDifference) -> list[str]:
    """Two runs' funnels side by side (`swecl compare A B`): per label the tasks in each and
    B - A, then the tasks whose label changed."""
    head = f"memory funnel, v{diff.a} -> v{diff.b} (initial pass)"
    if diff.na is not None:
        # Wrapped as the compare output's notes are: a terminal of 100 columns shows it whole.
        return [head, *textwrap.wrap(f"no comparison: {diff.na}", WIDTH, subsequent_indent="  ")]
    lines = [head, f"{'label':<16} {'v' + diff.a:>8} {'v' + diff.b:>8} {'B - A':>7}"]
    lines += [f"{d.label:<16} {d.a:>8} {d.b:>8} {d.difference:>+7}" for d in diff.labels]
    if not diff.changed:
        return lines + ["no task changed its label"]
    lines.append(f"tasks whose label changed ({len(diff.changed)}):")
    seqs = list(dict.fromkeys(c.sequence_id for c in diff.changed))
    lines += [f"  {task_heading(c.sequence_id, c.order, c.instance_id, seqs)}: {c.a} -> {c.b}" for c in diff.changed]
    return lines


def funnel_difference_document(diff: FunnelDifference) -> dict[str, Any]:
    """The same as JSON-ready data (`swecl compare --json`)."""
    return msgspec.to_builtins(diff)
