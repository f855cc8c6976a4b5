"""The report's headline (issue 71): the chart's bars as data, and the page's hooks for them.

With a base in the report: one group per memory run, the base's and the run's initial-pass
tasks resolved over the compared sequences (a task without a valid verdict not resolved),
each with its 95% Wilson interval, and the run's normalized gain with the verdict's
interval. Without one: one group per run, and a memory run's gain against the base of its
folder (as `swecl metrics` finds it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from commands import Experiment
from projections.report._data import collect
from projections.report._headline import headline, wilson

from .realistic import BASE, PLUGIN, Realistic
from .test_report import Page, read


def test_wilson_interval() -> None:
    assert wilson(0, 10) == (0.0, pytest.approx(0.2775, abs=1e-4))
    low, high = wilson(5, 9)  # type: ignore[misc]
    assert low == pytest.approx(0.2667, abs=1e-4) and high == pytest.approx(0.8112, abs=1e-4)
    assert wilson(3, 0) is None


def test_each_memory_run_beside_its_base(realistic: Realistic) -> None:
    with Experiment(realistic.root).reading() as r:
        data = collect(r.ledger, r.projector, [])
    found = headline(data)
    assert found.compared and [g.version for g in found.groups] == [PLUGIN]
    (group,) = found.groups
    # base: django 1,0,1,0,1 + sympy 0,1,1,0; plugin-blank: 1,1,?,0,1 + 0,1,1,1 (? not resolved).
    assert [(b.role, b.versions, b.resolved, b.tasks) for b in group.bars] == [("base", (BASE,), 5, 9),
                                                                             ("memory", (PLUGIN,), 6, 9)]
    rc = next(rc for rc in data.comparisons if rc.comparison is not None)
    assert group.gain == rc.comparison.macro.gain and group.gain_ci == rc.assessment.gain_macro_ci  # type: ignore[union-attr]


def test_the_page_lists_the_charts_numbers(report: object) -> None:
    page = Page(read(report.index))  # type: ignore[attr-defined]
    rows = {(a["data-bar-group"], a["data-role"]) for a, _ in page.with_attr("tr", "data-bar-group")}
    assert rows == {(PLUGIN, "base"), (PLUGIN, "memory")}
    assert [a["src"] for a, _ in page.with_attr("img", "data-headline-chart")] == ["plots/headline.png"]
    assert '<td class="num" data-resolved="6" data-tasks="9">6/9</td>' in read(report.index)  # type: ignore[attr-defined]


def test_without_a_base_in_the_report(realistic: Realistic, tmp_path: Path) -> None:
    """Only the memory run: its own bar. (Its folder's base differs from it, so `swecl metrics`
    finds no base either: no gain, and the page says no run is compared.)"""
    with Experiment(realistic.root).reading() as r:
        data = collect(r.ledger, r.projector, [PLUGIN])
    found = headline(data)
    assert not found.compared and [g.version for g in found.groups] == [PLUGIN]
    (group,) = found.groups
    assert [(b.role, b.resolved, b.tasks) for b in group.bars] == [("run", 6, 9)]
    assert data.versions[0].assessed is None and group.gain is None
    summary = Experiment(realistic.root).report(versions=[PLUGIN], out_dir=tmp_path / "one")
    text = read(summary.index)
    assert "No memory run compared with a base run in this report." in text
    assert [a["src"] for a, _ in Page(text).with_attr("img", "data-headline-chart")] == ["plots/headline.png"]


def test_the_wilson_interval_holds_its_rate_at_none_and_all_resolved() -> None:
    """At 0 or N of N the bound equals the rate: rounding once put the lower bound of 0/3 at
    5.6e-17, above the bar, and matplotlib refused the negative error bar."""
    for n in range(1, 300):
        for resolved in (0, n):
            low, high = wilson(resolved, n)
            assert low <= resolved / n <= high
