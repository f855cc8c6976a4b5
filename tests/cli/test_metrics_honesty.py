"""`swecl metrics`, `swecl runs`, the end-of-run table and the report say what the run's
passes did not measure (n/a, never a conventional 0), fit 100 columns, and show leakage."""

from __future__ import annotations

import io
import itertools
import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from bench.ledgers import LedgerBuilder
from bench.processes import REPO_ROOT, swecl_argv, swecl_env
from commands._jobs_read import leakage_for
from commands.cli._metrics import print_metrics_table, short_sequence_names
from commands import Experiment
from ledger import Ledger
from projections import Results, metrics_for
from projections.metrics import Lambdas, SequenceOutcomes, compute, unmeasured
from tests.report.realistic import DJANGO, PLAN, SYMPY, build_realistic

ACCUM = "accum"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report tests' ledger (base: initial only; plugin-blank: every pass) plus `accum`,
    seeded from plugin-blank, with initial and retest passes only (no baseline), whose
    django task 1 recalls its own item (same instance) and task 4's (later task)."""
    root = tmp_path_factory.mktemp("honesty") / "results"
    build_realistic(root)
    b = LedgerBuilder(Ledger.open(root / "ledger.db"))
    try:
        b.start_run(ACCUM, stage="plugin-accum", plan=PLAN, passes=["initial", "retest"])
        b.seed(ACCUM, "plugin-blank")
        b.run_pass(ACCUM, DJANGO, "initial", [1, 1, 0, 1, 1], recalls={1: [("mem-dj-1", 0.9), ("mem-dj-4", 0.8)]})
        b.run_pass(ACCUM, SYMPY, "initial", [1, 0, 1, 1])
        b.run_pass(ACCUM, DJANGO, "retest", [1, 0, 0, 1, 1])
        b.run_pass(ACCUM, SYMPY, "retest", [1, 0, 1, 0])
        b.finish_run(ACCUM)
    finally:
        b.close()
    return root


def cli(root: Path, *args: str, columns: int = 100) -> str:
    """The real CLI in a subprocess, output piped (not a terminal), COLUMNS as given."""
    proc = subprocess.run(swecl_argv(root, *args), capture_output=True, text=True, cwd=REPO_ROOT, timeout=300,
                          env=swecl_env(root.parent / "cache", {"COLUMNS": str(columns)}))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def below_verdicts(out: str) -> str:
    """`swecl metrics`' output from the table's title on: the verdict lines above it are one
    line each, as long as they need (never wrapped)."""
    lines = out.splitlines()
    return "\n".join(lines[next(i for i, line in enumerate(lines) if "CL metrics" in line):])


def row(out: str, label: str, after: str | None = None) -> list[str]:
    """The cells of the first table line starting with `label` (after the line holding `after`)."""
    lines = below_verdicts(out).splitlines()
    start = next(i for i, line in enumerate(lines) if after in line) if after else 0
    return next(line.split() for line in lines[start:] if line.strip().startswith(label))


# --- 1. unmeasured metrics print n/a --------------------------------------------------


def test_unmeasured_rules() -> None:
    lambdas = Lambdas()
    full = SequenceOutcomes(name="s", initial=[1, 0, 1], final=[1, 1, 0], baseline=[0, 0, 1])
    assert unmeasured(full, lambdas) == {}
    initial_only = SequenceOutcomes(name="s", initial=[1, 0, 1])
    assert set(unmeasured(initial_only, lambdas)) == {"F", "BWT", "FWT", "CL-S", "CL-F1", "CL-Score"}
    assert unmeasured(initial_only, lambdas)["F"] == "no re-test pass"
    assert unmeasured(initial_only, lambdas)["FWT"] == "no baseline pass"
    # CL-Score is measured when the unmeasured terms weigh nothing; N = 1 defines F = FWT = 0.
    assert "CL-Score" not in unmeasured(initial_only, Lambdas(f=0, bwt=0, fwt=0))
    assert unmeasured(SequenceOutcomes(name="s", initial=[1]), lambdas) == {}
    no_valid_retest = SequenceOutcomes(name="s", initial=[1, 0], final=[None, None], baseline=[1, 1])
    assert unmeasured(no_valid_retest, lambdas)["F"] == "the re-test pass has no valid outcome"
    # The macro value is unmeasured when any sequence's is, and says which.
    result = compute([full, SequenceOutcomes(name="t", initial=[1, 0, 1], final=[1, 0, 1])])
    assert result.unmeasured["FWT"] == "no baseline pass (in t)" and "F" not in result.unmeasured
    # The value is null where the passes measured nothing: no mean mixes a convention in.
    assert result.macro["FWT"] is None and result.macro["F"] is not None


