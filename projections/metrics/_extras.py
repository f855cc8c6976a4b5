"""Per-sequence views beside the nine metrics (docs/design.md section 7, "Also").

- strata: the nine metrics of each difficulty level present, keyed "1".."4". A stratum
  is scored as a sequence of its own: its tasks in their original relative order, with
  the same formula set and lambdas (so its F is over its own tasks before its last one);
  a metric its passes did not measure is None, the reason in its `unmeasured`.
- memory contrast: mean memory-on (initial) vs mean memory-off (baseline) outcome.
- tool-use efficiency: resolved tasks per agent step, over the tasks that have both a
  valid outcome and a recorded step count; not computable (None, with the reason) when
  no steps were recorded.
- snapshot phase: mean in-order outcome (initial) vs mean end-of-sequence re-test (final);
  without a re-test, final and delta are None (not the initial mean again).
- missing counts: per vector, None for a vector that was not recorded at all.

Means here leave missing outcomes out (the count used is reported with each).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import msgspec

from projections.metrics._measured import measured, measured_notes, unmeasured
from projections.metrics._native import mean_valid
from projections.metrics._registry import FormulaSet
from projections.metrics._vectors import Lambdas, Outcome, SequenceOutcomes, count_missing

T = TypeVar("T")

NO_STEPS_REASON = "not computable: no agent steps recorded"


class StratumScore(msgspec.Struct, frozen=True, kw_only=True):
    level: int
    n_tasks: int
    metrics: dict[str, float | None]
    notes: tuple[str, ...] = ()
    unmeasured: dict[str, str] = msgspec.field(default_factory=dict)
    """metric -> why the stratum's passes did not measure it (its value is None)."""


class MemoryContrast(msgspec.Struct, frozen=True, kw_only=True):
    mem_on: float | None
    mem_off: float | None
    delta: float | None
    """mem_on - mem_off."""
    n_on: int
    n_off: int
    reason: str | None = None


class ToolUseEfficiency(msgspec.Struct, frozen=True, kw_only=True):
    value: float | None
    """Resolved tasks per agent step; None when not computable (see `reason`)."""
    resolved: int
    steps: int
    n: int
    """Tasks counted: a valid outcome and a recorded step count."""
    reason: str | None = None


class SnapshotPhase(msgspec.Struct, frozen=True, kw_only=True):
    initial: float | None
    final: float | None
    """None without a re-test (the formulas' convention final = initial is no measurement)."""
    delta: float | None
    """final - initial."""
    n_initial: int
    n_final: int
    retested: bool
    """False: no re-test was recorded (`final`, `delta` None, `n_final` 0)."""


class MissingCounts(msgspec.Struct, frozen=True, kw_only=True):
    n_tasks: int
    initial: int
    final: int | None
    """None: no re-test vector was recorded (not "nothing missing")."""
    baseline: int | None
    steps: int | None


class SequenceExtras(msgspec.Struct, frozen=True, kw_only=True):
    strata: dict[str, StratumScore]
    memory_contrast: MemoryContrast
    tool_use: ToolUseEfficiency
    snapshot: SnapshotPhase
    missing: MissingCounts


def sequence_extras(seq: SequenceOutcomes, formula: FormulaSet, lambdas: Lambdas) -> SequenceExtras:
    return SequenceExtras(
        strata=difficulty_strata(seq, formula, lambdas),
        memory_contrast=memory_contrast(seq),
        tool_use=tool_use_efficiency(seq),
        snapshot=snapshot_phase(seq),
        missing=missing_counts(seq),
    )


def difficulty_strata(seq: SequenceOutcomes, formula: FormulaSet, lambdas: Lambdas) -> dict[str, StratumScore]:
    if seq.difficulty is None:
        return {}
    strata: dict[str, StratumScore] = {}
    for level in sorted(set(seq.difficulty)):
        positions = [pos for pos, value in enumerate(seq.difficulty) if value == level]
        stratum = SequenceOutcomes(
            name=f"{seq.name} difficulty {level}",
            initial=_pick(seq.initial, positions),
            final=None if seq.final is None else _pick(seq.final, positions),
            baseline=None if seq.baseline is None else _pick(seq.baseline, positions),
            difficulty=[level] * len(positions),
            steps=None if seq.steps is None else _pick(seq.steps, positions),
        )
        score = formula.score(stratum, lambdas)
        gaps = unmeasured(stratum, lambdas, stratum=True)
        strata[str(level)] = StratumScore(
            level=level, n_tasks=len(positions), metrics=measured(score.metrics, gaps),
            notes=measured_notes(score.notes, gaps),
            unmeasured=gaps,
        )
    return strata


def memory_contrast(seq: SequenceOutcomes) -> MemoryContrast:
    mem_on = mean_valid(seq.initial)
    n_on = _valid_count(seq.initial)
    if seq.baseline is None:
        return MemoryContrast(
            mem_on=mem_on, mem_off=None, delta=None, n_on=n_on, n_off=0,
            reason="no baseline (memory-off) pass recorded",
        )
    mem_off = mean_valid(seq.baseline)
    delta = None if mem_on is None or mem_off is None else mem_on - mem_off
    reason = None
    if mem_on is None or mem_off is None:
        reason = "not computable: a pass has no valid outcome"
    return MemoryContrast(
        mem_on=mem_on, mem_off=mem_off, delta=delta, n_on=n_on, n_off=_valid_count(seq.baseline), reason=reason
    )


def tool_use_efficiency(seq: SequenceOutcomes) -> ToolUseEfficiency:
    if seq.steps is None or all(count is None for count in seq.steps):
        return ToolUseEfficiency(value=None, resolved=0, steps=0, n=0, reason=NO_STEPS_REASON)
    pairs = [
        (outcome, count)
        for outcome, count in zip(seq.initial, seq.steps, strict=True)
        if outcome is not None and count is not None
    ]
    resolved = sum(outcome for outcome, _ in pairs)
    steps = sum(count for _, count in pairs)
    if not pairs:
        reason = "not computable: no task with recorded steps has a valid outcome"
        return ToolUseEfficiency(value=None, resolved=0, steps=0, n=0, reason=reason)
    if steps == 0:
        reason = "not computable: the agents recorded 0 steps in total"
        return ToolUseEfficiency(value=None, resolved=resolved, steps=0, n=len(pairs), reason=reason)
    return ToolUseEfficiency(value=resolved / steps, resolved=resolved, steps=steps, n=len(pairs))


def snapshot_phase(seq: SequenceOutcomes) -> SnapshotPhase:
    initial = mean_valid(seq.initial)
    final = None if seq.final is None else mean_valid(seq.final)
    delta = None if initial is None or final is None else final - initial
    return SnapshotPhase(
        initial=initial,
        final=final,
        delta=delta,
        n_initial=_valid_count(seq.initial),
        n_final=0 if seq.final is None else _valid_count(seq.final),
        retested=seq.final is not None,
    )


def missing_counts(seq: SequenceOutcomes) -> MissingCounts:
    return MissingCounts(
        n_tasks=seq.n_tasks,
        initial=seq.n_tasks - _valid_count(seq.initial),
        final=count_missing(seq.final),
        baseline=count_missing(seq.baseline),
        steps=count_missing(seq.steps),
    )


def _pick(vector: Sequence[T], positions: Sequence[int]) -> list[T]:
    return [vector[pos] for pos in positions]


def _valid_count(vector: Sequence[Outcome]) -> int:
    return sum(1 for value in vector if value is not None)
