"""The funnel's counts and rates, per sequence and macro (the unweighted mean over
sequences of each rate, as every swecl macro)."""

from __future__ import annotations

from collections.abc import Sequence

from ._model import LABELS, FunnelCounts, MacroFunnel, TaskFunnel

# rate -> (numerator, denominator), counts of FunnelCounts
RATES = {
    "stored_rate": ("stored", "with_deps"),
    "retrieved_rate": ("retrieved", "stored"),
    "used_rate": ("used", "retrieved"),
    "resolved_rate": ("resolved", "with_deps"),
    "resolved_used_rate": ("resolved_used", "used"),
}


def _rates(c: FunnelCounts) -> FunnelCounts:
    for rate, (num, den) in RATES.items():
        d = getattr(c, den)
        setattr(c, rate, getattr(c, num) / d if d else None)
    return c


def sequence_counts(tasks: Sequence[TaskFunnel]) -> FunnelCounts:
    c = FunnelCounts(tasks=len(tasks), labels=dict.fromkeys(LABELS, 0))
    for t in tasks:
        if t.attempt is None:
            continue
        c.ran += 1
        if t.label is not None:
            c.labels[t.label] += 1
        if not t.dependencies:
            continue
        c.with_deps += 1
        c.stored += t.stored
        c.retrieved += t.stored and t.retrieved
        c.used += t.retrieved and t.used
        c.resolved += t.resolved
        c.resolved_used += t.used and t.resolved
    return _rates(c)


def macro_of(sequences: Sequence[FunnelCounts]) -> MacroFunnel:
    """Counts summed; each rate the mean of the sequences' where defined."""
    total = FunnelCounts(labels=dict.fromkeys(LABELS, 0))
    for c in sequences:
        for name in ("tasks", "ran", "with_deps", "stored", "retrieved", "used", "resolved", "resolved_used"):
            setattr(total, name, getattr(total, name) + getattr(c, name))
        for label, n in c.labels.items():
            total.labels[label] = total.labels.get(label, 0) + n
    used: dict[str, int] = {}
    for rate in RATES:
        defined = [getattr(c, rate) for c in sequences if getattr(c, rate) is not None]
        setattr(total, rate, sum(defined) / len(defined) if defined else None)
        used[rate] = len(defined)
    return MacroFunnel(counts=total, rate_sequences=used)
