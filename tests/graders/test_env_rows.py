"""`environment_setup_commit` travels from a SWE-bench row to the grade request."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from commands.inputs import load_benchmark
from commands.inputs._load import dump_curriculum, write_curriculum
from commands.inputs._rows import read_rows, row_fields
from commands.run import _task
from graders import GradeRequest
from tests.graders.exec_support import F2P, GOLD_PATCH, P2P, REPO, TEST_PATCH

SETUP = "5" * 40


def _rows(tmp_path: Path) -> Path:
    rows = [
        {
            "instance_id": f"acme__calc-{i}", "repo": REPO, "base_commit": f"{i}" * 40, "patch": GOLD_PATCH,
            "test_patch": TEST_PATCH, "problem_statement": "clamp ignores hi", "version": "0.1",
            "created_at": f"2020-01-0{i}T00:00:00Z", "FAIL_TO_PASS": json.dumps(F2P), "PASS_TO_PASS": json.dumps(P2P),
            "environment_setup_commit": SETUP if i < 3 else None,
        }
        for i in range(1, 4)
    ]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


class _Stop(Exception):
    pass


def test_the_setup_commit_reaches_the_grade_request(tmp_path: Path) -> None:
    path = _rows(tmp_path)
    rows, _ = read_rows(str(path))
    assert [row_fields(r)["environment_setup_commit"] for r in rows] == [SETUP, SETUP, None]
    curriculum = tmp_path / "curriculum.json"
    curriculum.write_text(json.dumps({"sequences": [{
        "id": "calc", "repo": REPO, "tasks": [
            {"metadata": {"instance_id": f"acme__calc-{i}", "base_commit": f"{i}" * 40},
             "continual_learning": {"sequence_position": i, "difficulty_score": 1}}
            for i in range(1, 4)
        ]}]}), encoding="utf-8")
    bench = load_benchmark(str(curriculum), rows=str(path))
    tasks = bench.tasks()
    assert [t.environment_setup_commit for t in tasks] == [SETUP, SETUP, None]
    # a task without one hashes as before the field existed
    assert "environment_setup_commit" not in tasks[2].to_dict()
    # a written curriculum keeps it
    again = load_benchmark(str(write_curriculum(bench, tmp_path / "out.json")))
    assert [t.environment_setup_commit for t in again.tasks()] == [SETUP, SETUP, None]
    assert again.content_hash == bench.content_hash
    assert dump_curriculum(bench)["sequences"][0]["tasks"][0]["metadata"]["environment_setup_commit"] == SETUP

    seen: list[GradeRequest] = []

    class Recorder:
        name = "recorder"

        def grade(self, req: GradeRequest) -> None:
            seen.append(req)
            raise _Stop

    ctx = SimpleNamespace(grader=Recorder(), grader_name="recorder", p2p_excluded={})
    for task in tasks:
        with pytest.raises(_Stop):
            _task._grade(ctx, task, "main", 1, GOLD_PATCH)  # type: ignore[arg-type]
    assert [r.environment_setup_commit for r in seen] == [SETUP, SETUP, None]
    assert seen[0].base_commit == "1" * 40
