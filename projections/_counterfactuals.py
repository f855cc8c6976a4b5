"""Counterfactuals of one task (`swecl counterfactual`) and their verdicts (`swecl audit`).

A counterfactual re-ran a task of run V with some memory items hidden from its recall
(`counterfactual.*` events on streams `counterfactual/{V}/{id}`, never V's own). Per
pass and hidden set, its repeats are compared with V's outcome of the task in that pass:

- `necessary`: V resolved it with the items, and every repeat without them failed;
- `harmful`: V failed with them, and every repeat without them resolved it;
- `no effect`: every repeat ended as V did;
- `undecided`: the repeats disagree, or V or a repeat has no valid verdict.
"""

from __future__ import annotations

import msgspec

from ledger import Ledger, StreamRange
from ledger.events import PASS

from ._outcomes import Cell

NECESSARY, HARMFUL, NO_EFFECT, UNDECIDED = "necessary", "harmful", "no effect", "undecided"


class CounterfactualRepeat(msgspec.Struct, kw_only=True):
    repeat: int
    status: str | None  # None: started, never finished (interrupted)
    resolved: bool | None
    cost_usd: float | None = None
    recalled: list[str] = msgspec.field(default_factory=list)
    seq: int = 0


class CounterfactualVerdict(msgspec.Struct, kw_only=True):
    """The repeats of one hidden set in one pass, against V's outcome of the task."""

    pass_: str = PASS
    hidden: list[str]
    attempt: int  # V's attempt they stand beside
    original_status: str | None
    original_resolved: bool | None
    repeats: list[CounterfactualRepeat]
    verdict: str
    runs: int  # agent runs spent (finished repeats)
    cost_usd: float | None  # their summed cost; None when no agent reported one


def verdict_of(original: bool | None, outcomes: list[bool | None]) -> str:
    """The verdict of repeats `outcomes` (resolved or not, None: no valid verdict) against `original`."""
    if original is None or not outcomes or any(o is None for o in outcomes):
        return UNDECIDED
    if all(o == original for o in outcomes):
        return NO_EFFECT
    if all(o != original for o in outcomes):
        return NECESSARY if original else HARMFUL
    return UNDECIDED


def counterfactual_repeats(ledger: Ledger, version: str, instance_id: str, pass_: str | None = None,
                           upto: int | None = None) -> dict[tuple[str, tuple[str, ...]], list[CounterfactualRepeat]]:
    """(pass, hidden set) -> its repeats of task `instance_id` of run `version`, by repeat
    (as recorded by seq `upto`; None: the head)."""
    found: dict[str, tuple[tuple[str, tuple[str, ...]], CounterfactualRepeat]] = {}
    for rec in ledger.read(types=["counterfactual.started", "counterfactual.finished"],
                           ranges=[StreamRange(f"counterfactual/{version}")], upto=upto):
        ev = rec.event
        if ev.instance_id != instance_id or (pass_ is not None and ev.pass_ != pass_):
            continue
        key = (ev.pass_, tuple(ev.hidden))
        if rec.type == "counterfactual.started":
            found[rec.stream] = (key, CounterfactualRepeat(repeat=ev.repeat, status=None, resolved=None, seq=rec.seq))
        elif rec.stream in found:
            found[rec.stream] = (key, CounterfactualRepeat(
                repeat=ev.repeat, status=ev.status, resolved=ev.resolved, cost_usd=ev.cost_usd,
                recalled=list(ev.recalled), seq=found[rec.stream][1].seq))
    out: dict[tuple[str, tuple[str, ...]], list[CounterfactualRepeat]] = {}
    for key, rep in sorted(found.values(), key=lambda kv: kv[1].seq):
        out.setdefault(key, []).append(rep)
    return out


def counterfactual_verdicts(ledger: Ledger, version: str, instance_id: str, cells: dict[str, Cell],
                            recalled: dict[str, list[str]], pass_: str | None = None,
                            upto: int | None = None) -> list[CounterfactualVerdict]:
    """The verdicts of task `instance_id`'s counterfactuals. `cells`: pass -> V's cell of the
    task (its outcome in force); `recalled`: pass -> the items its attempt recalled, in
    first-recall order (single-item sets come in that order, then the rest)."""
    groups = counterfactual_repeats(ledger, version, instance_id, pass_, upto)

    def rank(key: tuple[str, tuple[str, ...]]) -> tuple:
        p, hidden = key
        items = recalled.get(p, [])
        single = len(hidden) == 1 and hidden[0] in items
        return (p, 0 if single else 1, items.index(hidden[0]) if single else 0, hidden)

    verdicts = []
    for key in sorted(groups, key=rank):
        p, hidden = key
        cell = cells.get(p)
        original = None if cell is None or cell.outcome is None else bool(cell.outcome)
        finished = [r for r in groups[key] if r.status is not None]
        costs = [r.cost_usd for r in finished if r.cost_usd is not None]
        verdicts.append(CounterfactualVerdict(
            pass_=p, hidden=list(hidden), attempt=cell.attempt if cell else 0,
            original_status=cell.status if cell else None, original_resolved=original, repeats=groups[key],
            verdict=verdict_of(original, [None if r.status is None else r.resolved for r in finished] if finished else []),
            runs=len(finished), cost_usd=sum(costs) if costs else None,
        ))
    return verdicts
