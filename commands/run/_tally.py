"""What a sequence's tasks have done so far in this process, per pass: the counts its
progress lines show, and the agent errors in a row that stop a run. Kept apart from the
sequence's collaborators and settings because it changes, under a lock, while the
sequence's worker threads (`--task-jobs`) finish tasks in any order."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from projections import INVALID_STATUSES

__all__ = ["SequenceTally"]


@dataclass
class SequenceTally:
    # Also guards the process's view of what is done (`_sequence.record_finished`).
    lock: threading.Lock = field(default_factory=threading.Lock)
    done: dict[str, tuple[int, int]] = field(default_factory=dict)  # pass -> (done, resolved)
    unscored: dict[str, int] = field(default_factory=dict)  # pass -> done with no valid verdict
    agent_errors_in_a_row: int = 0  # see `_task.AGENT_ERRORS_TO_STOP`

    def so_far(self, pass_: str) -> tuple[int, int, int]:
        """(done, resolved, unscored) of a pass."""
        with self.lock:
            done, resolved = self.done.get(pass_, (0, 0))
            return done, resolved, self.unscored.get(pass_, 0)

    def finished(self, pass_: str, resolved: bool | None, status: str) -> tuple[int, int, int]:
        """One more task of `pass_` done: the counts after it."""
        with self.lock:
            done, so_far = self.done.get(pass_, (0, 0))
            self.done[pass_] = (done + 1, so_far + (1 if resolved else 0))
            self.unscored[pass_] = self.unscored.get(pass_, 0) + (status in INVALID_STATUSES)
            return (*self.done[pass_], self.unscored[pass_])

    def restore(self, pass_: str, done: int, resolved: int, unscored: int) -> None:
        """A pass's counts as the ledger holds them (a resume)."""
        with self.lock:
            self.done[pass_] = (done, resolved)
            self.unscored[pass_] = unscored

    def agent_attempt(self, failure: str | None, agent_error: str) -> int:
        """An attempt's end: the agent errors in a row after it (`agent_error` counts one,
        a result resets them, an infrastructure failure leaves them)."""
        with self.lock:
            if failure == agent_error:
                self.agent_errors_in_a_row += 1
            elif failure is None:
                self.agent_errors_in_a_row = 0
            return self.agent_errors_in_a_row
