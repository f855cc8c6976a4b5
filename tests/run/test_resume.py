"""Resumable runs: a kill at a task boundary or in the middle of a task loses nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.crashkit import metrics_doc
from tests.shared_runs import PREFIX_TASKS, RUNS, copy_of, demo_run_copy, shared_run

from .support import events, finished_cells, swecl, swecl_json

pytestmark = pytest.mark.slow

# plugin-blank over the spans sequence's first four tasks as version `1`: the session's
# shared "blank-prefix" run, uninterrupted. Four tasks are enough for what is killed and
# resumed here: memory written by one task and recalled by the next, all three passes.
R = "1"
ARGS = ("run", *RUNS["blank-prefix"], "--quiet")
TASKS = PREFIX_TASKS


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> dict:
    """The same run, never interrupted."""
    return metrics_doc(demo_run_copy(tmp_path_factory, cache, "blank-prefix"), R, cache)


def killed_then_resumed(results: Path, cache: Path, failpoint: str) -> None:
    proc = swecl(results, *ARGS, cache=cache, env={"SWECL_FAILPOINTS": failpoint}, check=False)
    assert proc.returncode == -9, (proc.returncode, proc.stderr)  # SIGKILL: no chance to clean up
    runs = swecl_json(results, "runs", cache=cache)
    assert runs[0]["status"] == "interrupted"
    swecl(results, "run", "--resume", R, "--quiet", cache=cache)


def assert_complete_and_identical(results: Path, cache: Path, reference: dict) -> None:
    cells = finished_cells(results, R)
    assert len(cells) == len(set(cells)) == 3 * TASKS  # no task lost, none finished twice
    assert metrics_doc(results, R, cache) == reference  # the scores; what was spent differs (see metrics_doc)
    assert swecl_json(results, "runs", cache=cache)[0]["status"] == "finished"
    assert "ledger OK" in swecl(results, "verify", cache=cache).stdout


def test_resume_after_a_kill_at_a_task_boundary(tmp_path: Path, cache: Path, reference: dict) -> None:
    killed_then_resumed(tmp_path, cache, "task.finished:3")
    assert_complete_and_identical(tmp_path, cache, reference)
    assert events(tmp_path, "task.abandoned") == []  # nothing was in flight
    (resumed,) = events(tmp_path, "run.resumed")
    assert resumed[3]["attempt"] == 2


def test_resume_after_a_kill_in_the_middle_of_a_task(tmp_path: Path, cache: Path, reference: dict) -> None:
    killed_then_resumed(tmp_path, cache, "agent.finished:4")
    assert_complete_and_identical(tmp_path, cache, reference)
    (abandoned,) = [p for _, _, _, p in events(tmp_path, "task.abandoned")]
    assert (abandoned["pass"], abandoned["order"], abandoned["attempt"]) == ("initial", 4, 1)
    redone = [p for _, _, _, p in events(tmp_path, "task.finished") if p["order"] == 4 and p["pass"] == "initial"]
    assert [p["attempt"] for p in redone] == [2]
    # the abandoned attempt wrote no lessons: every memory item comes from a finished attempt
    finished = {(p["order"], p["attempt"]) for _, _, _, p in events(tmp_path, "task.finished") if p["pass"] == "initial"}
    written = {(p["source_order"], p["item_id"]) for _, _, _, p in events(tmp_path, "memory.written")}
    assert written and all(any(o == order for o, _ in finished) for order, _ in written)


def test_resume_after_a_kill_in_the_retest_pass(tmp_path: Path, cache: Path, reference: dict) -> None:
    # every initial task, then the 3rd retest task
    killed_then_resumed(tmp_path, cache, f"grade.finished:{TASKS + 3}")
    assert_complete_and_identical(tmp_path, cache, reference)
    (abandoned,) = [p for _, _, _, p in events(tmp_path, "task.abandoned")]
    assert (abandoned["pass"], abandoned["order"]) == ("retest", 3)


def test_a_finished_run_resumes_to_a_no_op(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, cache: Path, reference: dict,
) -> None:
    results = copy_of(shared_run(tmp_path_factory, cache, "blank-prefix"), tmp_path / "results")  # a finished run
    before = len(events(results, "task.started"))
    swecl(results, "run", "--resume", R, "--quiet", cache=cache)
    assert len(events(results, "task.started")) == before
    assert_complete_and_identical(results, cache, reference)


def test_json_progress_while_resuming(tmp_path: Path, cache: Path, reference: dict) -> None:
    swecl(tmp_path, *ARGS, cache=cache, env={"SWECL_FAILPOINTS": "task.finished:5"}, check=False)
    out = swecl(tmp_path, "run", "--resume", R, "--json", cache=cache).stdout
    lines = [json.loads(line) for line in out.splitlines()]
    kinds = [line["event"] for line in lines]
    assert kinds[0] == "run_started" and kinds[-2:] == ["run_finished", "summary"]
    summary = lines[-1]
    assert summary["versions"][0]["version"] == R and "CL-Score" in summary["versions"][0]["macro"]
    assert summary["version_dirs"][R].endswith(f"v{R}") and summary["ledger"].endswith("ledger.db")
    finished = [line for line in lines if line["event"] == "task_finished"]
    assert len(finished) == 3 * TASKS - 5  # only what was left
    assert all({"sequence", "pass", "order", "status", "resolve_rate"} <= set(line) for line in finished)
