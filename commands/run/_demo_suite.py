"""`swecl run` with no arguments: the demo suite of four stages, each its own run version;
and `--repeat K`: each requested stage K times, the K runs recorded as one group."""

from __future__ import annotations

import msgspec

from projections import Results
from ._options import RunOptions
from ._orchestrate import Repeat, RunReport, start_run
from ._progress import Reporter
from ._stages import DEMO_SUITE


def run_repeats(results: Results, opts: RunOptions, reporter: Reporter, count: int = 1) -> list[RunReport]:
    """Run `opts.stage` `count` times, each repeat its own run version. With count > 1 every
    run.started records the group (the first repeat's version), its index and the count, so
    the read side knows the versions are repeats of one setting (`--group`). count = 1 is a
    plain run, recorded without a group."""
    if count == 1:
        return [start_run(results, opts, reporter)]
    reports: list[RunReport] = []
    group: str | None = None
    for index in range(1, count + 1):
        report = start_run(results, msgspec.structs.replace(opts), reporter, Repeat(index, count, group))
        group = group or report.version
        reports.append(report)
    return reports


def run_demo_suite(results: Results, opts: RunOptions, reporter: Reporter, count: int = 1) -> list[RunReport]:
    """base, plugin-blank, then plugin-accum and plugin-dreamed seeded from plugin-blank;
    the whole suite `count` times (--repeat), each stage's repeats one group.

    The seeds are named explicitly: left to choose, plugin-dreamed would take the
    newest prior run (plugin-accum's), and the suite means to compare both seeded stages
    against the same blank substrate. Repeat i seeds from repeat i's plugin-blank, so each
    repeat replicates the whole chain independently.
    """
    reports: list[RunReport] = []
    groups: dict[str, str] = {}
    for index in range(1, count + 1):
        blank: str | None = opts.source_memory
        for stage in DEMO_SUITE:
            stage_opts = msgspec.structs.replace(opts, stage=stage, version=None, source_memory=None,
                                                 passes=list(opts.passes))
            if stage in ("plugin-accum", "plugin-dreamed"):
                stage_opts.source_memory = blank
            repeat = Repeat(index, count, groups.get(stage)) if count > 1 else None
            report = start_run(results, stage_opts, reporter, repeat)
            groups.setdefault(stage, report.version)
            if stage == "plugin-blank" and blank is None:
                blank = report.version
            reports.append(report)
    return reports
