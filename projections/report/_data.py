"""Everything a report shows, gathered from the ledger as of one seq: pure data, no rendering.

The report is a snapshot: the ledger head is read once and every projection and scan is
cut at it, so a run appending meanwhile cannot make one table disagree with another, and
the same ledger always gives the same report.

The report's parts live in modules of their own: the a(i,j) grid (`_matrix`), one run's
records and their gathering (`_run_report`), the resolve rates and contrasts (`_rates`).
This module gathers the whole report (`collect`) and its base vs memory stages comparisons.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ledger import Ledger, SweclError
from projections import Projector, RunOutcomes, RunsProjection, RunSummary, shown_versions
from projections.compare import (
    Assessment,
    Comparison,
    Gain,
    GroupedMetrics,
    compare_groups,
    group_members,
    group_runs,
    grouped_metrics,
    side_of,
)

from ._run_report import VersionReport, WrittenItem, memory_items, version_report


@dataclass(frozen=True)
class ReportComparison:
    a: str
    """The control's label (a run, or a group of repeats)."""
    b: str
    comparison: Comparison | None
    na: str | None = None
    """Why there is no comparison."""
    assessment: Assessment | None = None
    """B against A as its base (two runs, not groups): the gain's interval, the memory
    efficiency and the verdict line, as `swecl compare A B` prints them."""


@dataclass(frozen=True)
class ReportData:
    ledger_id: str
    head_seq: int
    formula: str
    formula_version: int
    versions: tuple[VersionReport, ...]
    sequence_ids: tuple[str, ...]
    """Every sequence of every reported version, in first-seen order."""
    memory_items: int
    """`memory.written` item ids known to the ledger (for the recall join)."""
    comparisons: tuple[ReportComparison, ...] = ()
    """Base vs each memory stage (`_comparisons`): runs, or groups of repeats with `grouped`."""
    groups: tuple[GroupedMetrics, ...] = ()
    """With `grouped`: each group of repeats, mean and t interval over its runs."""
    grouped: bool = False


def collect(ledger: Ledger, projector: Projector, versions: Sequence[str], *, formula: str = "native",
            include_failed: bool = False, grouped: bool = False, known: Mapping[str, RunSummary] | None = None,
            items: Mapping[str, WrittenItem] | None = None, bases: bool | None = None) -> ReportData:
    """The report of `versions` (when empty: all runs, in ledger order, failed ones only
    with `include_failed`) as of the ledger head. `grouped`: the comparison is of groups of
    repeats (each version's whole group is reported), and the groups' metrics are added.
    `known` (the runs) and `items` (`memory_items`) as of the head, when the caller has them
    already (`swecl view` keeps them between requests): they are read from every run's events.
    `bases`: when no base run is among `versions`, each memory run is assessed against the
    base of its folder (`with_base`, for the report's verdict and headline chart); by default
    only when `known` is not given (`swecl view` gives it, and assesses a run on its page itself)."""
    head = ledger.head()
    known_given = known is not None
    if known is None:
        known = projector.run(RunsProjection(), upto=head).state.runs
    if not known:
        raise SweclError(f"no runs in {ledger.path} yet: start one with `swecl run`")
    chosen = list(dict.fromkeys(versions)) if versions else shown_versions(known, include_failed)
    if not chosen:
        raise SweclError(f"every run in {ledger.path} failed: `swecl report --all` includes failed runs")
    for version in chosen:
        if version not in known:
            raise SweclError(f"no run version {version!r} in {ledger.path} (versions: {', '.join(known)})")
    if grouped and versions:
        chosen = list(dict.fromkeys(m for v in chosen for m in group_members(known, v, include_failed=include_failed)))
    if items is None:
        items = memory_items(ledger, upto=head)
    reports = tuple(with_cost(ledger, version_report(ledger, projector, known[v], items, head, formula))
                    for v in chosen)
    sequence_ids = tuple(dict.fromkeys(s for vr in reports for s in vr.sequences))
    first = reports[0].result
    comparisons = assessed(ledger, projector, known, head, base_comparisons(reports, grouped=grouped), reports)
    if bases is None:
        bases = not known_given
    if bases and not grouped and not any(rc.comparison is not None for rc in comparisons):
        # No base in the report: each memory run against the base `swecl metrics` finds for it.
        reports = tuple(with_base(ledger, projector, known, head, vr) for vr in reports)
    return ReportData(
        ledger_id=ledger.ledger_id,
        head_seq=head,
        formula=first.formula,
        formula_version=first.formula_version,
        versions=reports,
        sequence_ids=sequence_ids,
        memory_items=len(items),
        comparisons=comparisons,
        groups=report_groups(reports) if grouped else (),
        grouped=grouped,
    )


