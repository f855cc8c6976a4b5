"""The report of issue 21: leakage beside the metrics (finding 3), and learning curves,
memory labels, the memory contrast and the page's layout (finding 6).

The ledger is the report tests' realistic one plus `accum`, a plugin-accum run seeded
from plugin-blank that repeats plugin-blank's initial outcomes (its lines coincide with
plugin-blank's) and whose baseline repeats base's, and whose recalls leak: django task 1
recalls its own item and task 4's, sympy task 1 its own item in an abandoned attempt and
again in the attempt that counts.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from bench.ledgers import LedgerBuilder
from commands.cli._metrics import metrics_cmd
from commands import Experiment
from ledger import Ledger
from ledger.events import TaskRef
from projections import Results
from projections.report import ReportSummary
from projections.report._curves import OFFSET_STEP, sequence_curves, version_colour
from projections.report._data import ReportData, collect
from projections.report._plots import curves_figure
from projections.report._run_report import run_label

from .realistic import BASE, DJANGO, PLAN, PLUGIN, SYMPY, Realistic, build_realistic
from .test_report import Page, read

ACCUM = "accum"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("issue21") / "results"
    realistic: Realistic = build_realistic(root)
    b = LedgerBuilder(Ledger.open(root / "ledger.db"))
    try:
        b.start_run(ACCUM, stage="plugin-accum", plan=PLAN, passes=["initial", "baseline"])
        b.seed(ACCUM, PLUGIN)
        b.run_pass(ACCUM, DJANGO, "initial", realistic.initial[(PLUGIN, DJANGO)],
                   recalls={1: [("mem-dj-1", 0.9), ("mem-dj-4", 0.8)]})
        b.pass_mark(ACCUM, SYMPY, "initial", "started")
        b.task(ACCUM, SYMPY, 1, abandon=True, recalls=[[("mem-sy-1", 0.9)]])
        b.task(ACCUM, SYMPY, 1, attempt=2, status="unresolved", recalls=[[("mem-sy-1", 0.9)]])
        for order, outcome in enumerate(realistic.initial[(PLUGIN, SYMPY)][1:], start=2):
            b.task(ACCUM, SYMPY, order, status="resolved" if outcome else "unresolved")
        b.pass_mark(ACCUM, SYMPY, "initial", "finished")
        for seq in (DJANGO, SYMPY):
            b.run_pass(ACCUM, seq, "baseline", realistic.initial[(BASE, seq)])
        b.finish_run(ACCUM)
    finally:
        b.close()
    return root


@pytest.fixture(scope="module")
def data(root: Path) -> ReportData:
    results = Results(root)
    with results.open_ledger(readonly=True) as ledger:
        return collect(ledger, results.projector(ledger), [])


@pytest.fixture(scope="module")
def summary(root: Path, tmp_path_factory: pytest.TempPathFactory) -> ReportSummary:
    return Experiment(root).report(out_dir=tmp_path_factory.mktemp("issue21-report") / "report")


@pytest.fixture(scope="module")
def page(summary: ReportSummary) -> Page:
    return Page(read(summary.index))


def _inside(up: tuple[tuple[str, dict[str, str]], ...], tag: str) -> bool:
    return any(t == tag for t, _ in up)


# --- finding 3: leakage in the report --------------------------------------------------


def test_leakage_counts_equal_swecl_metrics_json(root: Path, page: Page) -> None:
    shown: dict[str, dict[str, int]] = {}
    for attrs, up in page.with_attr("td", "data-count"):
        row = next(a for t, a in reversed(up) if t == "tr")
        shown.setdefault(row["data-leakage"], {})[attrs["data-count"]] = int(attrs["data-value"])
    result = CliRunner().invoke(metrics_cmd, ["--results", str(root), "--json"])
    assert result.exit_code == 0, result.output
    expected = {v["version"]: v["leakage"] for v in json.loads(result.output)["versions"]}
    assert set(shown) == set(expected) == {BASE, PLUGIN, ACCUM}
    for version, leak in expected.items():
        assert shown[version] == {"recalled": leak["recalled_items"], "flagged": leak["flagged"], **leak["by_kind"]}, version
    # The numbers themselves: the abandoned attempt's recall is not counted twice.
    assert shown[ACCUM] == {"recalled": 3, "flagged": 3, "same-instance": 2, "later-task": 1, "test-content": 0}
    assert shown[PLUGIN]["flagged"] == 0 and shown[PLUGIN]["recalled"] > 0


def test_leakage_is_explained_with_the_way_in(page: Page, summary: ReportSummary) -> None:
    text = read(summary.index)
    section = page.find("section", id="leakage")
    # In its own folded part, "Recalls and leakage", whose summary counts the flagged items.
    assert section and [a for a, up in page.with_attr("table", "class") if a["class"] == "leakage"
                        and any(t == "details" and u.get("id") == "part-leakage" for t, u in up)]
    assert '<span class="flagged">3 flagged as leakage</span>' in text
    assert "same instance" in text and "later task" in text
    assert "<code>swecl audit VERSION --summary</code>" in text
    assert f"<code>swecl audit {ACCUM} --summary</code>" in text  # per flagged run, ready to paste
    assert f"<code>swecl audit {PLUGIN} --summary</code>" not in text  # nothing to drill into
    # Test content is not checked without a dataset: said, not shown as a clean 0.
    assert "not checked" in text
    # Seen from the top: the runs table and the table of contents.
    assert '<a class="flagged" href="#leakage">3</a>' in text
    assert "(3 recalled items flagged)" in text


# --- finding 6: learning curves -------------------------------------------------------


def test_curve_labels_say_stage_version_pass_and_memory(data: ReportData) -> None:
    colours = {vr.run.version: version_colour(i) for i, vr in enumerate(data.versions)}
    lines = sequence_curves(DJANGO, data.versions, colours)
    labels = [c.label for c in lines.curves]
    assert labels == [
        "base · initial, memory off",
        "plugin-blank · initial, memory on",
        "plugin-blank · final re-test, memory on",
        "plugin-blank · baseline, memory off",
        "plugin-accum accum · initial, memory on",
        "plugin-accum accum · baseline, memory off",
    ]
    # The figure: one panel per pass, each line labelled as above; the legend names each run
    # once (its colour and marker are the same in every panel), and the × of a missing verdict.
    fig = curves_figure(lines)
    assert [ax.get_title() for ax in fig.axes] == ["initial pass a(k,k)", "final re-test a(N,j)",
                                                   "baseline b(j), memory off"]
    drawn = [[line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")] for ax in fig.axes]
    assert drawn[0][:3] == [c.legend for c in lines.curves if c.pass_kind == "initial"]
    assert drawn[0][3:] == ["plugin-blank: missing initial verdict", "plugin-accum accum: missing initial verdict"]
    assert drawn[1] == [c.legend for c in lines.curves if c.pass_kind == "final"]
    assert drawn[2] == [c.legend for c in lines.curves if c.pass_kind == "baseline"]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == ["base", "plugin-blank", "plugin-accum accum", "× missing initial verdict (run's colour)"]
    # A numbered run reads "plugin-blank v2", as its folder is named.
    run = data.versions[1].run
    assert run_label(msgspec.structs.replace(run, version="2")) == "plugin-blank v2"
    assert run_label(run) == "plugin-blank"


def test_identical_curves_are_drawn_apart_and_named(data: ReportData, page: Page) -> None:
    colours = {vr.run.version: version_colour(i) for i, vr in enumerate(data.versions)}
    lines = sequence_curves(DJANGO, data.versions, colours)
    groups = [[c.key for c in g] for g in lines.identical]
    # plugin-blank's final re-test of django (1,0,1,0,1) is base's initial pass too.
    assert [f"{BASE}:initial", f"{PLUGIN}:final", f"{ACCUM}:baseline"] in groups
    assert [f"{PLUGIN}:initial", f"{ACCUM}:initial"] in groups
    by_key = {c.key: c for c in lines.curves}
    accum = by_key[f"{ACCUM}:initial"]
    assert accum.same_as == "plugin-blank · initial, memory on" and "≡ plugin-blank · initial" in accum.legend
    assert by_key[f"{PLUGIN}:initial"].same_as is None
    # Each stays visible: a distinct offset, colour and marker, on the same values.
    blank = by_key[f"{PLUGIN}:initial"]
    assert blank.values == accum.values and accum.offset - blank.offset == pytest.approx(OFFSET_STEP)
    assert (blank.colour, blank.marker) != (accum.colour, accum.marker)
    assert by_key[f"{PLUGIN}:final"].offset == 0.0  # the middle of three is drawn where the values are
    assert by_key[f"{PLUGIN}:baseline"].offset == 0.0 and by_key[f"{PLUGIN}:baseline"].same_as is None  # unique
    fig = curves_figure(lines)
    drawn = {line.get_label(): list(line.get_ydata()) for line in fig.axes[0].get_lines()}  # the initial pass
    blank_y, accum_y = drawn[blank.legend], drawn[accum.legend]
    assert all(a - b == pytest.approx(OFFSET_STEP) for a, b in zip(accum_y, blank_y, strict=True) if a == a)
    # Said on the page too, under the figure of that sequence.
    notes = [(a["data-curves"], up) for a, up in page.with_attr("li", "data-curves")]
    django = [keys for keys, up in notes if any(u.get("data-sequence") == DJANGO for _, u in up)]
    assert f"{PLUGIN}:initial {ACCUM}:initial" in django and f"{BASE}:initial {PLUGIN}:final {ACCUM}:baseline" in django


# --- finding 6: memory on/off labels and the contrast ----------------------------------


def test_base_is_memory_off_everywhere(page: Page, summary: ReportSummary) -> None:
    text = read(summary.index)
    assert "base · memory off · django__django" in text
    assert "memory off (stage base has no memory): initial pass 0.600 (n=5)" in text
    assert "base · memory on" not in text and "memory on (initial) " not in text
    rows = {a["data-run"]: a for a in page.find("tr") if "data-run" in a}
    assert set(rows) == {BASE, PLUGIN, ACCUM}
    assert "<td>off</td><td>demo</td>" in text and "<td>on (plugin-real)</td>" in text
    # The figure caption no longer calls every initial pass "memory on".
    assert "off for base" in text


def test_memory_contrast_is_in_the_metrics_part(page: Page, summary: ReportSummary, root: Path) -> None:
    """The page opens on the verdict and its chart; then folded parts: metrics (the headline
    metrics, the contrast, base vs memory stages), the funnel, the sequences, recalls and
    leakage, and the runs last."""
    text = read(summary.index)
    order = [text.index(f'id="{anchor}"') for anchor in ("verdict", "toc", "part-metrics", "headline", "contrast",
                                                          "compare", "part-funnel", "leakage", "part-runs", "runs")]
    assert order == sorted(order) and order[5] < text.index("data-sequence=") < order[7]
    cells: dict[tuple[str, str], dict[str, dict[str, str]]] = {}
    for attrs, up in page.with_attr("td", "data-side"):
        assert [u for t, u in up if t == "details"] == [{"class": "part", "id": "part-metrics"}], "not in Metrics"
        row = next(a for t, a in reversed(up) if t == "tr")
        cells.setdefault((row["data-contrast"], row["data-kind"]), {})[attrs["data-side"]] = attrs
    assert set(cells) == {(BASE, "self"), (PLUGIN, "baseline"), (PLUGIN, "control"), (ACCUM, "baseline"),
                          (ACCUM, "control")}

    def side(key: tuple[str, str], name: str) -> tuple[int, int, int]:
        a = cells[key][name]
        return int(a["data-resolved"]), int(a["data-valid"]), int(a["data-tasks"])

    # plugin-blank initial: django 1,1,?,0,1 + sympy 0,1,1,1; baseline 1,0,1,0,0 + 0,0,1,0; base 1,0,1,0,1 + 0,1,1,0.
    assert side((PLUGIN, "baseline"), "on") == (6, 8, 9) and side((PLUGIN, "baseline"), "off") == (3, 9, 9)
    assert side((PLUGIN, "control"), "off") == (5, 9, 9) == side((BASE, "self"), "off")
    assert "data-resolved" not in cells[(BASE, "self")]["on"]  # base has no memory-on side
    assert "1 missing" in text and "the control base: its initial pass on the same 2 sequence(s)" in text
    # Per sequence, the contrast is a visible line of each run, not inside a folded block.
    lines = [up for a, up in page.with_attr("p", "class") if a["class"] == "contrast-line"]
    assert len(lines) == 3 * 2
    assert all([u.get("class") for t, u in up if t == "details"] == ["part sequence-part solo"] for up in lines)
    assert "memory on (initial pass) 0.750 (n=4) vs memory off (baseline pass) 0.600 (n=5): Δ +0.150" in text


# --- finding 6: a page that scales ------------------------------------------------------


def test_table_of_contents_links_every_part(page: Page, data: ReportData) -> None:
    ids = [a["id"] for _, a, _ in page.elements if "id" in a]
    assert len(ids) == len(set(ids)), "duplicate ids"
    toc_links = [a["href"] for a, up in page.with_attr("a", "href") if any(u.get("id") == "toc" for _, u in up)]
    assert toc_links[:8] == ["#verdict", "#headline", "#contrast", "#compare", "#funnel", "#leakage", "#runs",
                             f"#{page.with_attr('section', 'data-sequence')[0][0]['id']}"]
    sections = [a["id"] for a, _ in page.with_attr("section", "data-sequence")]
    articles = [a["id"] for a, _ in page.with_attr("article", "data-version")]
    assert len(articles) == len(data.sequence_ids) * len(data.versions)
    assert set(toc_links) == {"#verdict", "#runs", "#headline", "#contrast", "#leakage", "#compare", "#funnel",
                              *(f"#{i}" for i in sections + articles)}
    # Every in-page link lands somewhere.
    for attrs, _ in page.with_attr("a", "href"):
        if attrs["href"].startswith("#"):
            assert attrs["href"][1:] in ids, attrs["href"]


def test_task_tables_fold_per_sequence_and_run(tmp_path: Path) -> None:
    """Three runs over two 60-task sequences: every task row is in a folded block whose
    summary counts it, so the page opens at the summaries; and it stays offline."""
    root = tmp_path / "results"
    b = LedgerBuilder.create(root / "ledger.db")
    plan = {f"org__{name}": [TaskRef(f"org__{name}-{k}", k, f"org/{name}", 1 + k % 4) for k in range(1, 61)]
            for name in ("alpha", "beta")}
    for version, stage in (("1", "base"), ("2", "plugin-blank"), ("3", "plugin-accum")):
        b.start_run(version, stage=stage, plan=plan, passes=["initial"])
        for seq in plan:
            b.run_pass(version, seq, "initial", [k % 3 % 2 for k in range(1, 61)])
        b.finish_run(version)
    b.close()
    report = Experiment(root).report(out_dir=tmp_path / "out")
    page = Page(read(report.index))
    rows = page.with_attr("tr", "data-order")
    assert len(rows) == 3 * 2 * 60
    assert all(any(t == "details" and "tasks" in a.get("class", "") for t, a in up) for _, up in rows)
    folded = [a for a in page.find("details") if a.get("class") == "tasks"]
    assert len(folded) == 3 * 2 and not any("open" in a for a in folded)
    assert "60 tasks: 20 resolved, 40 not resolved" in read(report.index)
    assert all(a["src"].startswith("plots/") for a in page.find("img"))
    assert page.find("script") == [] and "http" not in "".join(a.get("href", "") for a in page.find("link"))
