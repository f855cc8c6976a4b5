"""The report in a real browser: headless Chromium over the DevTools protocol, offline.

Loads the page from a loopback HTTP server and asserts: no console error, no uncaught
exception, no error log entry, no failed or 4xx/5xx request, no request anywhere but the
report's own directory; at 1280x800 the verdict and the headline chart on the first screen,
every other part folded (the page a few screens tall) and opened by a click on its
summary; every sequence is in the DOM, every figure decoded, and the hostile ledger text
stayed text; at 390 px wide nothing overflows sideways. One page load per width;
screenshots are kept for humans (paths printed).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from matplotlib import image as mpimg

from projections.report import ReportSummary

from .browser import Browser, click, evaluate, launch, open_page, problems_of, screenshot, serve
from .realistic import Realistic

# Read at 1280x800 before anything is unfolded: the verdict lines and the headline chart
# are on the first screen; every part below is folded (the page a few screens tall), the
# task tables inside them too. Then two parts are opened by a click on their summary.
_FIRST_SIGHT = """JSON.stringify({
  height: document.scrollingElement.scrollHeight,
  viewport: window.innerHeight,
  verdicts: [...document.querySelectorAll('p.verdict')].map(p => p.getBoundingClientRect().bottom),
  firstAfterTitle: document.querySelector('header').nextElementSibling.id,
  chart: (() => { const r = document.querySelector('img[data-headline-chart]').getBoundingClientRect();
                  return [r.top, r.bottom, r.width]; })(),
  parts: [...document.querySelectorAll('details.part')].map(d => [d.id, d.open]),
  contrastShown: document.querySelector('#contrast table').checkVisibility(),
  leakageShown: document.querySelector('#leakage table').checkVisibility(),
  taskTablesShown: [...document.querySelectorAll('table.tasks')].filter(t => t.checkVisibility()).length,
  taskTables: document.querySelectorAll('details.tasks table.tasks').length,
})"""

_OPENED = """JSON.stringify({
  metrics: document.querySelector('#part-metrics').open,
  contrastShown: document.querySelector('#contrast table').checkVisibility(),
  leakage: document.querySelector('#part-leakage').open,
  leakageShown: document.querySelector('#leakage table').checkVisibility(),
  others: [...document.querySelectorAll('details.part')].filter(d => d.open).map(d => d.id),
})"""

# At a phone's width: nothing wider than the screen, folded or unfolded (a wide table
# scrolls inside its own box).
_WIDTH = """JSON.stringify({
  scrollWidth: document.scrollingElement.scrollWidth,
  viewport: window.innerWidth,
})"""

_DOM_FACTS = """document.querySelectorAll('details').forEach(d => { d.open = true; });
JSON.stringify({
  sequences: [...document.querySelectorAll('section[data-sequence]')].map(e => e.dataset.sequence),
  versions: [...document.querySelectorAll('section[data-sequence] article[data-version]')]
      .map(e => [e.closest('section').dataset.sequence, e.dataset.version]),
  images: [...document.images].map(i => [i.getAttribute('src'), i.complete, i.naturalWidth]),
  scripts: document.scripts.length,
  pwned: typeof window.__pwned,
  missingCells: document.querySelectorAll('td.cell-missing').length,
  text: document.body.innerText,
})"""


@pytest.fixture(scope="module")
def browser(chromium: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    with launch(chromium, tmp_path_factory.mktemp("chromium")) as running:
        yield running


def test_the_checks_see_errors_when_there_are_some(browser: Browser, tmp_path: Path) -> None:
    """The collector itself: a page with a broken image, a console error and a throw."""
    (tmp_path / "bad.html").write_text(
        '<!DOCTYPE html><html><head><link rel="icon" href="data:,"></head><body><img src="nope.png">'
        '<script>console.error("boom"); throw new Error("kaput");</script></body></html>'
    )
    with serve(tmp_path) as base:
        load = open_page(browser.cdp, base + "bad.html")
    text = "\n".join(load.problems)
    assert "boom" in text and "kaput" in text and "HTTP 404" in text and "nope.png" in text, text


def test_report_loads_clean_in_headless_chromium(
    browser: Browser, report: ReportSummary, realistic: Realistic, tmp_path: Path
) -> None:
    with serve(report.out_dir) as base:
        url = base + "index.html"
        load = open_page(browser.cdp, url, width=1280, height=800)
        first = json.loads(evaluate(browser.cdp, load.session, _FIRST_SIGHT))
        top = screenshot(browser.cdp, load.session, tmp_path / "first-screen.png", max_height=800)
        click(browser.cdp, load.session, "#part-metrics > summary")
        click(browser.cdp, load.session, "#part-leakage > summary")
        opened = json.loads(evaluate(browser.cdp, load.session, _OPENED))
        click(browser.cdp, load.session, 'nav#toc a[href="#funnel"]')  # a link into a folded part opens it
        browser.cdp.drain(0.2)
        followed = evaluate(browser.cdp, load.session, "[location.hash, document.querySelector('#part-funnel').open]")
        facts = json.loads(evaluate(browser.cdp, load.session, _DOM_FACTS))
        shot = screenshot(browser.cdp, load.session, tmp_path / "report.png")
        browser.cdp.drain(0.3)
        problems = problems_of(browser.cdp, load.session)

    assert problems == [], "\n".join(problems)
    assert load.requests and load.requests[0] == url
    outside = [u for u in load.requests if not (u.startswith(base) or u.startswith("data:"))]
    assert outside == [], f"the page fetched from outside its directory: {outside}"

    # The first screen is the answer: the verdict right under the title, then the chart, within 800 px.
    assert first["viewport"] == 800 and first["firstAfterTitle"] == "verdict", first
    assert first["verdicts"] and all(0 < bottom <= 800 for bottom in first["verdicts"]), first
    chart_top, chart_bottom, chart_width = first["chart"]
    assert first["verdicts"][-1] <= chart_top and chart_bottom <= 800 and chart_width > 400, first
    # Everything else folded, and the page a few screens tall.
    assert first["parts"] and not any(is_open for _, is_open in first["parts"]), first
    assert first["height"] <= 4 * 800, first
    assert not first["contrastShown"] and not first["leakageShown"], first
    assert first["taskTables"] == len(realistic.sequences) * len(realistic.versions) and first["taskTablesShown"] == 0
    # A click on a part's summary opens it, and only it.
    assert opened["metrics"] and opened["contrastShown"] and opened["leakage"] and opened["leakageShown"], opened
    assert opened["others"] == ["part-metrics", "part-leakage"], opened
    assert followed == ["#funnel", True], followed

    assert facts["sequences"] == list(realistic.sequences)
    assert facts["versions"] == [[s, v] for s in realistic.sequences for v in realistic.versions]
    pngs = sorted(f"plots/{f.name}" for f in report.files if f.suffix == ".png")
    assert sorted(src for src, _, _ in facts["images"]) == pngs
    for src, complete, width in facts["images"]:
        assert complete and width > 0, f"{src} did not decode"
    assert facts["scripts"] == 0 and facts["pwned"] == "undefined"
    assert realistic.script_title in facts["text"]  # shown as text, not run
    assert f"unknown item {realistic.unknown_item}" in facts["text"]
    assert facts["missingCells"] >= 1

    # Keep the screenshots for humans: pytest's tmp dir, and a stable place under the system tmp.
    pixels = mpimg.imread(shot)
    assert pixels.shape[0] > 900 and pixels.shape[1] >= 1000 and float(np.std(pixels)) > 0.05
    keep = Path(tempfile.gettempdir()) / "swecl-report-screenshots"
    keep.mkdir(exist_ok=True)
    shutil.copyfile(shot, keep / "report.png")
    shutil.copyfile(top, keep / "first-screen.png")
    print(f"\nreport screenshots: {shot}, {top} (copies in {keep})")


def test_report_fits_a_phone_screen(browser: Browser, report: ReportSummary, tmp_path: Path) -> None:
    """At 390 px wide nothing overflows sideways, folded or with every part open."""
    with serve(report.out_dir) as base:
        load = open_page(browser.cdp, base + "index.html", width=390, height=844)
        folded = json.loads(evaluate(browser.cdp, load.session, _WIDTH))
        shot = screenshot(browser.cdp, load.session, tmp_path / "phone.png", max_height=844)
        evaluate(browser.cdp, load.session, "document.querySelectorAll('details').forEach(d => { d.open = true; })")
        unfolded = json.loads(evaluate(browser.cdp, load.session, _WIDTH))
        problems = problems_of(browser.cdp, load.session)
    assert problems == [], "\n".join(problems)
    assert folded["viewport"] == 390 and folded["scrollWidth"] <= 390, folded
    assert unfolded["scrollWidth"] <= 390, unfolded
    keep = Path(tempfile.gettempdir()) / "swecl-report-screenshots"
    keep.mkdir(exist_ok=True)
    shutil.copyfile(shot, keep / "phone.png")


def test_report_works_from_file_url_too(browser: Browser, report: ReportSummary) -> None:
    """Opened straight from disk (no server), as a user double-clicking index.html would."""
    url = report.index.resolve().as_uri()
    load = open_page(browser.cdp, url)
    images = evaluate(browser.cdp, load.session, "[...document.images].map(i => i.naturalWidth)")
    assert load.problems == [], "\n".join(load.problems)
    assert all(u.startswith(("file:", "data:")) for u in load.requests), load.requests
    assert images and all(w > 0 for w in images)