# --- base vs each memory stage ----------------------------------------------------------
# The control is the first reported run whose stage has no memory (base), as in the memory
# on vs off contrast; with `--group`, the first such group of repeats. Each memory-on run
# (group) is compared with it by `projections.compare` (the very function behind `swecl
# compare`, `--group` for groups): per sequence and macro, B - A with its paired bootstrap
# interval, and the exact test (McNemar's for single runs). Pairs that cannot be compared
# (no control, different tasks) stay on the page as n/a with the reason.


def _groups_of(reports: Sequence[VersionReport], grouped: bool) -> list[list[VersionReport]]:
    if not grouped:
        return [[vr] for vr in reports]
    by_version = {vr.run.version: vr for vr in reports}
    groups = group_runs({v: vr.run for v, vr in by_version.items()}, list(by_version))
    return [[by_version[v] for v in g.versions] for g in groups]


def _label(members: list[VersionReport], grouped: bool) -> str:
    if not grouped:
        return members[0].label
    return group_runs({vr.run.version: vr.run for vr in members}, [vr.run.version for vr in members])[0].label


def base_comparisons(reports: Sequence[VersionReport], *, grouped: bool = False) -> tuple[ReportComparison, ...]:
    """The control (base) against each memory-on run, or group of repeats with `grouped`."""
    groups = _groups_of(reports, grouped)
    control = next((g for g in groups if not g[0].memory_on), None)
    treated = [g for g in groups if g[0].memory_on]
    if control is None:
        return tuple(ReportComparison(a="base", b=_label(g, grouped), comparison=None,
                                      na="no memory-off (base) run in the report to compare against")
                     for g in treated)
    a_label = _label(control, grouped)
    out = []
    for group in treated:
        b_label = _label(group, grouped)
        try:
            comparison = compare_groups([side_of(vr.scored, vr.label) for vr in control],
                                        [side_of(vr.scored, vr.label) for vr in group],
                                        formula=reports[0].result.formula, labels=(a_label, b_label))
        except SweclError as exc:
            out.append(ReportComparison(a=a_label, b=b_label, comparison=None, na=str(exc)))
            continue
        out.append(ReportComparison(a=a_label, b=b_label, comparison=comparison))
    return tuple(out)


def assessed(ledger: Ledger, projector: Projector, known: Mapping[str, RunSummary], head: int,
             comparisons: tuple[ReportComparison, ...], reports: Sequence[VersionReport]) -> tuple[ReportComparison, ...]:
    """Each comparison of two runs with its assessment (`projections.compare.assess_comparison`):
    the oracle run found for B as `swecl compare` finds it, the runs read as of `head`."""
    from projections import not_gradeable, outcomes, run_not_gradeable
    from projections.compare import assess_comparison, oracle_candidates

    by_version = {vr.run.version: vr for vr in reports}
    out = []
    gradeable: dict[str, str] | None = None
    for rc in comparisons:
        c = rc.comparison
        if c is None or c.grouped or c.a.version not in by_version or c.b.version not in by_version:
            out.append(rc)
            continue
        vr_a, vr_b = by_version[c.a.version], by_version[c.b.version]
        oracles = oracle_candidates(vr_b.run, known)
        if gradeable is None:
            gradeable = not_gradeable(ledger)
        others = {v: outcomes(ledger, projector, v, upto=head) for v in oracles}
        excluded = {v: run_not_gradeable(state, gradeable) for v, state in others.items()}
        others[vr_a.run.version], excluded[vr_a.run.version] = vr_a.scored.outcomes, vr_a.scored.not_gradeable
        assessment = assess_comparison(c, vr_b.run, vr_b.scored.outcomes, vr_b.scored.not_gradeable, known, others,
                                       excluded, flagged=vr_b.leakage.flagged, order_a=vr_a.run.task_order)
        out.append(ReportComparison(a=rc.a, b=rc.b, comparison=c, na=rc.na, assessment=assessment))
    return tuple(out)


