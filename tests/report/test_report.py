"""`swecl report`: the page, the figures and the data behind them, from a real ledger."""

from __future__ import annotations

import html
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from matplotlib import image as mpimg

from bench.ledgers import LedgerBuilder
from commands.cli._report import report_cmd
from commands import Experiment
from ledger import SweclError
from ledger.events import TaskRef
from projections import Results, metrics_for
from projections.metrics import METRIC_NAMES, SequenceOutcomes, compute
from projections.report import ReportSummary
from projections.report._data import collect
from projections.report._rates import running_mean

from .realistic import BASE, DJANGO, PLAN, PLUGIN, SYMPY, Realistic


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Page(HTMLParser):
    """Elements with their attributes and enclosing elements, and every text node."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str], tuple[tuple[str, dict[str, str]], ...]]] = []
        self.stack: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.elements.append((tag, a, tuple(self.stack)))
        if tag not in VOID:
            self.stack.append((tag, a))

    def handle_endtag(self, tag: str) -> None:
        while self.stack:
            if self.stack.pop()[0] == tag:
                break

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def find(self, tag: str, **attrs: str) -> list[dict[str, str]]:
        return [a for t, a, _ in self.elements if t == tag and all(a.get(k) == v for k, v in attrs.items())]

    def with_attr(self, tag: str, name: str) -> list[tuple[dict[str, str], tuple[tuple[str, dict[str, str]], ...]]]:
        return [(a, up) for t, a, up in self.elements if t == tag and name in a]


def _metric_cells(page: Page) -> dict[tuple[str, str], dict[str, str]]:
    """(version, row) -> {metric: data-value} from every `tr[data-version][data-row]`."""
    found: dict[tuple[str, str], dict[str, str]] = {}
    for attrs, up in page.with_attr("td", "data-metric"):
        row = next((a for t, a in reversed(up) if t == "tr"), None)
        if row is None or "data-version" not in row:
            continue
        key = (row["data-version"], row["data-row"])
        cells = found.setdefault(key, {})
        assert attrs["data-metric"] not in cells, f"metric {attrs['data-metric']} twice in row {key}"
        cells[attrs["data-metric"]] = attrs["data-value"]
    return found


def _as_float(value: str) -> float | None:
    return None if value == "" else float(value)


def test_report_writes_the_page_and_valid_pngs(report: ReportSummary, realistic: Realistic) -> None:
    assert report.index == report.out_dir / "index.html" and report.files[0] == report.index
    assert report.versions == realistic.versions and report.sequences == realistic.sequences
    pngs = [f for f in report.files if f.suffix == ".png"]
    # The headline chart, one learning-curve figure per sequence, one heatmap per (version, sequence).
    assert len(pngs) == 1 + len(realistic.sequences) * (1 + len(realistic.versions))
    for png in pngs:
        assert png.parent == report.out_dir / "plots"
        assert png.read_bytes()[:8] == PNG_MAGIC
        pixels = mpimg.imread(png)
        assert pixels.ndim == 3 and pixels.shape[0] > 200 and pixels.shape[1] > 300, png.name
        assert float(np.std(pixels)) > 0.05, f"{png.name} is blank"
    page = read(report.index)
    for png in pngs:
        assert f'src="plots/{png.name}"' in page


def test_page_shows_every_sequence_and_every_version(report: ReportSummary, realistic: Realistic) -> None:
    page = Page(read(report.index))
    sections = page.with_attr("section", "data-sequence")
    assert [a["data-sequence"] for a, _ in sections] == list(realistic.sequences)
    for sequence in realistic.sequences:
        versions = [
            a["data-version"]
            for a, up in page.with_attr("article", "data-version")
            if any(t == "section" and u.get("data-sequence") == sequence for t, u in up)
        ]
        assert versions == list(realistic.versions), sequence
    assert [a["data-run"] for a in page.find("tr") if "data-run" in a] == list(realistic.versions)


def test_metric_tables_equal_compute_on_the_same_data(report: ReportSummary, realistic: Realistic) -> None:
    cells = _metric_cells(Page(read(report.index)))
    with Results(realistic.root).open_ledger(readonly=True) as ledger:
        found = metrics_for(ledger, Results(realistic.root).projector(ledger), [])
    assert {vm.run.version for vm in found} == set(realistic.versions)
    for vm in found:
        expected = {"macro": vm.result.macro, **{n: s.metrics for n, s in vm.result.sequences.items()}}
        for row, metrics in expected.items():
            shown = cells[(vm.run.version, row)]
            assert list(shown) == list(METRIC_NAMES)
            for name in METRIC_NAMES:
                assert _as_float(shown[name]) == metrics[name], (vm.run.version, row, name)
    # ... and both equal the formulas on the vectors the fixture recorded (the ledger path is right).
    for version in realistic.versions:
        inputs = [
            SequenceOutcomes(
                name=seq,
                initial=realistic.initial[(version, seq)],
                final=realistic.final.get((version, seq)),
                baseline=realistic.baseline.get((version, seq)),
            )
            for seq in realistic.sequences
        ]
        direct = compute(inputs)
        for seq in realistic.sequences:
            for name in METRIC_NAMES:
                assert _as_float(cells[(version, seq)][name]) == direct.sequences[seq].metrics[name], (version, seq, name)
        for name in METRIC_NAMES:
            assert _as_float(cells[(version, "macro")][name]) == direct.macro[name]


def test_matrix_rows_diagonal_retests_baseline_and_missing(realistic: Realistic) -> None:
    results = Results(realistic.root)
    with results.open_ledger(readonly=True) as ledger:
        data = collect(ledger, results.projector(ledger), [])
    plugin, base = data.versions[1], data.versions[0]
    assert (plugin.run.version, base.run.version) == (PLUGIN, BASE) and plugin.retest_every == 2

    def states(row: object) -> list[str]:
        return [c.state for c in row.cells]  # type: ignore[attr-defined]

    R, U, M, NA = "resolved", "unresolved", "missing", "n/a"
    dj = plugin.sequences[DJANGO].matrix
    assert dj.instance_ids == tuple(t.instance_id for t in PLAN[DJANGO])
    assert [states(r) for r in dj.rows] == [
        [R, NA, NA, NA, NA],  # a(1,1) initial
        [R, R, NA, NA, NA],  # retest-2: a(2,1) = 1; diagonal a(2,2) initial
        [NA, NA, M, NA, NA],  # no retest-3 planned (every 2); a(3,3) is the infra error: missing, not 0
        [R, R, R, U, NA],  # retest-4 off the diagonal
        [R, U, R, U, R],  # final re-test off the diagonal; a(5,5) initial
    ]
    assert dj.rows[2].cells[2].status == "infra_error" and dj.rows[2].cells[2].pass_ == "initial"
    assert dj.baseline is not None and states(dj.baseline) == [R, U, R, U, U]
    sy = plugin.sequences[SYMPY].matrix
    assert [states(r) for r in sy.rows] == [
        [U, NA, NA, NA], [U, R, NA, NA], [NA, NA, R, NA], [R, R, U, R],
    ]
    # Memory off, initial pass only: nothing but the diagonal, and no baseline row.
    bd = base.sequences[DJANGO].matrix
    assert [states(r) for r in bd.rows] == [
        [R, NA, NA, NA, NA], [NA, U, NA, NA, NA], [NA, NA, R, NA, NA], [NA, NA, NA, U, NA], [NA, NA, NA, NA, R],
    ]
    assert bd.baseline is None
    # The task table: the infra error is missing (with its status), never "0"; the re-test of t5 is there.
    task3 = plugin.sequences[DJANGO].tasks[2]
    assert (task3.status, task3.resolved, task3.initial, task3.final, task3.baseline) == ("infra_error", None, M, R, R)
    assert plugin.sequences[DJANGO].tasks[4].final == R
    assert [t.difficulty for t in plugin.sequences[DJANGO].tasks] == [t.difficulty for t in PLAN[DJANGO]]
    assert base.sequences[DJANGO].tasks[0].final == NA


def test_recalled_memories_per_task_with_titles_and_sources(report: ReportSummary, realistic: Realistic) -> None:
    results = Results(realistic.root)
    with results.open_ledger(readonly=True) as ledger:
        data = collect(ledger, results.projector(ledger), [PLUGIN])
    tasks = data.versions[0].sequences
    recalled = {
        (seq, t.order): [[(h.rank, h.item_id, h.title) for h in r.hits] for r in t.recalls]
        for seq in (DJANGO, SYMPY)
        for t in tasks[seq].tasks
    }
    assert recalled[(DJANGO, 1)] == []
    assert [[i for _, i, _ in r] for r in recalled[(DJANGO, 4)]] == [["mem-dj-2", "mem-dj-1", realistic.unknown_item]]
    assert recalled[(DJANGO, 4)][0][2] == (3, realistic.unknown_item, f"unknown item {realistic.unknown_item}")
    assert recalled[(DJANGO, 5)][1] == []  # a recall that found nothing is still shown
    # An item imported into the header stream from a run this ledger does not hold.
    first = tasks[SYMPY].tasks[0].recalls[0].hits[0]
    assert first.item is not None and first.item.source_run == "archive-2024" and "archive-2024" in first.source
    # Only the attempt in force: the crashed first attempt of sympy t4 recalled mem-dj-4.
    assert [[i for _, i, _ in r] for r in recalled[(SYMPY, 4)]] == [["mem-sy-1"]]
    assert tasks[SYMPY].tasks[3].attempt == 2
    # A retest recall is not an initial-pass recall.
    assert all(h.item_id != "mem-dj-4" for r in tasks[DJANGO].tasks[0].recalls for h in r.hits)
    # The source task of a daydreamed item.
    hit = tasks[DJANGO].tasks[1].recalls[0].hits[0]
    assert hit.source == f"{PLAN[DJANGO][0].instance_id} #1, run {PLUGIN}"

    page = read(report.index)
    for title in realistic.recalled_titles:
        assert html.escape(title, quote=True) in page, title
    assert f"unknown item {realistic.unknown_item}" in page
    base_tasks = [a for a in Page(page).find("tr") if "data-order" in a]
    assert len(base_tasks) == 2 * sum(len(v) for v in PLAN.values())


def test_ledger_text_is_escaped_and_inert(report: ReportSummary, realistic: Realistic) -> None:
    text = read(report.index)
    assert "<script" not in text.lower()
    assert realistic.script_title not in text
    assert html.escape(realistic.script_title, quote=True) in text
    assert realistic.hostile_query not in text and "x-should-not-load.png" in text
    page = Page(text)
    assert page.find("script") == []
    # What the parser reads back as text is the title itself: escaped once, not twice.
    assert realistic.script_title in "".join(page.text)
    # Only our figures are images; nothing is fetched from elsewhere.
    assert all(a["src"].startswith("plots/") for a in page.find("img"))
    for tag, attr in (("link", "href"), ("img", "src"), ("iframe", "src"), ("object", "data")):
        for a in page.find(tag):
            assert not a.get(attr, "").startswith(("http:", "https:", "//")), (tag, a)
    assert not any(a.get("onerror") or a.get("onload") for _, a, _ in page.elements)


def test_same_ledger_same_bytes(report: ReportSummary, realistic: Realistic, tmp_path: Path) -> None:
    again = Experiment(realistic.root).report(out_dir=tmp_path / "again")
    assert again.index.read_bytes() == report.index.read_bytes()
    assert [f.name for f in again.files] == [f.name for f in report.files]
    for first, second in zip(report.files, again.files, strict=True):
        assert first.read_bytes() == second.read_bytes(), first.name
    assert f"as of seq <b>{report.head_seq}</b>" in read(report.index)


def test_versions_chosen_and_bad_input_is_one_line(realistic: Realistic, tmp_path: Path) -> None:
    one = Experiment(realistic.root).report(versions=[PLUGIN], out_dir=tmp_path / "one")
    page = Page(read(one.index))
    assert {a["data-version"] for a, _ in page.with_attr("article", "data-version")} == {PLUGIN}
    assert one.versions == (PLUGIN,) and len(one.files) == 1 + 1 + 2 * 2
    with pytest.raises(SweclError, match="no run version 'nope'") as err:
        Experiment(realistic.root).report(versions=["nope"], out_dir=tmp_path / "x")
    assert "\n" not in str(err.value) and "plugin-blank" in str(err.value)
    with pytest.raises(SweclError, match="unknown metric formula set"):
        Experiment(realistic.root).report(out_dir=tmp_path / "y", formula="v0")
    with pytest.raises(SweclError, match="no ledger"):
        Experiment(tmp_path / "empty").report(out_dir=tmp_path / "z")
    (tmp_path / "afile").write_text("")
    with pytest.raises(SweclError, match="is a file"):
        Experiment(realistic.root).report(out_dir=tmp_path / "afile")


def test_cli_writes_the_report_with_the_chosen_formula(realistic: Realistic, tmp_path: Path) -> None:
    out = tmp_path / "cli"
    result = CliRunner().invoke(
        report_cmd, ["--results", str(realistic.root), BASE, PLUGIN, "--out", str(out), "--formula", "eval-v1"]
    )
    assert result.exit_code == 0, result.output
    assert "open" in result.output and str(out / "index.html") in result.output
    cells = _metric_cells(Page(read(out / "index.html")))
    with Results(realistic.root).open_ledger(readonly=True) as ledger:
        found = metrics_for(ledger, Results(realistic.root).projector(ledger), [], formula="eval-v1")
    for vm in found:
        for name in METRIC_NAMES:
            assert _as_float(cells[(vm.run.version, "macro")][name]) == vm.result.macro[name]
    assert "eval-v1" in read(out / "index.html")
    missing = CliRunner().invoke(report_cmd, ["--results", str(realistic.root)])
    assert missing.exit_code == 2 and "--out" in missing.output


def test_running_mean_leaves_missing_out() -> None:
    assert running_mean([None, 1, 0, None, 1]) == [None, 1.0, 0.5, 0.5, 2 / 3]
    assert running_mean([]) == []


def test_hostile_names_and_a_long_sequence(tmp_path: Path) -> None:
    """Version and sequence ids are user text: never paths or markup. 50 tasks still draw."""
    root = tmp_path / "results"
    b = LedgerBuilder.create(root / "ledger.db")
    version, sequence = "<b>v1&amp;..", 'seq"/../<i>x'
    plan = {sequence: [TaskRef(f"org__repo-{k}", k, "org/repo", 1 + k % 4) for k in range(1, 51)]}
    b.start_run(version, stage="plugin-blank", plan=plan)
    b.run_pass(version, sequence, "initial", [k % 3 % 2 if k % 7 else None for k in range(1, 51)],
               recalls={2: [("nope", 0.5)]})
    b.close()
    summary = Experiment(root).report(out_dir=tmp_path / "out")
    for f in summary.files:
        assert f.resolve().is_relative_to((tmp_path / "out").resolve()), f
        assert "<" not in f.name and '"' not in f.name
    text = read(summary.index)
    assert "<b>v1" not in text and "<i>x" not in text
    page = Page(text)
    assert [a["data-sequence"] for a, _ in page.with_attr("section", "data-sequence")] == [sequence]
    assert [a["data-version"] for a, _ in page.with_attr("article", "data-version")] == [version]
    assert len([f for f in summary.files if f.suffix == ".png"]) == 3
