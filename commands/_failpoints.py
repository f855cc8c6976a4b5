"""Failpoints: named places where a test can make swecl die as a crash would.

`SWECL_FAILPOINTS="task.finished:3,agent.finished:1"` kills this process with SIGKILL the
3rd time it passes `task.finished`, or the 1st time it passes `agent.finished`. Unset (the
normal case) it costs one dict lookup. This is how the crash-safety tests put a kill
exactly at a task boundary or in the middle of a task, instead of hoping a timer lands
there.

An entry may name another fault instead of the kill: `run.claimed:1:sigint` sends this
process SIGINT there (a Ctrl-C at exactly that point); `task.finished:2:sigint-dropped`
sends it from inside a finalizer, where CPython prints the handler's
KeyboardInterrupt as "Exception ignored" and drops it: the window in which a Ctrl-C used
to be lost (see `commands._stops`), hit on purpose.
"""

from __future__ import annotations

import os
import signal
import time

from . import _stops

_counts: dict[str, int] = {}


def _plan() -> dict[str, tuple[int, str]]:
    spec = os.environ.get("SWECL_FAILPOINTS", "")
    plan: dict[str, tuple[int, str]] = {}
    for part in spec.split(","):
        name, _, rest = part.strip().partition(":")
        count, _, action = rest.partition(":")
        if name:
            plan[name] = (int(count or "1"), action or "kill")
    return plan


def reset_failpoints() -> None:
    """Start counting passes afresh: a Ray worker process runs many jobs, and a job's
    `name:N` counts the passes of that job alone."""
    _counts.clear()


def failpoint(name: str) -> None:
    """Die here (SIGKILL, no cleanup, like a power cut to the process) if a test asked to,
    or meet the other fault the test named."""
    if "SWECL_FAILPOINTS" not in os.environ:
        return
    planned = _plan().get(name)
    if planned is None:
        return
    target, action = planned
    _counts[name] = _counts.get(name, 0) + 1
    if _counts[name] != target:
        return
    if action == "sigint-dropped":
        _sigint_in_finalizer()
    elif action == "sigint":
        os.kill(os.getpid(), signal.SIGINT)  # a Ctrl-C at exactly this point
    else:
        os.kill(os.getpid(), signal.SIGKILL)


class _Finalized:
    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        deadline = time.monotonic() + 10
        # The handler runs at this loop's back edge, in the main thread, inside __del__.
        while _stops.requested() is None and time.monotonic() < deadline:
            pass


def _sigint_in_finalizer() -> None:
    _Finalized()  # dropped at once: its __del__ runs here
