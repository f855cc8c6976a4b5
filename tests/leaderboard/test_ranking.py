"""The leaderboard's grouping and ranking rules, on the metrics of real demo runs of the
spans sequence: plugin-blank (8/8 initial-pass tasks), plugin-accum (7/8), both every
pass; base (6/8), the initial pass only. The page's words for what was not measured."""

from __future__ import annotations

import html
from pathlib import Path

import pytest

from projections.leaderboard import MACRO, BoardEntry, Leaderboard, build_leaderboard, write_leaderboard

from .conftest import DemoMetrics, entry

pytestmark = pytest.mark.slow


def _rows(board: Leaderboard, group: int = 0) -> list[tuple[int | None, str]]:
    return [(r.rank, r.entry.bundle) for r in board.groups[group].macro.rows]


def test_runs_of_one_group_rank_by_initial_pass_resolve_rate_with_wilson_intervals(demo_metrics: DemoMetrics) -> None:
    board = build_leaderboard([entry(demo_metrics, "plugin-accum"), entry(demo_metrics, "plugin-blank")])
    assert len(board.groups) == 1 and board.groups[0].apart == ""
    assert _rows(board) == [(1, "plugin-blank.swecl"), (2, "plugin-accum.swecl")]
    first, second = board.groups[0].macro.rows
    assert (first.resolved, first.tasks, second.resolved, second.tasks) == (8, 8, 7, 8)
    for row in (first, second):
        low, high = row.rate.ci
        assert 0 <= low <= row.rate.value <= high <= 1
    assert first.rate.ci[1] == 1.0 and first.rate.ci[0] < 1.0  # 8 of 8 is not certainty
    assert second.near_first  # 7/8 against 8/8: the intervals overlap, and the page says so
    # CL-Score beside it, as `swecl metrics` computed it
    assert first.cl_score.value == pytest.approx(demo_metrics.version("plugin-blank")["macro"]["CL-Score"])
    assert "initial-pass resolve rate" in board.rule and "CL-Score" in board.rule


def test_each_sequence_has_its_own_ranking(demo_metrics: DemoMetrics) -> None:
    board = build_leaderboard([entry(demo_metrics, "plugin-accum"), entry(demo_metrics, "plugin-blank")])
    group = board.groups[0]
    assert group.macro.scope == MACRO
    assert [s.scope for s in group.sequences] == sorted(demo_metrics.version("plugin-blank")["resolved"])
    assert all(s.first is not None and s.first.entry.bundle == "plugin-blank.swecl" for s in group.sequences)


def test_equal_figures_share_a_rank(demo_metrics: DemoMetrics) -> None:
    """The same run shared in two bundles: neither is above the other."""
    board = build_leaderboard([entry(demo_metrics, "plugin-blank", bundle="b.swecl"),
                               entry(demo_metrics, "plugin-blank", bundle="a.swecl"),
                               entry(demo_metrics, "plugin-accum")])
    assert _rows(board) == [(1, "a.swecl"), (1, "b.swecl"), (3, "plugin-accum.swecl")]


def test_other_passes_other_formulas_other_datasets_are_never_ranked_together(demo_metrics: DemoMetrics) -> None:
    entries = [entry(demo_metrics, "plugin-blank"), entry(demo_metrics, "plugin-accum"), entry(demo_metrics, "base"),
               entry(demo_metrics, "plugin-blank", formula="eval-v1", bundle="blank-eval.swecl"),
               entry(demo_metrics, "plugin-blank", bundle="other.swecl", dataset="9" * 32, dataset_name="other-bench")]
    board = build_leaderboard(entries)
    assert len(board.groups) == 4
    by_bundles = {tuple(sorted(r.entry.bundle for r in g.macro.rows)): g for g in board.groups}
    both = by_bundles[("plugin-accum.swecl", "plugin-blank.swecl")]
    base = by_bundles[("base.swecl",)]
    other_formula = by_bundles[("blank-eval.swecl",)]
    other_dataset = by_bundles[("other.swecl",)]
    assert base.key.passes == ("initial",) and both.key.passes == ("initial", "retest", "baseline")
    # One line per split, saying why; the first group of a dataset is the reference of the others.
    assert "other passes (initial vs initial+retest+baseline" in base.apart
    assert "another metrics formula (eval-v1 v1 vs native v1)" in other_formula.apart
    # Datasets in name order: other-bench's run opens the page; swecl-demo's first group says why it is apart.
    assert board.groups[0] is other_dataset and other_dataset.apart == ""
    assert [g.apart == "" for g in board.groups].count(True) == 1
    assert sum("another dataset" in g.apart for g in board.groups) == 1
    assert all(g.apart.count("\n") == 0 for g in board.groups)
    # Each group ranks its own runs: the base is first of its own (alone).
    assert base.macro.rows[0].rank == 1


