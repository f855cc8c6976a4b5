"""Unmeasured is null in every output: the whole JSON of `swecl metrics`, `compare`, `runs`,
`export`, `replay` and the report's data holds no number where the table prints n/a.

A base run (initial pass only) measures no F, BWT, CL-S, CL-F1 (no re-test), no FWT (no
baseline) and so no CL-Score; the formulas' conventions (F = 0, CL-S = 1) must never reach
a script that reads the JSON as results."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner

from bench.ledgers import LedgerBuilder
from commands.cli._compare import compare_cmd
from commands.cli._export import export_cmd
from commands.cli._metrics import metrics_cmd, runs_cmd
from ledger import Ledger
from projections import Results
from projections._replay import replay_state
from projections.metrics import METRIC_NAMES
from projections._replay import metrics_document as replay_metrics_document
from projections.report._data import collect
from tests.report.realistic import BASE, DJANGO, PLAN, PLUGIN, SYMPY, build_realistic

BASE2 = "base-again"
# What a base run's table prints n/a for, and why.
UNMEASURED = {"F": "no re-test pass", "BWT": "no re-test pass", "CL-S": "no re-test pass",
              "CL-F1": "no re-test pass", "FWT": "no baseline pass", "CL-Score": "F, FWT, BWT not measured"}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report tests' ledger (`base`: initial pass only; `plugin-blank`: every pass)
    and a second base run over the same tasks, to compare two base runs."""
    root = tmp_path_factory.mktemp("unmeasured") / "results"
    build_realistic(root)
    b = LedgerBuilder(Ledger.open(root / "ledger.db"))
    try:
        b.start_run(BASE2, stage="base", plan=PLAN)
        b.run_pass(BASE2, DJANGO, "initial", [1, 1, 0, 0, 1])
        b.run_pass(BASE2, SYMPY, "initial", [0, 1, 0, 0])
        b.finish_run(BASE2)
    finally:
        b.close()
    return root


def invoke(command: Any, root: Path, *args: str) -> str:
    out = CliRunner().invoke(command, ["--results", str(root), *args])
    assert out.exit_code == 0, out.output
    return out.output


def numbers_where_na(node: Any, path: tuple[str, ...] = (), inside: str | None = None,
                     gaps: frozenset[str] = frozenset(UNMEASURED)) -> Iterator[str]:
    """Every number in `node` under a metric the table prints n/a for (`inside`: the metric
    whose subtree this is), and a snapshot's final or delta (no re-test: no final). A part
    with its own `unmeasured` map (a difficulty stratum) is judged by it: a one-task
    stratum measures F = 0 by definition, and its table row prints that 0."""
    if isinstance(node, bool) or node is None or isinstance(node, str):
        return
    if isinstance(node, (int, float)):
        if inside is not None or path[-2:] in (("snapshot", "final"), ("snapshot", "delta")):
            yield "/".join(path) + f" = {node!r}"
        return
    if isinstance(node, dict):
        own = node.get("unmeasured")
        if isinstance(own, dict) and set(own) <= set(METRIC_NAMES) and "metrics" in node:
            gaps = frozenset(own)
        for key, value in node.items():
            key = str(key)
            # Reasons and counts (of sequences, runs, resamples), not values.
            if key in ("unmeasured", "unmeasured_by_sequence", "macro_counts", "undefined_resamples", "n"):
                continue
            yield from numbers_where_na(value, (*path, key), key if key in gaps else inside, gaps)
        return
    if isinstance(node, (list, tuple)):
        for i, value in enumerate(node):
            yield from numbers_where_na(value, (*path, str(i)), inside, gaps)


def test_walker_finds_a_convention() -> None:
    """The walk itself: it finds a number under F, in strata and lists, and passes null."""
    assert list(numbers_where_na({"sequences": {"s": {"F": 0.0, "ACC": 0.5}}})) == ["sequences/s/F = 0.0"]
    assert list(numbers_where_na({"strata": {"1": {"metrics": {"CL-Score": None}}}})) == []
    assert list(numbers_where_na({"F": {"a": None, "ci": [0.1, 0.2]}})) == ["F/ci/0 = 0.1", "F/ci/1 = 0.2"]
    assert list(numbers_where_na({"snapshot": {"initial": 0.5, "final": 0.5}})) == ["snapshot/final = 0.5"]
    one_task = {"n_tasks": 1, "metrics": {"F": 0.0}, "unmeasured": {}}
    assert list(numbers_where_na({"strata": {"3": one_task}})) == []


