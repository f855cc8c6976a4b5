"""The verdict line: did the memory help, and what weakens the answer. One line, whatever it holds.

`swecl compare A B`, `swecl metrics` (each memory run against its base) and the report
open with it, all through `verdict_line`, so the three say the same thing the same way:

    v3 plugin-accum vs v1 base: no clear difference (+8 tasks, -2 of 24 paired in the initial pass,
    McNemar p=0.109); normalized gain 0.583 [-0.278, 0.933]; memory efficiency n/a (no oracle run: ...);
    weakened by: 106 recalled items flagged as leakage (`swecl audit 3 --summary`); different passes
    (initial vs initial+retest+baseline)

(printed on one line). The call: "memory helped" when B resolved more of the paired tasks
than A and McNemar's exact p is below 0.05, "memory hurt" for the reverse, otherwise "no
clear difference". The weakeners, each said only when present: recalled items the audit
flags as leakage in B, tasks without a valid initial verdict in either run (counted as not
resolved), different passes run, different task orders, a fork compared from its fork point.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from projections.compare._stats import mcnemar

ALPHA = 0.05


class VerdictInputs(msgspec.Struct, frozen=True, kw_only=True):
    """What one verdict line says: the paired initial-pass outcomes and their weakeners."""

    a: str
    """How the base (A) is named (`v1`)."""
    b: str
    """How the memory run (B) is named (`v3 plugin-accum`)."""
    b_version: str
    gained: int
    """Tasks only B resolved (McNemar's c)."""
    lost: int
    """Tasks only A resolved (McNemar's b)."""
    tasks: int
    p_value: float
    gain: float | None = None
    gain_ci: tuple[float, float] | None = None
    efficiency: float | None = None
    efficiency_ci: tuple[float, float] | None = None
    efficiency_na: str | None = None
    flagged: int | None = None
    """B's recalled items flagged as leakage (None: not audited)."""
    no_verdict_a: int = 0
    """Tasks without a valid initial verdict in A."""
    no_verdict_b: int = 0
    passes_a: tuple[str, ...] = ()
    passes_b: tuple[str, ...] = ()
    order_a: str | None = None
    """A's task order (`run.started.task_order`; None: the dataset's)."""
    order_b: str | None = None
    paired_from: int | None = None
    """A fork compared from its fork point: the tasks before it are left out."""


def paired_counts(a_resolved: Sequence[bool], b_resolved: Sequence[bool]) -> tuple[int, int, float]:
    """(gained, lost, McNemar's exact p) of paired per-task resolved flags."""
    test = mcnemar(list(a_resolved), list(b_resolved))
    return test.c, test.b, test.p_value


def _value(value: float | None, ci: tuple[float, float] | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.3f}" + ("" if ci is None else f" [{ci[0]:.3f}, {ci[1]:.3f}]")


def call(gained: int, lost: int, p_value: float) -> str:
    """"memory helped", "memory hurt" or "no clear difference" (McNemar's p against ALPHA)."""
    if p_value < ALPHA and gained > lost:
        return "memory helped"
    if p_value < ALPHA and lost > gained:
        return "memory hurt"
    return "no clear difference"


def weakeners(v: VerdictInputs) -> list[str]:
    """What makes the verdict weaker than its numbers read, each in a few words."""
    out = []
    if v.flagged:
        out.append(f"{v.flagged} recalled items flagged as leakage (`swecl audit {v.b_version} --summary`)")
    if v.no_verdict_a or v.no_verdict_b:
        out.append(f"tasks without a valid verdict, counted unresolved: {v.no_verdict_a} in A, {v.no_verdict_b} in B")
    if v.passes_a and v.passes_b and tuple(v.passes_a) != tuple(v.passes_b):
        said = f"different passes ({'+'.join(v.passes_a)} vs {'+'.join(v.passes_b)}"
        if ("retest" in v.passes_a) != ("retest" in v.passes_b):
            # The line's own numbers are the initial pass's; the tables' ACC is not.
            said += ": ACC is one run's re-test row against the other's initial pass"
        out.append(said + ")")
    if v.order_a != v.order_b:
        out.append(f"different task orders ({v.order_a or 'dataset'} vs {v.order_b or 'dataset'})")
    if v.paired_from is not None:
        out.append(f"a fork: paired only from order {v.paired_from} on")
    return out


def verdict_line(v: VerdictInputs) -> str:
    """The one line (no newline in it, whatever the names hold)."""
    eff = _value(v.efficiency, v.efficiency_ci) if v.efficiency is not None else (
        f"n/a ({v.efficiency_na or 'not computed'})")
    parts = [f"{v.b} vs {v.a}: {call(v.gained, v.lost, v.p_value)} (+{v.gained} tasks, -{v.lost} of {v.tasks} "
             f"paired in the initial pass, McNemar p={v.p_value:.3g})",
             f"normalized gain {_value(v.gain, v.gain_ci)}",
             f"memory efficiency {eff}"]
    weak = weakeners(v)
    parts.append("weakened by: " + "; ".join(weak) if weak else "nothing found to weaken it")
    return " ".join("; ".join(parts).split())
