"""The leaderboard's grouping and ranking rules, on the metrics of real demo runs of the
spans sequence: plugin-blank (8/8 initial-pass tasks), plugin-accum (7/8), both every
pass; base (6/8), the initial pass only. The page's words for what was not measured.

And the page in headless Chromium (one module with the rules: the runs are built once, on
one worker), offline, at a laptop's and a phone's size: nothing fails to load and nothing
is fetched but the page; the page never scrolls sideways (a wide table scrolls in its own
box); the first-ranked row is on the first screen; the line saying why groups are ranked
apart is there. Screenshots are kept for humans (paths printed)."""

from __future__ import annotations

import html
import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from projections.leaderboard import MACRO, BoardEntry, Leaderboard, build_leaderboard, write_leaderboard
from tests.report.browser import Browser, evaluate, launch, open_page, problems_of, screenshot, serve

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


# -- the page in a browser ------------------------------------------------------------


_FACTS = """JSON.stringify({
  scrollWidth: document.scrollingElement.scrollWidth,
  viewport: [window.innerWidth, window.innerHeight],
  first: (() => { const r = document.querySelector('table.board tr[data-rank="1"]').getBoundingClientRect();
                  return [r.top, r.bottom, r.left]; })(),
  firstBundle: document.querySelector('table.board tr[data-rank="1"]').dataset.bundle,
  lead: document.querySelector('p.lead').innerText,
  leadBottom: document.querySelector('p.lead').getBoundingClientRect().bottom,
  rule: document.querySelector('p.rule').getBoundingClientRect().bottom,
  splits: [...document.querySelectorAll('p.split')].map(p => p.innerText),
  scripts: document.scripts.length,
  pwned: typeof window.__pwned,
})"""

_OPENED = """document.querySelectorAll('details').forEach(d => { d.open = true; });
JSON.stringify({scrollWidth: document.scrollingElement.scrollWidth,
                tables: document.querySelectorAll('table.board').length})"""


@pytest.fixture(scope="module")
def board_dir(demo_metrics: DemoMetrics, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A board of two groups (other passes), a failed and an unchecked row, hostile text."""
    entries = [
        entry(demo_metrics, "plugin-blank", model="claude-sonnet-4-5"),
        entry(demo_metrics, "plugin-accum", checked=None, check_note="not checked", key=None),
        entry(demo_metrics, "plugin-accum", bundle="accum-tampered.swecl", checked=False,
              check_note="metrics differ from the ledger's: CL-Score", key=None, bundle_href=None),
        entry(demo_metrics, "base", bundle='<script>window.__pwned = 1</script>base.swecl'),
    ]
    out = tmp_path_factory.mktemp("board") / "board"
    write_leaderboard(build_leaderboard(entries), out)
    return out


@pytest.fixture(scope="module")
def browser(chromium: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    with launch(chromium, tmp_path_factory.mktemp("chromium")) as running:
        yield running


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (390, 844)])
def test_the_board_answers_on_the_first_screen_and_never_scrolls_sideways(
        browser: Browser, board_dir: Path, tmp_path: Path, width: int, height: int) -> None:
    with serve(board_dir) as base:
        url = base + "index.html"
        load = open_page(browser.cdp, url, width=width, height=height)
        facts = json.loads(evaluate(browser.cdp, load.session, _FACTS))
        shot = screenshot(browser.cdp, load.session, tmp_path / f"board-{width}.png", max_height=height)
        opened = json.loads(evaluate(browser.cdp, load.session, _OPENED))
        browser.cdp.drain(0.2)
        problems = problems_of(browser.cdp, load.session)

    assert problems == [], "\n".join(problems)
    assert load.requests == [url], f"the page fetched more than itself: {load.requests}"
    assert facts["viewport"] == [width, height], facts
    # No sideways scroll of the page, folded or with every sequence's table open.
    assert facts["scrollWidth"] <= width and opened["scrollWidth"] <= width, (facts, opened)
    assert opened["tables"] == 2  # two groups of one sequence: no per-sequence table repeats the macro one
    # The answer on the first screen: who is first, by what, and the first-ranked row itself.
    top, bottom, left = facts["first"]
    assert 0 <= top and bottom <= height and 0 <= left < width, facts
    assert facts["firstBundle"] == "plugin-blank.swecl"
    assert "plugin-blank.swecl" in facts["lead"] and "100.0%" in facts["lead"], facts["lead"]
    assert facts["leadBottom"] <= height and facts["rule"] <= height, facts
    # Why the base is ranked apart, in one line.
    assert len(facts["splits"]) == 1 and "other passes" in facts["splits"][0], facts["splits"]
    assert facts["scripts"] == 0 and facts["pwned"] == "undefined"

    keep = Path(tempfile.gettempdir()) / "swecl-leaderboard-screenshots"
    keep.mkdir(exist_ok=True)
    shutil.copyfile(shot, keep / shot.name)
    print(f"\nleaderboard screenshot: {keep / shot.name}")


def test_the_board_opens_from_disk_too(browser: Browser, board_dir: Path) -> None:
    """Double-clicked (a file: URL, no server): still nothing fetched but the page."""
    url = (board_dir / "index.html").resolve().as_uri()
    load = open_page(browser.cdp, url)
    assert load.problems == [], "\n".join(load.problems)
    assert load.requests == [url]
