"""Repeat groups: the runs of one setting, and their metrics as a mean with a t interval.

Agents are not deterministic: one run of a stage is one draw. `swecl run --repeat K` records
its K runs as one group (`run.started` `repeat_group`, the first repeat's version); runs
started apart (or in a ledger older than those fields) are grouped when they share the
setting: stage, agent, model, benchmark and dataset hash, grader, code mode, passes,
sequences and requested tasks, task order, and for a fork (`--fork V@K`) its source, K and
`--dream-at-fork`: a fork holds its source's tasks before K, so it is no draw of its own
beside the source. A recorded group is never merged with other runs.

`grouped_metrics` is `swecl metrics --group`: per sequence and macro, each metric's mean
over the group's runs, the sample standard deviation and a Student-t 95% interval
(`t_interval`: mean -/+ t(0.975, n - 1) * sd / sqrt(n)), n the runs with a value. With one
run there is no interval (`na` says so). The macro of a group is the mean over its runs of
each run's macro (the unweighted mean over sequences, as `swecl metrics`), and its interval
is over those K values: the repeats are the replication unit here. Comparing groups (tasks
resampled, repeats averaged) is `compare_groups`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import msgspec

from projections.compare._resample import RESOLVED
from projections.compare._stats import CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED, percentile_interval, t_interval
from projections.metrics import METRIC_NAMES

if TYPE_CHECKING:
    from projections._queries import VersionMetrics
    from projections._runs import RunSummary

GROUPED: tuple[str, ...] = (RESOLVED, *METRIC_NAMES)
"""What the grouped view reports: the initial-pass resolved rate, then every CL metric."""

ONE_RUN = "n=1: one run, no interval (repeat it: swecl run --repeat K)"


class RunGroup(msgspec.Struct, frozen=True, kw_only=True):
    key: str
    stage: str
    versions: tuple[str, ...]
    """In ledger order."""
    recorded: bool
    """True: recorded by `swecl run --repeat`; False: grouped by their shared setting."""

    @property
    def label(self) -> str:
        """`plugin-blank ×3 (v5, v6, v7)`; a group of one is its run's own label."""
        names = ", ".join(f"v{v}" if v.isdigit() else v for v in self.versions)
        if len(self.versions) == 1:
            return f"{names} {self.stage}" if names != self.stage else names
        return f"{self.stage} ×{len(self.versions)} ({names})"


def _key(run: RunSummary) -> str:
    if run.repeat_group is not None:
        return f"repeat:{run.repeat_group}"
    setting = [run.stage, run.agent, run.model, run.benchmark, run.dataset_hash, run.grader, run.code_mode,
               list(run.passes), list(run.sequences), sorted(run.config.get("instances") or [])]
    if run.task_order is not None:  # another order is another setting (a CL score depends on it)
        setting.append(run.task_order)
    fork = run.config.get("fork")
    if fork:  # a fork shares its source's tasks before K: never an independent repeat of it
        setting.append(["fork", fork, bool(run.config.get("dream_at_fork"))])
    return "setting:" + msgspec.json.encode(setting).decode()


def group_runs(known: Mapping[str, RunSummary], versions: Sequence[str]) -> list[RunGroup]:
    """`versions` (runs of `known`) in groups, in the order their first member comes."""
    groups: dict[str, list[str]] = {}
    for version in versions:
        groups.setdefault(_key(known[version]), []).append(version)
    return [RunGroup(key=key, stage=known[members[0]].stage, versions=tuple(members), recorded=key.startswith("repeat:"))
            for key, members in groups.items()]


def group_members(known: Mapping[str, RunSummary], version: str, *, include_failed: bool = False) -> list[str]:
    """The runs of `version`'s group among `known` (ledger order); failed runs are left out
    unless asked for, or unless it is `version` itself."""
    key = _key(known[version])
    return [v for v, run in known.items()
            if _key(run) == key and (v == version or include_failed or run.status != "failed")]


class GroupedValue(msgspec.Struct, frozen=True, kw_only=True):
    """One metric of one sequence (or the macro) over a group's runs."""

    n: int
    """Runs with a value."""
    mean: float | None
    sd: float | None
    ci: tuple[float, float] | None
    values: tuple[float | None, ...]
    """Each run's value, in the group's order (None: not computable in that run)."""
    na: str | None = None
    """Why there is no value (not measured) or no interval (one run)."""
    unmeasured: str | None = None
    """Why a run of the group did not measure the metric (then `mean` and `values` are None)."""
    min: float | None = None
    max: float | None = None
    """The spread of the runs' values (of a `--orders` group: across its task orders)."""
    boot_ci: tuple[float, float] | None = None
    """Percentile bootstrap interval of the mean over the runs (the runs resampled with
    replacement, `DEFAULT_RESAMPLES` draws, fixed seed); None with fewer than two values."""


