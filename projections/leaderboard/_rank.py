"""Groups and ranks: which runs may be ranked together, in what order, and why apart.

Runs are ranked together only when they share the dataset (its content hash), the passes
they ran (`passes`), the metrics formula and its version, and the sequences they cover
(with as many tasks each): a resolve rate over other tasks, a CL-Score from other passes
or another formula, is another measurement, not a better or worse one.

Within a group the key is the initial-pass resolve rate (tasks resolved / planned, pooled
over the group's sequences; a task without a valid verdict counts as not resolved), with
its 95% Wilson score interval; CL-Score breaks ties (a run without one comes after). It is
the one figure every run has whatever its passes: CL-Score needs a re-test and a baseline
pass to be measured at all. Rows with equal figures share a rank. A run whose `swecl check`
failed is not ranked: it is listed under the ranked rows, marked, since its numbers are
not the ledger's. A run nobody checked is ranked, and marked "not checked".
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace
from collections.abc import Mapping, Sequence
from typing import Any

from projections.metrics import wilson

from ._model import BoardEntry, Figure, Group, GroupKey, Leaderboard, Ranking, Row

RULE = ("Ranked by the initial-pass resolve rate (95% Wilson interval), CL-Score breaking ties; only runs "
        "sharing dataset, passes, formula and sequences are ranked together; a run whose check failed is "
        "listed, not ranked; ≈: its interval overlaps #1's.")

MACRO = "macro"
NOT_REPORTED = "not reported"


def _pair(value: object) -> tuple[float, float] | None:
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, (int, float)) for v in value):
        return float(value[0]), float(value[1])
    return None


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _metric(values: Mapping[str, Any] | None, gaps: Mapping[str, Any] | None, name: str) -> Figure:
    """A metric of the macro row or of a sequence; its reason when the run did not measure it."""
    value = _number((values or {}).get(name))
    reason = str((gaps or {}).get(name) or "")
    if reason:  # not measured: whatever number the formula's convention put there is not shown
        return Figure(None, na=reason)
    return Figure(value, na="" if value is not None else "not computable")


def _interval(block: Mapping[str, Any] | None, value_key: str, missing: str) -> Figure:
    """Normalized gain or memory efficiency, with its bootstrap interval, or why there is none."""
    if not block:
        return Figure(None, na=missing)
    value = _number(block.get(value_key))
    if value is None:
        return Figure(None, na=str(block.get("na") or missing))
    return Figure(value, ci=_pair(block.get("ci")))


def _cost(block: Mapping[str, Any] | None) -> Figure:
    value = None if not block else _number(block.get("usd_per_solved"))
    if value is None:  # no cost reported is not a cost of $0
        return Figure(None, na=str((block or {}).get("usd_na") or f"{NOT_REPORTED}: no cost recorded"))
    return Figure(value)


def _counts(metrics: Mapping[str, Any], sequences: Sequence[str]) -> tuple[int, int]:
    resolved = tasks = 0
    for name in sequences:
        cell = (metrics.get("resolved") or {}).get(name) or {}
        resolved += int(cell.get("resolved") or 0)
        tasks += int(cell.get("tasks") or 0)
    return resolved, tasks


def _figures(entry: BoardEntry, scope: str, sequences: Sequence[str]) -> dict[str, Any]:
    """The row's figures over the macro row (`scope` MACRO) or one sequence."""
    m = entry.metrics
    seq = scope != MACRO
    resolved, tasks = _counts(m, [scope] if seq else sequences)
    gaps = (m.get("unmeasured_by_sequence") or {}).get(scope) if seq else m.get("unmeasured")
    values = (m.get("sequences") or {}).get(scope) if seq else m.get("macro")
    gain, eff, cost = m.get("normalized_gain") or {}, m.get("memory_efficiency") or {}, m.get("cost_per_solved") or {}
    if seq:
        gain = {**(gain.get("sequences") or {}).get(scope, {}), "na": gain.get("na")}
        eff = {**(eff.get("sequences") or {}).get(scope, {}), "na": (eff.get("sequences") or {}).get(scope, {}).get("na")
               or eff.get("na")}
        cost = (cost.get("sequences") or {}).get(scope)
    else:
        gain = {"gain": gain.get("macro"), "ci": gain.get("ci"), "na": gain.get("na")}
        eff = {"efficiency": eff.get("macro"), "ci": eff.get("ci"), "na": eff.get("na")}
        cost = cost.get("run")
    rate = Figure(resolved / tasks, ci=wilson(resolved, tasks)) if tasks else Figure(None, na="no tasks planned")
    return dict(
        resolved=resolved, tasks=tasks, rate=rate,
        cl_score=_metric(values, gaps, "CL-Score"), acc=_metric(values, gaps, "ACC"),
        forgetting=_metric(values, gaps, "F"),
        gain=_interval(gain, "gain", "no gain recorded"),
        efficiency=_interval(eff, "efficiency", "no efficiency recorded"),
        cost=_cost(cost),
    )


def _order_key(row: Row) -> tuple[float, float, str, str]:
    rate = row.rate.value if row.rate.value is not None else -1.0
    score = row.cl_score.value if row.cl_score.value is not None else float("-inf")
    return (-rate, -score, row.entry.bundle, row.version)


