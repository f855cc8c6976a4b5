"""The leaderboard page in headless Chromium, offline, at a laptop's and a phone's size:
nothing fails to load and nothing is fetched but the page; the page never scrolls
sideways (a wide table scrolls in its own box); the first-ranked row is on the first
screen; the line saying why groups are ranked apart is there. Screenshots are kept for
humans (paths printed)."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from projections.leaderboard import build_leaderboard, write_leaderboard
from tests.report.browser import Browser, evaluate, launch, open_page, problems_of, screenshot, serve

from .conftest import DemoMetrics, entry

pytestmark = pytest.mark.slow

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
