"""The realistic two-version, two-sequence ledger the report tests share, built with the
shared `bench.ledgers.LedgerBuilder`; `build_realistic(root)` says what is in it (`Realistic`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.ledgers import LedgerBuilder, memory_item
from ledger.events import TaskRef, ToolCall

Outcome = int | None
"""Shorthand for a task's verdict: 1 resolved, 0 unresolved, None no valid verdict (infra_error)."""


def agent(turns: int = 5) -> dict[str, Any]:
    """What the demo agent reports for a task."""
    return dict(turns=turns, duration_s=1.5, cost_usd=0.05, tool_calls=[ToolCall(name="Edit"), ToolCall(name="Bash")])


def _task(b: LedgerBuilder, version: str, sequence: str, order: int, *, turns: int = 5, **fields: Any) -> None:
    t = b.task_of(version, sequence, order)
    b.task(version, sequence, order, patch=f"diff --git a/{t.instance_id}.py b/{t.instance_id}.py\n",
           agent=agent(turns), **fields)


def _write(b: LedgerBuilder, version: str, sequence: str, order: int, item_id: str) -> None:
    b.write(version, sequence, b.item(version, sequence, order, item_id, title=TITLES[item_id]))


# --- the realistic ledger the report tests share ------------------------------------------

DJANGO = "django__django"
SYMPY = "sympy__sympy"
BASE = "base"
PLUGIN = "plugin-blank"

PLAN: dict[str, list[TaskRef]] = {
    DJANGO: [
        TaskRef("django__django-11099", 1, "django/django", 1),
        TaskRef("django__django-11133", 2, "django/django", 2),
        TaskRef("django__django-11179", 3, "django/django", 1),
        TaskRef("django__django-11211", 4, "django/django", 3),
        TaskRef("django__django-11276", 5, "django/django", 2),
    ],
    SYMPY: [
        TaskRef("sympy__sympy-12481", 1, "sympy/sympy", 1),
        TaskRef("sympy__sympy-13031", 2, "sympy/sympy", 2),
        TaskRef("sympy__sympy-13480", 3, "sympy/sympy", 1),
        TaskRef("sympy__sympy-13647", 4, "sympy/sympy", 4),
    ],
}

SCRIPT_TITLE = 'Escape <script>window.__pwned = 1;</script> & "quotes" in admin <b>titles</b>'
HOSTILE_QUERY = '<img src="x-should-not-load.png" onerror="window.__pwned = 2">'
UNKNOWN_ITEM = "mem-ghost-404"

TITLES: dict[str, str] = {
    "mem-dj-1": "URLValidator accepts newlines: anchor the regex with \\A and \\Z",
    "mem-dj-2": SCRIPT_TITLE,
    "mem-dj-4": "Field.deconstruct must keep the callable storage (migrations)",
    "mem-sy-1": "Permutation constructor: non-disjoint cycles compose left to right",
    "mem-import-1": "Imported: Matrix.hstack of empty matrices keeps the column count",
}


@dataclass(frozen=True)
class Realistic:
    """What `build_realistic` put in the ledger."""

    root: Path
    ledger_path: Path
    versions: tuple[str, ...]
    sequences: tuple[str, ...]
    initial: dict[tuple[str, str], list[Outcome]]
    final: dict[tuple[str, str], list[Outcome]]
    baseline: dict[tuple[str, str], list[Outcome]]
    missing_cell: tuple[str, str, str, int]
    """(version, sequence, pass, order) of the infra_error task."""
    recalled_titles: tuple[str, ...]
    """Titles of items the initial passes recalled (known items only)."""
    unknown_item: str = UNKNOWN_ITEM
    script_title: str = SCRIPT_TITLE
    hostile_query: str = HOSTILE_QUERY