def test_table_prints_na_and_json_says_why(root: Path) -> None:
    out = cli(root, "metrics")
    # base has no re-test and no baseline; accum no baseline; plugin-blank measured everything.
    assert row(out, "macro", after="base")[1:8] == ["0.550", "n/a", "n/a", "0.535", "0.550", "n/a", "n/a"]
    assert row(out, "macro", after="accum")[2:4] == ["0.125", "n/a"]
    assert "n/a" not in row(out, "macro", after="plugin-blank")
    assert "CL-Scores not comparable, different passes (base: initial; plugin-blank: initial+retest+baseline; " \
           "accum plugin-accum: initial+retest)" in " ".join(out.split())
    doc = json.loads(cli(root, "metrics", "--json"))
    by = {v["version"]: v for v in doc["versions"]}
    assert by["base"]["unmeasured"]["F"] == "no re-test pass" and by["base"]["unmeasured"]["FWT"] == "no baseline pass"
    assert set(by["base"]["unmeasured"]) == {"F", "BWT", "FWT", "CL-S", "CL-F1", "CL-Score"}
    # null, never the formulas' convention (F = 0, CL-S = 1): a script reading the JSON sees no result.
    assert by["base"]["macro"]["F"] is None and by["base"]["macro"]["CL-S"] is None
    assert set(by[ACCUM]["unmeasured"]) == {"FWT", "CL-Score"} and by["plugin-blank"]["unmeasured"] == {}
    assert by["base"]["passes"] == ["initial"]
    assert by["plugin-blank"]["resolved"][DJANGO] == {"resolved": 3, "tasks": 5}


def test_report_prints_na_for_unmeasured(root: Path, tmp_path: Path) -> None:
    summary = Experiment(root).report(out_dir=tmp_path / "report")
    page = summary.index.read_text()
    assert 'data-metric="F" data-value="" data-unmeasured="no re-test pass" title="not measured: no re-test pass">n/a' in page
    assert "CL-Scores are not comparable across versions with different passes" in page
    assert 'data-metric="FWT" data-value="0.6666666666666666">0.667' in page  # measured: a number


# --- 2. the table fits 100 columns ---------------------------------------------------


def test_table_fits_100_columns_with_nothing_cut(root: Path) -> None:
    with Results(root).open_ledger(readonly=True) as ledger:
        found = metrics_for(ledger, Results(root).projector(ledger), [])
        leakage = leakage_for(ledger, found)
    for width in (100, 200):  # at 200 the table keeps its natural width: it needs no squeezing
        for shown in (found, found[:1]):
            buf = io.StringIO()
            print_metrics_table(shown, console=Console(width=width, file=buf), leakage=leakage)
            text = buf.getvalue()
            assert "…" not in text
            assert all(len(line) <= 100 for line in text.splitlines()), text
            assert "macro" in text and "CL-Score" in text and "solved" in text
    out = cli(root, "metrics", columns=100)
    table = below_verdicts(out)
    assert "…" not in out and all(len(line) <= 100 for line in table.splitlines()), out
    verdicts = out.splitlines()[:len(out.splitlines()) - len(table.splitlines())]
    # One line per memory run with a base (plugin-blank has none: another model than base).
    assert len(verdicts) == 1 and verdicts[0].startswith("accum plugin-accum vs base: ")
    assert row(out, "macro", after="plugin-blank")[-1] == "6/9"  # resolved X/N: sums over sequences
    assert row(out, "django", after="plugin-blank")[-2:] == ["3/5", "1"]  # solved, missing


