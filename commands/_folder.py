"""What the application core owns of one results folder: its layout, opening its ledger,
the run and sequence locks, and refusing an unwritable folder before anything is claimed.

`commands.Experiment` is built on this; its jobs (in `_jobs_*` modules) use nothing else
to reach the folder, so where a file lives and how the ledger is opened is said once.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from ledger import Ledger, SweclError
from ledger.events import RunFinished
from ledger.locks import file_lock
from projections import Projector, Results, resolve_results_dir

__all__ = ["ExperimentFolder", "Reading"]


@dataclass(frozen=True)
class Reading:
    """A read-only ledger and the projector over it (its checkpoints), for one query."""

    ledger: Ledger
    projector: Projector


class ExperimentFolder:
    """One results folder: `ledger.db`, `projections.db` and a `v{version}/` per run."""

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        # --results DIR, else $SWECL_RESULTS, else ./results
        self.results = Results(resolve_results_dir(root))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.root)!r})"

    @property
    def root(self) -> Path:
        return self.results.root

    @property
    def ledger_path(self) -> Path:
        return self.results.ledger_path

    def version_dir(self, version: str) -> Path:
        return self.results.version_dir(version)

    def has_ledger(self) -> bool:
        return self.results.ledger_path.exists()

    def open_ledger(self, *, create: bool = False, readonly: bool = False, init_empty: bool = False,
                    check: bool | None = None) -> Ledger:
        """The ledger, to append to (`create` makes the folder and the ledger when missing)
        or to read (`readonly`: its chain is checked from the last verified checkpoint
        first, and one warning line printed if it does not verify)."""
        return self.results.open_ledger(create=create, readonly=readonly, init_empty=init_empty, check=check)

    @contextmanager
    def reading(self) -> Iterator[Reading]:
        """The ledger read-only, with its projector, for the length of one query."""
        with self.open_ledger(readonly=True) as ledger:
            yield Reading(ledger, self.results.projector(ledger))

    @contextmanager
    def run_lock(self, version: str) -> Iterator[None]:
        """Held while this process works on run `version`: `swecl runs` tells running from
        interrupted (projections.live_status), and a second process cannot resume it."""
        path = self.results.run_lock_path(version)
        with ExitStack() as held:
            try:
                free = held.enter_context(file_lock(path, blocking=False))
            except OSError as exc:
                raise SweclError(f"cannot write the run's folder {path.parent}: {exc.strerror}") from None
            if not free:
                raise SweclError(f"run {version} is being run by another process right now")
            yield

    @contextmanager
    def sequence_lock(self, version: str, sequence_id: str) -> Iterator[None]:
        """Held by the process running one sequence of a `--jobs N` run."""
        with file_lock(self.results.sequence_lock_path(version, sequence_id), blocking=False) as free:
            if not free:
                raise SweclError(f"sequence {sequence_id} of run {version} is being run by another process")
            yield

    def require_writable(self) -> None:
        """Refuse before claiming anything: a run that cannot write its folder would be
        claimed in the ledger and then stop half-way."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=self.root, prefix=".write-probe-"):
                pass
        except OSError as exc:
            raise SweclError(f"the results directory {self.root} is not writable: {exc.strerror}") from None

    def finish_run(self, version: str, status: str, error: str | None = None) -> None:
        """Record how run `version` ended (run.finished: finished, failed or interrupted).
        Both executors end a run here, so a run reads the same whichever ran it."""
        with self.open_ledger() as ledger:
            ledger.append(f"run/{version}", [RunFinished(status=status, error=error)], durable=True)
