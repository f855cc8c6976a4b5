"""Benchmark 6: task-level parallelism (`swecl run --task-jobs N`), a matter of scheduling.

The work is the demo benchmark's matrix for one memory stage: plugin-blank over its 3
sequences (24 tasks), passes initial, retest and baseline (72 tasks). The agent is
simulated so that its time dominates each task and the figures are about scheduling,
not this machine's CPUs: `--agent command --command "sleep S"` (it changes nothing) and
`--grader none` (records, runs no test). Everything else is a real run: real
checkouts, the recall server's memory written and recalled, the real ledger.

Times are read from each run's ledger (the events' UTC times): a run's span is from its
first `pass.started` to its last `pass.finished`, so the process's start-up and the
summary it prints are left out. Rows:

- `parallel_passes_2_workers`: the order-free passes alone (`--passes retest,baseline`,
  48 tasks), 1 worker against 2; target: at least 1.6x faster with 2.
- `matrix_2_workers`: the whole matrix, 1 worker against 2 (no target: the initial
  passes are chains, so their share caps the gain).
- `matrix_vs_critical_path`: the whole matrix with enough workers (8) against its
  critical path measured in this run's 1-worker matrix: the initial pass of the longest
  sequence (its span) plus the slowest single task of the re-test and baseline passes;
  target: within 1.3x.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._core import Context, Result, ratio_at_least, ratio_at_most
from .processes import ledger_rows, swecl

SLEEP_S = 1.0
QUICK_SLEEP_S = 0.3
QUICK_TASKS = (8, 12, 19, 24)  # the spans sequence's first four
MANY = 8
STAGE = ("run", "--stage", "plugin-blank", "--agent", "command", "--grader", "none", "--quiet")


def run(ctx: Context) -> list[Result]:
    sleep = QUICK_SLEEP_S if ctx.quick else SLEEP_S
    cache = ctx.work / "swecl-cache"
    base = (*STAGE, "--command", f"sleep {sleep:g}")
    if ctx.quick:  # a smoke run: the spans sequence's first four tasks
        base = (*base, "--sequence", "swecl-demo_spans_sequence",
                *(a for n in QUICK_TASKS for a in ("--instance", f"swecl-demo__spans-{n}")))

    def measure(name: str, *extra: str) -> dict[str, Any]:
        results = ctx.work / f"scheduling-{name}"
        ctx.log(f"scheduling: {name} ({' '.join(extra)})")
        swecl(results, *base, *extra, cache=cache, timeout=3600)
        return spans(results)

    measure("warm-up", "--passes", "baseline", "--instance", "swecl-demo__spans-8")  # builds the demo repositories
    free1 = measure("free-1", "--passes", "retest,baseline")
    free2 = measure("free-2", "--passes", "retest,baseline", "--task-jobs", "2")
    matrix1 = measure("matrix-1")
    matrix2 = measure("matrix-2", "--task-jobs", "2")
    many = measure(f"matrix-{MANY}", "--task-jobs", str(MANY))

    critical = max(matrix1["initial_spans"].values()) + max(matrix1["free_task_max"], 0.0)
    free_speedup = free1["span"] / free2["span"]
    matrix_speedup = matrix1["span"] / matrix2["span"]
    to_critical = many["span"] / critical
    ctx.details["scheduling"] = {
        "sleep_s": sleep, "workers_many": MANY, "critical_path_s": critical,
        "runs": {"free-1": free1, "free-2": free2, "matrix-1": matrix1, "matrix-2": matrix2, f"matrix-{MANY}": many},
    }
    target1, ok1 = ratio_at_least(free_speedup, 1.6)
    target3, ok3 = ratio_at_most(to_critical, 1.3)
    return [
        Result("parallel_passes_2_workers", free2["span"], "s", free_speedup, target1, ok1,
               reference=f"the same passes on 1 worker ({free1['span']:.1f} s); retest + baseline, {free1['tasks']} tasks, "
                         f"sleep {sleep:g} s agent"),
        Result("matrix_2_workers", matrix2["span"], "s", matrix_speedup, None, None,
               reference=f"the whole matrix on 1 worker ({matrix1['span']:.1f} s), {matrix1['tasks']} tasks"),
        Result("matrix_vs_critical_path", many["span"], "s", to_critical, target3, ok3,
               reference=f"critical path {critical:.1f} s (longest initial pass + slowest other task, from the 1-worker "
                         f"run); {MANY} workers"),
    ]


def spans(results: Path) -> dict[str, Any]:
    """From a finished run's ledger: its span (first pass.started to last pass.finished),
    each sequence's initial-pass span, the slowest task of the other passes, the task count."""
    rows = ledger_rows(results, ("pass.started", "pass.finished", "task.started", "task.finished"))
    marks: list[float] = []
    initial: dict[str, list[float]] = {}
    started: dict[tuple[str, str, int], float] = {}
    free_max, tasks = 0.0, 0
    for stream, type_, at, p in rows:
        if type_.startswith("pass."):
            marks.append(at)
            if p["pass"] == "initial":
                initial.setdefault(stream, []).append(at)
        elif type_ == "task.started":
            started[(stream, p["pass"], p["order"])] = at
        else:
            tasks += 1
            if p["pass"] != "initial":
                free_max = max(free_max, at - started[(stream, p["pass"], p["order"])])
    return {
        "span": max(marks) - min(marks),
        "initial_spans": {s.rsplit("/", 1)[-1]: max(t) - min(t) for s, t in initial.items()},
        "free_task_max": free_max,
        "tasks": tasks,
    }
