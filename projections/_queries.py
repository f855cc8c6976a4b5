"""Read-side questions the CLI asks: which runs exist, their outcomes and metrics.

Thin glue over the projections: the answers are pure functions of the ledger as of a
cursor, so they can be asked again after a formula change without running anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ledger import Ledger, StreamRange, SweclError
from ledger.locks import is_locked
from ledger.events import GradeCorrected, GradeFinished, TaskValidity
from projections.audit import leakage_of
from projections.metrics import Lambdas, MetricsResult, compute

from ._outcomes import RunOutcomes, outcome_projection
from ._provider_calls import memory_server_of
from ._results import Results
from ._runner import Projector
from ._runs import RunSummary, RunsProjection
from ._spend import run_wall_s, spend_of
from ._views import read_views



def runs(ledger: Ledger, projector: Projector) -> dict[str, RunSummary]:
    return projector.run(RunsProjection()).state.runs


def canonical_version(ledger: Ledger, given: str) -> str:
    """`v2` is run 2 when no run is named `v2` and run 2 exists: the folders are
    `results/v2`, so that is what users type."""
    def exists(version: str) -> bool:
        return next(ledger.read_stream(f"run/{version}"), None) is not None

    if len(given) > 1 and given[0] in "vV" and not exists(given) and exists(given[1:]):
        return given[1:]
    return given


def check_order(flag: str, order: int, version: str, last: int | None = None) -> None:
    """`order` names a task of run `version` (1 to `last`), or `last + 1`: as the initial
    pass ended. Anything else is a typo, refused rather than answered with the final scores.
    Without `last` (not read yet), the lower bound only."""
    if order < 1:
        raise SweclError(f"{flag} {order}: task orders start at 1")
    if last is not None and order > last + 1:
        raise SweclError(f"{flag} {order}: run {version}'s sequences have tasks 1 to {last} "
                         f"({last + 1}: as the initial pass ended)")


def get_run(ledger: Ledger, projector: Projector, version: str) -> RunSummary:
    found = runs(ledger, projector).get(version)
    if found is None:
        known = ", ".join(sorted(runs(ledger, projector))) or "none yet"
        raise SweclError(f"no run version {version!r} in {ledger.path} (versions: {known})")
    return found




def live_status(results: Results, run: RunSummary) -> str:
    """`incomplete` refined: `running` while a process holds the run's lock, else `interrupted`."""
    if run.status != "incomplete":
        return run.status
    return "running" if is_locked(results.run_lock_path(run.version)) else "interrupted"


def run_row(results: Results, ledger: Ledger, run: RunSummary, state: RunOutcomes) -> dict[str, Any]:
    """One row of `swecl runs --json` (and of `swecl view`'s runs page): `state` is the run's
    outcomes (`outcomes(...)`), passed in so a caller that also scores the run folds once."""
    resolved = state.resolved_per_pass()
    status = live_status(results, run)
    return {
        "version": run.version,
        "stage": run.stage,
        "sequences": run.sequences,
        # run.started.task_order: the order its tasks ran in (--order/--orders); null: the dataset's
        "order": run.task_order,
        "agent": run.agent,
        "status": status,
        "resolved": {p: resolved.get(p, 0) for p in run.passes},
        "tasks": sum(len(cells.plan) for cells in state.sequences.values()),
        "model": run.model,
        "grader": run.grader,
        "sandbox": run.config.get("sandbox") or "none",
        "benchmark": run.benchmark,
        "seeded_from": run.seeded_from,
        "started_at": run.started_at,
        "repeat": ({"group": run.repeat_group, "index": run.repeat_index, "count": run.repeat_count}
                   if run.repeat_group is not None else None),
        "leakage": leakage_of(ledger, run.version),
        "memory_server": memory_server_of(ledger, run),
        # Its agents' reported tokens, dollars and seconds, and its --budget-usd (see _spend);
        # wall_s: run.started to run.finished, or to now while it runs (`run_wall_s`).
        "spend": {**spend_of(ledger, run.version).document(), "wall_s": _wall(ledger, run, status)},
    }


def _wall(ledger: Ledger, run: RunSummary, status: str) -> float | None:
    from datetime import datetime, timezone

    now = datetime.now(timezone.utc).isoformat() if status == "running" else None
    wall = run_wall_s(ledger, run.version, now=now)
    return None if wall is None else round(wall, 1)


def outcomes(
    ledger: Ledger, projector: Projector, version: str, *, as_of_order: int | None = None, upto: int | None = None
) -> RunOutcomes:
    if as_of_order is not None:
        check_order("--as-of-order", as_of_order, version)
    projection = outcome_projection(ledger, version, before_order=as_of_order)
    state = projector.run(projection, upto=upto).state
    if not state.started:
        raise SweclError(f"no run version {version!r} in {ledger.path}")
    if as_of_order is not None:
        last = max((t.order for s in state.sequences.values() for t in s.plan), default=0)
        check_order("--as-of-order", as_of_order, version, last)
    return state