def test_a_failed_check_is_listed_but_not_ranked(demo_metrics: DemoMetrics) -> None:
    entries = [entry(demo_metrics, "plugin-blank", checked=False, check_note="metrics differ: CL-Score", key=None),
               entry(demo_metrics, "plugin-accum", checked=None, check_note="not checked", key=None)]
    board = build_leaderboard(entries)
    rows = board.groups[0].macro.rows
    assert [(r.rank, r.entry.bundle) for r in rows] == [(1, "plugin-accum.swecl"), (None, "plugin-blank.swecl")]
    assert rows[1].unranked == "check failed: metrics differ: CL-Score"
    assert all(s.rows[-1].rank is None for s in board.groups[0].sequences)


def test_the_page_never_prints_an_unmeasured_value_as_a_number(demo_metrics: DemoMetrics, tmp_path: Path) -> None:
    base = demo_metrics.version("base")
    assert base["unmeasured"]["CL-Score"] and base["cost_per_solved"]["run"]["usd_per_solved"] is None
    board = build_leaderboard([entry(demo_metrics, "base")])
    row = board.groups[0].macro.rows[0]
    assert row.cl_score.value is None and row.cl_score.na == base["unmeasured"]["CL-Score"]
    assert row.gain.value is None and row.gain.na == base["normalized_gain"]["na"]
    assert row.cost.value is None and row.cost.na.startswith("not reported")
    page = write_leaderboard(board, tmp_path / "board").read_text()
    assert page == (tmp_path / "board" / "index.html").read_text()
    cells = page.split('data-scope="macro"')[1].split("</table>")[0]
    assert f'data-na="{html.escape(row.cl_score.na)}"' in cells and "n/a" in cells
    assert "not reported" in cells and "$0" not in page
    assert f"n/a: {html.escape(row.cl_score.na)}" in page  # the footnote names the reason


def test_bundle_text_is_escaped_and_links_stay_inside_the_folder(demo_metrics: DemoMetrics, tmp_path: Path) -> None:
    hostile = '<script>window.__pwned = 1</script>"'
    board = build_leaderboard([entry(demo_metrics, "plugin-blank", bundle=hostile, model="<b>m</b>",
                                     memory_system="<img src=x onerror=alert(1)>",
                                     report_href="javascript:alert(1)", bundle_href="//evil.example/b.swecl")])
    page = write_leaderboard(board, tmp_path / "board").read_text()
    assert "<script>" not in page and "<img src=x" not in page and "<b>m</b>" not in page
    assert html.escape(hostile) in page
    assert "javascript:" not in page and "evil.example" not in page


def test_nothing_to_rank_is_a_page_too(tmp_path: Path) -> None:
    board = build_leaderboard([])
    assert board.groups == () and "No runs to rank" in write_leaderboard(board, tmp_path).read_text()


def test_the_entry_is_the_api_the_command_calls() -> None:
    """`swecl leaderboard` (another module) builds these fields; the projections package exports them lazily."""
    import projections

    assert projections.BoardEntry is BoardEntry and projections.build_leaderboard is build_leaderboard
    assert [f for f in BoardEntry.__dataclass_fields__] == [
        "bundle", "metrics", "formula", "formula_version", "dataset", "dataset_name", "model", "memory_system",
        "checked", "check_note", "key", "report_href", "bundle_href"]
