"""Which way each metric is better, and what makes a CL-Score rank one run above another.

Every table of the metrics (`swecl metrics`, `swecl compare`, the report, `swecl view`)
heads a column with its mark (`ACC↑`, `F↓`) and says the legend once.

CL-Score is a weighted sum of five terms (docs/design.md section 7); it can rank a run that
solved fewer tasks above one that solved more. `score_drivers` says, for each such pair,
which terms make the difference: the weighted difference of each term (lambda * (A - B),
with F and BWT entering as -F), largest first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from projections.metrics._vectors import Lambdas

HIGHER, LOWER = "↑", "↓"
BETTER: dict[str, str] = {"ACC": HIGHER, "F": LOWER, "BWT": HIGHER, "FWT": HIGHER, "AULC": HIGHER, "CL-P": HIGHER,
                          "CL-S": HIGHER, "CL-F1": HIGHER, "CL-Score": HIGHER, "resolved": HIGHER,
                          "resolved_rate": HIGHER}
LEGEND = f"{HIGHER} higher is better, {LOWER} lower is better"


def marked(name: str) -> str:
    """`ACC↑`, `F↓`: the metric's name with the direction that is better."""
    return name + BETTER.get(name, "")


class ScoredRun(msgspec.Struct, frozen=True, kw_only=True):
    """One run as the drivers compare it: its macro metrics and its initial-pass tasks solved."""

    label: str
    metrics: Mapping[str, float | None]
    solved: int
    tasks: int


def _terms(metrics: Mapping[str, float | None], lambdas: Lambdas) -> dict[str, float] | None:
    """CL-Score's weighted terms (None when one it weighs is missing)."""
    raw = {"ACC": (lambdas.acc, metrics.get("ACC")), "F": (-lambdas.f, metrics.get("F")),
           "FWT": (lambdas.fwt, metrics.get("FWT")), "BWT": (lambdas.bwt, metrics.get("BWT")),
           "AULC": (lambdas.aulc, metrics.get("AULC"))}
    out = {}
    for name, (weight, value) in raw.items():
        if weight == 0:
            continue
        if value is None:
            return None
        out[name] = weight * value
    return out


def score_drivers(runs: Sequence[ScoredRun], lambdas: Lambdas) -> list[str]:
    """One line per pair where CL-Score ranks a run above one that solved more of the same
    number of tasks, naming the terms that make the difference."""
    lines = []
    for hi in runs:
        for lo in runs:
            s_hi, s_lo = hi.metrics.get("CL-Score"), lo.metrics.get("CL-Score")
            if s_hi is None or s_lo is None or s_hi <= s_lo or hi.solved >= lo.solved or hi.tasks != lo.tasks:
                continue
            t_hi, t_lo = _terms(hi.metrics, lambdas), _terms(lo.metrics, lambdas)
            if t_hi is None or t_lo is None:
                continue
            diffs = sorted(((name, t_hi[name] - t_lo[name]) for name in t_hi), key=lambda kv: -kv[1])
            said = ", ".join(f"{'-' if name == 'F' else ''}{name} {d:+.3f}" for name, d in diffs if abs(d) >= 5e-4)
            lines.append(f"CL-Score ranks {hi.label} ({s_hi:.3f}, {hi.solved}/{hi.tasks} solved) above {lo.label} "
                         f"({s_lo:.3f}, {lo.solved}/{lo.tasks}): weighted terms of the difference {s_hi - s_lo:+.3f}: "
                         f"{said or 'none above 0.0005'}")
    return lines
