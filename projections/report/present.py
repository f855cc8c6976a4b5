"""What the report and `swecl view` both draw with: the style sheet, the a(i,j) cell states,
metric cells and headers, escaping and number formats. One module, public names, so the two
pages show a cell, a metric or an n/a the same way.

Everything the ledger provides is untrusted text: it goes through `esc` on its way into a
page, in text and in attributes alike.
"""

from __future__ import annotations

import hashlib
import html
import re
from collections.abc import Iterable, Mapping

from projections._page_css import PAGE_CSS
from projections.metrics import METRIC_NAMES, marked

from ._matrix import CellState


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def num(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def value_attr(value: float | None) -> str:
    return "" if value is None else repr(float(value))


CSS = PAGE_CSS + """
:root { --miss: #d9d9d9; }
h3 { margin: 1.6rem 0 .5rem; } figcaption { color: var(--mute); font-size: .86rem; }
td.iid { white-space: nowrap; }
nav a { margin-right: .9rem; } .mono { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: .86rem; }
figure { margin: .5rem 0 1rem; } img { max-width: 100%; height: auto; border: 1px solid #eee; }
article.version { border-left: 4px solid #e6e6e6; padding-left: 1rem; margin: 1.2rem 0 2rem; }
.cell-resolved { background: var(--ok); color: #fff; text-align: center; }
.cell-unresolved { background: var(--no); text-align: center; }
.cell-missing { background: repeating-linear-gradient(45deg, var(--miss) 0 4px, #f3f3f3 4px 8px); text-align: center; }
.cell-na { background: #fff; color: #bbb; text-align: center; }
table.matrix td, table.matrix th { padding: .1rem .35rem; min-width: 1.6rem; }
.recall { margin: 0 0 .35rem; } .recall ol { margin: .15rem 0 0; padding-left: 1.3rem; }
.unknown { color: #a33; font-style: italic; } .via { color: var(--mute); font-size: .8rem; }
.legend span { display: inline-block; padding: 0 .5rem; margin-right: .4rem; border: 1px solid #ddd; }
nav#toc { background: #fafafa; border: 1px solid #e6e6e6; padding: .5rem 1rem; margin: .8rem 0; }
nav#toc ol { margin: .2rem 0; padding-left: 1.4rem; } nav#toc li { margin: .1rem 0; }
nav#toc .runs a { margin-right: .5rem; font-size: .86rem; }
.top { font-size: .8rem; font-weight: normal; margin-left: .6rem; }
.gallery { display: flex; flex-wrap: wrap; gap: .8rem; align-items: flex-start; }
.gallery figure { margin: 0; max-width: 460px; } .gallery img { width: 100%; }
details.tasks > summary { font-weight: 600; }
.contrast-line, .compare-line { margin: .2rem 0 .5rem; } .flagged { color: #a33; font-weight: 600; }
tr.leaked > td:first-child { border-left: 3px solid #a33; } td.leak { font-size: .82rem; min-width: 13rem; }
td.leak span[data-pass] { display: block; white-space: nowrap; }
td.leak-tasks a { margin-right: .5rem; white-space: nowrap; } td.drill code { white-space: nowrap; }
tr.leaked:target { outline: 2px solid #a33; }
ul.identical { margin: -.4rem 0 1rem; }
body.report { overflow-wrap: anywhere; }
body.report h1 { font-size: 1.45rem; margin: 0 0 .6rem; }
body.report table { display: block; max-width: 100%; overflow-x: auto; width: max-content; overflow-wrap: normal; }
body.report p.verdict { margin: .25rem 0 .45rem; padding-left: .6rem; border-left: 3px solid var(--ok); }
body.report figure.headline-chart { margin: .6rem 0 .2rem; } figure.headline-chart img { border: 0; }
body.report details.numbers { margin: 0 0 .6rem; font-size: .86rem; }
body.report nav#toc a { margin-right: .7rem; } body.report nav#toc ol.sequences { margin: .3rem 0 0; }
body.report nav#toc ol.sequences li { margin: .05rem 0; }
details.part { border: 1px solid #e0e0e0; border-radius: 4px; margin: .6rem 0; padding: 0 1rem; }
details.part > summary { padding: .55rem 0; list-style-position: outside; }
details.part > summary .part-title { font-size: 1.15rem; font-weight: 600; margin-right: .5rem; }
details.part[open] > summary { border-bottom: 1px solid #e6e6e6; margin-bottom: .4rem; }
details.part h2 { font-size: 1.15rem; margin-top: 1.2rem; }
details.part.solo > section > h2 { display: none; }
@media (max-width: 600px) {
  body.report { padding: .8rem .7rem 3rem; }
  body.report h1 { font-size: 1.2rem; }
  details.part { padding: 0 .5rem; }
  td.leak span[data-pass], td.leak-tasks a, td.drill code { white-space: normal; }
}
"""

STATE_TEXT: dict[CellState, str] = {"resolved": "1", "unresolved": "0", "missing": "?", "n/a": ""}
STATE_CLASS: dict[CellState, str] = {
    "resolved": "cell-resolved",
    "unresolved": "cell-unresolved",
    "missing": "cell-missing",
    "n/a": "cell-na",
}


def sandbox_of(config: Mapping[str, object]) -> str:
    """Where a run's agents and tests ran; runs recorded before the sandbox existed ran unconfined."""
    mode = config.get("sandbox")
    return "none (unconfined)" if mode in (None, "none") else str(mode)


def metric_cells(metrics: Mapping[str, float | None], unmeasured: Mapping[str, str] | None = None) -> str:
    # data-value holds the exact value, empty when there is none: not computable, or a
    # convention the run's passes did not measure (F = 0 without a re-test), whose text
    # says "n/a" with the reason.
    gaps = unmeasured or {}
    return "".join(
        f'<td class="num" data-metric="{esc(name)}" data-value="{value_attr(metrics.get(name))}"'
        + (f' data-unmeasured="{esc(gaps[name])}" title="not measured: {esc(gaps[name])}">n/a</td>' if name in gaps
           else f">{num(metrics.get(name))}</td>")
        for name in METRIC_NAMES
    )


def metric_head(first: str, extra: Iterable[str] = (), *, before: Iterable[str] = ()) -> str:
    """The header row; each metric marked with the direction that is better (`ACC↑`, `F↓`)."""
    names = (first, *before, *(marked(m) for m in METRIC_NAMES), *extra)
    return "<tr>" + "".join(f"<th>{esc(n)}</th>" for n in names) + "</tr>"


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def file_stem(*parts: str) -> str:
    """A file-system and URL safe name for ledger-provided text, unique by a short hash.

    Versions and sequence ids are user text: `../x`, `a/b` or `<b>` must not become paths
    or markup, and two ids that slug alike must not share a file.
    """
    slug = "-".join(_UNSAFE.sub("_", p).strip("._-")[:40] or "x" for p in parts)
    digest = hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:8]
    return f"{slug}-{digest}"
