"""Failpoints: named places where a test can make swecl die as a crash would.

`SWECL_FAILPOINTS="task.finished:3,agent.finished:1"` kills this process with SIGKILL the
3rd time it passes `task.finished`, or the 1st time it passes `agent.finished`. Unset (the
normal case) it costs one dict lookup. This is how the crash-safety tests put a kill
exactly at a task boundary or in the middle of a task, instead of hoping a timer lands
there.
"""

from __future__ import annotations

import os
import signal

_counts: dict[str, int] = {}


def _plan() -> dict[str, int]:
    spec = os.environ.get("SWECL_FAILPOINTS", "")
    plan: dict[str, int] = {}
    for part in spec.split(","):
        name, _, count = part.strip().partition(":")
        if name:
            plan[name] = int(count or "1")
    return plan


def failpoint(name: str) -> None:
    """Die here (SIGKILL, no cleanup, like a power cut to the process) if a test asked to."""
    if "SWECL_FAILPOINTS" not in os.environ:
        return
    target = _plan().get(name)
    if target is None:
        return
    _counts[name] = _counts.get(name, 0) + 1
    if _counts[name] == target:
        os.kill(os.getpid(), signal.SIGKILL)
