"""`python -m bench --quick --only provider`: the memory-server overhead benchmark runs
on the real reference server and reports its four numbers (whether the targets are met
is for the benchmark to say, not for this test)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.agents.conftest import server_memory_bin  # noqa: F401  (the session fixture: npm-installed server)
from tests.conftest import REPO_ROOT


def test_quick_provider_benchmark_reports_call_overhead_and_snapshot_times(
    tmp_path: Path, server_memory_bin: str  # noqa: F811
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--only", "provider", "--json",
         "--results-dir", str(tmp_path / "results"), "--cache-dir", str(tmp_path / "cache")],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "SWECL_SERVER_MEMORY_BIN": server_memory_bin},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    doc = json.loads(done.stdout)
    rows = {row["name"]: row for row in doc["results"]}
    assert set(rows) == {"provider_call_overhead_median", "provider_call_overhead_p95",
                         "provider_snapshot_cold", "provider_snapshot_unchanged", "provider_snapshot_cold_text",
                         "provider_snapshot_changed_jsonl", "provider_snapshot_changed_pages"}
    for row in rows.values():
        assert row["unit"] == "ms" and isinstance(row["value"], (int, float)) and row["ok"] in (True, False)
        assert isinstance(row["ratio"], (int, float)) and row["ratio"] > 0
    assert rows["provider_call_overhead_median"]["target"] == "value <= 5 ms"
    details = doc["details"]["provider"]
    assert "server-memory" in details["server"] and details["calls_each_way"] == 20
    # Each side's median is a positive time, and the overhead row is their difference.
    direct, proxied = details["direct_ms"]["median"], details["proxied_ms"]["median"]
    assert direct > 0 and proxied > 0
    assert abs(rows["provider_call_overhead_median"]["value"] - (proxied - direct)) < 0.01 + 1e-3 * abs(proxied - direct)
    assert details["snapshot_bytes"] == 2 * 1024 * 1024 and len(details["snapshot_cold_ms"]) == 2
    assert json.loads((tmp_path / "results" / "quick.json").read_text())["results"] == doc["results"]