def build_realistic(root: Path) -> Realistic:
    """`root/ledger.db`: v`base` (memory off, initial only) and v`plugin-blank` (initial,
    retest, baseline, retest every 2) over django (5 tasks) and sympy (4 tasks)."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / "ledger.db"
    b = LedgerBuilder.create(path)
    try:
        initial = {
            (BASE, DJANGO): [1, 0, 1, 0, 1],
            (BASE, SYMPY): [0, 1, 1, 0],
            (PLUGIN, DJANGO): [1, 1, None, 0, 1],
            (PLUGIN, SYMPY): [0, 1, 1, 1],
        }
        final = {(PLUGIN, DJANGO): [1, 0, 1, 0, 1], (PLUGIN, SYMPY): [1, 1, 0, 1]}
        baseline = {(PLUGIN, DJANGO): [1, 0, 1, 0, 0], (PLUGIN, SYMPY): [0, 0, 1, 0]}

        b.start_run(BASE, stage="base", plan=PLAN)
        for seq in (DJANGO, SYMPY):
            b.run_pass(BASE, seq, "initial", initial[(BASE, seq)])
        b.finish_run(BASE)

        b.start_run(PLUGIN, stage="plugin-blank", plan=PLAN, retest_every=2, model="claude-test")
        # A seed-style import into the header stream, from a run this ledger does not hold.
        b.write(PLUGIN, None, memory_item("mem-import-1", "archive-2024", None, title=TITLES["mem-import-1"],
                                          instance_id="sympy__sympy-11618", repo="sympy/sympy", sequence=None))

        # django, initial pass: daydream writes after tasks 1, 2 and 4; task 3 hits an infra error.
        stream_dj = (PLUGIN, DJANGO)
        b.pass_mark(*stream_dj, "initial", "started")
        _task(b, *stream_dj, 1, status="resolved", turns=7)
        _write(b, *stream_dj, 1, "mem-dj-1")
        _task(b, *stream_dj, 2, status="resolved", turns=5, recalls=[[("mem-dj-1", 0.91)]])
        _write(b, *stream_dj, 2, "mem-dj-2")
        _task(b, *stream_dj, 3, status="infra_error", turns=3, recalls=[[("mem-dj-1", 0.42), ("mem-dj-2", 0.40)]])
        _task(b, *stream_dj, 4, status="patch_failed", turns=12, query=HOSTILE_QUERY,
              recalls=[[("mem-dj-2", 0.88), ("mem-dj-1", 0.51), (UNKNOWN_ITEM, 0.2)]])
        _write(b, *stream_dj, 4, "mem-dj-4")
        _task(b, *stream_dj, 5, status="resolved", turns=6, recalls=[[("mem-dj-4", 0.77)], []])
        b.pass_mark(*stream_dj, "initial", "finished")

        # sympy, initial pass: task 4 crashes once (its recall is history) and is redone.
        stream_sy = (PLUGIN, SYMPY)
        b.pass_mark(*stream_sy, "initial", "started")
        _task(b, *stream_sy, 1, status="unresolved", recalls=[[("mem-import-1", 0.65)]])
        _write(b, *stream_sy, 1, "mem-sy-1")
        _task(b, *stream_sy, 2, status="resolved", recalls=[[("mem-sy-1", 0.93), ("mem-import-1", 0.31)]])
        _task(b, *stream_sy, 3, status="resolved", recalls=[[]])
        _task(b, *stream_sy, 4, abandon=True, recalls=[[("mem-dj-4", 0.05)]])
        _task(b, *stream_sy, 4, attempt=2, status="resolved", recalls=[[("mem-sy-1", 0.7)]])
        b.pass_mark(*stream_sy, "initial", "finished")

        # Extra rows a(i, j<=i), the final re-test and the memory-off baseline.
        b.run_pass(*stream_dj, "retest-2", [1, 0])
        b.run_pass(*stream_dj, "retest-4", [1, 1, 1, 0])
        b.run_pass(*stream_sy, "retest-2", [0, 1])
        b.run_pass(*stream_dj, "retest", final[stream_dj], recalls={1: [("mem-dj-4", 0.6)]})
        b.run_pass(*stream_sy, "retest", final[stream_sy])
        b.run_pass(*stream_dj, "baseline", baseline[stream_dj])
        b.run_pass(*stream_sy, "baseline", baseline[stream_sy])
        b.finish_run(PLUGIN)
    finally:
        b.close()
    recalled = tuple(TITLES[k] for k in ("mem-dj-1", "mem-dj-2", "mem-dj-4", "mem-sy-1", "mem-import-1"))
    return Realistic(
        root=root,
        ledger_path=path,
        versions=(BASE, PLUGIN),
        sequences=(DJANGO, SYMPY),
        initial=initial,
        final=final,
        baseline=baseline,
        missing_cell=(PLUGIN, DJANGO, "initial", 3),
        recalled_titles=recalled,
    )
