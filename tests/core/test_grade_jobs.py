"""The grading jobs of `Experiment`, called in-process: `grade` of real predictions on the
demo's real repositories (real git, venvs, pytest in bubblewrap), `regrade` of what it
recorded, `verdict` on real official SWE-bench logs, and the documents against what the
CLI prints for the same ledger or input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from commands import Experiment
from commands._jobs_grade import GradeReport, NothingGraded
from commands.cli import cli
from commands.inputs import load_benchmark
from commands.inputs.demo import write_demo_curriculum
from ledger import SweclError
from projections import pass_statuses

pytestmark = pytest.mark.slow

GOLD, EMPTY = "swecl-demo__spans-8", "swecl-demo__spans-19"


def _cli(*args: str) -> Result:
    done = CliRunner().invoke(cli, list(args))
    assert done.exit_code == 0, (done.stdout, done.stderr, done.exception)
    return done


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> tuple[Path, GradeReport]:
    """One real grade: the gold patch of one demo task and an empty patch for another."""
    tmp = tmp_path_factory.mktemp("grade-jobs")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SWECL_CACHE", str(cache))  # the demo repositories and environments, shared with other tests
        dataset = write_demo_curriculum(tmp / "demo.json")
        tasks = {t.instance_id: t for t in load_benchmark(str(dataset)).tasks()}
        predictions = tmp / "preds.jsonl"
        predictions.write_text("".join(
            json.dumps({"instance_id": iid, "model_name_or_path": "test", "model_patch": patch}) + "\n"
            for iid, patch in ((GOLD, tasks[GOLD].patch), (EMPTY, ""))))
        results = tmp / "results"
        report = Experiment(results).grade(predictions=predictions, dataset=str(dataset), version="graded")
    return results, report


def test_grade_records_a_run_and_returns_swebench_s_report(graded: tuple[Path, GradeReport]) -> None:
    results, report = graded
    assert report.version == "graded" and report.statuses == {GOLD: "resolved", EMPTY: "empty_patch"}
    doc = report.document()
    assert (doc["resolved_ids"], doc["empty_patch_ids"], doc["submitted_instances"]) == ([GOLD], [EMPTY], 2)
    assert doc["version"] == "graded" and report.not_the_patch == []
    report.check()  # something was graded: no error
    # what the CLI reads back from the ledger agrees
    (run,) = json.loads(_cli("--results", str(results), "runs", "--json").stdout)
    assert (run["version"], run["agent"], run["resolved"]) == ("graded", "predictions", {"initial": 1})


def test_regrade_of_what_grade_recorded_keeps_every_verdict(graded: tuple[Path, GradeReport]) -> None:
    results, report = graded
    exp = Experiment(results)
    again = exp.regrade(version=report.version)
    assert again.corrected == [] and again.examined == 1 and again.skipped == 1  # the empty patch has no log
    with exp.reading() as r:
        assert pass_statuses(r.ledger, r.projector, report.version) == report.statuses
    # the CLI says the same of the same ledger
    assert _cli("--results", str(results), "regrade", report.version).stdout.splitlines() == again.lines()


def test_a_regrade_of_no_such_run_is_a_one_line_error(graded: tuple[Path, GradeReport]) -> None:
    results, _ = graded
    with pytest.raises(SweclError, match="^no run version 'nope' in "):
        Experiment(results).regrade(version="nope")


def test_nothing_graded_is_said_after_the_report() -> None:
    report = GradeReport(version="1", submitted=["a__b-1"], statuses={"a__b-1": "infra_error"},
                         reasons={"a__b-1": "checkout failed"})
    assert report.not_the_patch == [("a__b-1", "infra_error", "checkout failed")]
    assert report.document()["error_ids"] == ["a__b-1"]
    with pytest.raises(NothingGraded, match=r"^nothing could be graded: all 1 instance\(s\) ended in errors"):
        report.check()


def test_verdict_on_official_logs_agrees_with_their_reports_and_the_cli(shared: Path, tmp_path: Path) -> None:
    root = shared / "data" / "swebench-logs"
    index = [e for e in json.loads((root / "INDEX.json").read_text()) if e["patch_successfully_applied"]]
    picked = [next(e for e in index if e["resolved"]), next(e for e in index if not e["resolved"])]
    lines = []
    expected = {}
    for entry in picked:
        report = json.loads((root / entry["dir"] / "report.json").read_text())[entry["instance_id"]]
        status = report["tests_status"]
        lines.append({
            "instance_id": entry["instance_id"], "repo": entry["repo"], "test_cmd": entry["test_cmd"],
            "log_path": str(root / entry["dir"] / "test_output.txt"),
            "FAIL_TO_PASS": status["FAIL_TO_PASS"]["success"] + status["FAIL_TO_PASS"]["failure"],
            "PASS_TO_PASS": status["PASS_TO_PASS"]["success"] + status["PASS_TO_PASS"]["failure"],
        })
        expected[entry["instance_id"]] = report["resolved"]
    source = tmp_path / "logs.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    verdicts = Experiment(tmp_path / "unused").verdict(input_path=source)
    assert {row["instance_id"]: row["resolved"] for row in verdicts.rows} == expected
    assert verdicts.resolved == sum(expected.values())
    printed = _cli("verdict", "--input", str(source), "--json").stdout.splitlines()
    assert [json.loads(line) for line in printed] == json.loads(json.dumps(verdicts.document()))
    assert not (tmp_path / "unused").exists()  # a verdict reads no results folder


def test_env_jobs_on_an_empty_cache_agree_with_the_cli(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    exp = Experiment(tmp_path / "results")
    listing = exp.env_list(cache_dir=str(cache))
    assert listing.document() == [] and listing.cache == cache
    assert _cli("env", "list", "--cache-dir", str(cache)).stdout == f"no environments in {cache}\n"
    pruned = exp.env_prune(cache_dir=str(cache), dry_run=True)
    assert pruned.removed == [] and pruned.dry_run
    assert _cli("env", "prune", "--cache-dir", str(cache), "--dry-run").stdout == "would remove 0 environment(s)\n"
