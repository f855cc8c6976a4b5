"""--task-jobs N: the tasks of one sequence that may run at once do, and the run records
what a serial run records (the same events up to order, the same metrics)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from bench.processes import read_events
from tests.shared_runs import BLANK_FREE, demo_run_copy

from .support import INICONF, SPANS, as_of, comparable, decided_ids, demo_tasks, first_of, swecl, swecl_json

pytestmark = pytest.mark.slow

# The smallest run with every kind of order-free work and memory on: the spans sequence
# with a re-test, a baseline and one retest-4 row. Its serial run is the session's shared
# `free-spans` (the Ray executor's tests compare with it too).
RUN = ("run", *BLANK_FREE, "--version", "1")


def started_during(results: Path, key_of: Callable[[dict], tuple], clash: Callable[[tuple, tuple], bool]) -> bool:
    """A task started while a running one clashed with it (`clash(started, running)`)."""
    running: set[tuple] = set()
    for e in read_events(results):
        key = key_of(e)
        if e["type"] == "task.started":
            if any(clash(key, r) for r in running):
                return True
            running.add(key)
        elif e["type"] == "task.finished":
            running.discard(key)
    return False


def overlapped(results: Path, pass_a: str, pass_b: str) -> bool:
    """A task of `pass_a` started while one of `pass_b` was running (another one, when
    the passes are the same)."""
    return started_during(results, lambda e: (e["payload"].get("pass"), e["payload"].get("order")),
                          lambda key, r: key[0] == pass_a and r[0] == pass_b and r != key)


def test_a_parallel_run_records_what_a_serial_run_records(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, cache: Path,
) -> None:
    serial, parallel = demo_run_copy(tmp_path_factory, cache, "free-spans"), tmp_path / "parallel"
    swecl(parallel, *RUN, "--task-jobs", "3", "--quiet", cache=cache)

    assert comparable(parallel) == comparable(serial)
    assert decided_ids(parallel) == decided_ids(serial)
    assert swecl_json(parallel, "metrics", "--version", "1", cache=cache)["versions"] == \
        swecl_json(serial, "metrics", "--version", "1", cache=cache)["versions"]
    assert "ledger OK" in swecl(parallel, "verify", cache=cache).stdout
    # What ran at once: the re-test's tasks together, the baseline beside the initial
    # pass, the retest-4 row beside initial tasks 5.., none of it in the serial run.
    assert overlapped(parallel, "retest", "retest")
    assert overlapped(parallel, "baseline", "initial") or overlapped(parallel, "initial", "baseline")
    assert overlapped(parallel, "initial", "retest-4") or overlapped(parallel, "retest-4", "initial")
    assert not overlapped(serial, "retest", "retest")
    # Only the initial pass stayed in order, each task after the one before had finished.
    initial = [(e["type"], e["payload"]["order"]) for e in read_events(parallel)
               if e["type"] in ("task.started", "task.finished") and e["payload"]["pass"] == "initial"]
    assert initial == [(t, n) for n in range(1, demo_tasks(SPANS) + 1) for t in ("task.started", "task.finished")]
    # As of every task order, the same cells, scores and leakage as the serial run: the
    # cut is by position in the experiment, not by when the parallel run recorded what.
    for k in range(1, demo_tasks(SPANS) + 2):
        assert as_of(parallel, k) == as_of(serial, k), k



def sequences_overlapped(results: Path) -> bool:
    """A task of one sequence started while a task of another was running."""
    return started_during(results, lambda e: (e["stream"], e["payload"].get("pass"), e["payload"].get("order")),
                          lambda key, r: r[0] != key[0])


def test_sequences_of_one_run_share_the_workers(tmp_path: Path, cache: Path) -> None:
    """Without --jobs, --task-jobs puts every sequence of the run on one set of workers:
    one sequence's initial pass runs beside the other's, in one process."""
    # The first three tasks of each: the scheduler starts both sequences' initial passes
    # at once (each one's next task goes before free work), so three are enough to overlap.
    run = ("run", "--stage", "plugin-blank", "--sequence", SPANS, "--sequence", INICONF, *first_of(3, SPANS, INICONF),
           "--passes", "initial,baseline", "--version", "1", "--quiet")
    serial, parallel = tmp_path / "serial", tmp_path / "parallel"
    swecl(serial, *run, cache=cache)
    swecl(parallel, *run, "--task-jobs", "2", cache=cache)
    assert comparable(parallel) == comparable(serial)
    assert swecl_json(parallel, "metrics", "--version", "1", cache=cache)["versions"] == \
        swecl_json(serial, "metrics", "--version", "1", cache=cache)["versions"]
    assert sequences_overlapped(parallel) and not sequences_overlapped(serial)


def test_task_jobs_below_one_is_refused_in_one_line(tmp_path: Path, cache: Path) -> None:
    proc = swecl(tmp_path / "r", "run", "--stage", "base", "--sequence", SPANS, "--task-jobs", "0", cache=cache,
                 check=False)
    assert proc.returncode == 2 and "--task-jobs 0" in proc.stderr and proc.stderr.count("\n") == 1
