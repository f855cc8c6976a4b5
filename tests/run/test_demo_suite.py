"""`swecl run` with no arguments: the built-in demo benchmark end to end, four stages."""

from __future__ import annotations

from pathlib import Path

import pytest

from .support import events, swecl, swecl_json

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> tuple[Path, str]:
    results = tmp_path_factory.mktemp("demo-suite")
    proc = swecl(results, "run", cache=cache, timeout=900)
    return results, proc.stdout


def test_runs_four_stages_each_its_own_version(suite: tuple[Path, str], cache: Path) -> None:
    results, stdout = suite
    runs = swecl_json(results, "runs", cache=cache)
    assert [r["stage"] for r in runs] == ["base", "plugin-blank", "plugin-accum", "plugin-dreamed"]
    assert len({r["version"] for r in runs}) == 4
    assert {r["status"] for r in runs} == {"finished"}
    assert all(set(r) >= {"version", "stage", "sequences", "agent", "status", "resolved"} for r in runs)
    base, blank, accum, dreamed = runs
    assert set(base["resolved"]) == {"initial"}
    assert set(blank["resolved"]) == {"initial", "retest", "baseline"}
    # the seeded stages are seeded from plugin-blank, through the ledger
    assert accum["seeded_from"] == blank["version"] and dreamed["seeded_from"] == blank["version"]
    # what the run prints: the metrics table and where things are
    assert "CL metrics" in stdout and "macro" in stdout
    assert str(results / "ledger.db") in stdout


def test_memory_on_resolves_strictly_more_than_base_and_the_metrics_show_it(suite: tuple[Path, str], cache: Path) -> None:
    results, _ = suite
    runs = {r["stage"]: r for r in swecl_json(results, "runs", cache=cache)}
    assert runs["plugin-blank"]["resolved"]["initial"] > runs["base"]["resolved"]["initial"]
    doc = swecl_json(results, "metrics", cache=cache)
    macro = {v["stage"]: v["macro"] for v in doc["versions"]}
    assert macro["plugin-blank"]["CL-P"] > macro["base"]["CL-P"]
    assert macro["plugin-blank"]["ACC"] > macro["base"]["ACC"]
    # memory-on vs memory-off inside the plugin run: forward transfer is positive
    assert macro["plugin-blank"]["FWT"] > 0


def test_plugin_dreamed_shows_dream_events_before_its_initial_pass(suite: tuple[Path, str], cache: Path) -> None:
    results, _ = suite
    dreamed = next(r for r in swecl_json(results, "runs", cache=cache) if r["stage"] == "plugin-dreamed")
    v = dreamed["version"]
    mine = [(seq, stream, type_) for seq, stream, type_, _ in events(results) if stream.split("/")[:2] == ["run", v]]
    first_task = min(seq for seq, _, t in mine if t == "task.started")
    kinds_before = [t for seq, _, t in mine if seq < first_task]
    assert kinds_before[:2] == ["run.started", "memory.seeded"]
    assert "dream.started" in kinds_before and "dream.finished" in kinds_before


def test_every_task_finished_exactly_once_and_the_ledger_verifies(suite: tuple[Path, str], cache: Path) -> None:
    results, _ = suite
    cells = [(s.split("/")[1], p["sequence_id"], p["pass"], p["order"]) for _, s, _, p in events(results, "task.finished")]
    assert len(cells) == len(set(cells)) == 21 + 3 * 63
    assert "ledger OK" in swecl(results, "verify", cache=cache).stdout
    for r in swecl_json(results, "runs", cache=cache)[1:]:
        memory = results / f"v{r['version']}" / "_memory"
        assert (memory / "memory.db").is_file() and (memory / "graph.db").is_file()
        assert any((memory / ".cookbook-memory").glob("*.md"))
