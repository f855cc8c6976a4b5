"""The report's opening section, right under the title: one verdict line per comparison
(base vs each memory run, `projections.compare.verdict_line`, the line `swecl compare A B`
opens with), the headline chart (`_headline`: each memory run's resolved tasks beside its
base's and its oracle's, with intervals; its numbers folded under it), then each run's
normalized gain and memory efficiency with their intervals, and its cost per solved task
(n/a with the reason: not reported, nothing solved, no oracle run)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from projections import cost_text
from projections.metrics import LEGEND

from .present import esc, value_attr

if TYPE_CHECKING:
    from projections.compare import Assessment

    from ._headline import Headline

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


def _bars_table(found: Headline) -> str:
    """The chart's numbers, folded under it (and the hooks the tests read)."""
    rows = []
    for group in found.groups:
        for bar in group.bars:
            ci = bar.ci
            shown = "n/a" if bar.rate is None else f"{bar.rate:.3f}" + ("" if ci is None else f" [{ci[0]:.3f}, {ci[1]:.3f}]")
            rows.append(
                f'<tr data-bar-group="{esc(group.version)}" data-role="{bar.role}"><td>{esc(group.label)}</td>'
                f"<td>{esc(bar.label)}</td>"
                f'<td class="num" data-resolved="{bar.resolved}" data-tasks="{bar.tasks}">{bar.resolved}/{bar.tasks}</td>'
                f'<td class="num" data-rate="{value_attr(bar.rate)}">{shown}</td></tr>')
    return ('<details class="numbers"><summary>The chart\'s numbers</summary><table class="headline-bars"><thead><tr>'
            "<th>group</th><th>bar</th><th>resolved / tasks</th><th>rate [95% Wilson interval]</th></tr></thead>"
            f'<tbody>{"".join(rows)}</tbody></table></details>')


def _chart(src: str | None, found: Headline | None) -> str:
    if src is None or found is None:
        return ""
    if found.compared:
        said = ("Each memory run (blue) beside its base (orange, memory off) and its oracle (grey, hatched: a run of "
                "stage <code>oracle</code>, the reference memory) where the efficiency found one")
    else:
        said = ("No base run in this report: each run's own resolved tasks (blue memory on, orange memory off) and, for "
                "a memory run, the base and oracle of its folder (as <code>swecl metrics</code> finds them) beside it")
    alt = "; ".join(f"{g.label}: " + ", ".join(f"{b.label} {b.resolved}/{b.tasks}" for b in g.bars) for g in found.groups)
    return (
        f'<figure class="headline-chart"><img data-headline-chart="" src="{esc(src)}" alt="{esc(alt)}">'
        f"<figcaption>{said}: initial-pass tasks resolved, pooled over the sequences compared (a task without a valid "
        "verdict counts as not resolved, as in the normalized gain), with 95% Wilson score intervals; under each run "
        "its normalized gain [95% bootstrap interval].</figcaption></figure>" + _bars_table(found)
    )


def render_verdicts(data: ReportData, chart: str | None = None, found: Headline | None = None) -> str:
    """The section: the verdict lines, the headline chart (`chart`, drawing `found`), then
    each run's gain, efficiency and cost."""
    lines = [(rc.comparison.b.version, rc.assessment) for rc in data.comparisons
             if rc.comparison is not None and rc.assessment is not None and rc.assessment.verdict]
    if not lines:  # no base in the report: each memory run against its folder's base, as `swecl metrics` says it
        lines = [(vr.run.version, vr.assessed[1]) for vr in data.versions
                 if vr.assessed is not None and vr.assessed[1].verdict]
    verdicts = "".join(f'<p class="verdict" data-verdict="{esc(version)}">{esc(a.verdict)}</p>' for version, a in lines)
    by_version = {rc.comparison.b.version: rc for rc in data.comparisons if rc.comparison is not None}
    rows = []
    for vr in data.versions:
        rc = by_version.get(vr.run.version)
        assessment = None if rc is None else rc.assessment
        gain = None if rc is None or rc.comparison is None else rc.comparison.macro.gain
        if rc is None and vr.assessed is not None:
            gain, assessment = vr.assessed[0].macro, vr.assessed[1]
        cost = vr.cost
        per = "–" if cost is None else esc(cost_text(cost.run))
        usd = None if cost is None else cost.run.usd_per_solved
        rows.append(f'<tr data-verdict-run="{esc(vr.run.version)}"><td>{esc(vr.label)}</td>{_gain_cell(assessment, gain)}'
                    f"{_efficiency_cell(assessment)}"
                    f'<td class="num" data-cost="{value_attr(usd)}">{per}</td></tr>')
    return (
        '<section id="verdict">'
        + (verdicts or '<p class="note">No memory run compared with a base run in this report.</p>')
        + _chart(chart, found)
        + '<table class="verdict"><thead><tr><th>run</th><th>normalized gain↑ [95% CI]</th>'
        "<th>memory efficiency↑ [95% CI]</th><th>cost per solved task↓ (initial pass)</th></tr></thead>"
        f'<tbody>{"".join(rows)}</tbody></table>'
        f'<p class="note">{esc(LEGEND)}. Normalized gain: (mem − base) / (1 − base); memory efficiency: '
        "(mem − base) / (oracle − base), the oracle a run of stage <code>oracle</code> of the same agent, model and "
        "tasks; both of initial-pass resolve rates, with percentile bootstrap intervals over tasks (10000 resamples, "
        "seed 0). Cost per solved task: what the agents reported for the initial pass (every attempt) over the tasks "
        "it resolved; n/a where nothing was reported (never $0) or solved.</p></section>"
    )
