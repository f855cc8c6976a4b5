"""`python -m bench --quick --json` runs every benchmark and reports each one's number.

Whether targets are met is for the benchmarks to say, not for this test: it checks the
shape of the report and that every benchmark produced a value.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

KEYS = {"name", "value", "unit", "ratio", "target", "ok"}
GROUPS = ("append_", "rebuild_", "replay_", "catchup_", "peak_memory_", "grading_", "parallel_passes_", "matrix_",
          "provider_", "demo_suite_")


@pytest.mark.slow
def test_quick_run_reports_every_benchmark(tmp_path: Path) -> None:
    results_dir = tmp_path / "results"
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--json",
         "--results-dir", str(results_dir), "--cache-dir", str(tmp_path / "cache")],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    doc = json.loads(done.stdout)
    results = doc["results"]
    assert results, "no results"
    for row in results:
        assert set(row) == KEYS, row
        assert isinstance(row["name"], str) and row["name"]
        assert isinstance(row["value"], (int, float)), row
        assert isinstance(row["unit"], str) and row["unit"], row
        assert row["ratio"] is None or isinstance(row["ratio"], (int, float)), row
        assert row["ok"] in (True, False, None), row
    names = [row["name"] for row in results]
    assert len(names) == len(set(names)), names
    for group in GROUPS:
        assert any(n.startswith(group) for n in names), (group, names)
    if importlib.util.find_spec("eventsourcing") is not None:
        assert all(row["ratio"] is not None for row in results if row["name"].startswith("append_")), results
    assert doc["meta"]["quick"] is True
    assert json.loads((results_dir / "quick.json").read_text())["results"] == results
    assert not (results_dir / "latest.json").exists()  # a quick run never replaces the full results
