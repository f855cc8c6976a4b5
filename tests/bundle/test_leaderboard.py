"""`swecl leaderboard` end to end: the demo's four stages and a run of the reference MCP
memory server, each bundled (two signed), checked and ranked on one page with their
reports; the page in headless Chromium at a laptop's and a phone's size."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.processes import TEXTKIT, swecl
from tests.agents.conftest import server_memory_bin  # noqa: F401  (the session fixture: npm-installed server)
from tests.report.browser import Browser, evaluate, launch, open_page, problems_of, serve
from tests.report.conftest import chromium  # noqa: F401  (the session fixture: headless Chromium)
from tests.ledger.test_integrity import raw
from tests.run.support import first_of

from .test_bundle import TAMPER

pytestmark = pytest.mark.slow

PLAN = ("--sequence", TEXTKIT, *first_of(3, TEXTKIT))

_FACTS = """JSON.stringify({
  scrollWidth: document.scrollingElement.scrollWidth,
  first: (() => { const r = document.querySelector('table.board tr[data-rank="1"]').getBoundingClientRect();
                  return [r.top, r.bottom]; })(),
  rows: [...document.querySelectorAll('table.board tr[data-bundle]')].map(r => r.dataset.bundle),
  splits: [...document.querySelectorAll('p.split')].map(p => p.innerText),
  text: document.body.innerText,
  links: [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href')),
})"""


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory, cache: Path, server_memory_bin: str) -> tuple[Path, str]:
    """(the leaderboard's directory, what `swecl leaderboard` printed)."""
    root = tmp_path_factory.mktemp("leaderboard")
    results = root / "results"
    swecl(results, "run", *PLAN, "--quiet", cache=cache)  # the demo suite: base, plugin-blank, -accum, -dreamed
    swecl(results, "run", "--stage", "plugin-blank", *PLAN, "--passes", "initial", "--memory-server",
          server_memory_bin, "--memory-env", "MEMORY_FILE_PATH={data}/memory.jsonl", "--memory-recall-tool",
          "search_nodes", "--memory-recall-args", '{"query": "{repo}"}', "--memory-write-tool", "create_entities",
          "--quiet", cache=cache, timeout=600)
    swecl(results, "keygen", str(root / "key"), cache=cache)
    bundles = []
    for version in ("1", "2", "3", "4", "5"):
        out = root / f"v{version}.bundle"
        sign = ("--sign", str(root / "key")) if version in ("2", "5") else ()
        swecl(results, "bundle", version, "--out", str(out), *sign, cache=cache)
        bundles.append(str(out))
    printed = swecl(results, "leaderboard", *bundles, "--out", str(root / "board"), cache=cache).stdout
    return root / "board", printed


@pytest.fixture(scope="module")
def browser(chromium: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    with launch(chromium, tmp_path_factory.mktemp("chromium")) as running:
        yield running


def test_every_bundle_is_ranked_with_its_report_and_memory_system(board: tuple[Path, str]) -> None:
    folder, printed = board
    assert "5 runs of 5 bundles" in printed and "failed" not in printed
    for version in ("1", "2", "3", "4", "5"):
        assert (folder / "bundles" / f"v{version}.bundle").is_file()
        assert (folder / "reports" / f"v{version}" / "index.html").is_file()
    page = (folder / "index.html").read_text()
    assert "mcp-server-memory" in page or "memory-server" in page  # the server run's memory system, by name


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (390, 844)])
def test_the_board_of_real_bundles_renders_at_both_sizes(browser: Browser, board: tuple[Path, str], width: int,
                                                        height: int) -> None:
    folder, _ = board
    with serve(folder) as base:
        url = base + "index.html"
        load = open_page(browser.cdp, url, width=width, height=height)
        facts = json.loads(evaluate(browser.cdp, load.session, _FACTS))
        browser.cdp.drain(0.2)
        problems = problems_of(browser.cdp, load.session)
    assert problems == [] and load.requests == [url], (problems, load.requests)
    assert facts["scrollWidth"] <= width, facts["scrollWidth"]
    top, bottom = facts["first"]
    assert 0 <= top and bottom <= height, facts["first"]
    assert sorted(set(facts["rows"])) == [f"v{v}.bundle" for v in "12345"]
    # The base and the server run (initial pass only) are ranked apart from the three
    # memory stages (every pass), and the page says why.
    assert any("passes" in line for line in facts["splits"]), facts["splits"]
    assert "checked" in facts["text"]
    for href in facts["links"]:
        if not href.startswith("#"):
            assert (folder / href.split("#")[0]).is_file(), href


def test_a_bundle_that_fails_its_check_shows_unranked(board: tuple[Path, str], tmp_path: Path, cache: Path) -> None:
    folder, _ = board
    signed = folder / "bundles" / "v2.bundle"
    tampered = Path(shutil.copyfile(signed, tmp_path / "v2.bundle"))
    raw(tampered, TAMPER + "WHERE seq = (SELECT max(seq) FROM events WHERE type = 'task.finished')")
    done = swecl(tmp_path, "leaderboard", str(tampered), "--out", str(tmp_path / "board"), cache=cache)
    assert "1 failed their check" in done.stdout and "check failed: v2.bundle" in done.stderr
    assert "unranked" in (tmp_path / "board" / "index.html").read_text().lower() or \
        "not ranked" in (tmp_path / "board" / "index.html").read_text().lower()
