"""Memory efficiency: `(mem - base) / (oracle - base)` of initial-pass resolve rates.

What share of the way from no memory (the base) to an oracle memory (a run of stage
`oracle`, given the reference a memory could at best hold) the memory run went: 1 = as
good as the oracle, 0 = no better than the base, negative = worse than the base, above 1 =
better than the oracle. The rates are those of the normalized gain (`_gain`): initial-pass
tasks resolved / planned, a task without a valid verdict not resolved.

Per sequence, and a macro: the mean of the sequences' defined values (as every macro).
Null, with the reason, when the base or the oracle run is missing, or the oracle resolved
exactly as many tasks as the base (`oracle == base`: nothing to normalize by).

The oracle run of a sequence is found as the base is (`_gain.pick_base`): a run of stage
`oracle` in the same folder, not failed, with an initial pass, of the same agent, model,
code mode and dataset, over the same tasks of that sequence. Among several: the one of the
same memory system (a `--memory-server` run prefers an oracle with the same server spec,
a substrate run one without a server), then the one started by the same `swecl run`, then
the same order, then the newest.

The interval: a percentile bootstrap (`_stats`), each resample drawing the tasks of a
sequence with replacement and applying the same draw to the three runs' per-task resolved
flags (paired by task: the runs ran the same tasks, matched by instance id, whatever their
order). The macro interval resamples each sequence on its own and averages the defined
sequence values of each resample. Resamples where the value is undefined (the drawn tasks
give oracle == base) are left out and counted; a fixed default seed makes the output
deterministic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import msgspec

from projections.compare._gain import _ids, pick_beside, resolve_rate, stage_candidates
from projections.compare._stats import CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED, draw_indices, percentile_interval

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from projections._outcomes import RunOutcomes
    from projections._runs import RunSummary

ORACLE_STAGE = "oracle"
NO_BASE = "no base run"
NO_ORACLE = "no oracle run"
ORACLE_HINT = ("a finished run of `swecl run --stage oracle` with the same agent, model and tasks in this folder, "
               "or `swecl compare --oracle V`")
EQUAL = "oracle == base: the oracle resolved as many tasks as the base, nothing to normalize by"


def memory_efficiency(mem: float | None, base: float | None, oracle: float | None) -> float | None:
    """(mem - base) / (oracle - base); None where a rate is missing or oracle == base."""
    if mem is None or base is None or oracle is None or oracle == base:
        return None
    return (mem - base) / (oracle - base)


def efficiency_na(mem: float | None, base: float | None, oracle: float | None) -> str | None:
    """Why `memory_efficiency` is None (None: it is defined)."""
    if base is None:
        return NO_BASE
    if oracle is None:
        return NO_ORACLE
    if mem is None:
        return "no initial pass"
    return EQUAL if oracle == base else None


class SequenceEfficiency(msgspec.Struct, frozen=True, kw_only=True):
    base_version: str | None
    oracle_version: str | None
    rate: float
    base_rate: float | None
    oracle_rate: float | None
    efficiency: float | None
    ci: tuple[float, float] | None = None
    """Percentile bootstrap interval (None: the value is undefined, or every resample is)."""
    undefined_resamples: int = 0
    na: str | None = None


class Efficiency(msgspec.Struct, frozen=True, kw_only=True):
    """A run's memory efficiency per sequence and macro; `na` says why there is none at all."""

    sequences: dict[str, SequenceEfficiency]
    macro: float | None
    ci: tuple[float, float] | None = None
    undefined_resamples: int = 0
    na: str | None = None
    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    confidence: float = CONFIDENCE

    def document(self) -> dict[str, object]:
        doc = msgspec.to_builtins(self)
        doc["formula"] = "(mem - base) / (oracle - base) of initial-pass resolve rates"
        return doc  # type: ignore[no-any-return]


# -- the oracle run ------------------------------------------------------------------------


def oracle_candidates(run: RunSummary, known: Mapping[str, RunSummary]) -> list[str]:
    """The oracle-stage runs that may be `run`'s oracle (before the per-sequence task check), newest last."""
    return stage_candidates(ORACLE_STAGE, run, known)


