"""Ctrl-C stops a run at any moment, from its first event to its last line, whatever the
process inherited; and a stop that comes after the run was recorded says so.

Each way a stop used to be lost is hit on purpose: SIGINT ignored and blocked by the parent
(as a non-interactive shell's `cmd &` leaves it ignored), and the KeyboardInterrupt that
CPython drops when its handler runs inside a finalizer (a failpoint raises it there)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from bench.processes import read_events, swecl_argv, swecl_env
from tests.conftest import REPO_ROOT

from .conftest import INITIAL_ARGS, SPANS_ARGS
from .test_crash_task_jobs import in_flight

pytestmark = pytest.mark.slow


def run_finished(results: Path, version: str) -> list[str]:
    return [e["payload"]["status"] for e in read_events(results, prefix=f"run/{version}") if e["type"] == "run.finished"]


def count(results: Path, version: str, kind: str) -> int:
    return sum(1 for e in read_events(results, prefix=f"run/{version}") if e["type"] == kind)


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _block_stops() -> None:
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})


@pytest.mark.parametrize("inherited", [_ignore_sigint, _block_stops], ids=["ignored", "blocked"])
def test_a_run_started_with_sigint_ignored_or_blocked_still_stops_on_ctrl_c(
    tmp_path: Path, own_cache: Path, inherited: Callable[[], None]
) -> None:
    """Python keeps an inherited SIG_IGN for SIGINT (it installs its handler only over the
    default), and so does every child: before the fix, that run went on to exit 0. An
    inherited blocked mask left the signal pending forever: the workers saw it, the main
    thread never did, and the run ended in an internal error (exit 70)."""
    results, log = tmp_path / "results", tmp_path / "swecl.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            swecl_argv(results, "run", *SPANS_ARGS, "--task-jobs", "3", "--version", "ign", "--quiet"),
            cwd=REPO_ROOT, env=swecl_env(own_cache), stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=inherited,
        )
    deadline = time.monotonic() + 300
    while len(in_flight(results, "ign")) < 2 and time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()
        time.sleep(0.005)
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=120) == 130, log.read_text()
    assert log.read_text().strip().splitlines()[-1] == "swecl: interrupted"
    assert run_finished(results, "ign") == ["interrupted"]


@pytest.mark.parametrize(
    ("jobs", "point"),
    [("1", "task.finished:2:sigint-dropped"), ("3", "schedule.woke:2:sigint-dropped")],
    ids=["serial", "task-jobs"],
)
def test_a_ctrl_c_that_a_finalizer_drops_still_stops_the_run(tmp_path: Path, cache: Path, jobs: str, point: str) -> None:
    """The handler's KeyboardInterrupt raised inside `__del__` is printed and dropped by
    CPython; the latched stop ends the run as interrupted all the same."""
    results = tmp_path / "results"
    proc = subprocess.run(
        swecl_argv(results, "run", *INITIAL_ARGS, "--task-jobs", jobs, "--version", "drop", "--quiet"),
        cwd=REPO_ROOT, env=swecl_env(cache, {"SWECL_FAILPOINTS": point}), capture_output=True, text=True, timeout=600,
    )
    assert "Exception ignored in" in proc.stderr and "KeyboardInterrupt" in proc.stderr  # the window was hit
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "swecl: interrupted"
    assert run_finished(results, "drop") == ["interrupted"]
    if jobs == "1":
        assert count(results, "drop", "task.started") == 2  # no task started after the stop


def test_a_ctrl_c_at_the_first_event_ends_the_run_interrupted(tmp_path: Path, cache: Path) -> None:
    results = tmp_path / "results"
    proc = subprocess.run(
        swecl_argv(results, "run", *INITIAL_ARGS, "--version", "first", "--quiet"),
        cwd=REPO_ROOT, env=swecl_env(cache, {"SWECL_FAILPOINTS": "run.claimed:1:sigint"}),
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "swecl: interrupted"
    assert run_finished(results, "first") == ["interrupted"]
    assert count(results, "first", "task.started") == 0


def test_a_ctrl_c_after_the_run_was_recorded_says_the_run_is_complete(tmp_path: Path, cache: Path) -> None:
    """Told apart from a stop during the run: the process ends 130, the run stays finished."""
    results = tmp_path / "results"
    proc = subprocess.run(
        swecl_argv(results, "run", *INITIAL_ARGS, "--version", "last", "--quiet"),
        cwd=REPO_ROOT, env=swecl_env(cache, {"SWECL_FAILPOINTS": "run.recorded:1:sigint"}),
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        "swecl: interrupted after run last was recorded as finished; its record is complete"
    )
    assert run_finished(results, "last") == ["finished"]


def test_ctrl_c_stops_the_demo_suite_on_its_default_workers_and_resume_finishes_it(tmp_path: Path, cache: Path) -> None:
    """`swecl run` with no worker options runs the demo suite's tasks on one worker per core
    (`--task-jobs C`): Ctrl-C in its second run ends that run interrupted, and `--resume`
    finishes the invocation, every task once."""
    from collections import Counter

    from commands.run import RunOptions
    from commands.run._demo_suite import with_default_workers
    from tests.run.support import SPANS, first_of

    results, log = tmp_path / "results", tmp_path / "swecl.log"
    args = ("run", "--sequence", SPANS, *first_of(4, SPANS), "--passes", "initial,baseline", "--quiet")
    with open(log, "wb") as out:
        proc = subprocess.Popen(swecl_argv(results, *args), cwd=REPO_ROOT, env=swecl_env(cache), stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    while not in_flight(results, "2") and time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()
        time.sleep(0.005)
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=120) == 130, log.read_text()
    assert log.read_text().strip().splitlines()[-1] == "swecl: interrupted"
    assert run_finished(results, "1") == ["finished"] and run_finished(results, "2") == ["interrupted"]
    started = [e["payload"]["config"] for e in read_events(results) if e["type"] == "run.started"]
    workers = with_default_workers(RunOptions(stage="base"), given=False).execution.task_jobs  # 1 on one core
    assert [c["task_jobs"] for c in started] == [workers] * 2  # what the run used, recorded
    done = subprocess.run(swecl_argv(results, "run", "--resume", "2", "--quiet"), cwd=REPO_ROOT, env=swecl_env(cache),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert [run_finished(results, v) for v in "1234"] == [["finished"], ["interrupted", "finished"], ["finished"],
                                                          ["finished"]]
    once = Counter((e["stream"].split("/")[1], e["payload"]["pass"], e["payload"]["order"])
                   for e in read_events(results) if e["type"] == "task.finished")
    assert set(once.values()) == {1} and len(once) == 4 * 4 * 2  # 4 runs, 4 tasks, 2 passes