def with_base(ledger: Ledger, projector: Projector, known: Mapping[str, RunSummary], head: int,
              vr: VersionReport) -> VersionReport:
    """A memory run with its assessment against the base of its folder (`run_assessment`, as
    of `head`); unchanged without memory or without a base."""
    from projections import outcomes

    if not vr.memory_on:
        return vr
    found = run_assessment(ledger, projector, known, vr, outcomes_of=lambda v: outcomes(ledger, projector, v, upto=head))
    return vr if found is None else dataclasses.replace(vr, assessed=found)


def with_cost(ledger: Ledger, vr: VersionReport) -> VersionReport:
    """`vr` with its cost per solved task (`projections.run_cost`), solved as `swecl metrics` counts it."""
    from projections import run_cost

    state, excluded = vr.scored.outcomes, vr.scored.not_gradeable
    solved = {name: sum(1 for v in (state.vector(name, "initial", excluded) or []) if v == 1)
              for name, cells in state.sequences.items() if cells.plan}
    return dataclasses.replace(vr, cost=run_cost(ledger, vr.run.version, solved))


def assessment_runs(run: RunSummary, known: Mapping[str, RunSummary]) -> list[str]:
    """The runs `run_assessment` reads besides `run`: its base and oracle candidates."""
    from projections.compare import base_candidates, oracle_candidates

    return list(dict.fromkeys([*base_candidates(run, known), *oracle_candidates(run, known)]))


def run_assessment(ledger: Ledger, projector: Projector, known: Mapping[str, RunSummary], vr: VersionReport, *,
                   outcomes_of: Callable[[str], RunOutcomes] | None = None,
                   gradeable: Mapping[str, str] | None = None) -> tuple[Gain, Assessment] | None:
    """A memory run against its base as `swecl metrics` finds it (`swecl view`'s run page):
    the normalized gain, the assessment (intervals, efficiency, verdict); None without a base.
    `outcomes_of` and `gradeable` (`not_gradeable`'s answer): the caller's, when it keeps them."""
    from projections import not_gradeable, outcomes, run_not_gradeable
    from projections.compare import assess_run, gain_of

    wanted = assessment_runs(vr.run, known)
    if gradeable is None:
        gradeable = not_gradeable(ledger) if wanted else {}
    read = outcomes_of or (lambda v: outcomes(ledger, projector, v))
    others = {v: read(v) for v in wanted}
    excluded = {v: run_not_gradeable(state, gradeable) for v, state in others.items()}
    gain = gain_of(vr.run, vr.scored.outcomes, vr.scored.not_gradeable, known, others, excluded)
    if gain.na is not None:
        return None
    return gain, assess_run(vr.run, vr.scored.outcomes, vr.scored.not_gradeable, gain, known, others, excluded,
                            flagged=vr.leakage.flagged)


def report_groups(reports: Sequence[VersionReport]) -> tuple[GroupedMetrics, ...]:
    found = [vr.scored for vr in reports]
    known = {vm.run.version: vm.run for vm in found}
    return tuple(grouped_metrics(g, found) for g in group_runs(known, list(known)))
