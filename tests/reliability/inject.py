"""Run the swecl CLI with a kill planted at an exact point: `python -m tests.reliability.inject ARGS...`.

`SWECL_TEST_KILL=POINT:N` makes this process SIGKILL itself the N-th time it reaches
POINT. Nothing in swecl is edited: the points are wrappers this driver installs around
public seams before handing over to `commands.cli.main`, so the crash lands exactly
where a timer rarely would:

- `commit`: inside a ledger write transaction, after every row of the batch was
  inserted, just before SQLite commits it (apsw's commit hook): "mid-append";
- `committed`: right after a ledger transaction committed (apsw's WAL hook);
- `finishing`: inside the transaction of a batch holding `task.finished` (with the
  daydream's lessons), every row inserted, just before COMMIT;
- `abandon`: right after a resume recorded `task.abandoned`, before the next attempt starts;
- `agent`: after the agent edited the worktree, before its patch is taken;
- `grade`: after the patch and the test patch were applied, before the tests run.

Only this process is instrumented: `--jobs` workers start from a fresh interpreter.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from typing import Any

POINTS = ("commit", "committed", "finishing", "abandon", "agent", "grade")

_counts: dict[str, int] = {}


def _plan() -> tuple[str, int] | None:
    spec = os.environ.get("SWECL_TEST_KILL", "")
    if not spec:
        return None
    name, _, count = spec.partition(":")
    if name not in POINTS:
        raise SystemExit(f"inject: unknown point {name!r}; one of {', '.join(POINTS)}")
    return name, int(count or "1")


def _reached(name: str, plan: tuple[str, int] | None) -> None:
    if plan is None or plan[0] != name:
        return
    _counts[name] = _counts.get(name, 0) + 1
    if _counts[name] == plan[1]:
        os.kill(os.getpid(), signal.SIGKILL)


def _wrap(module: Any, attr: str, name: str, plan: tuple[str, int] | None, *, before: bool) -> None:
    original: Callable[..., Any] = getattr(module, attr)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if before:
            _reached(name, plan)
        result = original(*args, **kwargs)
        if not before:
            _reached(name, plan)
        return result

    setattr(module, attr, wrapper)


def install(plan: tuple[str, int] | None) -> None:
    import apsw

    finishing = [False]  # set while a batch with task.finished is being appended

    if plan is not None and plan[0] in ("commit", "committed", "finishing"):
        base = apsw.Connection

        class KillingConnection(base):  # type: ignore[misc, valid-type]
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)

                def on_commit() -> bool:
                    _reached("commit", plan)
                    if finishing[0]:
                        _reached("finishing", plan)
                    return False  # False: let the commit go ahead

                def on_wal(_conn: Any, _db: str, _pages: int) -> int:
                    _reached("committed", plan)
                    return apsw.SQLITE_OK

                self.set_commit_hook(on_commit)
                self.set_wal_hook(on_wal)

        apsw.Connection = KillingConnection  # type: ignore[misc]

    import agents._diff
    import commands.run._sequence
    import graders._executing
    import ledger

    append_batches = ledger.Ledger.append_batches

    def watched_append(self: Any, batches: Any, **kwargs: Any) -> Any:
        finishing[0] = any(
            getattr(getattr(e, "event", e), "type_name", lambda: "")() == "task.finished"
            for batch in batches
            for e in batch.events
        )
        try:
            return append_batches(self, batches, **kwargs)
        finally:
            finishing[0] = False

    ledger.Ledger.append_batches = watched_append  # type: ignore[method-assign]

    _wrap(commands.run._sequence, "abandon", "abandon", plan, before=False)
    _wrap(agents._diff, "worktree_patch", "agent", plan, before=True)
    _wrap(graders._executing, "run_process", "grade", plan, before=True)


def main() -> None:
    install(_plan())
    from commands.cli import main as swecl_main

    sys.argv[0] = "swecl"
    swecl_main(sys.argv[1:])


if __name__ == "__main__":
    main()
