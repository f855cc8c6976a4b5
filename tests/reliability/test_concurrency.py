"""Several swecl processes on one results directory at once: writers, readers, racers.

`tests/ledger/test_concurrency.py` covers the raw store (interleaved appends, a version
race between bare `Ledger.append`s). Here the racers are whole `swecl` commands.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.crashkit import live_memory, metrics_doc, run_invariants
from bench.processes import SPANS, LedgerWatch, kill_all, read_events, spawn, swecl_argv
from tests.inprocess import swecl

from .conftest import INITIAL_ARGS
from .support import assert_clean_refusal

pytestmark = pytest.mark.slow

FIRST_SPANS_TASK = "swecl-demo__spans-8"


def test_two_runs_of_different_stages_and_readers_share_one_ledger(
    tmp_path: Path, cache: Path, reference_initial: Path
) -> None:
    results = tmp_path / "results"
    swecl(results, "init", cache=cache)
    runs = [
        spawn(swecl_argv(results, "run", *INITIAL_ARGS, "--version", "blank", "--quiet"),
              cache=cache, log=tmp_path / "blank.log"),
        spawn(swecl_argv(results, "run", "--stage", "base", "--sequence", SPANS, "--version", "base", "--quiet"),
              cache=cache, log=tmp_path / "base.log"),
    ]
    reads = 0
    try:
        for version, proc in zip(("blank", "base"), runs, strict=True):
            watch = LedgerWatch(results / "ledger.db", version)
            watch.wait_for("run.started", proc)
            watch.close()
        # readers alongside the writers: every answer is complete JSON, never an error
        while any(p.poll() is None for p in runs):
            for args in (("metrics", "--json"), ("runs", "--json"), ("log", "--json", "--type", "task.finished")):
                done = swecl(results, *args, cache=cache, check=False)
                assert done.returncode == 0, f"swecl {' '.join(args)} while runs write: {done.stderr}"
                lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
                assert lines or args[0] == "log"
                reads += 1
    finally:
        for p in runs:
            if p.poll() is None:
                kill_all(p)
    logs = [(tmp_path / f"{name}.log").read_text(errors="replace") for name in ("blank", "base")]
    assert [p.returncode for p in runs] == [0, 0], logs
    assert reads >= 3
    assert run_invariants(results, "blank") == [] and run_invariants(results, "base") == []
    assert metrics_doc(results, "blank", cache) == metrics_doc(reference_initial, "ref", cache)
    assert live_memory(results, "blank") == live_memory(reference_initial, "ref")
    # the base run equals one made afterwards with the ledger to itself
    swecl(results, "run", "--stage", "base", "--sequence", SPANS, "--version", "alone", "--quiet", cache=cache)
    assert metrics_doc(results, "base", cache) == metrics_doc(results, "alone", cache)
    assert swecl(results, "verify", cache=cache).stdout.startswith("ledger OK")


def test_two_runs_claiming_the_same_version_one_wins_the_loser_writes_nothing(tmp_path: Path, cache: Path) -> None:
    results = tmp_path / "results"
    swecl(results, "init", cache=cache)
    argv = swecl_argv(results, "run", "--stage", "base", "--sequence", SPANS, "--instance", FIRST_SPANS_TASK,
                      "--version", "same", "--quiet")
    procs = [spawn(argv, cache=cache, log=tmp_path / f"racer{i}.log") for i in range(2)]
    for p in procs:
        p.wait(timeout=300)
    outcomes = sorted(p.returncode for p in procs)
    assert outcomes == [0, 2], outcomes
    loser = next(i for i, p in enumerate(procs) if p.returncode == 2)
    err = (tmp_path / f"racer{loser}.log").read_text()
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == (
        f"swecl: error: run version 'same' already exists in {results / 'ledger.db'}: pick another --version, "
        "or continue it with `swecl run --resume same`"
    )
    header = [e["type"] for e in read_events(results, prefix="run/same") if e["stream"] == "run/same"]
    assert header == ["run.started", "run.finished"]
    assert run_invariants(results, "same") == []


def test_concurrent_runs_without_a_version_get_distinct_ones(tmp_path: Path, cache: Path) -> None:
    results = tmp_path / "results"
    swecl(results, "init", cache=cache)
    argv = swecl_argv(results, "run", "--stage", "base", "--sequence", SPANS, "--instance", FIRST_SPANS_TASK, "--quiet")
    procs = [spawn(argv, cache=cache, log=tmp_path / f"auto{i}.log") for i in range(3)]
    for p in procs:
        p.wait(timeout=300)
    assert [p.returncode for p in procs] == [0, 0, 0], [(tmp_path / f"auto{i}.log").read_text() for i in range(3)]
    rows = json.loads(swecl(results, "runs", "--json", cache=cache).stdout)
    assert sorted(r["version"] for r in rows) == ["1", "2", "3"]
    for version in ("1", "2", "3"):
        assert run_invariants(results, version) == []


def test_resume_of_a_running_run_is_refused_and_writes_nothing(tmp_path: Path, cache: Path) -> None:
    results = tmp_path / "results"
    runner = spawn(swecl_argv(results, "run", *INITIAL_ARGS, "--version", "busy", "--quiet"), cache=cache,
                   log=tmp_path / "busy.log")
    watch = LedgerWatch(results / "ledger.db", "busy")
    try:
        watch.wait_for("task.finished", runner)
        before = [e["event_id"] for e in read_events(results, prefix="run/busy") if e["stream"] == "run/busy"]
        refused = swecl(results, "run", "--resume", "busy", "--quiet", cache=cache, check=False)
        assert assert_clean_refusal(refused) == "swecl: error: run busy is being run by another process right now"
        after = [e for e in read_events(results, prefix="run/busy") if e["stream"] == "run/busy"]
        # The run's header stream gained nothing from the refused resume (no run.resumed).
        # The running run may have finished meanwhile (its own run.finished): on a loaded
        # machine the refused process can take longer to start than the run's last tasks.
        assert [e["event_id"] for e in after[: len(before)]] == before
        assert [e["type"] for e in after[len(before):] if e["type"] != "run.finished"] == []
    finally:
        watch.close()
        runner.wait(timeout=300)
    assert runner.returncode == 0
    assert run_invariants(results, "busy") == []