def rank_rows(entries: Sequence[BoardEntry], scope: str, sequences: Sequence[str]) -> Ranking:
    """The runs of one group, ranked over `scope` (MACRO or a sequence id)."""
    drafts: list[Row] = []
    for entry in entries:
        f = _figures(entry, scope, sequences)
        unranked = ""
        if entry.checked is False:
            unranked = f"check failed: {entry.check_note}" if entry.check_note else "check failed"
        elif f["rate"].value is None:
            unranked = "no initial-pass tasks"
        leakage = (entry.metrics.get("leakage") or {}).get("flagged")
        drafts.append(Row(entry=entry, rank=None, unranked=unranked, leakage_flagged=_int(leakage),
                          near_first=False, **f))
    ranked = sorted((r for r in drafts if not r.unranked), key=_order_key)
    rows: list[Row] = []
    for i, row in enumerate(ranked):
        previous = rows[-1] if rows else None
        same = previous is not None and _order_key(previous)[:2] == _order_key(row)[:2]
        rank = previous.rank if same and previous is not None else i + 1
        rows.append(replace(row, rank=rank, near_first=bool(rows) and _overlaps(row, rows[0])))
    rows += sorted((r for r in drafts if r.unranked), key=_order_key)
    return Ranking(scope=scope, rows=tuple(rows))


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _overlaps(row: Row, first: Row) -> bool:
    a, b = row.rate.ci, first.rate.ci
    return a is not None and b is not None and a[1] >= b[0]


def group_key(entry: BoardEntry) -> GroupKey:
    m = entry.metrics
    resolved = m.get("resolved") or {}
    plan = m.get("plan") or {}
    names = sorted(set(resolved) | set(plan))
    sequences = tuple((n, int((resolved.get(n) or {}).get("tasks") or len(plan.get(n) or ()))) for n in names)
    return GroupKey(dataset=entry.dataset, passes=tuple(m.get("passes") or ()), formula=entry.formula,
                    formula_version=int(entry.formula_version), sequences=sequences)


def apart_reason(key: GroupKey, other: GroupKey, names: Mapping[str, str]) -> str:
    """What makes `key`'s runs unrankable with `other`'s, in a few words."""
    said = []
    if key.dataset != other.dataset:
        said.append(f"another dataset ({names.get(key.dataset, key.dataset)} {_short(key.dataset)} vs "
                    f"{names.get(other.dataset, other.dataset)} {_short(other.dataset)})")
    if key.passes != other.passes:
        said.append(f"other passes ({'+'.join(key.passes) or 'none'} vs {'+'.join(other.passes) or 'none'}: "
                    "CL-Score and ACC read other rows of the matrix)")
    if (key.formula, key.formula_version) != (other.formula, other.formula_version):
        said.append(f"another metrics formula ({key.formula} v{key.formula_version} vs {other.formula} "
                    f"v{other.formula_version})")
    if key.sequences != other.sequences and key.dataset == other.dataset:
        said.append(f"other sequences or task counts ({_tasks(key)} vs {_tasks(other)})")
    return "; ".join(said)


def _tasks(key: GroupKey) -> str:
    return f"{len(key.sequences)} sequence(s), {sum(n for _, n in key.sequences)} tasks"


def _short(text: str) -> str:
    return text[:12] if re.fullmatch(r"[0-9a-fA-F]{16,}", text) else ""


_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def _anchor(key: GroupKey, name: str) -> str:
    digest = hashlib.sha256(repr(key).encode()).hexdigest()[:8]
    return f"g-{_UNSAFE.sub('-', name).strip('-')[:30] or 'x'}-{digest}"


def build_leaderboard(entries: Sequence[BoardEntry]) -> Leaderboard:
    """Pure: the entries grouped by what must be shared to compare them, each group ranked
    over its macro row and over each of its sequences, each group after the first saying why
    it is apart. Groups: the largest first within a dataset, datasets by name."""
    by_key: dict[GroupKey, list[BoardEntry]] = {}
    for entry in entries:
        by_key.setdefault(group_key(entry), []).append(entry)
    names = {e.dataset: e.dataset_name for e in entries}
    order = sorted(by_key, key=lambda k: (names[k.dataset], k.dataset, -len(by_key[k]), k.passes, k.formula,
                                          k.formula_version, k.sequences))
    groups: list[Group] = []
    for key in order:
        members = by_key[key]
        sequences = [n for n, _ in key.sequences]
        # Compared with the first group of its dataset (why not ranked with the nearest
        # runs), or with the page's first group when it opens a dataset.
        same = next((g for g in groups if g.key.dataset == key.dataset), None)
        reference = same or (groups[0] if groups else None)
        apart = "" if reference is None else apart_reason(key, reference.key, names)
        if reference is not None:
            apart = f"Not ranked with {reference.label}: {apart}."
        groups.append(Group(key=key, dataset_name=names[key.dataset], anchor=_anchor(key, names[key.dataset]),
                            macro=rank_rows(members, MACRO, sequences),
                            sequences=tuple(rank_rows(members, s, sequences) for s in sequences),
                            apart=apart))
    return Leaderboard(groups=tuple(groups), entries=len(entries), rule=RULE)
