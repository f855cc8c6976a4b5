"""The stop as a run's worker threads see it: at once, before the main thread's Python handler runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator

import pytest

from commands.run._halt import Halt
from tests.conftest import REPO_ROOT


@pytest.fixture
def quiet_handlers() -> Iterator[list[int]]:
    """SIGINT, SIGTERM and SIGUSR1 handled by a Python handler that only notes them (no
    KeyboardInterrupt): what is left to see a stop is the wakeup fd alone."""
    handled: list[int] = []
    old = {sig: signal.signal(sig, lambda num, frame: handled.append(num))
           for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1)}
    try:
        yield handled
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_worker_sees_the_stop_signal_without_the_coordinator(quiet_handlers: list[int], sig: signal.Signals) -> None:
    seen: list[bool] = []
    with Halt() as halt:
        assert not halt.is_set()

        def worker() -> None:
            os.kill(os.getpid(), sig)  # as Ctrl-C reaches the process group while this worker's test runs
            seen.append(halt.is_set())

        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
        assert seen == [True]  # nobody called halt.set()
        assert halt.is_set()  # latched
    assert halt.is_set()  # and still set once the run's workers are done


def test_other_signals_do_not_halt_and_the_wakeup_fd_is_given_back(quiet_handlers: list[int]) -> None:
    with Halt() as halt:
        os.kill(os.getpid(), signal.SIGUSR1)
        assert quiet_handlers == [signal.SIGUSR1]  # it arrived
        assert not halt.is_set()
        halt.set()  # the coordinator's own way
        assert halt.is_set()
    assert signal.set_wakeup_fd(-1) == -1  # none was set before, none is left


def test_outside_the_main_thread_it_is_the_coordinators_event_alone() -> None:
    states: list[bool] = []

    def elsewhere() -> None:
        with Halt() as halt:  # set_wakeup_fd is the main thread's: entering must not fail
            states.append(halt.is_set())
            halt.set()
            states.append(halt.is_set())

    thread = threading.Thread(target=elsewhere)
    thread.start()
    thread.join()
    assert states == [False, True]


def test_a_stop_not_yet_taken_by_any_thread_is_seen_pending() -> None:
    """Before the main thread has run at all since the signal came, the stop is pending for
    the process. In a fresh interpreter (one thread, so nothing else takes the signal), SIGINT
    blocked, sent, and seen pending; then unblocked, taken, and seen through the wakeup fd."""
    script = textwrap.dedent("""
        import os, signal
        from commands.run._halt import Halt, _pending_stop
        signal.signal(signal.SIGINT, lambda *a: None)
        with Halt() as halt:
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            before = (_pending_stop(), halt.is_set())
            os.kill(os.getpid(), signal.SIGINT)
            pending = (_pending_stop(), halt.is_set())
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
            print(before, pending, _pending_stop(), halt.is_set())
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "(False, False) (True, True) False True"
