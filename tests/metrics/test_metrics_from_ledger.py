"""Metrics as pure functions of the ledger: any cut, any formula, nothing re-run."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from commands.inputs import demo_benchmark, find_sequence
from ledger import Ledger
from tests.run.support import SPANS, events, swecl, swecl_json
from tests.shared_runs import demo_run_copy

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    """plugin-blank over the spans sequence (version 1): a copy of the session's shared run."""
    return demo_run_copy(tmp_path_factory, cache, "blank-spans")


SPANS_TASKS = len(find_sequence(demo_benchmark(materialise=False), SPANS).tasks)


def cut_copy(results: Path, before_seq: int, dest: Path) -> Path:
    """A new ledger holding exactly the events with seq < before_seq: the ledger 'cut'."""
    dest.mkdir()
    src = Ledger.open(results / "ledger.db", readonly=True)
    out = Ledger.open(dest / "ledger.db", create=True)
    out.import_recorded(list(src.read(upto=before_seq - 1)))
    src.close()
    out.close()
    return dest


@pytest.mark.parametrize("formula", ["native", "eval-v1"])
def test_as_of_order_equals_a_ledger_cut_at_that_order(run: Path, cache: Path, tmp_path: Path, formula: str) -> None:
    led = Ledger.open(run / "ledger.db", readonly=True)
    for k in range(1, SPANS_TASKS + 2):  # every order, and one past the last task
        start = led.task_position("1", k)
        as_of = swecl_json(run, "metrics", "--version", "1", "--formula", formula, "--as-of-order", str(k), cache=cache)
        cut = cut_copy(run, start if start is not None else led.head() + 1, tmp_path / f"cut-{formula}-{k}")
        whole = swecl_json(cut, "metrics", "--version", "1", "--formula", formula, cache=cache)
        assert as_of["versions"][0]["sequences"] == whole["versions"][0]["sequences"], k
        assert as_of["versions"][0]["macro"] == whole["versions"][0]["macro"], k
    led.close()


def test_before_the_first_task_nothing_is_scored_and_nothing_is_hidden(run: Path, cache: Path) -> None:
    doc = swecl_json(run, "metrics", "--as-of-order", "1", cache=cache)
    (seq,) = doc["versions"][0]["sequences"].values()
    assert seq["ACC"] is None and seq["CL-P"] is None
    assert doc["versions"][0]["extras"][SPANS]["missing"]["initial"] == SPANS_TASKS


def test_switching_the_formula_appends_nothing(run: Path, cache: Path) -> None:
    before = events(run)
    native = swecl_json(run, "metrics", "--formula", "native", "--as-of-order", "4", cache=cache)
    eval_v1 = swecl_json(run, "metrics", "--formula", "eval-v1", "--as-of-order", "4", cache=cache)
    swecl_json(run, "metrics", "--formula", "eval-v1", cache=cache)
    assert events(run) == before  # not one agent, grade or any other event
    assert (native["formula"], eval_v1["formula"]) == ("native", "eval-v1")
    # eval-v1 scores the not-yet-run tasks as failures where native leaves them out
    assert native["versions"][0]["macro"]["AULC"] != eval_v1["versions"][0]["macro"]["AULC"]


def test_tables_for_polars(run: Path, cache: Path, tmp_path: Path) -> None:
    csv, parquet = tmp_path / "m.csv", tmp_path / "m.parquet"
    swecl(run, "metrics", "--csv", str(csv), "--parquet", str(parquet), cache=cache)
    for frame in (pl.read_csv(csv), pl.read_parquet(parquet)):
        assert frame["sequence"].to_list() == [SPANS, "macro"]
        assert {"version", "stage", "ACC", "CL-Score", "missing_initial"} <= set(frame.columns)
    printed = swecl(run, "metrics", "--csv", "-", cache=cache).stdout
    assert printed.splitlines()[0].startswith("version,stage,sequence")


DESIGN_VECTORS = {
    "sequences": {
        "A": {"initial": [1, 0, 1, 1], "final": [0, 0, 1, 1], "baseline": [1, 0, 0, 1]},
        "B": {"initial": [1], "final": [1], "baseline": [0]},
        "C": {"initial": [0, 1, 1], "final": None, "baseline": [0, 0, 1]},
    }
}
DESIGN_TABLE = {
    "A": {"ACC": 0.5, "F": 0.333333, "FWT": 0.333333, "AULC": 0.729167, "CL-P": 0.75, "CL-S": 0.666667,
          "CL-F1": 0.705882, "CL-Score": 0.895833},
    "B": {"ACC": 1, "F": 0, "FWT": 0, "AULC": 1, "CL-P": 1, "CL-S": 1, "CL-F1": 1, "CL-Score": 2.0},
    "C": {"ACC": 0.666667, "F": 0, "FWT": 0.5, "AULC": 0.388889, "CL-P": 0.666667, "CL-S": 1, "CL-F1": 0.8,
          "CL-Score": 1.555556},
}


def test_metrics_vectors_command_reproduces_design(tmp_path: Path, cache: Path) -> None:
    path = tmp_path / "vectors.json"
    path.write_text(json.dumps(DESIGN_VECTORS))
    for formula in ("native", "eval-v1"):
        doc = json.loads(swecl(tmp_path, "metrics", "--vectors", str(path), "--formula", formula, "--json", cache=cache).stdout)
        assert set(doc) == {"sequences", "macro"}
        for name, expected in DESIGN_TABLE.items():
            got = doc["sequences"][name]
            assert set(got) == {"ACC", "F", "BWT", "FWT", "AULC", "CL-P", "CL-S", "CL-F1", "CL-Score"}
            for metric, value in expected.items():
                if formula == "eval-v1" and name == "A" and metric in ("ACC", "CL-Score"):
                    continue  # eval-v1: ACC over the recorded memory-on results (0.75 on A)
                assert got[metric] == pytest.approx(value, abs=1e-6), (formula, name, metric)
            assert got["BWT"] == pytest.approx(-got["F"])
