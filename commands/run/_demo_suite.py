"""`swecl run` invocations that start several runs: the demo suite of four stages, and
`--repeat K` (each requested stage K times, the K runs recorded as one group), `--orders N`
(the same, repeat i in the seeded permutation `permute:i`); and
`swecl run --resume` of any of their runs, which carries on with the whole invocation."""

from __future__ import annotations

import os

import msgspec

from ledger import SweclError
from projections import RunsProjection, RunSummary

from .._folder import ExperimentFolder
from ._options import ResumeOverrides, RunOptions
from ._orchestrate import Invocation, Repeat, RunReport, resume_run, start_run
from ._progress import Reporter
from ._stages import DEMO_SUITE, get_stage
from .memory import resume_memory_options


def run_repeats(folder: ExperimentFolder, opts: RunOptions, reporter: Reporter, count: int = 1) -> list[RunReport]:
    """Run `opts.stage` `count` times, each repeat its own run version. With count > 1 every
    run.started records the group (the first repeat's version), its index and the count, so
    the read side knows the versions are repeats of one setting (`--group`). count = 1 is a
    plain run, recorded without a group."""
    if count == 1 and opts.orders is None:
        return [start_run(folder, opts, reporter)]
    return _run_invocation(folder, opts, (opts.stage,), count, reporter)


def run_demo_suite(folder: ExperimentFolder, opts: RunOptions, reporter: Reporter, count: int = 1, *,
                   workers_given: bool = True) -> list[RunReport]:
    """base, plugin-blank, then plugin-accum and plugin-dreamed seeded from plugin-blank;
    the whole suite `count` times (--repeat), each stage's repeats one group.

    The seeds are named explicitly: left to choose, plugin-dreamed would take the
    newest prior run (plugin-accum's), and the suite means to compare both seeded stages
    against the same blank substrate. Repeat i seeds from repeat i's plugin-blank, so each
    repeat replicates the whole chain independently. `workers_given` False: the command
    line named neither --jobs nor --task-jobs, so the suite takes the cores'
    (`with_default_workers`); a library caller's options are taken as given.
    """
    chosen = with_default_workers(opts, given=workers_given)
    if chosen is not opts:
        opts = chosen
        reporter.note(f"the demo suite runs {opts.execution.task_jobs} tasks at once (--task-jobs "
                      f"{opts.execution.task_jobs}, one per core; --task-jobs 1 runs them one at a time)")
    return _run_invocation(folder, opts, DEMO_SUITE, count, reporter)


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, which a container or `taskset`
    may narrow), else the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


# The most workers the default takes: with 8 the demo's matrix is within 1.3x of its
# critical path (docs/benchmarks.md, scheduling), and each worker is a worktree slot.
MAX_DEFAULT_WORKERS = 8


def with_default_workers(opts: RunOptions, *, given: bool, cores: int | None = None) -> RunOptions:
    """The demo suite's workers when the command line gave neither --jobs nor --task-jobs:
    `--task-jobs C` on C usable cores (C >= 2; at most `MAX_DEFAULT_WORKERS`), the suite's
    sequences sharing the C workers of one process. Nothing scored depends on it: only a memory stage's initial pass is
    ordered, and it stays a chain; every other task reads nothing its pass writes (see
    `_schedule`), so the outcomes, metrics and memory items are a serial run's, in
    another event order. The stages still run one after the other (the seeded ones take
    plugin-blank's memory). Recorded as given (`run.started.config`: `jobs`, `task_jobs`).
    One core, the Ray executor, or workers given: the options unchanged."""
    if given or opts.execution.executor != "local":
        return opts
    cores = usable_cores() if cores is None else cores
    if cores < 2:
        return opts
    workers = min(cores, MAX_DEFAULT_WORKERS)
    return msgspec.structs.replace(opts, execution=msgspec.structs.replace(opts.execution, task_jobs=workers))


def continue_invocation(folder: ExperimentFolder, version: str, reporter: Reporter,
                        overrides: ResumeOverrides = ResumeOverrides()) -> list[RunReport]:
    """`swecl run --resume VERSION`: continue that run and, when it is part of an invocation
    that started several (the demo suite, --repeat K), the rest of it, in the order it
    would have run: unfinished runs resumed, runs that never began started, finished ones
    left alone. A run started alone is just resumed."""
    with folder.open_ledger() as ledger:
        runs = folder.results.projector(ledger).run(RunsProjection()).state.runs
    run = runs.get(version)
    if run is None or run.suite is None or not run.suite_stages or run.suite not in runs:
        return [resume_run(folder, version, reporter, overrides)]
    members = {(m.repeat_index or 1, m.stage): m for m in runs.values() if m.suite == run.suite}
    first = runs[run.suite]
    try:
        opts = overrides.apply(RunOptions.from_config(first.config))
        # --repeat K of a --memory-server run: the runs not begun yet start with the values given now.
        opts = resume_memory_options(opts, first.config, first.version, overrides)
    except msgspec.ValidationError as exc:
        raise SweclError(f"run {first.version}'s recorded options cannot be read: {exc}") from None
    stages = tuple(run.suite_stages)
    for stage in stages:
        get_stage(stage)  # a stage this swecl no longer knows is refused before anything runs
    return _run_invocation(folder, opts, stages, run.repeat_count or 1, reporter, done=members,
                           first=run.suite, overrides=overrides)


def _run_invocation(folder: ExperimentFolder, opts: RunOptions, stages: tuple[str, ...], count: int, reporter: Reporter, *,
                    done: dict[tuple[int, str], RunSummary] | None = None, first: str | None = None,
                    overrides: ResumeOverrides = ResumeOverrides()) -> list[RunReport]:
    """Each of `stages` in order, `count` times. `done`: the runs this invocation already
    has, by (repeat index, stage); the unfinished of them are resumed, the finished kept."""
    done = done or {}
    groups = {stage: m.repeat_group for (_, stage), m in done.items() if m.repeat_group is not None}
    reports: list[RunReport] = []
    for index in range(1, count + 1):
        blank: str | None = opts.source_memory
        for stage in stages:
            member = done.get((index, stage))
            if member is None:
                stage_opts = msgspec.structs.replace(opts, stage=stage, version=None, passes=list(opts.passes))
                if opts.orders is not None:  # --orders N: repeat i runs the seeded permutation i
                    stage_opts.order = f"permute:{index}"
                if len(stages) > 1 and get_stage(stage).seeds:
                    stage_opts.source_memory = blank
                repeat = Repeat(index, count, groups.get(stage)) if count > 1 else None
                report = start_run(folder, stage_opts, reporter, repeat, Invocation(stages, first))
            elif member.status == "finished":
                report = RunReport(member.version, stage, "finished")
            else:
                report = resume_run(folder, member.version, reporter, overrides)
            first = first or report.version
            groups.setdefault(stage, report.version)
            if stage == "plugin-blank" and blank is None:
                blank = report.version
            reports.append(report)
    return reports
