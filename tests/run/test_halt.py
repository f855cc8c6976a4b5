"""The stop as a run's worker threads see it: at once, before the main thread's Python handler runs."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator

import pytest

from commands.run._halt import Halt


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
