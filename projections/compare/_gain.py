"""The normalized gain over a base run: `(mem - base) / (1 - base)` of initial-pass resolve rates.

What part of what the base left unresolved the memory run resolved: 1 = all of it, 0 = no
better, negative = worse. Undefined (None) where the base resolved everything (1 - base = 0)
or a rate is missing. Per sequence, and a macro: the unweighted mean of the sequences' gains
that are defined (as every macro of `swecl metrics`: a sequence where the value is not
computable is left out).

The base (`swecl metrics`): per sequence, a run of stage `base` in the same folder, not
failed, with an initial pass, of the same agent, model, code mode and dataset, over the same
tasks of that sequence. The base stage has no memory, so its resolve rate does not depend on
the task order: a run in another order (`--order`) still has one. Among several: the one
started by the same `swecl run` (the demo suite, `--orders`), else the one in the same order,
else the newest. `swecl compare A B` uses A as the base (the runs it pairs).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from projections._outcomes import RunOutcomes
    from projections._runs import RunSummary

BASE_STAGE = "base"


def normalized_gain(mem: float | None, base: float | None) -> float | None:
    """(mem - base) / (1 - base); None where the base is 1 (nothing left to gain) or a rate is missing."""
    if mem is None or base is None or base >= 1.0:
        return None
    return (mem - base) / (1.0 - base)


def macro_gain(gains: Sequence[float | None]) -> float | None:
    """The mean of the defined gains (None when none is)."""
    defined = [g for g in gains if g is not None]
    return sum(defined) / len(defined) if defined else None


class SequenceGain(msgspec.Struct, frozen=True, kw_only=True):
    base_version: str | None
    """The base run of this sequence (None: none found)."""
    rate: float
    """This run's initial-pass resolve rate."""
    base_rate: float | None
    gain: float | None


class Gain(msgspec.Struct, frozen=True, kw_only=True):
    """A run's normalized gain over its base runs; `na` says why there is none."""

    sequences: dict[str, SequenceGain]
    macro: float | None
    na: str | None = None


def resolve_rate(outcomes: RunOutcomes, sequence: str, excluded: Mapping[str, str] | None = None) -> float | None:
    """Initial-pass tasks resolved / planned (no valid verdict = not resolved, as `solved`)."""
    seq = outcomes.sequences.get(sequence)
    if seq is None or not seq.plan:
        return None
    vector = outcomes.vector(sequence, "initial", excluded or {}) or []
    return sum(1 for v in vector if v == 1) / len(seq.plan)


def _ids(outcomes: RunOutcomes, sequence: str) -> tuple[str, ...]:
    seq = outcomes.sequences.get(sequence)
    return () if seq is None else tuple(t.instance_id for t in seq.plan)


def stage_candidates(stage: str, run: RunSummary, known: Mapping[str, RunSummary]) -> list[str]:
    """The runs of `stage` that may stand beside `run` (its base, its oracle) before the
    per-sequence task check, newest last: not failed, with an initial pass, the same agent,
    model, code mode and dataset."""
    return [v for v, b in known.items()
            if b.stage == stage and v != run.version and b.status != "failed" and "initial" in b.passes
            and (b.agent, b.model, b.code_mode, b.dataset_hash) == (run.agent, run.model, run.code_mode,
                                                                     run.dataset_hash)]


def base_candidates(run: RunSummary, known: Mapping[str, RunSummary]) -> list[str]:
    """The base-stage runs that may be `run`'s base (before the per-sequence task check), newest last."""
    return stage_candidates(BASE_STAGE, run, known)


def pick_beside(run: RunSummary, outcomes: RunOutcomes, sequence: str, known: Mapping[str, RunSummary],
                candidates: Sequence[str], their_outcomes: Mapping[str, RunOutcomes],
                first: Callable[[str], bool] = lambda v: True) -> str | None:
    """Of `candidates` (runs of the stage that stands beside `run`: its base, its oracle),
    the one over the same tasks of `sequence`, preferring those `first` picks, then one
    started by the same `swecl run`, then the same order, then the newest; None if none."""
    ids = _ids(outcomes, sequence)
    same_tasks = [v for v in candidates
                  if v in their_outcomes and sorted(_ids(their_outcomes[v], sequence)) == sorted(ids)]
    if not same_tasks:
        return None

    def preference(v: str) -> tuple[bool, bool, bool, int]:
        same_suite = run.suite is not None and known[v].suite == run.suite
        return first(v), same_suite, _ids(their_outcomes[v], sequence) == ids, same_tasks.index(v)

    return max(same_tasks, key=preference)


def pick_base(run: RunSummary, outcomes: RunOutcomes, sequence: str, known: Mapping[str, RunSummary],
              base_outcomes: Mapping[str, RunOutcomes]) -> str | None:
    """The base run of `run`'s `sequence` (see the module doc), or None."""
    return pick_beside(run, outcomes, sequence, known, base_candidates(run, known), base_outcomes)


def gain_of(run: RunSummary, outcomes: RunOutcomes, excluded: Mapping[str, str], known: Mapping[str, RunSummary],
            base_outcomes: Mapping[str, RunOutcomes], base_excluded: Mapping[str, Mapping[str, str]]) -> Gain:
    """`run`'s normalized gain per sequence over its base runs, and the macro."""
    if run.stage == BASE_STAGE:
        return Gain(sequences={}, macro=None, na="a base run: the gain is of a memory run over its base")
    if "initial" not in run.passes:
        return Gain(sequences={}, macro=None, na="no initial pass")
    rows: dict[str, SequenceGain] = {}
    for name, seq in outcomes.sequences.items():
        if not seq.plan:
            continue
        rate = resolve_rate(outcomes, name, excluded) or 0.0
        base = pick_base(run, outcomes, name, known, base_outcomes)
        base_rate = None if base is None else resolve_rate(base_outcomes[base], name, base_excluded.get(base))
        rows[name] = SequenceGain(base_version=base, rate=rate, base_rate=base_rate,
                                  gain=normalized_gain(rate, base_rate))
    na = None if any(r.base_version for r in rows.values()) else (
        "no base run: a finished base-stage run of the same agent, model and tasks in this folder")
    return Gain(sequences=rows, macro=macro_gain([r.gain for r in rows.values()]), na=na)