class GroupedSequence(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    tasks: int
    metrics: dict[str, GroupedValue]


class GroupedMetrics(msgspec.Struct, frozen=True, kw_only=True):
    group: RunGroup
    label: str
    formula: str
    confidence: float
    sequences: dict[str, GroupedSequence]
    macro: dict[str, GroupedValue]
    notes: tuple[str, ...]
    orders: tuple[str | None, ...] = ()
    """Each run's task order (`run.started.task_order`), in the group's order; None: the dataset's."""


def grouped_metrics(group: RunGroup, found: Sequence[VersionMetrics], confidence: float = CONFIDENCE) -> GroupedMetrics:
    """The grouped view of `group`, whose runs `found` holds (as `projections.metrics_for`
    scored them: the numbers averaged are exactly `swecl metrics`' per-run numbers)."""
    by_version = {vm.run.version: vm for vm in found}
    members = [by_version[v] for v in group.versions]
    names = list(dict.fromkeys(name for vm in members for name in vm.result.sequences))
    notes: list[str] = []
    sequences: dict[str, GroupedSequence] = {}
    for name in names:
        having = [vm for vm in members if name in vm.result.sequences]
        if len(having) < len(members):
            notes.append(f"{name}: in {len(having)} of the {len(members)} runs; its row is over those")
        metrics = {}
        for metric in GROUPED:
            if metric == RESOLVED:
                values: list[float | None] = [_resolved_rate(vm, name) for vm in having]
                gap = None
            else:
                values = [vm.result.sequences[name].metrics[metric] for vm in having]
                gap = next((vm.result.sequences[name].unmeasured[metric] for vm in having
                            if metric in vm.result.sequences[name].unmeasured), None)
            metrics[metric] = _value(values, gap, confidence)
        sequences[name] = GroupedSequence(name=name, tasks=len(having[0].outcomes.sequences[name].plan),
                                          metrics=metrics)
    macro = {}
    for metric in GROUPED:
        if metric == RESOLVED:
            rates = [[_resolved_rate(vm, s) for s in vm.result.sequences] for vm in members]
            values = [sum(r) / len(r) if r else None for r in rates]
            gap = None
        else:
            values = [vm.result.macro[metric] for vm in members]
            gap = next((vm.result.unmeasured[metric] for vm in members if metric in vm.result.unmeasured), None)
        macro[metric] = _value(values, gap, confidence)
    for vm in members:
        if vm.run.status != "finished":
            notes.append(f"run {vm.run.version} is {vm.run.status}: tasks without a verdict count as missing")
    first = members[0].result
    return GroupedMetrics(group=group, label=group.label, formula=first.formula, confidence=confidence,
                          sequences=sequences, macro=macro, notes=tuple(notes),
                          orders=tuple(vm.run.task_order for vm in members))


def _value(values: list[float | None], gap: str | None, confidence: float) -> GroupedValue:
    if gap is not None:
        # A convention (F = 0 without a re-test) averaged is still no measurement.
        return GroupedValue(n=0, mean=None, sd=None, ci=None, values=tuple(values), na=f"not measured ({gap})",
                            unmeasured=gap)
    defined = [v for v in values if v is not None]
    stats = t_interval(defined, confidence)
    na = None
    if stats.n == 0:
        na = "not computable in any run"
    elif stats.n == 1:
        na = ONE_RUN if len(values) == 1 else f"n=1: computable in one run of {len(values)}, no interval"
    return GroupedValue(n=stats.n, mean=stats.mean, sd=stats.sd, ci=stats.ci, values=tuple(values), na=na,
                        min=min(defined) if defined else None, max=max(defined) if defined else None,
                        boot_ci=_bootstrap_mean(defined, confidence))


def _bootstrap_mean(values: list[float], confidence: float) -> tuple[float, float] | None:
    """The percentile bootstrap interval of the mean of `values` (the runs as the resampled
    unit: a run's order, or its repeat, is the draw); reproducible (fixed seed)."""
    if len(values) < 2:
        return None
    import numpy as np

    rng = np.random.default_rng(DEFAULT_SEED)
    data = np.asarray(values, dtype=np.float64)
    draws = data[rng.integers(0, len(data), size=(DEFAULT_RESAMPLES, len(data)))].mean(axis=1)
    return percentile_interval(draws, confidence)


def _resolved_rate(vm: VersionMetrics, sequence: str) -> float:
    """Initial-pass tasks resolved / planned (no valid verdict = not resolved), as `solved`."""
    vector = vm.outcomes.vector(sequence, "initial", vm.not_gradeable) or []
    planned = len(vm.outcomes.sequences[sequence].plan)
    return sum(1 for v in vector if v == 1) / planned if planned else 0.0
