"""Ctrl-C and SIGTERM stop swecl, whatever state the process was started in, and the stop is latched.

Two ways a stop could be lost before this module:

- **Inherited dispositions.** Python installs its SIGINT handler only when it starts with
  SIGINT at its default; started with SIGINT ignored (a non-interactive shell's `cmd &`,
  or any parent that ignored it) it keeps ignoring it, and so does every child it starts
  (git, test runs, agents): a `kill -INT` or a Ctrl-C reached no process at all and the
  run went on to exit 0. A signal blocked in the inherited mask waits forever the same
  way. `install` sets both handlers and unblocks both signals in the main thread, so
  threads made after it and the children they start inherit a mask that lets them in.
- **A KeyboardInterrupt raised where Python drops it.** The handler runs in the main
  thread at the next bytecode boundary, whatever that thread is doing; inside a
  finalizer (`__del__`, a weakref callback, a generator closed by the garbage collector)
  the exception is printed as "Exception ignored in ..." and dropped. So the handler
  first latches the stop (`requested`), then raises; the coordinator of a run checks
  the latch (`raise_if_requested`) where it decides what comes next and before it
  records a run as finished, and raises the stop again if it was dropped.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

from ledger import Terminated

__all__ = ["StoppedAfterFinish", "install", "raise_if_requested", "requested", "restore"]

_STOPS = (signal.SIGINT, signal.SIGTERM)
_requested: int | None = None  # the first stop signal that arrived


def _on_stop(signum: int, frame: FrameType | None) -> None:
    global _requested
    if _requested is None:
        _requested = signum
    raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


Handlers = dict[int, object]


class StoppedAfterFinish(KeyboardInterrupt):
    """A stop that came after the run's `run.finished` was recorded: the process ends as
    interrupted (exit 130, or 143), the run does not (its record is complete)."""

    def __init__(self, version: str, status: str, *, terminated: bool) -> None:
        super().__init__(version)
        self.version, self.status, self.terminated = version, status, terminated

    def message(self) -> str:
        how = "terminated (SIGTERM)" if self.terminated else "interrupted"
        return f"swecl: {how} after run {self.version} was recorded as {self.status}; its record is complete"


def install() -> Handlers:
    """Handle SIGINT and SIGTERM in this process (main thread only; elsewhere a no-op), and
    forget any earlier stop; what was there before, for `restore`."""
    global _requested
    _requested = None
    if threading.current_thread() is not threading.main_thread():
        return {}
    previous: Handlers = {sig: signal.signal(sig, _on_stop) for sig in _STOPS}
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPS)
    return previous


def restore(previous: Handlers) -> None:
    """Put back what `install` replaced (a command run inside another program, a test)."""
    for sig, handler in previous.items():
        signal.signal(sig, handler)  # type: ignore[arg-type]


def requested() -> int | None:
    """The stop signal that has reached this process since `install`, if any."""
    return _requested


def raise_if_requested() -> None:
    """Raise the stop that arrived, in case the exception its handler raised was dropped."""
    if _requested is not None:
        raise Terminated() if _requested == signal.SIGTERM else KeyboardInterrupt()
