"""`graders.host.run_in_session`, the one core of the grader's and the agents' `run_process`:
what a run leaves behind is ended, with SIGTERM and a grace (agents: a CLI flushes its
transcript) or with SIGKILL at once (test commands); stdin reaches the process; the
output goes where the caller says."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agents._process import run_process as agent_run_process
from graders.host import ProcessOutcome, run_in_session
from graders._run import run_process as grader_run_process
from ledger import SweclError

# The leader starts a child in its own group that saves its work on SIGTERM, waits until
# the child says its handler is in place (through a file, no sleeping on a guess), exits.
LEAVES_A_CHILD = r"""
import subprocess, sys, os
ready, saved = sys.argv[1], sys.argv[2]
child = '''
import signal, sys, time
def save(*_):
    open(sys.argv[2], "w").write("saved")
    sys.exit(0)
signal.signal(signal.SIGTERM, save)
open(sys.argv[1], "w").write("ready")
while True:
    time.sleep(60)
'''
subprocess.Popen([sys.executable, "-c", child, ready, saved])
while not os.path.exists(ready):
    os.sched_yield()
"""


def _leave_a_child(tmp_path: Path, grace_s: float) -> tuple[Path, ProcessOutcome]:
    ready, saved = tmp_path / "ready", tmp_path / "saved"
    with open(tmp_path / "out", "wb") as out:
        outcome = run_in_session([sys.executable, "-c", LEAVES_A_CHILD, str(ready), str(saved)], cwd=tmp_path,
                                 env=os.environ, stdout=out, stderr=subprocess.STDOUT, timeout_s=60, grace_s=grace_s)
    assert outcome.returncode == 0 and not outcome.timed_out and ready.exists()
    return saved, outcome


def test_a_leftover_gets_sigterm_and_the_grace(tmp_path: Path) -> None:
    """It saves its work; and the wait ends when it is gone, not when the grace runs out
    (an exited leftover is a zombie of ours until reaped, and a zombie kept the group
    alive to killpg: every agent run with a leftover waited the whole grace)."""
    saved, outcome = _leave_a_child(tmp_path, grace_s=120)
    assert saved.read_text() == "saved" and outcome.duration_s < 120


def test_without_grace_a_leftover_is_killed_at_once(tmp_path: Path) -> None:
    saved, _ = _leave_a_child(tmp_path, grace_s=0)
    assert not saved.exists()


def test_stdin_reaches_the_process_through_a_pipe(tmp_path: Path) -> None:
    big = b"x" * (1 << 20)  # larger than a pipe's buffer: a thread feeds it
    code = "import sys, os; data = sys.stdin.buffer.read(); print(len(data), os.isatty(0), flush=True)"
    out = tmp_path / "out"
    with open(out, "wb") as sink:
        outcome = run_in_session([sys.executable, "-c", code], cwd=tmp_path, env=os.environ, stdout=sink,
                                 stderr=subprocess.STDOUT, timeout_s=60, stdin=big)
    assert outcome.returncode == 0 and out.read_text().split() == [str(len(big)), "False"]


def test_the_two_callers_report_a_missing_program_each_their_way(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        run_in_session(["/nonexistent/prog"], cwd=tmp_path, env=os.environ, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout_s=5)
    assert grader_run_process(["/nonexistent/prog"], cwd=tmp_path, env=os.environ, timeout_s=5).error
    with pytest.raises(SweclError, match="not found"):
        agent_run_process(["/nonexistent/prog"], cwd=tmp_path, env=os.environ, stdout=tmp_path / "o",
                          stderr=tmp_path / "e", timeout_s=5)


def test_an_agents_stdout_watch_ends_its_group_as_a_timeout_would(tmp_path: Path) -> None:
    """`stop_on` sees each line as it is written; its first True ends the run (halted, no
    return code) while all the output still reaches the file. Without the watch the
    program would wait for a signal until its time limit."""
    code = "import signal; print('one', flush=True); print('two', flush=True); signal.pause()"
    seen: list[bytes] = []

    def stop_on(line: bytes) -> bool:
        seen.append(line)
        return line == b"two"

    out = tmp_path / "out"
    outcome = agent_run_process([sys.executable, "-c", code], cwd=tmp_path, env=os.environ, stdout=out,
                                stderr=tmp_path / "err", timeout_s=60, stop_on=stop_on)
    assert outcome.halted and not outcome.timed_out and outcome.returncode is None
    assert seen == [b"one", b"two"] and out.read_bytes() == b"one\ntwo\n"
