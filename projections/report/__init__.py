"""`swecl report`: a static, offline HTML page with a(i,j) heatmaps and learning curves.

    from commands import Experiment

    summary = Experiment("results").report(versions=["base", "plugin-blank"], out_dir=Path("report"))
    summary.index  # report/index.html; summary.files lists every file written

`render_report(collect(...))` gives the files as bytes (`ReportPages`); the core writes them.

The page (`index.html`) and its figures (`plots/*.png`) are a projection of the ledger as
of its head seq: rebuild them any time; the same ledger gives the same bytes.

What the report gathers (`collect` -> `ReportData`, pure data) is public too: `swecl view`
draws its pages from the same collection, and with the same cells, metrics and style
(`projections.report.present`).
"""

from __future__ import annotations

from ._build import INDEX_FILE, PLOTS_DIR, ReportPages, ReportSummary, render_report
from ._data import ReportData, assessment_runs, collect, run_assessment
from ._funnel import funnel_table, funnels_compared
from ._funnel_svg import funnels_svg
from ._headline import wilson
from ._matrix import CellState, Matrix, MatrixCell, planned_passes
from ._rates import Tally, tally
from ._run_report import SequenceReport, TaskLeak, TaskRow, VersionReport, memory_items, memory_on, run_label

__all__ = [
    "INDEX_FILE",
    "PLOTS_DIR",
    "CellState",
    "Matrix",
    "MatrixCell",
    "ReportData",
    "ReportPages",
    "ReportSummary",
    "SequenceReport",
    "Tally",
    "TaskLeak",
    "TaskRow",
    "VersionReport",
    "assessment_runs",
    "collect",
    "funnel_table",
    "funnels_compared",
    "funnels_svg",
    "memory_items",
    "memory_on",
    "planned_passes",
    "render_report",
    "run_assessment",
    "run_label",
    "tally",
    "wilson",
]
