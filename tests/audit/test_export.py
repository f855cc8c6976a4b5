"""`swecl export`: predictions that SWE-bench tooling reads, events as `swecl log --json`, parquet."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bench.ledgers import LedgerBuilder
from commands import Experiment
from commands.cli._export import export_cmd
from commands.cli._ledger import log_cmd
from commands.inputs import load_predictions
from ledger import Ledger, SweclError
from projections import EVENT_COLUMNS, ExportReport

from .crafted import P1, P2, P3, SEQ, TASKS, accum_run, blank_run


def export_run(led: Ledger, version: str, fmt: str, out: str, **options: Any) -> ExportReport:
    """The core's export job over the results folder holding `led`."""
    return Experiment(led.path.parent).export(version=version, fmt=fmt, out=out, **options)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp(__name__.rsplit(".", 1)[-1]) / "results" / "ledger.db"
    with Ledger.open(path, create=True) as led:
        r = LedgerBuilder(led)
        blank_run(r, "1")
        accum_run(r, "2", "1")
        r.start_run("3", stage="base", plan={SEQ: TASKS}, model="claude-test")
        r.task("3", SEQ, 1, patch=P3)
        r.task("3", SEQ, 2, patch=None)  # the agent produced nothing: the empty prediction
    return path.parent


def test_predictions_round_trip_through_load_predictions(results: Path, tmp_path: Path) -> None:
    with Ledger.open(results / "ledger.db", readonly=True) as led:
        report = export_run(led, "2", "predictions", str(tmp_path / "v2.jsonl"))
        partial = export_run(led, "3", "predictions", str(tmp_path / "v3.jsonl"))
        retest = export_run(led, "2", "predictions", str(tmp_path / "v2-retest.jsonl"), pass_="retest")
    loaded = load_predictions(tmp_path / "v2.jsonl")
    assert list(loaded) == ["acme__widgets-1", "acme__widgets-2", "acme__widgets-3"] and report.rows == 3
    # Task 1's first attempt was killed: the prediction is the attempt in force (attempt 2).
    assert [p.model_patch for p in loaded.values()] == [P1, P2, P3]
    assert {p.model_name_or_path for p in loaded.values()} == {"swecl/demo/default/v2"}
    for line in (tmp_path / "v2.jsonl").read_text().splitlines():
        assert list(json.loads(line)) == ["instance_id", "model_name_or_path", "model_patch"]
    v3 = load_predictions(tmp_path / "v3.jsonl")
    assert {k: p.model_patch for k, p in v3.items()} == {"acme__widgets-1": P3, "acme__widgets-2": ""}
    assert v3["acme__widgets-1"].model_name_or_path == "swecl/demo/claude-test/v3"
    assert partial.missing == ("acme__widgets-3",) and "missing 1 task(s)" in partial.lines()[0]
    assert list(load_predictions(tmp_path / "v2-retest.jsonl")) == ["acme__widgets-1"] and retest.rows == 1


def test_events_are_exactly_what_swecl_log_json_prints(results: Path, tmp_path: Path) -> None:
    with Ledger.open(results / "ledger.db", readonly=True) as led:
        report = export_run(led, "2", "events", str(tmp_path / "events.jsonl"))
        count = sum(1 for r in led.read() if r.stream == "run/2" or r.stream.startswith("run/2/"))
    log = CliRunner().invoke(log_cmd, ["--results", str(results), "--stream", "run/2", "--json"])
    assert log.exit_code == 0
    assert (tmp_path / "events.jsonl").read_text() == log.output
    assert report.rows == count


def test_events_with_blobs_and_one_pass(results: Path, tmp_path: Path) -> None:
    with Ledger.open(results / "ledger.db", readonly=True) as led:
        export_run(led, "2", "events", str(tmp_path / "retest.jsonl"), pass_="retest", with_blobs=True)
    rows = [json.loads(line) for line in (tmp_path / "retest.jsonl").read_text().splitlines()]
    assert rows and {r["payload"]["pass"] for r in rows} == {"retest"}
    (agent,) = [r for r in rows if r["type"] == "agent.finished"]
    assert agent["blobs"][agent["payload"]["patch"]] == {"size": len(P1.encode()), "text": P1}
    assert all("blobs" not in r for r in rows if r["type"] != "agent.finished")


def test_parquet_has_one_typed_row_per_event(results: Path, tmp_path: Path) -> None:
    import polars as pl

    with Ledger.open(results / "ledger.db", readonly=True) as led:
        report = export_run(led, "2", "parquet", str(tmp_path / "v2.parquet"))
        jsonl = export_run(led, "2", "events", str(tmp_path / "v2.jsonl"))
    frame = pl.read_parquet(tmp_path / "v2.parquet")
    assert frame.columns == [name for name, _ in EVENT_COLUMNS] and frame.height == report.rows == jsonl.rows
    assert frame.schema["order"] == pl.Int64 and frame.schema["time"] == pl.Datetime("us", "UTC")
    lines = [json.loads(line) for line in (tmp_path / "v2.jsonl").read_text().splitlines()]
    assert frame["seq"].to_list() == [r["seq"] for r in lines]
    assert [json.loads(p) for p in frame["payload"].to_list()] == [r["payload"] for r in lines]
    # Per-task analysis without parsing: the verdicts in force per pass.
    graded = frame.filter(pl.col("type") == "grade.finished").select("pass", "order", "attempt").rows()
    assert graded == [("initial", 1, 2), ("initial", 2, 1), ("initial", 3, 1), ("retest", 1, 1)]
    header = frame.filter(pl.col("stream") == "run/2")
    assert header["sequence_id"].null_count() == header.height and set(frame["run"].to_list()) == {"2"}


def test_export_errors_are_one_line(results: Path, tmp_path: Path) -> None:
    with Ledger.open(results / "ledger.db", readonly=True) as led:
        with pytest.raises(SweclError, match="no run version '8'"):
            export_run(led, "8", "events", str(tmp_path / "x.jsonl"))
        with pytest.raises(SweclError, match="parquet writes a file"):
            export_run(led, "2", "parquet", "-")
        with pytest.raises(SweclError, match="events format only"):
            export_run(led, "2", "predictions", str(tmp_path / "x.jsonl"), with_blobs=True)
    out = CliRunner().invoke(export_cmd, ["--results", str(results), "2", "--format", "predictions", "--out", "-"])
    assert out.exit_code == 0 and len(out.output.splitlines()) == 3
    assert json.loads(out.output.splitlines()[0])["instance_id"] == "acme__widgets-1"
