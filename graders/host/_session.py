"""One process run in a session of its own, ended whole: the core that the grader's test
commands (`graders._run.run_process`) and the agents' CLIs (`agents`' `run_process`) share.

The process leads a new session, so its process group holds everything it starts that did
not leave; the run's `owned_processes` find what did. The wait is on a pidfd
(`wait_for_exit`). On a timeout the group is ended; after any exit whatever the group
still holds is ended too, then every new descendant carrying the run's marker, and the
leader is always reaped.

What differs between the two callers is a parameter, not a copy: `grace_s`, the time a
group gets between SIGTERM and SIGKILL (an agent's CLI flushes its transcript on
SIGTERM; a test run has nothing to save and is killed at once), where the output goes,
and how a program that cannot start is reported (an `OSError` from here).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ._reaper import (RUN_VAR, owned_processes, reap_zombies, run_leads, session_leader_reaped,
                      starting_session_leader, wait_for_exit)

__all__ = ["ProcessOutcome", "Wrap", "kill_group", "run_in_session"]

# (argv, environment with the run's markers) -> what to start: a sandbox's wrapping.
Wrap = Callable[[Sequence[str], dict[str, str]], tuple[Sequence[str], Mapping[str, str]]]
Sink = int | IO[bytes]


@dataclass(frozen=True)
class ProcessOutcome:
    returncode: int | None  # None when it timed out (or was halted) and was killed
    timed_out: bool
    duration_s: float
    halted: bool = False  # ended by the caller's `halt` (its own limit), as a timeout ends it


def run_in_session(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdout: Sink,
    stderr: Sink,
    timeout_s: float | None,
    stdin: bytes | None = None,
    grace_s: float = 0.0,
    wrap: Wrap | None = None,
    halt: int | None = None,
) -> ProcessOutcome:
    """Run `argv` (no shell) as the leader of a new session; end its group on timeout and
    everything it left on exit. `wrap` turns argv and the run's environment into what is
    started (inside `owned_processes`, so a sandbox sees the run's markers). `stdin` goes
    through a pipe fed by a thread: some CLIs treat a regular-file stdin differently from a
    pipe, and a thread cannot deadlock on input larger than the pipe buffer. `halt`, a
    file descriptor the caller makes readable (a limit of its own, watched in another
    thread), ends the group as a timeout does (`ProcessOutcome.halted`). Raises
    `OSError` when the program cannot be started."""
    with owned_processes(env) as (run_env, clean_up):
        started = time.monotonic()
        start_argv, start_env = wrap(argv, run_env) if wrap is not None else (argv, run_env)
        with starting_session_leader() as leader:  # its exit is its Popen's to read (graders.host._reaper.reap_zombies)
            proc = subprocess.Popen(
                list(start_argv),
                cwd=cwd,
                env=dict(start_env),
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                start_new_session=True,
            )
            leader(proc.pid)
            run_leads(run_env[RUN_VAR], proc.pid)  # its session is the run's, marked or not
        feeder = None
        if stdin is not None:
            feeder = threading.Thread(target=_feed, args=(proc, stdin), daemon=True)
            feeder.start()
        timed_out = halted = False
        try:
            if not wait_for_exit(proc, timeout_s, halt):
                halted = True
                kill_group(proc.pid, proc, grace_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            kill_group(proc.pid, proc, grace_s)
        finally:
            if proc.poll() is None:  # interrupted before it exited
                proc.kill()
                proc.wait()
            # Whatever it left running (a test's server, an MCP server, a background shell) goes too.
            kill_group(proc.pid, None, grace_s)
            session_leader_reaped(proc.pid)
            clean_up()  # children that left the group (setsid) too
            reap_zombies()  # and the orphans that died by themselves (bwrap's inner process)
            if feeder is not None:
                feeder.join(timeout=1.0)
        return ProcessOutcome(None if timed_out or halted else proc.returncode, timed_out,
                              time.monotonic() - started, halted)


def _feed(proc: subprocess.Popen[bytes], data: bytes) -> None:
    assert proc.stdin is not None
    try:
        proc.stdin.write(data)
        proc.stdin.close()
    except (BrokenPipeError, OSError):
        pass  # the process exited without reading its input: its exit code says why


def kill_group(pgid: int, proc: subprocess.Popen[bytes] | None, grace_s: float = 0.0) -> None:
    """End process group `pgid`: SIGKILL at once with no `grace_s`, else SIGTERM, up to
    `grace_s` for the group to go, then SIGKILL whatever is left. With `proc` (its leader),
    the leader is reaped."""
    if grace_s > 0 and _signal_group(pgid, signal.SIGTERM):
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            if proc is not None and proc.poll() is None:
                time.sleep(0.05)
                continue
            _reap_members(pgid)
            if not _signal_group(pgid, 0):
                return
            time.sleep(0.05)
    _signal_group(pgid, signal.SIGKILL)
    if proc is not None:
        proc.wait()


def _reap_members(pgid: int) -> None:
    """Reap the group's members that have exited. Orphaned, they are this process's children
    (the subreaper's, `graders.host._reaper`), and an unreaped zombie keeps the group alive to
    `killpg`: the grace would always run out, however fast they obeyed SIGTERM. Called once
    the leader is reaped, so no `Popen` loses its child."""
    while True:
        try:
            pid, _ = os.waitpid(-pgid, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _signal_group(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False
