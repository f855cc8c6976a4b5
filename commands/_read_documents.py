"""The `--json` documents of the read jobs (`swecl metrics`, `metrics --group`, `compare`):
pure functions of what the projections computed, kept apart from the jobs that compute it
so the CLI's tables and `swecl run`'s closing summary read the very same numbers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from projections.metrics import result_document

if TYPE_CHECKING:
    from projections import VersionMetrics
    from projections import RunCost
    from projections.compare import (
        Assessment,
        Comparison,
        Gain,
        GroupedMetrics,
        GroupedValue,
        RunSide,
        SequenceComparison,
    )

__all__ = [
    "compare_document",
    "grouped_document",
    "headed_label",
    "metrics_document",
    "resolved_of",
    "version_label",
]


def version_label(vm: VersionMetrics) -> str:
    """`v2 plugin-blank`: a numbered run as its folder names it, a slug once when it is the stage."""
    version, stage = vm.run.version, vm.run.stage
    shown = f"v{version}" if version.isdigit() else version
    return shown if stage == version else f"{shown} {stage}"


def headed_label(vm: VersionMetrics) -> str:
    """`version_label` with a --memory-server run's provider: `v1 plugin-blank (memory-server 0.6.3)`,
    as a table's title or a run's row names it (what was under test, beside the stage)."""
    label = version_label(vm)
    return f"{label} ({vm.memory_server})" if vm.memory_server else label


def resolved_of(vm: VersionMetrics, sequence: str) -> tuple[int, int]:
    """(initial-pass tasks resolved, tasks planned) of one sequence; a task not gradeable here is not resolved."""
    vector = vm.outcomes.vector(sequence, "initial", vm.not_gradeable) or []
    return sum(1 for v in vector if v == 1), len(vm.outcomes.sequences[sequence].plan)


def gain_document(gain: Gain | None, assessment: Assessment | None = None) -> dict[str, Any] | None:
    """A run's normalized gain over its base runs: per sequence the base version, both
    initial-pass resolve rates, the gain (null where the base is 1 or there is no base) and
    its percentile bootstrap interval `ci`."""
    if gain is None:
        return None
    cis = {} if assessment is None else assessment.gain_ci
    macro_ci = None if assessment is None or assessment.gain_macro_ci is None else list(assessment.gain_macro_ci)
    return {"sequences": {name: {**msgspec.to_builtins(g), "ci": None if cis.get(name) is None else list(cis[name])}
                          for name, g in gain.sequences.items()},
            "macro": gain.macro, "ci": macro_ci, "na": gain.na}


def _efficiency_document(assessment: Assessment | None) -> dict[str, Any] | None:
    return None if assessment is None else assessment.efficiency.document()


def metrics_document(found: list[VersionMetrics], leakage: dict[str, dict[str, Any] | None] | None = None,
                     integrity: dict[str, dict[str, Any] | None] | None = None,
                     gains: dict[str, Gain] | None = None, assessments: dict[str, Assessment] | None = None,
                     costs: dict[str, RunCost] | None = None) -> dict[str, Any]:
    """The `swecl metrics --json` document. A metric the run's passes did not measure is
    null, and `unmeasured` (per version, of the macro values; per sequence in
    `unmeasured_by_sequence`; per stratum in its extras) says why; `leakage` and `integrity`
    (the patches' integrity flags) are None when not computed. Beside the normalized gain
    (with its bootstrap interval), a memory run's `memory_efficiency` and `verdict` (against
    its base), and every run's `cost_per_solved` (null with the reason where the agent
    reported no cost or nothing was solved)."""
    assessments = assessments or {}
    costs = costs or {}
    leakage = leakage or {}
    integrity = integrity or {}
    gains = gains or {}
    first = found[0].result
    return {
        "formula": first.formula,
        "formula_version": first.formula_version,
        "lambdas": msgspec.to_builtins(first.lambdas),
        "versions": [
            {
                "version": vm.run.version,
                "stage": vm.run.stage,
                "agent": vm.run.agent,
                "memory_server": vm.memory_server,  # the provider of a --memory-server run, else null
                "order": vm.run.task_order,  # --order/--orders: how the plan was ordered; null: the dataset's
                "plan": {name: [t.instance_id for t in cells.plan] for name, cells in vm.outcomes.sequences.items()
                         if cells.plan},  # each sequence's tasks in the run's order (the metrics' t1..tN)
                **result_document(vm.result, header=False),  # as a replay's metrics.json
                "not_gradeable": dict(sorted(vm.not_gradeable.items())),
                "passes": list(vm.run.passes),
                "resolved": {name: dict(zip(("resolved", "tasks"), resolved_of(vm, name), strict=True))
                             for name in vm.result.sequences},
                "leakage": leakage.get(vm.run.version),
                "integrity": integrity.get(vm.run.version),
                "normalized_gain": gain_document(gains.get(vm.run.version), assessments.get(vm.run.version)),
                "memory_efficiency": _efficiency_document(assessments.get(vm.run.version)),
                "verdict": None if vm.run.version not in assessments else assessments[vm.run.version].verdict,
                "cost_per_solved": None if vm.run.version not in costs else costs[vm.run.version].document(),
            }
            for vm in found
        ],
    }


def _value_document(value: GroupedValue) -> dict[str, Any]:
    return {"n": value.n, "mean": value.mean, "sd": value.sd, "ci": list(value.ci) if value.ci else None,
            "values": list(value.values), "na": value.na, "unmeasured": value.unmeasured,
            "min": value.min, "max": value.max, "bootstrap_ci": list(value.boot_ci) if value.boot_ci else None}


def grouped_document(grouped: list[GroupedMetrics]) -> dict[str, Any]:
    """The `--group --json` document: per group, per sequence and macro, each metric's n,
    mean, sd, t-based interval, the runs' own values, and why n/a."""
    first = grouped[0]
    return {
        "formula": first.formula,
        "confidence": first.confidence,
        "interval": "Student t over the group's runs: mean -/+ t(1 - alpha/2, n - 1) * sd / sqrt(n); none with n = 1",
        "bootstrap_interval": "percentile bootstrap of the mean, the group's runs resampled with replacement "
                              "(10000 draws, seed 0); none with n = 1",
        "groups": [
            {
                "label": g.label,
                "stage": g.group.stage,
                "versions": list(g.group.versions),
                "recorded": g.group.recorded,
                "n": len(g.group.versions),
                "orders": g.orders,  # each run's task order (--orders: permute:1..N); null: the dataset's
                "sequences": {name: {"tasks": s.tasks,
                                     "metrics": {m: _value_document(v) for m, v in s.metrics.items()}}
                              for name, s in g.sequences.items()},
                "macro": {m: _value_document(v) for m, v in g.macro.items()},
                "notes": list(g.notes),
            }
            for g in grouped
        ],
    }


