"""`swecl run` with no arguments: the demo suite of four stages, each its own run version."""

from __future__ import annotations

import msgspec

from projections import Results
from ._options import RunOptions
from ._orchestrate import RunReport, start_run
from ._progress import Reporter
from ._stages import DEMO_SUITE


def run_demo_suite(results: Results, opts: RunOptions, reporter: Reporter) -> list[RunReport]:
    """base, plugin-blank, then plugin-accum and plugin-dreamed seeded from plugin-blank.

    The seeds are named explicitly: left to choose, plugin-dreamed would take the
    newest prior run (plugin-accum's), and the suite means to compare both seeded stages
    against the same blank substrate.
    """
    reports: list[RunReport] = []
    blank: str | None = opts.source_memory
    for stage in DEMO_SUITE:
        stage_opts = msgspec.structs.replace(opts, stage=stage, version=None, source_memory=None, passes=list(opts.passes))
        if stage in ("plugin-accum", "plugin-dreamed"):
            stage_opts.source_memory = blank
        report = start_run(results, stage_opts, reporter)
        if stage == "plugin-blank" and blank is None:
            blank = report.version
        reports.append(report)
    return reports