def grade_reasons(ledger: Ledger, version: str, pass_: str = "initial") -> dict[str, str]:
    """instance_id -> the grader's error of each task's last recorded grade in `pass_`:
    why a task is not resolved, in the grader's words (corrections re-decide the status
    only; the status itself is the outcome projection's, `pass_statuses`)."""
    out: dict[str, str] = {}
    graded = read_views(ledger, "grade.finished", ("instance_id", "pass_", "error"),
                        ranges=[StreamRange(f"run/{version}")])
    for _, ev in graded:
        if ev.pass_ == pass_:
            if ev.error:
                out[ev.instance_id] = ev.error
            else:
                out.pop(ev.instance_id, None)
    return out


def pass_statuses(ledger: Ledger, projector: Projector, version: str, pass_: str = "initial") -> dict[str, str]:
    """instance_id -> grade status in `pass_` of run `version`, corrections applied
    ("missing" for a task without a verdict)."""
    state = outcomes(ledger, projector, version)
    return {
        cell.instance_id: cell.status or "missing"
        for seq in state.sequences.values()
        for cell in seq.passes.get(pass_, {}).values()
    }


@dataclass(frozen=True)
class VersionMetrics:
    run: RunSummary
    outcomes: RunOutcomes
    result: MetricsResult
    # tasks of this run that `swecl validate` found not gradeable here -> reason: missing
    not_gradeable: dict[str, str] = field(default_factory=dict)
    # a --memory-server run's provider, as `memory_server_of` names it; None for every other run
    memory_server: str | None = None


def not_gradeable(ledger: Ledger) -> dict[str, str]:
    """instance_id -> reason, for the tasks the latest validation of each found not
    gradeable on this host (a later validation of a task replaces an earlier one)."""
    return {iid: row.reason or "not gradeable" for iid, row in _latest_validity(ledger).items() if not row.gradeable}


def p2p_excluded(ledger: Ledger) -> dict[str, list[str]]:
    """instance_id -> the PASS_TO_PASS tests the latest validation of each task found
    failing on this host with and without the fix; grades leave them out."""
    return {iid: list(row.p2p_excluded) for iid, row in _latest_validity(ledger).items()
            if row.gradeable and row.p2p_excluded}


def _latest_validity(ledger: Ledger) -> dict[str, TaskValidity]:
    """instance_id -> what the latest validation of it found (a later one replaces)."""
    latest: dict[str, TaskValidity] = {}
    for _, ev in read_views(ledger, "tasks.validated", ("tasks",)):
        for row in ev.tasks:
            latest[row.instance_id] = row
    return latest


def verdicts_in_force(ledger: Ledger, projector: Projector, version: str,
                      pass_: str = "initial") -> dict[str, GradeFinished | GradeCorrected]:
    """instance_id -> the grade (or its latest correction) in force in `pass_` of run
    `version`: per-test statuses included, for what the outcome cells do not keep."""
    state = outcomes(ledger, projector, version)
    out: dict[str, GradeFinished | GradeCorrected] = {}
    for seq in state.sequences.values():
        for cell in seq.passes.get(pass_, {}).values():
            rec = ledger.get_by_id(cell.grade_event) if cell.grade_event else None
            if rec is not None and isinstance(rec.event, (GradeFinished, GradeCorrected)):
                out[cell.instance_id] = rec.event
    return out


def run_not_gradeable(state: RunOutcomes, found: dict[str, str]) -> dict[str, str]:
    """The run's tasks among `found` (`not_gradeable`), with their reasons."""
    return {t.instance_id: found[t.instance_id] for seq in state.sequences.values() for t in seq.plan
            if t.instance_id in found}


def shown_versions(known: dict[str, RunSummary], include_failed: bool) -> list[str]:
    return [v for v, run in known.items() if include_failed or run.status != "failed"]


def metrics_for(
    ledger: Ledger,
    projector: Projector,
    versions: list[str],
    *,
    formula: str = "native",
    lambdas: Lambdas | None = None,
    as_of_order: int | None = None,
    include_failed: bool = False,
) -> list[VersionMetrics]:
    """The metrics of `versions`; with none, of every run that did not fail (a run that
    failed, a typo in its options say, scored nothing and would only crowd the table)
    unless `include_failed`."""
    known = runs(ledger, projector)
    chosen = versions or shown_versions(known, include_failed)
    out = []
    found = not_gradeable(ledger)  # one read for every version
    for version in chosen:
        if version not in known:
            raise SweclError(f"no run version {version!r} in {ledger.path} (versions: {', '.join(known) or 'none yet'})")
        state = outcomes(ledger, projector, version, as_of_order=as_of_order)
        excluded = run_not_gradeable(state, found)
        out.append(VersionMetrics(known[version], state, compute(state.to_metric_inputs(excluded), formula, lambdas),
                                  excluded, memory_server_of(ledger, known[version])))
    return out
