"""Crash safety with `--jobs 2`: two sequences (their initial pass, 16 tasks) in two worker
processes, the whole process group SIGKILLed at random points and resumed (with
`--jobs 2` again) each time."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from bench.crashkit import crash_loop, differences_from, kill_plan
from bench.processes import read_events

from .conftest import PAIR_ARGS

pytestmark = pytest.mark.slow

SEED = 20240612


def test_random_sigkills_of_a_two_sequence_run_with_jobs_2(
    tmp_path: Path, cache: Path, own_cache: Path, reference_pair: Path,
) -> None:
    results = tmp_path / "results"
    report = crash_loop(
        results, own_cache, "crash", PAIR_ARGS, kill_plan(SEED, 400, max_time=4.0), kills=10, jobs=2, slack=0,
        log=tmp_path / "swecl.log",
    )
    # the loop stops at 10 kills; each ended a launch that was still running (SIGKILL)
    fired = [landing for landing in report.landings if landing.fired]
    assert len(fired) == 10 and {landing.returncode for landing in fired} == {-signal.SIGKILL}, report.landings
    assert report.final is not None and report.final.returncode == 0, report.final.stderr if report.final else ""
    streams = {e["stream"] for e in read_events(results, prefix="run/crash") if e["type"] == "task.finished"}
    assert len(streams) == 2
    assert differences_from(results, "crash", reference_pair, "ref", cache) == []
