"""The read side: pure folds over the ledger (memory substrate, a(i,j) matrices, metrics),
and what reads them: the queries behind `swecl runs`/`metrics`, replay, export, the recall
audit (`projections.audit`), the HTML report (`projections.report`) and the leaderboard
page of shared bundles (`projections.leaderboard`).

Nothing here appends events; everything here can be rebuilt from the ledger as of any seq.
The results folder (`Results`) opens the ledger for the write side too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ledger.lazy import lazy_exports

from ._checkpoints import ChainCheckpoints, CheckpointStore
from ._fork import ForkLink, fork_links, fork_of, read_run
from ._outcomes import INVALID_STATUSES, Cell, OutcomeProjection, RunOutcomes, SequenceCells, outcome_projection
from ._runner import Folded, Projection, Projector, Selection
from ._rebuild import Rebuilt, rebuild
from ._runs import RunsProjection, RunsState, RunSummary
from ._views import read_views

__all__ = [
    "Cell",
    "ChainCheckpoints",
    "CheckpointStore",
    "Folded",
    "ForkLink",
    "INVALID_STATUSES",
    "OutcomeProjection",
    "Projection",
    "Projector",
    "Rebuilt",
    "RunOutcomes",
    "RunSummary",
    "RunsProjection",
    "RunsState",
    "Selection",
    "SequenceCells",
    "fork_links",
    "fork_of",
    "outcome_projection",
    "read_run",
    "read_views",
    "rebuild",
]

# Loaded on first use: `swecl --help` need not import polars or the metrics.
_EXPORTS = {
    "DEFAULT_RESULTS": "_results",
    "LEDGER_FILE": "_results",
    "PROJECTIONS_FILE": "_results",
    "resolve_results_dir": "_results",
    "Results": "_results",
    "chain_problem": "_results",
    "runs": "_queries",
    "get_run": "_queries",
    "canonical_version": "_queries",
    "run_started_record": "_runs",
    "counterfactual_verdicts": "_counterfactuals",
    "live_status": "_queries",
    "run_row": "_queries",
    "RunSpend": "_spend",
    "spend_of": "_spend",
    "RunCost": "_spend",
    "run_cost": "_spend",
    "cost_line": "_spend",
    "cost_text": "_spend",
    "spend_cell": "_spend",
    "money": "_spend",
    "duration_text": "_spend",
    "tokens_text": "_spend",
    "Basis": "_estimate",
    "Estimate": "_estimate",
    "PlannedPass": "_estimate",
    "PlannedRun": "_estimate",
    "estimate_plan": "_estimate",
    "recorded_rates": "_estimate",
    "GradingCost": "_grading_cost",
    "PhaseSeconds": "_grading_cost",
    "grading_cost": "_grading_cost",
    "resolve_task_name": "_task_names",
    "sequence_short_names": "_task_names",
    "task_heading": "_task_names",
    "task_label": "_task_names",
    "memory_server_of": "_provider_calls",
    "json_strings": "_provider_calls",
    "sequence_cutoffs": "_cut",
    "order_cut": "_cut",
    "OrderCut": "_cut",
    "retest_row": "_passes",
    "pass_rank": "_passes",
    "outcomes": "_queries",
    "grade_reasons": "_queries",
    "pass_statuses": "_queries",
    "VersionMetrics": "_queries",
    "not_gradeable": "_queries",
    "p2p_excluded": "_queries",
    "verdicts_in_force": "_queries",
    "run_not_gradeable": "_queries",
    "metrics_for": "_queries",
    "shown_versions": "_queries",
    "REPLAY_FORMAT": "_replay",
    "REPLAY_FORMAT_VERSION": "_replay",
    "MEMORY_SUBDIR": "_replay",
    "MANIFEST_FILE": "_replay",
    "OUTCOMES_JSON": "_replay",
    "OUTCOMES_CSV": "_replay",
    "METRICS_JSON": "_replay",
    "CSV_COLUMNS": "_replay",
    "Replay": "_replay",
    "ReplayReport": "_replay",
    "replay_state": "_replay",
    "outcomes_document": "_replay",
    "outcomes_csv": "_replay",
    "metrics_document": "_replay",
    "manifest_document": "_replay",
    "replay_files": "_replay",
    "PROVIDER_SUBDIR": "_replay",
    "ReplayProvider": "_replay",
    "ProviderCut": "_provider_snapshots",
    "SnapshotRow": "_provider_snapshots",
    "provider_cut": "_provider_snapshots",
    "provider_snapshots": "_provider_snapshots",
    "provider_transport": "_provider_snapshots",
    "FORMATS": "_export",
    "EVENT_COLUMNS": "_export",
    "ExportReport": "_export",
    "model_name_or_path": "_export",
    "predictions": "_export",
    "event_record": "_export",
    "run_events": "_export",
    "event_records": "_export",
    "events_frame": "_export",
    "parquet_bytes": "_export",
    "export_lines": "_export",
    "ATIF_SCHEMA_VERSION": "atif",
    "atif_trajectories": "atif",
    "write_atif": "atif",
    "BoardEntry": "leaderboard",
    "Leaderboard": "leaderboard",
    "build_leaderboard": "leaderboard",
    "write_leaderboard": "leaderboard",
}
__all__ += sorted(_EXPORTS)

if TYPE_CHECKING:
    from .leaderboard import BoardEntry, Leaderboard, build_leaderboard, write_leaderboard
    from ._estimate import Basis, Estimate, PlannedPass, PlannedRun, estimate_plan, recorded_rates
    from ._grading_cost import GradingCost, PhaseSeconds, grading_cost
    from ._spend import (
        RunCost,
        RunSpend,
        cost_line,
        cost_text,
        duration_text,
        money,
        run_cost,
        spend_cell,
        spend_of,
        tokens_text,
    )
    from ._task_names import resolve_task_name, sequence_short_names, task_heading, task_label
    from ._cut import OrderCut, order_cut, sequence_cutoffs
    from ._passes import pass_rank, retest_row
    from ._provider_calls import json_strings, memory_server_of
    from ._runs import run_started_record
    from ._counterfactuals import counterfactual_verdicts
    from ._results import (
        DEFAULT_RESULTS,
        LEDGER_FILE,
        PROJECTIONS_FILE,
        resolve_results_dir,
        Results,
        chain_problem,
    )
    from ._queries import (
        runs,
        get_run,
        canonical_version,
        live_status,
        run_row,
        outcomes,
        grade_reasons,
        pass_statuses,
        VersionMetrics,
        not_gradeable,
        p2p_excluded,
        verdicts_in_force,
        run_not_gradeable,
        metrics_for,
        shown_versions,
    )
    from ._replay import (
        REPLAY_FORMAT,
        REPLAY_FORMAT_VERSION,
        MEMORY_SUBDIR,
        MANIFEST_FILE,
        OUTCOMES_JSON,
        OUTCOMES_CSV,
        METRICS_JSON,
        CSV_COLUMNS,
        Replay,
        ReplayReport,
        replay_state,
        outcomes_document,
        outcomes_csv,
        metrics_document,
        manifest_document,
        replay_files,
        PROVIDER_SUBDIR,
        ReplayProvider,
    )
    from ._provider_snapshots import (
        ProviderCut,
        SnapshotRow,
        provider_cut,
        provider_snapshots,
        provider_transport,
    )
    from ._export import (
        FORMATS,
        EVENT_COLUMNS,
        ExportReport,
        model_name_or_path,
        predictions,
        event_record,
        run_events,
        event_records,
        events_frame,
        parquet_bytes,
        export_lines,
    )
    from .atif import ATIF_SCHEMA_VERSION, atif_trajectories, write_atif

__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
