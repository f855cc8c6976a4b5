"""The report's opening section: one verdict line per comparison (base vs each memory run,
`projections.compare.verdict_line`, the line `swecl compare A B` opens with), then each
run's normalized gain and memory efficiency with their intervals, and its cost per solved
task (n/a with the reason: not reported, nothing solved, no oracle run)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from projections import cost_text
from projections.metrics import LEGEND

from ._html_common import TOP
from .present import esc, value_attr

if TYPE_CHECKING:
    from projections.compare import Assessment

    from ._data import ReportData


def _interval(value: float | None, ci: tuple[float, float] | None, na: str | None) -> str:
    if value is None:
        return f'n/a<br><span class="note">{esc(na or "not computable")}</span>'
    return f"{value:.3f}" + ("" if ci is None else f" [{ci[0]:.3f}, {ci[1]:.3f}]")


def _gain_cell(assessment: Assessment | None, gain: float | None) -> str:
    if assessment is None:
        return '<td class="num" data-gain="">–</td>'
    return (f'<td class="num" data-gain="{value_attr(gain)}">'
            f'{_interval(gain, assessment.gain_macro_ci, "the base resolved every task")}</td>')


def _efficiency_cell(assessment: Assessment | None) -> str:
    if assessment is None:
        return '<td class="num" data-efficiency="">–</td>'
    eff = assessment.efficiency
    oracles = sorted({r.oracle_version for r in eff.sequences.values() if r.oracle_version})
    said = _interval(eff.macro, eff.ci, eff.na) + (f'<br><span class="note">oracle {esc(", ".join(oracles))}</span>'
                                                   if oracles else "")
    return f'<td class="num" data-efficiency="{value_attr(eff.macro)}">{said}</td>'


def render_verdicts(data: ReportData) -> str:
    """The section (empty when the report compares nothing)."""
    lines = [(rc.comparison.b.version, rc.assessment) for rc in data.comparisons
             if rc.comparison is not None and rc.assessment is not None and rc.assessment.verdict]
    verdicts = "".join(f'<p class="verdict" data-verdict="{esc(version)}">{esc(a.verdict)}</p>' for version, a in lines)
    by_version = {rc.comparison.b.version: rc for rc in data.comparisons if rc.comparison is not None}
    rows = []
    for vr in data.versions:
        rc = by_version.get(vr.run.version)
        assessment = None if rc is None else rc.assessment
        gain = None if rc is None or rc.comparison is None else rc.comparison.macro.gain
        cost = vr.cost
        per = "–" if cost is None else esc(cost_text(cost.run))
        usd = None if cost is None else cost.run.usd_per_solved
        rows.append(f'<tr data-verdict-run="{esc(vr.run.version)}"><td>{esc(vr.label)}</td>{_gain_cell(assessment, gain)}'
                    f"{_efficiency_cell(assessment)}"
                    f'<td class="num" data-cost="{value_attr(usd)}">{per}</td></tr>')
    return (
        f'<section id="verdict"><h2>Verdict {TOP}</h2>'
        + (verdicts or '<p class="note">No memory run compared with a base run in this report.</p>')
        + '<table class="verdict"><thead><tr><th>run</th><th>normalized gain↑ [95% CI]</th>'
        "<th>memory efficiency↑ [95% CI]</th><th>cost per solved task↓ (initial pass)</th></tr></thead>"
        f'<tbody>{"".join(rows)}</tbody></table>'
        f'<p class="note">{esc(LEGEND)}. Normalized gain: (mem − base) / (1 − base); memory efficiency: '
        "(mem − base) / (oracle − base), the oracle a run of stage <code>oracle</code> of the same agent, model and "
        "tasks; both of initial-pass resolve rates, with percentile bootstrap intervals over tasks (10000 resamples, "
        "seed 0). Cost per solved task: what the agents reported for the initial pass (every attempt) over the tasks "
        "it resolved; n/a where nothing was reported (never $0) or solved.</p></section>"
    )
