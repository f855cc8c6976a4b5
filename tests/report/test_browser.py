"""The report in a real browser: headless Chromium over the DevTools protocol, offline.

Loads the page from a loopback HTTP server and asserts: no console error, no uncaught
exception, no error log entry, no failed or 4xx/5xx request, no request anywhere but the
report's own directory; every sequence is in the DOM, every figure decoded, and the
hostile ledger text stayed text. A screenshot is kept for humans (path printed).
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

from .browser import Browser, evaluate, launch, open_page, screenshot, serve
from .realistic import Realistic

# Read before anything is unfolded: the contrast and the leakage are on screen at first
# sight, the task tables folded. Then every <details> is opened, so the text check below
# sees the folded task tables too (innerText skips closed ones).
_FIRST_SIGHT = """JSON.stringify({
  contrastRows: document.querySelector('#contrast table').checkVisibility()
      && !document.querySelector('#contrast').closest('details'),
  leakageRows: document.querySelector('#leakage table').checkVisibility()
      && !document.querySelector('#leakage').closest('details'),
  taskTablesShown: [...document.querySelectorAll('table.tasks')].filter(t => t.checkVisibility()).length,
  taskTables: document.querySelectorAll('details.tasks table.tasks').length,
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
        load = open_page(browser.cdp, url)
        first = json.loads(evaluate(browser.cdp, load.session, _FIRST_SIGHT))
        shot = screenshot(browser.cdp, load.session, tmp_path / "report.png")
        facts = json.loads(evaluate(browser.cdp, load.session, _DOM_FACTS))

    assert load.problems == [], "\n".join(load.problems)
    assert load.requests and load.requests[0] == url
    outside = [u for u in load.requests if not (u.startswith(base) or u.startswith("data:"))]
    assert outside == [], f"the page fetched from outside its directory: {outside}"

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
    assert first["contrastRows"] and first["leakageRows"], first
    assert first["taskTables"] == len(realistic.sequences) * len(realistic.versions) and first["taskTablesShown"] == 0

    # Keep the screenshot for humans: pytest's tmp dir, and a stable place under the system tmp.
    pixels = mpimg.imread(shot)
    assert pixels.shape[0] > 900 and pixels.shape[1] >= 1000 and float(np.std(pixels)) > 0.05
    keep = Path(tempfile.gettempdir()) / "swecl-report-screenshots"
    keep.mkdir(exist_ok=True)
    shutil.copyfile(shot, keep / "report.png")
    print(f"\nreport screenshot: {shot} (copy: {keep / 'report.png'})")


def test_report_works_from_file_url_too(browser: Browser, report: ReportSummary) -> None:
    """Opened straight from disk (no server), as a user double-clicking index.html would."""
    url = report.index.resolve().as_uri()
    load = open_page(browser.cdp, url)
    images = evaluate(browser.cdp, load.session, "[...document.images].map(i => i.naturalWidth)")
    assert load.problems == [], "\n".join(load.problems)
    assert all(u.startswith(("file:", "data:")) for u in load.requests), load.requests
    assert images and all(w > 0 for w in images)