def pick_oracle(run: RunSummary, outcomes: RunOutcomes, sequence: str, known: Mapping[str, RunSummary],
                oracle_outcomes: Mapping[str, RunOutcomes]) -> str | None:
    """The oracle run of `run`'s `sequence` (see the module doc), or None: the base's rules,
    an oracle of the same memory system (the same --memory-server, or none) first."""
    server = run.config.get("memory_server") or None
    return pick_beside(run, outcomes, sequence, known, oracle_candidates(run, known), oracle_outcomes,
                       first=lambda v: (known[v].config.get("memory_server") or None) == server)


# -- the values and their intervals --------------------------------------------------------


def resolved_by_task(outcomes: RunOutcomes, sequence: str, excluded: Mapping[str, str] | None = None) -> dict[str, bool]:
    """instance id -> resolved in the initial pass (no valid verdict = not resolved)."""
    seq = outcomes.sequences.get(sequence)
    if seq is None:
        return {}
    vector = outcomes.vector(sequence, "initial", excluded or {}) or [None] * len(seq.plan)
    return {t.instance_id: v == 1 for t, v in zip(seq.plan, vector, strict=True)}


def _rates(flags: Sequence[npt.NDArray[np.float64]], idx: npt.NDArray[np.int64]) -> list[npt.NDArray[np.float64]]:
    return [flag[idx].mean(axis=1) for flag in flags]


