"""Crash safety with `--task-jobs 3`: the whole process group SIGKILLed while several
tasks of an order-free pass are in flight at once (the baseline beside the initial pass,
then the re-test's tasks together), resumed each time; the run ends as the serial,
uninterrupted run of the same tasks did (the spans sequence's first four: three passes
of four tasks keep three workers busy at once)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import apsw
import pytest

from bench.crashkit import differences_from
from bench.processes import kill_all, read_events, spawn, swecl_argv
from tests.inprocess import swecl

from .conftest import PREFIX_ARGS

pytestmark = pytest.mark.slow

InFlight = dict[tuple[str, int], int]  # (pass, order) -> attempt started and not yet ended


def in_flight(results: Path, version: str) -> InFlight:
    running: InFlight = {}
    if not (results / "ledger.db").exists():
        return running
    try:
        events = read_events(results, prefix=f"run/{version}")
    except apsw.Error:  # the run is creating the file, or holds its first write
        return running
    for e in events:
        p = e["payload"]
        if e["type"] == "task.started":
            running[(p["pass"], p["order"])] = p["attempt"]
        elif e["type"] in ("task.finished", "task.abandoned"):
            running.pop((p["pass"], p["order"]), None)
    return running


def kill_when(results: Path, argv: list[str], cache: Path, log: Path, ready: Callable[[InFlight], bool],
              timeout: float = 300) -> InFlight:
    """Start `argv`, SIGKILL its whole process group as soon as `ready` holds of the
    tasks in flight; what the ledger shows in flight once the process group is dead (a
    task may have finished in the milliseconds the kill took)."""
    proc = spawn(argv, cache=cache, log=log)
    deadline = time.monotonic() + timeout
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            running = in_flight(results, "crash")
            if ready(running):
                kill_all(proc)
                return in_flight(results, "crash")
            time.sleep(0.005)
    finally:
        if proc.poll() is None:
            kill_all(proc)
    raise AssertionError(f"the run ended (exit {proc.returncode}) before the kill point:\n"
                         f"{log.read_text(errors='replace')[-2000:]}")


def of_pass(running: InFlight, pass_: str) -> int:
    return sum(1 for (p, _) in running if p == pass_)


def test_kills_during_parallel_passes_then_resume_match_a_serial_run(
    tmp_path: Path, cache: Path, own_cache: Path, reference_prefix: Path
) -> None:
    results, log = tmp_path / "results", tmp_path / "swecl.log"
    start = swecl_argv(results, "run", *PREFIX_ARGS, "--task-jobs", "3", "--version", "crash", "--quiet")
    resume = swecl_argv(results, "run", "--resume", "crash", "--quiet")

    # 1: the baseline's tasks running beside the initial pass
    first = kill_when(results, start, own_cache, log,
                      lambda r: of_pass(r, "baseline") >= 1 and of_pass(r, "initial") == 1)
    # 2: several re-test tasks at once (the re-test recalls the memory the initial pass left)
    second = kill_when(results, resume, own_cache, log, lambda r: of_pass(r, "retest") >= 2)
    assert of_pass(first, "baseline") >= 1 and of_pass(second, "retest") >= 1

    final = swecl(results, "run", "--resume", "crash", "--quiet", cache=own_cache, check=False)
    assert final.returncode == 0, final.stderr
    # Each attempt the kills cut short was abandoned and redone; the rest is the serial run's.
    abandoned = {(e["payload"]["pass"], e["payload"]["order"])
                 for e in read_events(results, prefix="run/crash") if e["type"] == "task.abandoned"}
    assert set(second) <= abandoned and set(first) <= abandoned
    assert differences_from(results, "crash", reference_prefix, "1", own_cache) == []


def test_ctrl_c_during_a_parallel_pass_records_no_result_of_the_tasks_in_flight(
    tmp_path: Path, cache: Path, own_cache: Path, reference_prefix: Path
) -> None:
    """SIGINT to the whole process group, as a terminal's Ctrl-C sends it, reaches the
    agents and test runs of every worker too: what they return then is not a result. The
    run ends interrupted, the attempts in flight stay open, and the resume redoes them."""
    results, log = tmp_path / "results", tmp_path / "swecl.log"
    proc = spawn(swecl_argv(results, "run", *PREFIX_ARGS, "--task-jobs", "3", "--version", "crash", "--quiet"),
                 cache=own_cache, log=log)
    deadline = time.monotonic() + 300
    while len(in_flight(results, "crash")) < 2 and time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()
        time.sleep(0.005)
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=120) == 130
    text = log.read_text()
    assert "Traceback" not in text and text.strip().splitlines()[-1] in ("swecl: interrupted", "swecl: aborted")
    header = [e["payload"].get("status") for e in read_events(results, prefix="run/crash") if e["type"] == "run.finished"]
    assert header == ["interrupted"]
    assert in_flight(results, "crash")  # left open, not finished with what a killed agent returned
    final = swecl(results, "run", "--resume", "crash", "--quiet", cache=own_cache, check=False)
    assert final.returncode == 0, final.stderr
    assert differences_from(results, "crash", reference_prefix, "1", own_cache) == []
