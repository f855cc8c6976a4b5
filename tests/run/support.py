"""Running the real `swecl` CLI in subprocesses against real ledgers, as users do.

The runner itself is `bench.processes` (the benchmarks use it too); this adds the
shapes the run tests read events in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.processes import INICONF, REPO_ROOT, SPANS, TEXTKIT, read_events, swecl, swecl_json
from commands.inputs import demo_benchmark, find_sequence

__all__ = ["INICONF", "REPO_ROOT", "SPANS", "TEXTKIT", "demo_tasks", "events", "finished_cells", "swecl", "swecl_json"]


def demo_tasks(sequence_id: str) -> int:
    """How many tasks a demo sequence has (read from the benchmark, not repeated in tests)."""
    return len(find_sequence(demo_benchmark(materialise=False), sequence_id).tasks)


def events(results: Path, *types: str) -> list[tuple[int, str, str, dict[str, Any]]]:
    """(seq, stream, type, payload) straight from the SQLite file, read-only."""
    return [
        (e["seq"], e["stream"], e["type"], e["payload"])
        for e in read_events(results)
        if not types or e["type"] in types
    ]


def finished_cells(results: Path, version: str) -> list[tuple[str, str, int]]:
    """(sequence, pass, order) of every task.finished of a run, with repeats kept."""
    prefix = f"run/{version}/"
    return [
        (p["sequence_id"], p["pass"], p["order"])
        for _, stream, _, p in events(results, "task.finished")
        if stream.startswith(prefix)
    ]