def efficiency_draws(mem: Sequence[bool], base: Sequence[bool], oracle: Sequence[bool],
                     idx: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    """The efficiency on each resample (rows of task positions into the three paired vectors); NaN where undefined."""
    import numpy as np

    m, b, o = _rates([np.asarray(x, dtype=float) for x in (mem, base, oracle)], idx)
    out = np.full(len(idx), np.nan)
    span = o - b
    np.divide(m - b, span, out=out, where=span != 0)
    return out


class PairedTasks(msgspec.Struct, frozen=True, kw_only=True):
    """One sequence's three per-task resolved vectors, in the memory run's order."""

    name: str
    mem: tuple[bool, ...]
    base: tuple[bool, ...]
    oracle: tuple[bool, ...]


def bootstrap(paired: Sequence[PairedTasks], *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
              confidence: float = CONFIDENCE) -> tuple[dict[str, tuple[tuple[float, float] | None, int]],
                                                      tuple[tuple[float, float] | None, int]]:
    """Per sequence (interval, undefined resamples), and the macro's: each sequence drawn on
    its own from one generator (seeded), the macro the mean of each resample's defined values."""
    import numpy as np

    rng = np.random.default_rng(seed)
    per: dict[str, tuple[tuple[float, float] | None, int]] = {}
    draws = []
    for p in paired:
        values = efficiency_draws(p.mem, p.base, p.oracle, draw_indices(rng, len(p.mem), resamples))
        per[p.name] = (percentile_interval(values, confidence), int(np.count_nonzero(~np.isfinite(values))))
        draws.append(values)
    if not draws:
        return per, (None, 0)
    stacked = np.vstack(draws)
    defined = np.isfinite(stacked)
    counts = defined.sum(axis=0)
    macro = np.full(resamples, np.nan)
    np.divide(np.where(defined, stacked, 0.0).sum(axis=0), counts, out=macro, where=counts > 0)
    return per, (percentile_interval(macro, confidence), int(np.count_nonzero(counts == 0)))


def efficiency(paired_rows: Mapping[str, tuple[SequenceEfficiency, PairedTasks | None]], *,
               resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED, na: str | None = None) -> Efficiency:
    """The run's Efficiency from each sequence's point values and paired vectors (None:
    no base or oracle for it), with the bootstrap intervals."""
    defined = [row for row, paired in paired_rows.values() if row.efficiency is not None and paired is not None]
    per, (macro_ci, macro_undefined) = bootstrap(
        [p for row, p in paired_rows.values() if p is not None and row.efficiency is not None],
        resamples=resamples, seed=seed)
    rows = {}
    for name, (row, _) in paired_rows.items():
        ci, undefined = per.get(name, (None, 0))
        rows[name] = msgspec.structs.replace(row, ci=ci, undefined_resamples=undefined)
    macro = sum(r.efficiency for r in defined if r.efficiency is not None) / len(defined) if defined else None
    if na is None and macro is None:
        reasons = sorted({r.na for r in rows.values() if r.na})
        na = "; ".join(reasons) if reasons else "no sequence"
    return Efficiency(sequences=rows, macro=macro, ci=macro_ci if macro is not None else None,
                      undefined_resamples=macro_undefined, na=na if macro is None else None,
                      resamples=resamples, seed=seed)


def sequence_row(name: str, mem: RunOutcomes, mem_excluded: Mapping[str, str],
                 base: tuple[str, RunOutcomes, Mapping[str, str]] | None,
                 oracle: tuple[str, RunOutcomes, Mapping[str, str]] | None) -> tuple[SequenceEfficiency, PairedTasks | None]:
    """One sequence's point values, and its paired per-task vectors when base and oracle are there."""
    rate = resolve_rate(mem, name, mem_excluded) or 0.0
    base_rate = None if base is None else resolve_rate(base[1], name, base[2])
    oracle_rate = None if oracle is None else resolve_rate(oracle[1], name, oracle[2])
    value = memory_efficiency(rate, base_rate, oracle_rate)
    row = SequenceEfficiency(base_version=None if base is None else base[0],
                             oracle_version=None if oracle is None else oracle[0], rate=rate, base_rate=base_rate,
                             oracle_rate=oracle_rate, efficiency=value, na=efficiency_na(rate, base_rate, oracle_rate))
    if base is None or oracle is None:
        return row, None
    own = resolved_by_task(mem, name, mem_excluded)
    b, o = resolved_by_task(base[1], name, base[2]), resolved_by_task(oracle[1], name, oracle[2])
    ids = list(own)
    if set(b) != set(ids) or set(o) != set(ids):
        return msgspec.structs.replace(row, efficiency=None, na="the runs' tasks differ"), None
    return row, PairedTasks(name=name, mem=tuple(own[i] for i in ids), base=tuple(b[i] for i in ids),
                            oracle=tuple(o[i] for i in ids))


def efficiency_of(run: RunSummary, outcomes: RunOutcomes, excluded: Mapping[str, str], known: Mapping[str, RunSummary],
                  bases: Mapping[str, str | None], others: Mapping[str, RunOutcomes],
                  others_excluded: Mapping[str, Mapping[str, str]], *, oracle: str | None = None,
                  resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> Efficiency:
    """`run`'s memory efficiency: `bases` maps each sequence to its base run (`_gain`'s
    choice, or the compared A), `others` holds the base and oracle runs' outcomes; the
    oracle of each sequence is `oracle` when given, else found (`pick_oracle`)."""
    if run.stage == ORACLE_STAGE:
        return Efficiency(sequences={}, macro=None, na="an oracle run: the efficiency is of a memory run",
                          resamples=resamples, seed=seed)
    if "initial" not in run.passes:
        return Efficiency(sequences={}, macro=None, na="no initial pass", resamples=resamples, seed=seed)
    rows: dict[str, tuple[SequenceEfficiency, PairedTasks | None]] = {}
    for name, seq in outcomes.sequences.items():
        if not seq.plan:
            continue
        base_v = bases.get(name)
        if oracle is not None:
            oracle_v = oracle if sorted(_ids(others[oracle], name)) == sorted(_ids(outcomes, name)) else None
        else:
            oracle_v = pick_oracle(run, outcomes, name, known, others)
        rows[name] = sequence_row(
            name, outcomes, excluded,
            None if base_v is None else (base_v, others[base_v], others_excluded.get(base_v, {})),
            None if oracle_v is None else (oracle_v, others[oracle_v], others_excluded.get(oracle_v, {})))
    return efficiency(rows, resamples=resamples, seed=seed)
