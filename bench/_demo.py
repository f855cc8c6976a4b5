"""Benchmark 8: `swecl run` with no arguments, the demo suite (base, plugin-blank,
plugin-accum, plugin-dreamed over the demo benchmark's 3 sequences), as a user runs it.

The reference is the same suite run serially in the same benchmark run (`--jobs 1
--task-jobs 1`: every sequence and pass one after another); the measured run is the
default (no worker options: `--task-jobs C` on C usable cores, `commands/run/_demo_suite.py`).
Each is a whole `swecl run` process, from its start to its last line, on a cache the
warm-up filled (the demo repositories and their three test environments), each in a new
results folder. Wall time is on the clock; CPU time is the process's and its children's
(user + system, `RUSAGE_CHILDREN`), so wall / CPU says how much of the machine a run kept
busy (1: one core's worth; 0.5: two cores) and is less disturbed by other work on the
machine than the wall time alone. Rows:

- `demo_suite_serial`: the reference's wall time; ratio its wall / CPU.
- `demo_suite_default`: the default's wall time; ratio the speed-up, serial wall / default
  wall; target at least 1.6 (the demo's CPU time is the same either way; 2 cores give at
  most 2).
- `demo_suite_default_wall_per_cpu`: the default's wall / CPU (no target: below 1 means
  more than one core was used).

`--quick`: the suite over each sequence's first three tasks.
"""

from __future__ import annotations

import resource
import time
from typing import Any

from ._core import Context, Result, ratio_at_least
from .processes import swecl

QUICK_TASKS = 3


def _cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _first_tasks(n: int) -> list[str]:
    from commands.inputs import demo_benchmark

    return [t.instance_id for s in demo_benchmark(materialise=False).sequences for t in s.tasks[:n]]


def run(ctx: Context) -> list[Result]:
    from commands.run import RunOptions
    from commands.run import usable_cores, with_default_workers

    cache = ctx.work / "swecl-cache"
    subset: tuple[str, ...] = ()
    if ctx.quick:
        subset = tuple(a for i in _first_tasks(QUICK_TASKS) for a in ("--instance", i))
    # The warm-up builds the demo repositories and each sequence's test environment, which
    # either measured run would otherwise pay for alone.
    ctx.log("demo: warm-up (the first task of each sequence, base stage)")
    swecl(ctx.work / "demo-warm-up", "run", "--stage", "base", "--quiet",
          *(a for i in _first_tasks(1) for a in ("--instance", i)), cache=cache, timeout=3600)

    def measure(name: str, *extra: str) -> dict[str, Any]:
        ctx.log(f"demo: {name} ({' '.join(extra) or 'no worker options'})")
        cpu0, wall0 = _cpu_of_children(), time.perf_counter()
        swecl(ctx.work / f"demo-{name}", "run", "--quiet", *subset, *extra, cache=cache, timeout=3600)
        wall, cpu = time.perf_counter() - wall0, _cpu_of_children() - cpu0
        return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "wall_per_cpu": round(wall / cpu, 3) if cpu else None}

    serial = measure("serial", "--jobs", "1", "--task-jobs", "1")
    default = measure("default")
    speedup = serial["wall_s"] / default["wall_s"]
    cores = usable_cores()
    workers = with_default_workers(RunOptions(stage="base"), given=False).execution.task_jobs
    ctx.details["demo"] = {"cores": cores, "default_task_jobs": workers, "serial": serial, "default": default, "quick": ctx.quick,
                           "tasks_per_sequence": QUICK_TASKS if ctx.quick else "all"}
    target, ok = ratio_at_least(speedup, 1.6)
    if cores < 2:  # one core: the default is the serial run, nothing to gain
        target, ok = "n/a (1 core)", None
    return [
        Result("demo_suite_serial", serial["wall_s"], "s", serial["wall_per_cpu"], None, None,
               reference=f"wall / CPU ({serial['cpu_s']:.1f} CPU-s); --jobs 1 --task-jobs 1"),
        Result("demo_suite_default", default["wall_s"], "s", speedup, target, ok,
               reference=f"speed-up: the serial run's wall ({serial['wall_s']:.1f} s) / this one's; "
                         f"default on {cores} cores (--task-jobs {workers})"),
        Result("demo_suite_default_wall_per_cpu", default["wall_per_cpu"], "x", default["wall_per_cpu"], None, None,
               reference=f"wall / CPU ({default['cpu_s']:.1f} CPU-s) of the default run"),
    ]