def test_short_sequence_names() -> None:
    assert short_sequence_names(["django_django_sequence", "pydata_xarray_sequence"]) == {
        "django_django_sequence": "django", "pydata_xarray_sequence": "xarray"}
    # Two that would read alike keep their ids.
    assert short_sequence_names(["a_x_sequence", "b_x_sequence"]) == {"a_x_sequence": "a_x", "b_x_sequence": "b_x"}


# --- 3. leakage counts ---------------------------------------------------------------


def test_leakage_in_metrics_and_runs(root: Path) -> None:
    out = cli(root, "metrics")
    assert ("accum plugin-accum: 2 recalled items flagged as leakage (same instance 1, later task 1): "
            "see `swecl audit accum --summary`") in " ".join(out.split())
    assert below_verdicts(out).count("flagged as leakage") == 1  # no line for the runs without flags
    doc = json.loads(cli(root, "metrics", "--json"))
    leak = {v["version"]: v["leakage"] for v in doc["versions"]}
    assert leak[ACCUM]["flagged"] == 2 and leak[ACCUM]["by_kind"]["same-instance"] == 1
    assert leak["plugin-blank"]["flagged"] == 0
    # --as-of-order K: the recalls made before task K started in each sequence, the same
    # cut as the outcomes: django task 1's two flagged recalls count from K = 2, not at K = 1.
    cut = {v["version"]: v["leakage"] for v in json.loads(cli(root, "metrics", "--json", "--as-of-order", "2"))["versions"]}
    assert cut[ACCUM]["flagged"] == 2 and cut[ACCUM]["by_kind"]["later-task"] == 1
    cut = {v["version"]: v["leakage"] for v in json.loads(cli(root, "metrics", "--json", "--as-of-order", "1"))["versions"]}
    assert cut[ACCUM]["flagged"] == 0 and cut[ACCUM]["recalled_items"] == 0
    runs = json.loads(cli(root, "runs", "--json"))
    assert {r["version"]: r["leakage"]["flagged"] for r in runs} == {"base": 0, "plugin-blank": 0, ACCUM: 2}
    table = cli(root, "runs")
    lines = table.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{ACCUM} "))
    row = lines[start]
    block = " ".join([row, *itertools.takewhile(lambda line: line.startswith(" "), lines[start + 1:])])
    assert "leaks" in table and re.search(r"\s2\s", row), table
    # resolved out of the tasks planned (django 5, sympy 4): initial 4 + 3, retest 3 + 2 (i, r: the legend)
    assert {"i=7/9", "r=5/9", "django,", "sympy"} <= set(block.split()) and "i initial, r retest" in table, table
    assert {r["version"]: r["tasks"] for r in runs}[ACCUM] == 9


def test_run_summary_uses_the_same_table(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from commands import Experiment
    from commands.cli._run import _print_summary

    os.environ.setdefault("COLUMNS", "100")
    _print_summary(Experiment(root).run_summary(["base", ACCUM]), quiet=True, as_json=False)
    out = capsys.readouterr().out
    assert "n/a" in out and "recalled items flagged as leakage" in out
    verdict, *rest = out.splitlines()  # the verdict line opens it, one line however long, as in `swecl metrics`
    assert verdict.startswith(f"{ACCUM} plugin-accum vs base: ")
    assert all(len(line) <= 100 for line in rest), out
    said = " ".join(out.split())
    assert f"memory efficiency of {ACCUM} plugin-accum: n/a (no oracle run: a finished run of" in said
    assert "plugin-accum: not reported (their agents reported no cost or tokens)" in said
