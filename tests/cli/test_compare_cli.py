"""`swecl compare A B` through the real CLI: its numbers are the differences of `swecl metrics
--json`, its statistics match scipy on real demo runs, its table fits 100 columns and says
what is n/a, and what cannot be compared is refused in one line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.stats

from bench.ledgers import LedgerBuilder
from bench.processes import SPANS
from ledger import Ledger
from ledger.events import TaskRef
from projections import Results, metrics_for
from tests.inprocess import swecl
from tests.shared_runs import demo_run_copy

DJANGO = "django__django"
SYMPY = "sympy__sympy"
PLAN: dict[str, list[TaskRef]] = {
    DJANGO: [TaskRef(f"django__django-{11000 + k}", k, "django/django", 1 + k % 4) for k in range(1, 11)],
    SYMPY: [TaskRef(f"sympy__sympy-{12000 + k}", k, "sympy/sympy", 1 + k % 3) for k in range(1, 9)],
}
OUTCOMES: dict[str, dict[str, dict[str, list[int | None]]]] = {
    "2": {
        DJANGO: {"initial": [1, 1, 0, 1, 0, 1, 1, 0, 1, 1], "retest": [1, 0, 0, 1, 0, 1, 1, 0, 1, 1],
                 "baseline": [1, 0, 0, 0, 0, 1, 0, 0, 1, 0]},
        SYMPY: {"initial": [0, 1, 1, 0, 1, 1, 0, 1], "retest": [0, 1, 0, 0, 1, 1, 0, 1],
                "baseline": [0, 0, 1, 0, 0, 1, 0, 0]},
    },
    "3": {
        DJANGO: {"initial": [1, 0, 0, 1, 0, 0, 1, 0, 0, 1], "retest": [1, 0, 0, 1, 0, 0, 0, 0, 0, 1],
                 "baseline": [1, 0, 0, 0, 0, 1, 0, 0, 1, 0]},
        SYMPY: {"initial": [0, 1, None, 0, 0, 1, 0, 1], "retest": [0, 1, None, 0, 0, 0, 0, 1],
                "baseline": [0, 0, 1, 0, 0, 1, 0, 0]},
    },
}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Crafted runs over PLAN: 1 base (initial only), 2 and 3 plugin-blank (every pass, 3
    with an infrastructure error), 4 over django only, 5 over both with sympy reordered."""
    root = tmp_path_factory.mktemp("compare") / "results"
    root.mkdir()
    b = LedgerBuilder(Ledger.open(root / "ledger.db", create=True))
    try:
        b.start_run("1", stage="base", plan=PLAN)
        b.run_pass("1", DJANGO, "initial", [1, 0, 0, 1, 0, 0, 1, 0, 0, 0])
        b.run_pass("1", SYMPY, "initial", [0, 0, 1, 0, 0, 1, 0, 0])
        b.finish_run("1")
        for version, passes in OUTCOMES.items():
            b.start_run(version, stage="plugin-blank", plan=PLAN)
            for seq, by_pass in passes.items():
                for pass_, outcomes in by_pass.items():
                    b.run_pass(version, seq, pass_, outcomes)
            b.finish_run(version)
        b.start_run("4", stage="plugin-blank", plan={DJANGO: PLAN[DJANGO]}, passes=["initial"])
        b.run_pass("4", DJANGO, "initial", [1] * 10)
        b.finish_run("4")
        reordered = [TaskRef(t.instance_id, k, t.repo, t.difficulty)
                     for k, t in enumerate([PLAN[SYMPY][1], PLAN[SYMPY][0], *PLAN[SYMPY][2:]], start=1)]
        b.start_run("5", stage="base", plan={DJANGO: PLAN[DJANGO], SYMPY: reordered})
        b.finish_run("5")
    finally:
        b.close()
    return root


def run_cli(root: Path, *args: str, columns: int = 100) -> subprocess.CompletedProcess[str]:
    """The CLI's entry point (in-process: compare only reads), output not a terminal,
    COLUMNS as given."""
    return swecl(root, *args, cache=root.parent / "cache", env={"COLUMNS": str(columns)}, check=False)


