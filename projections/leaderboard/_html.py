"""The leaderboard page: one static, offline HTML file (no script, no external resource).

First the answer (who ranks first in each group, by what, with its interval) and the rule,
then one section per group: why it is apart from the first group, its macro table, and one
folded table per sequence (`<details>`: no script needed). Wide tables scroll inside their
own box, so a phone's page never scrolls sideways.

Every string of the data is untrusted (bundles come from anyone): it goes through `esc`,
and a link is kept only when it is relative (no scheme, no absolute path).

The style is the report's (`projections._page_css.PAGE_CSS`, which both take: the report
package imports the `projections` package, which exports this one, so importing the
report here would close a circle).
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from projections._page_css import PAGE_CSS
from projections.metrics import LEGEND, marked

from ._model import Figure, Group, Leaderboard, Ranking, Row

INDEX = "index.html"


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)



BOARD_CSS = """
body.board { overflow-wrap: anywhere; }
body.board h1 { font-size: 1.45rem; margin: 0 0 .3rem; }
body.board h2 { font-size: 1.15rem; margin-top: 1.6rem; }
p.lead { font-size: 1rem; margin: .3rem 0; padding-left: .6rem; border-left: 3px solid var(--ok); }
p.rule { margin: .3rem 0 .6rem; } p.apart { margin: .2rem 0 .4rem; padding-left: .6rem; border-left: 3px solid var(--no); }
.scroll { max-width: 100%; overflow-x: auto; }
table.board { margin: .3rem 0 .6rem; overflow-wrap: normal; }
table.board td { white-space: nowrap; } table.board th { min-width: 3.5rem; }
table.board td.check { white-space: normal; min-width: 8rem; max-width: 13rem; }
table.board td.who { white-space: normal; min-width: 8rem; max-width: 12rem; }
table.board td.run { white-space: normal; min-width: 10rem; max-width: 16rem; overflow-wrap: anywhere; }
table.board tr.first td { background: #eef6fc; } table.board tr.first td.rank { font-weight: 700; }
tr.unchecked td.rank { border-left: 4px solid var(--no); } tr.failed td { background: #fbeaea; color: #555; }
tr.failed td.rank { border-left: 4px solid #a33; } .bad { color: #a33; font-weight: 600; } .good { color: #1a6b3a; }
.ci { color: var(--mute); font-size: .8rem; } .near { color: var(--mute); }
ol.notes { margin: 0 0 1rem; padding-left: 1.4rem; font-size: .82rem; color: var(--mute); }
details.sequence > summary { font-weight: 600; }
@media (max-width: 600px) {
  body.board { padding: .8rem .7rem 3rem; }
  body.board h1 { font-size: 1.2rem; } body.board h2 { font-size: 1rem; }
  p.lead { font-size: .92rem; }
}
"""

COLUMNS = ("#", "Run", "Memory · agent · model", "Resolved (initial pass)↑", marked("CL-Score"), marked("ACC"),
           marked("F"), "Normalized gain↑", "Memory efficiency↑", "$ / solved", "Leaks flagged", "Check · files")


def _href(href: str | None) -> str | None:
    """A link inside the board's folder, or none: a bundle must not point the page elsewhere."""
    if not href or re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", href) or href.startswith(("/", "\\")):
        return None
    return href


class Notes:
    """A table's footnotes: each reason a figure is missing, numbered once."""

    def __init__(self) -> None:
        self.reasons: list[str] = []

    def mark(self, reason: str) -> str:
        if reason not in self.reasons:
            self.reasons.append(reason)
        return f"<sup>{self.reasons.index(reason) + 1}</sup>"

    def html(self) -> str:
        if not self.reasons:
            return ""
        return '<ol class="notes">' + "".join(f"<li>n/a: {esc(r)}</li>" for r in self.reasons) + "</ol>"


def _na(notes: Notes, reason: str, text: str = "n/a") -> str:
    return f'<td class="num na" data-na="{esc(reason)}" title="{esc(reason)}">{esc(text)}{notes.mark(reason)}</td>'


def _figure(notes: Notes, f: Figure, *, digits: int = 3) -> str:
    if f.value is None:
        return _na(notes, f.na or "not measured")
    ci = f'<br><span class="ci">[{f.ci[0]:.{digits}f}, {f.ci[1]:.{digits}f}]</span>' if f.ci else ""
    return f'<td class="num" data-value="{f.value!r}">{f.value:.{digits}f}{ci}</td>'


def _rate(notes: Notes, row: Row) -> str:
    f = row.rate
    if f.value is None:
        return _na(notes, f.na or "no tasks")
    ci = f'<br><span class="ci">[{100 * f.ci[0]:.1f}, {100 * f.ci[1]:.1f}]</span>' if f.ci else ""
    return (f'<td class="num" data-value="{f.value!r}"><b>{100 * f.value:.1f}%</b> '
            f'<span class="ci">{row.resolved}/{row.tasks}</span>{ci}</td>')


def _cost(notes: Notes, f: Figure) -> str:
    if f.value is None:  # never $0: nothing was reported
        return _na(notes, f.na or "not reported", "not reported")
    return f'<td class="num" data-value="{f.value!r}">${f.value:.3f}</td>'


def _check(row: Row) -> str:
    """Whether `swecl check` passed (and whose key signed it), then the run's files."""
    e = row.entry
    if e.checked is None:
        said = f'<span class="bad" title="{esc(e.check_note)}">not checked</span>'
    elif e.checked is False:
        said = f'<span class="bad">✗ check failed</span><br><span class="note">{esc(e.check_note)}</span>'
    else:
        key = (f'<code title="{esc(e.key)}">{esc(e.key[:12])}{"…" if len(e.key) > 12 else ""}</code>' if e.key
               else '<span class="note">unsigned</span>')
        said = f'<span class="good" title="{esc(e.check_note)}">✓ checked</span><br>{key}'
    links = [f'<a href="{esc(h)}">{label}</a>' for h, label in
             ((_href(e.report_href), "report"), (_href(e.bundle_href), "bundle")) if h]
    return f'<td class="check">{said}<br>{" · ".join(links) or "<span class=note>no files</span>"}</td>'


def _row(notes: Notes, row: Row) -> str:
    e = row.entry
    state = "failed" if e.checked is False else "unchecked" if e.checked is None else "checked"
    cls = f"{state}{' first' if row.rank == 1 else ''}"
    near = ' <span class="near" title="its interval overlaps the first row\'s">≈</span>' if row.near_first else ""
    rank = f"{row.rank}{near}" if row.rank is not None else f'<span class="bad" title="{esc(row.unranked)}">—</span>'
    leak = "n/a" if row.leakage_flagged is None else str(row.leakage_flagged)
    model = esc(e.model) if e.model else '<span class="note">model not recorded</span>'
    return "".join((
        f'<tr class="{cls}" data-rank="{row.rank or ""}" data-bundle="{esc(e.bundle)}" data-version="{esc(row.version)}">',
        f'<td class="rank">{rank}</td>',
        f'<td class="run"><b>{esc(e.bundle)}</b><br><span class="note">v{esc(row.version)} {esc(row.stage)}</span>'
        + (f'<br><span class="bad">not ranked: {esc(row.unranked)}</span>' if row.unranked else "") + "</td>",
        f'<td class="who">{esc(e.memory_system)}<br><span class="note">{esc(row.agent)} · {model}</span></td>',
        _rate(notes, row), _figure(notes, row.cl_score), _figure(notes, row.acc), _figure(notes, row.forgetting),
        _figure(notes, row.gain), _figure(notes, row.efficiency), _cost(notes, row.cost),
        f'<td class="num">{leak}</td>', _check(row), "</tr>",
    ))


def _table(ranking: Ranking) -> str:
    notes = Notes()
    body = "".join(_row(notes, r) for r in ranking.rows)
    head = "<tr>" + "".join(f"<th>{esc(c)}</th>" for c in COLUMNS) + "</tr>"
    return (f'<div class="scroll"><table class="board" data-scope="{esc(ranking.scope)}"><thead>{head}</thead>'
            f"<tbody>{body}</tbody></table></div>{notes.html()}")


def _lead(group: Group) -> str:
    """One line: who is first in the group, by what, and whether the next is separated from it."""
    first = group.macro.first
    where = (f'<a href="#{esc(group.anchor)}">{esc(group.dataset_name)}, passes '
             f"{esc('+'.join(group.key.passes) or 'none')}</a>")
    if first is None:
        return f'<p class="lead">{where}: no run could be ranked (see the table).</p>'
    rate = first.rate
    ci = f" [{100 * rate.ci[0]:.1f}, {100 * rate.ci[1]:.1f}]" if rate.ci else ""
    score = f"CL-Score {first.cl_score.value:.3f}" if first.cl_score.value is not None else "CL-Score n/a"
    others = [r for r in group.macro.rows if r is not first and r.rank is not None]
    close = ""
    if others:
        close = " (≈ #2: intervals overlap)" if others[0].near_first else " (clear of #2)"
    flag = "" if first.entry.checked else ' <span class="bad">not checked</span>'
    return (f'<p class="lead" data-group="{esc(group.anchor)}">#1 in {where}: <b>{esc(first.entry.bundle)}</b> '
            f"v{esc(first.version)} {esc(first.stage)}{flag} — <b>{100 * (rate.value or 0):.1f}%</b>{esc(ci)} of "
            f"{first.tasks} tasks resolved{esc(close)}; {esc(score)}</p>")


def _group(group: Group) -> str:
    apart = f'<p class="apart split">{esc(group.apart)}</p>' if group.apart else ""
    if len(group.sequences) == 1:  # its one sequence's table would repeat the macro row's
        said, sequences = f"Sequence {group.sequences[0].scope}", ""
    else:
        said = "All sequences pooled (each sequence's own ranking below)"
        sequences = "".join(
            f'<details class="sequence" data-sequence="{esc(s.scope)}"><summary>Sequence {esc(s.scope)}'
            + (f' <span class="note">first: {esc(s.first.entry.bundle)} v{esc(s.first.version)}</span>'
               if s.first else "")
            + f"</summary>{_table(s)}</details>"
            for s in group.sequences)
    return (f'<section class="group" id="{esc(group.anchor)}"><h2>{esc(group.label)}</h2>{apart}'
            f'<p class="note">{esc(said)}; [low, high]: 95% interval.</p>{_table(group.macro)}{sequences}</section>')


def render(board: Leaderboard) -> str:
    """The whole page."""
    leads = "".join(_lead(g) for g in board.groups) or '<p class="lead">No runs to rank.</p>'
    parts = [
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">', '<link rel="icon" href="data:,">',
        "<title>swecl leaderboard</title>", f"<style>{PAGE_CSS}{BOARD_CSS}</style>", "</head>", '<body class="board">',
        f'<header><h1>swecl leaderboard</h1><p class="meta">{board.entries} run(s) in {len(board.groups)} '
        "ranking(s)</p></header>",
        f'<section id="answer">{leads}<p class="rule note">{esc(board.rule)}</p></section>',
        *(_group(g) for g in board.groups),
        f'<footer class="meta"><p>{esc(LEGEND)}. Intervals are 95%: Wilson for the resolve rate, bootstrap for '
        "the gain and the efficiency. n/a: not measured (the reason is in the numbered note). "
        "Rows marked on the left: orange, not checked by <code>swecl check</code>; red, the check failed. "
        "Generated by <code>swecl leaderboard</code> from the bundles alone.</p></footer>",
        "</body>", "</html>",
    ]
    return "\n".join(parts) + "\n"


def write_leaderboard(board: Leaderboard, out_dir: Path) -> Path:
    """Write `out_dir/index.html` (the page needs nothing else) and return its path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    index = out_dir / INDEX
    index.write_text(render(board), encoding="utf-8")
    return index