_METHOD = "paired percentile bootstrap over tasks; macro: each sequence resampled"
_METHOD_GROUPS = ("paired percentile bootstrap over tasks, every run of both groups on the same draw and each group's "
                  "runs averaged (a task's repeats stay together); macro: each sequence resampled")
_TEST = "exact, two-sided; b = tasks only A resolved, c = tasks only B resolved; macro pools every task"
_TEST_GROUPS = ("exact stratified permutation test (tasks as strata, each task's runs exchangeable under the null; "
                "McNemar's exact test for one run per side), two-sided; b = tasks A's runs resolved more often, "
                "c = tasks B's did; macro pools every task")


def compare_document(comparison: Comparison) -> dict[str, Any]:
    """The `swecl compare --json` document: every number at full precision, null where n/a
    (`na` says why)."""

    def side(run: RunSide, versions: tuple[str, ...]) -> dict[str, Any]:
        return {"version": run.version, "label": run.label, "stage": run.stage, "passes": list(run.passes),
                "status": run.status, "runs": list(versions) or [run.version]}

    def row(r: SequenceComparison) -> dict[str, Any]:
        return {
            "tasks": r.tasks,
            "sequences": r.sequences,
            "resolved": {"a": r.resolved_a, "b": r.resolved_b},
            "normalized_gain": r.gain,  # (rate B - rate A) / (1 - rate A), A the base; null where A's rate is 1
            "missing": {"a": r.missing_a, "b": r.missing_b},
            "metrics": {name: {"a": m.a, "b": m.b, "diff": m.diff, "ci": list(m.ci) if m.ci else None, "na": m.na,
                               "unmeasured": {"a": m.unmeasured_a, "b": m.unmeasured_b},
                               "flags": list(m.flags), "undefined_resamples": m.undefined_resamples}
                        for name, m in r.metrics.items()},
            "mcnemar": {"b": r.mcnemar.b, "c": r.mcnemar.c, "discordant": r.mcnemar.discordant,
                        "both": r.mcnemar.both, "neither": r.mcnemar.neither, "p_value": r.mcnemar.p_value,
                        "test": r.mcnemar.test},
        }

    return {
        "a": side(comparison.a, comparison.runs_a),
        "b": side(comparison.b, comparison.runs_b),
        "formula": comparison.formula,
        "formula_version": comparison.formula_version,
        "lambdas": msgspec.to_builtins(comparison.lambdas),
        "bootstrap": {"method": _METHOD_GROUPS if comparison.grouped else _METHOD,
                      "resamples": comparison.resamples, "seed": comparison.seed, "confidence": comparison.confidence},
        "mcnemar": _TEST_GROUPS if comparison.grouped else _TEST,
        "sequences": {name: row(r) for name, r in comparison.sequences.items()},
        "macro": row(comparison.macro),
        "notes": list(comparison.notes),
        "paired_from": comparison.paired_from,
    }