def ok(root: Path, *args: str) -> str:
    proc = run_cli(root, *args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def assert_differences_of_metrics(doc: dict[str, Any], metrics: dict[str, Any]) -> None:
    """Every compared number is B - A of `swecl metrics --json` (exactly), or null with a reason."""
    va, vb = metrics["versions"]
    assert (doc["a"]["version"], doc["b"]["version"]) == (va["version"], vb["version"])
    for name, row in doc["sequences"].items():
        counts_a, counts_b = va["resolved"][name], vb["resolved"][name]
        assert row["resolved"] == {"a": counts_a["resolved"], "b": counts_b["resolved"]}
        assert row["tasks"] == counts_a["tasks"] == counts_b["tasks"]
        rate = row["metrics"]["resolved_rate"]
        assert rate["diff"] == counts_b["resolved"] / counts_b["tasks"] - counts_a["resolved"] / counts_a["tasks"]
        for metric in ("ACC", "F", "FWT", "CL-Score"):
            m = row["metrics"][metric]
            assert (m["a"], m["b"]) == (va["sequences"][name][metric], vb["sequences"][name][metric])
            gaps = tuple(v["unmeasured_by_sequence"].get(name, {}).get(metric) for v in (va, vb))
            assert (m["unmeasured"]["a"], m["unmeasured"]["b"]) == gaps
            if any(gaps) or m["a"] is None or m["b"] is None:
                assert m["diff"] is None and m["ci"] is None and m["na"]
            else:
                assert m["diff"] == m["b"] - m["a"] and m["ci"][0] <= m["ci"][1]
    for metric in ("ACC", "F", "FWT", "CL-Score"):
        m = doc["macro"]["metrics"][metric]
        assert (m["a"], m["b"]) == (va["macro"][metric], vb["macro"][metric])
        if m["diff"] is not None:
            assert m["diff"] == m["b"] - m["a"]
        else:
            assert metric in va["unmeasured"] or metric in vb["unmeasured"]


def assert_mcnemar_matches_scipy(doc: dict[str, Any]) -> None:
    for row in [*doc["sequences"].values(), doc["macro"]]:
        test = row["mcnemar"]
        n = test["b"] + test["c"]
        expected = 1.0 if n == 0 else scipy.stats.binomtest(test["c"], n, 0.5).pvalue
        assert test["p_value"] == pytest.approx(expected, rel=1e-12)
        assert test["b"] + test["c"] + test["both"] + test["neither"] == row["tasks"]


@pytest.mark.parametrize("formula", ["native", "eval-v1"])
def test_compare_is_the_difference_of_metrics_json(root: Path, formula: str) -> None:
    doc = json.loads(ok(root, "compare", "2", "3", "--formula", formula, "--json"))
    metrics = json.loads(ok(root, "metrics", "--version", "2", "--version", "3", "--formula", formula, "--json"))
    assert_differences_of_metrics(doc, metrics)
    assert_mcnemar_matches_scipy(doc)
    assert doc["formula"] == formula and doc["bootstrap"]["resamples"] == 10_000 and doc["bootstrap"]["seed"] == 0
    # Every pass in both runs: everything measured and compared, each with an interval.
    assert all(m["ci"] is not None for row in [*doc["sequences"].values(), doc["macro"]] for m in row["metrics"].values())
    assert doc["sequences"][SYMPY]["missing"] == {"a": 0, "b": 1}
    assert any("1 of 18 tasks have no valid initial verdict" in note for note in doc["notes"])


def test_compare_with_weights_matches_metrics_with_the_same_weights(root: Path) -> None:
    weights = ("--lambda", "aulc=0", "--lambda", "f=2")
    doc = json.loads(ok(root, "compare", "2", "3", *weights, "--json"))
    metrics = json.loads(ok(root, "metrics", "--version", "2", "--version", "3", *weights, "--json"))
    assert doc["lambdas"] == metrics["lambdas"]
    assert_differences_of_metrics(doc, metrics)


def test_the_seed_and_resamples_make_the_intervals_reproducible(root: Path) -> None:
    first = ok(root, "compare", "2", "3", "--json", "--seed", "5", "--resamples", "2000")
    assert ok(root, "compare", "v2", "3", "--json", "--seed", "5", "--resamples", "2000") == first
    other = json.loads(ok(root, "compare", "2", "3", "--json", "--seed", "6", "--resamples", "2000"))
    doc = json.loads(first)
    assert doc["bootstrap"] == {**other["bootstrap"], "seed": 5}
    assert doc["macro"]["metrics"]["ACC"]["diff"] == other["macro"]["metrics"]["ACC"]["diff"]
    assert doc["macro"]["metrics"]["ACC"]["ci"] != other["macro"]["metrics"]["ACC"]["ci"]


def test_the_table_fits_100_columns_and_says_what_is_na(root: Path) -> None:
    out = ok(root, "compare", "1", "2")
    verdict, *lines = out.splitlines()  # the verdict line: one line, as long as it needs
    assert verdict.startswith("v2 plugin-blank vs v1 base: ") and "McNemar p=" in verdict
    assert max(len(line) for line in lines) <= 100, out
    assert "compare A = v1 base, B = v2 plugin-blank (native formulas)" in out
    rows = {(line.split()[0], line.split()[1]) for line in lines if line.split()[:1] in (["django"], ["sympy"], ["macro"])}
    assert rows == {("django", "resolved↑"), ("sympy", "resolved↑"), ("macro", "resolved↑")}
    f_row = next(line.split() for line in lines if line.split()[:1] == ["F↓"])
    assert f_row == ["F↓", "n/a", "0.111", "n/a"]  # v1's F is a convention, not a measurement: n/a, never 0
    assert "F n/a: not measured (v1 base: no re-test pass)" in out
    assert "FWT n/a: not measured (v1 base: no baseline pass)" in out
    assert "* ACC: ACC of v1 base is over its initial pass (no re-test), of v2 plugin-blank over its re-test" in out
    assert "different passes (v1 base: initial; v2 plugin-blank: initial+retest+baseline)" in out
    resolved = next(line.split() for line in lines if line.startswith("django"))
    assert resolved[2:4] == ["3/10", "7/10"] and resolved[-3:] == ["b=0", "c=4", "p=0.125"]
    narrow = run_cli(root, "compare", "2", "3", columns=60)
    assert narrow.returncode == 0 and "macro" in narrow.stdout


@pytest.mark.parametrize(("args", "said"), [
    (("1", "4"), "v1 base and v4 plugin-blank are not over the same tasks: sequence sympy__sympy is only in v1 base"),
    (("5", "1"), "v5 base and v1 base are not over the same tasks: sequence sympy__sympy task t1 is sympy__sympy-12002 "
                 "in v5 base, sympy__sympy-12001 in v1 base (the same tasks in another order)"),
    (("1", "9"), "no run version '9'"),
    (("2", "v2"), "compare needs two different runs: both are v2 plugin-blank"),
])
def test_what_cannot_be_compared_is_refused_in_one_line(root: Path, args: tuple[str, ...], said: str) -> None:
    proc = run_cli(root, "compare", *args)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("swecl: error: ") and said in proc.stderr, proc.stderr


def test_bad_options_are_refused_by_click(root: Path) -> None:
    for args in (("compare", "1"), ("compare", "1", "2", "--resamples", "10"), ("compare", "1", "2", "--formula", "x")):
        proc = run_cli(root, *args)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr and "Error:" in proc.stderr


# --- end to end on real demo runs ---------------------------------------------------------


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    """The demo's spans sequence run as `swecl run` runs it: plugin-blank (v1, a copy of
    the session's shared run), then base (v2)."""
    results = demo_run_copy(tmp_path_factory, cache, "blank-spans")
    swecl(results, "run", "--stage", "base", "--sequence", SPANS, "--quiet", cache=cache)
    return results


@pytest.mark.slow
@pytest.mark.parametrize("formula", ["native", "eval-v1"])
def test_compare_on_real_demo_runs_matches_metrics_and_scipy(demo: Path, cache: Path, formula: str) -> None:
    doc = json.loads(swecl(demo, "compare", "2", "1", "--formula", formula, "--json", cache=cache).stdout)
    metrics = json.loads(swecl(demo, "metrics", "--version", "2", "--version", "1", "--formula", formula, "--json",
                               cache=cache).stdout)
    assert_differences_of_metrics(doc, metrics)
    assert_mcnemar_matches_scipy(doc)
    # The resolved rate's interval is scipy's paired percentile bootstrap over the tasks'
    # resolved flags, on the default seed and resamples.
    results = Results(demo)
    with results.open_ledger(readonly=True) as ledger:
        found = metrics_for(ledger, results.projector(ledger), ["2", "1"], formula=formula)
    (seq_a,), (seq_b,) = (vm.outcomes.to_metric_inputs(vm.not_gradeable) for vm in found)
    flags_a = np.array([v == 1 for v in seq_a.initial], dtype=float)
    flags_b = np.array([v == 1 for v in seq_b.initial], dtype=float)
    expected = scipy.stats.bootstrap(
        (flags_a, flags_b), lambda a, b, axis=-1: b.mean(axis=axis) - a.mean(axis=axis), paired=True, vectorized=True,
        method="percentile", n_resamples=10_000, rng=np.random.default_rng(0)).confidence_interval
    for row in (doc["sequences"][SPANS], doc["macro"]):
        assert row["metrics"]["resolved_rate"]["ci"] == pytest.approx([expected.low, expected.high], abs=1e-12)
    # base ran no re-test and no baseline: what they measure is n/a, and says why.
    assert doc["macro"]["metrics"]["F"]["na"] == "not measured (v2 base: no re-test pass)"
    assert doc["macro"]["metrics"]["FWT"]["na"] == "not measured (v2 base: no baseline pass)"


@pytest.mark.slow
def test_compare_table_on_real_demo_runs(demo: Path, cache: Path) -> None:
    out = swecl(demo, "compare", "v2", "v1", cache=cache, env={"COLUMNS": "100"}).stdout
    assert max(len(line) for line in out.splitlines()[1:]) <= 100, out  # below the one verdict line
    assert "compare A = v2 base, B = v1 plugin-blank (native formulas)" in out
    assert "F n/a: not measured (v2 base: no re-test pass)" in out
    macro = next(line.split() for line in out.splitlines() if line.startswith("macro"))
    assert macro[1] == "resolved↑" and macro[-3].startswith("b=") and macro[-1].startswith("p=")
