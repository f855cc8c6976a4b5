"""`swecl export V --format atif`: one ATIF trajectory per attempt of a demo run, held to
Harbor's published models (`tests.atif_check`), with the recalls swecl recorded as steps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench.processes import swecl
from ledger import Ledger
from projections import atif_trajectories
from tests.atif_check import AtifValidator
from tests.shared_runs import demo_run_copy


@pytest.fixture(scope="module")
def prefix_run(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    """plugin-blank over spans' first four tasks, every pass: recalls from task 2 on."""
    return demo_run_copy(tmp_path_factory, cache, "blank-prefix")


def test_every_attempt_is_a_valid_trajectory_with_its_recalls_and_outcome(
    prefix_run: Path, tmp_path: Path, cache: Path, atif_validator: AtifValidator,
) -> None:
    out = tmp_path / "atif"
    result = swecl(prefix_run, "export", "1", "--format", "atif", "--out", str(out), cache=cache)
    files = sorted(p for p in out.rglob("*.json") if p.name != "index.json")
    assert f"exported {len(files)} trajectory file(s) of v1" in result.stdout
    assert atif_validator.errors(files) == {}
    with Ledger.open(prefix_run / "ledger.db", readonly=True) as ledger:
        pairs = atif_trajectories(ledger, "1")
        attempts = [r for r in ledger.read(types=["task.started"])]
    # one file per attempt the ledger recorded, every pass, named by sequence and order
    assert len(pairs) == len(attempts) == len(files)
    assert {name for name, _ in pairs} == {str(p.relative_to(out)) for p in files}
    passes = {t["extra"]["swecl"]["pass"] for _, t in pairs}
    assert {"initial", "retest", "baseline"} <= passes
    index = json.loads((out / "index.json").read_text())
    assert [e["file"] for e in index["trajectories"]] == [name for name, _ in pairs]
    for name, trajectory in pairs:
        assert trajectory["agent"]["name"] == "demo"
        assert trajectory["schema_version"].startswith("ATIF-v1.")
        mark = trajectory["extra"]["swecl"]
        assert name.startswith(f"{mark['sequence_id']}/{mark['order']:04d}-{mark['instance_id']}-{mark['pass']}-")
        assert isinstance(mark["resolved"], bool) and mark["status"]
        assert trajectory["final_metrics"]["total_steps"] == len(trajectory["steps"])
        assert trajectory["final_metrics"]["total_cost_usd"] == 0.0
    # the recalls of the initial pass from task 2 on are steps, marked as swecl's memory
    initial = [t for _, t in pairs if t["extra"]["swecl"]["pass"] == "initial"]
    recall_steps = [s for t in initial for s in t["steps"] if s.get("extra", {}).get("swecl_memory")]
    assert recall_steps and all(s["source"] == "system" for s in recall_steps)
    assert {s["extra"]["swecl_memory"]["type"] for s in recall_steps} == {"memory.recalled"}
    assert any(s.get("observation", {}).get("results") for s in recall_steps)  # the items it found
    # the demo's tool log (text) keeps the tool calls agent.finished counted, with their results
    calls = [c for t in initial for s in t["steps"] for c in s.get("tool_calls", [])]
    assert "recall" in {c["function_name"] for c in calls} <= {"recall", "apply_check", "apply"}


def test_bad_input_is_one_line_and_non_zero(prefix_run: Path, tmp_path: Path, cache: Path) -> None:
    for args, said in (
        (("export", "9", "--format", "atif", "--out", str(tmp_path / "o")), "no run version '9'"),
        (("export", "1", "--format", "atif", "--out", "-"), "--format atif writes a directory"),
    ):
        result = swecl(prefix_run, *args, cache=cache, check=False)
        assert result.returncode != 0
        assert said in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not (tmp_path / "o").exists()
