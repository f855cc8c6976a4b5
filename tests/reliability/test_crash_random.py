"""Crash safety: a run SIGKILLed at 20 random points and resumed each time ends exactly
as if it had never been interrupted.

"Exactly": `swecl metrics --json` equal to an uninterrupted run's, the same live
memory, each planned (sequence, pass, order) with exactly one `task.finished`, every
attempt that did not finish recorded as `task.abandoned` before the next one starts, no
memory item from an abandoned attempt, and `swecl verify` passing
(`bench.crashkit.differences_from`). The kill points come from a seed; where each one fires
is decided by watching the ledger (a read-only connection) and by timing. The soak
script (`python -m bench.soak`) is the same with hundreds of kills.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from bench.crashkit import crash_loop, differences_from, kill_plan
from bench.processes import read_events

from .conftest import SPANS_ARGS

pytestmark = pytest.mark.slow

SEED = 20240611  # the kill schedule; the same seed replays the same plan


def test_twenty_random_sigkills_then_resume_match_an_uninterrupted_run(
    tmp_path: Path, cache: Path, own_cache: Path, reference_spans: Path
) -> None:
    results = tmp_path / "results"
    report = crash_loop(results, own_cache, "crash", SPANS_ARGS, kill_plan(SEED, 400), kills=20,
                        log=tmp_path / "swecl.log")
    # the loop stops at 20 kills; each ended a launch that was still running (SIGKILL)
    fired = [landing for landing in report.landings if landing.fired]
    assert len(fired) == 20 and {landing.returncode for landing in fired} == {-signal.SIGKILL}, report.landings
    assert report.final is not None and report.final.returncode == 0, report.final.stderr if report.final else ""
    # the kills spread over the phases of a task, not all at one place
    assert len(report.where()) >= 3, report.where()
    events = read_events(results, prefix="run/crash")
    assert any(e["type"] == "task.abandoned" for e in events)
    assert sum(1 for e in events if e["type"] == "run.resumed") >= 10  # kills in start-up come before it
    assert differences_from(results, "crash", reference_spans, "1", cache) == []
