"""`swecl grade`: SWE-bench-style predictions graded and recorded as a run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from commands.inputs import load_benchmark
from commands.inputs.demo import write_demo_curriculum

from .support import swecl, swecl_json

pytestmark = pytest.mark.slow


def test_grade_predictions_with_the_swebench_report_keys(tmp_path: Path, cache: Path) -> None:
    dataset = write_demo_curriculum(tmp_path / "demo.json")
    tasks = {t.instance_id: t for t in load_benchmark(str(dataset)).tasks()}
    gold, wrong, empty = "swecl-demo__spans-8", "swecl-demo__spans-12", "swecl-demo__spans-19"
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text(
        "\n".join(
            json.dumps({"instance_id": iid, "model_name_or_path": "test", "model_patch": patch})
            for iid, patch in (
                (gold, tasks[gold].patch),
                (wrong, tasks[gold].patch),  # a fix for another task: applies or not, never resolves
                (empty, ""),
            )
        )
        + "\n"
    )
    results = tmp_path / "results"
    report = json.loads(swecl(results, "grade", "--dataset", str(dataset), "--predictions", str(predictions), "--json",
                              cache=cache).stdout)
    for key in ("total_instances", "submitted_instances", "completed_instances", "resolved_instances",
                "unresolved_instances", "empty_patch_instances", "error_instances", "resolved_ids",
                "unresolved_ids", "empty_patch_ids", "error_ids", "statuses"):
        assert key in report
    assert report["resolved_ids"] == [gold]
    assert report["empty_patch_ids"] == [empty]
    assert report["statuses"][wrong] in ("unresolved", "patch_failed")
    assert report["submitted_instances"] == 3
    (run,) = swecl_json(results, "runs", cache=cache)
    assert (run["agent"], run["stage"], run["resolved"]) == ("predictions", "base", {"initial": 1})


def test_predictions_naming_unknown_tasks_are_refused(tmp_path: Path, cache: Path) -> None:
    dataset = write_demo_curriculum(tmp_path / "demo.json")
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text(json.dumps({"instance_id": "nobody__x-1", "model_name_or_path": "t", "model_patch": ""}) + "\n")
    proc = swecl(tmp_path / "r", "grade", "--dataset", str(dataset), "--predictions", str(predictions), cache=cache,
                 check=False)
    assert proc.returncode == 2 and "nobody__x-1" in proc.stderr and proc.stderr.count("\n") == 1
