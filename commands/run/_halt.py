"""Whether a run whose tasks run in worker threads was interrupted, as the workers see it.

Ctrl-C (SIGINT to the whole process group) and SIGTERM reach the workers' agents and
test runs at the same moment as swecl. What those return then is no result: an attempt
that returns after the stop records nothing more, and the resume redoes it.

The coordinator learns of the stop late for that purpose. Python runs a signal's handler
in the main thread only, between bytecodes and holding the GIL; until then the coordinator
cannot say "halt". Meanwhile a worker whose test run died of the same signal wakes,
parses what the test run printed before it died, and would record that as the task's
grade (seen: an initial-pass task recorded as an agent error, its in-process agent's git
commands killed by the Ctrl-C; the resume did not redo it, and the resumed run's metrics
differed from an uninterrupted run's). So the stop is also read where it shows first: the byte that
Python's C-level signal handler writes to the wakeup fd (`signal.set_wakeup_fd`) when the
signal arrives, before any Python code runs, and before that (the main thread may not
have been scheduled yet) as a signal pending for the process. Only SIGINT and SIGTERM have
Python handlers in swecl, so those are the bytes that come.
"""

from __future__ import annotations

import os
import signal
import threading
from types import TracebackType

_STOPS = frozenset({signal.SIGINT.value, signal.SIGTERM.value})


class Halt:
    """Set by the coordinator when it handles the stop, or seen set as soon as a stop
    signal has reached this process (while the `with` block holds the wakeup fd).

    `set_wakeup_fd` belongs to the main thread: entered elsewhere (a Ray worker's thread),
    this is the coordinator's event alone, as before."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._read: int | None = None
        self._write: int | None = None
        self._previous = -1

    def __enter__(self) -> Halt:
        if threading.current_thread() is not threading.main_thread():
            return self
        read, write = os.pipe()
        os.set_blocking(read, False)
        os.set_blocking(write, False)
        try:
            self._previous = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
        except ValueError:
            os.close(read)
            os.close(write)
            return self
        self._read, self._write = read, write
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._write is None:
            return
        signal.set_wakeup_fd(self._previous)
        with self._lock:
            assert self._read is not None
            os.close(self._read)
            os.close(self._write)
            self._read = self._write = None

    def set(self) -> None:
        self._event.set()

    def is_set(self) -> bool:
        if self._event.is_set():
            return True
        with self._lock:
            if self._read is None:
                return False
            if _pending_stop():
                self._event.set()
                return True
            try:
                arrived = os.read(self._read, 256)
            except BlockingIOError:  # nothing arrived
                return False
        if _STOPS.intersection(arrived):
            self._event.set()  # latched: the bytes are read once
            return True
        return False


def _pending_stop() -> bool:
    """A stop signal sent to this process that no thread has taken yet.

    The kernel hands a process's signal to its main thread, which may not have run since:
    until it does, no handler has written to the wakeup fd, and the signal waits in the
    process's shared pending set, which `/proc/self/status` shows (`ShdPnd`, a hex mask)
    whatever the threads block. (`signal.sigpending` shows it only to a thread that blocks
    the signal, and a worker that blocked it even for a moment could take the signal itself
    on unblocking it, away from the main thread.) No /proc: False, the wakeup fd alone.
    """
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"ShdPnd:"):
                    mask = int(line.split()[1], 16)
                    return any(mask >> (sig - 1) & 1 for sig in _STOPS)
    except (OSError, ValueError, IndexError):
        pass
    return False