def base_entries(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [v for v in doc["versions"] if v["version"] in (BASE, BASE2)]


def test_metrics_json_of_a_base_run_is_null_where_the_table_prints_na(root: Path) -> None:
    doc = json.loads(invoke(metrics_cmd, root, "--json"))
    entries = base_entries(doc)
    assert len(entries) == 2
    for entry in entries:
        assert list(numbers_where_na(entry)) == []
        assert entry["unmeasured"] == UNMEASURED
        assert set(entry["unmeasured_by_sequence"]) == {DJANGO, SYMPY}
        assert entry["macro"]["ACC"] is not None  # measured values stay numbers
        strata = entry["extras"][DJANGO]["strata"]
        assert any(s["n_tasks"] > 1 for s in strata.values())
        assert all(s["unmeasured"]["F"] == "no re-test pass" for s in strata.values() if s["n_tasks"] > 1)
    # The measured run keeps its numbers (the walk is not vacuous).
    plugin = next(v for v in doc["versions"] if v["version"] == PLUGIN)
    assert plugin["unmeasured"] == {} and plugin["macro"]["F"] is not None
    assert list(numbers_where_na(plugin)) != []
    grouped = json.loads(invoke(metrics_cmd, root, "--group", "--json"))
    for group in grouped["groups"]:
        if group["stage"] == "base":
            assert list(numbers_where_na(group)) == []
            assert group["macro"]["F"]["unmeasured"] == "no re-test pass"


def test_compare_json_of_base_runs_is_null_where_the_table_prints_na(root: Path) -> None:
    both = json.loads(invoke(compare_cmd, root, BASE, BASE2, "--json", "--resamples", "200"))
    assert list(numbers_where_na(both)) == []
    # Against a run that measured everything, only that run's own value is a number.
    doc = json.loads(invoke(compare_cmd, root, BASE, PLUGIN, "--json", "--resamples", "200"))
    rows = [doc["macro"], *doc["sequences"].values()]
    for row in rows:
        for metric in ("F", "FWT", "CL-Score"):
            m = row["metrics"][metric]
            assert m["a"] is None and m["diff"] is None and m["ci"] is None, (metric, m)
            assert m["b"] is not None and m["unmeasured"]["a"] == UNMEASURED[metric].split(" (")[0]


def test_runs_export_replay_and_report_data_hold_no_convention(root: Path, tmp_path: Path) -> None:
    assert list(numbers_where_na(json.loads(invoke(runs_cmd, root, "--json")))) == []
    events = invoke(export_cmd, root, BASE, "--format", "events", "--out", "-")
    assert all(list(numbers_where_na(json.loads(line))) == [] for line in events.splitlines())
    results = Results(root)
    with results.open_ledger(readonly=True) as ledger:
        doc = replay_metrics_document(replay_state(ledger, BASE, 3))
        data = collect(ledger, results.projector(ledger), [BASE, BASE2])
    assert list(numbers_where_na(doc)) == []
    assert doc["formulas"]["native"]["unmeasured"]["F"] == "no re-test pass"
    report = msgspec.to_builtins(data)
    assert list(numbers_where_na(report)) == []
    # The walk reached the metrics (not vacuous): the measured ACC is there.
    assert report["versions"][0]["result"]["macro"]["ACC"] is not None


@pytest.mark.parametrize("formula", ["native", "eval-v1"])
def test_metrics_json_and_replay_write_one_result_document(root: Path, formula: str) -> None:
    """`swecl metrics --json --as-of-order K` and a replay up to K hold the same result,
    key for key, macro_counts included (one `result_document` writes both)."""
    results = Results(root)
    for version in (BASE, PLUGIN):
        doc = json.loads(invoke(metrics_cmd, root, "--json", "--version", version, "--as-of-order", "3",
                                "--formula", formula))
        with results.open_ledger(readonly=True) as ledger:
            replayed = json.loads(json.dumps(replay_metrics_document(replay_state(ledger, version, 3))))
        entry, of_replay = doc["versions"][0], replayed["formulas"][formula]
        assert {k: doc[k] for k in ("formula", "formula_version", "lambdas")} == {
            k: of_replay.pop(k) for k in ("formula", "formula_version", "lambdas")}
        assert {k: entry[k] for k in of_replay} == of_replay
        assert set(of_replay["macro_counts"]) == set(METRIC_NAMES)
