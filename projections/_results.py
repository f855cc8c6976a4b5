"""The experiment root: `results/` with `ledger.db`, `projections.db` and `v{version}/`."""

from __future__ import annotations

import hashlib
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from ledger import GENESIS_HASH, IntegrityError, Ledger

from ._checkpoints import ChainCheckpoints, CheckpointStore
from ._runner import Projector

DEFAULT_RESULTS = "results"
LEDGER_FILE = "ledger.db"
PROJECTIONS_FILE = "projections.db"
RUN_LOCK = ".run.lock"  # in a run's folder: held while a process works on the run (ledger.locks)


def resolve_results_dir(explicit: str | os.PathLike[str] | None) -> Path:
    """--results DIR, else $SWECL_RESULTS, else ./results."""
    if explicit:
        return Path(explicit)
    env = os.environ.get("SWECL_RESULTS")
    return Path(env) if env else Path(DEFAULT_RESULTS)


_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class Results:
    root: Path

    @property
    def ledger_path(self) -> Path:
        return self.root / LEDGER_FILE

    @property
    def projections_path(self) -> Path:
        return self.root / PROJECTIONS_FILE

    def version_dir(self, version: str) -> Path:
        return self.root / f"v{version}"

    def run_lock_path(self, version: str) -> Path:
        """The run's lock: held while a process works on it (`commands.Experiment.run_lock`),
        probed by `swecl runs` and the view to tell running from interrupted."""
        return self.version_dir(version) / RUN_LOCK

    def sequence_lock_path(self, version: str, sequence_id: str) -> Path:
        """A sequence's lock under `--jobs` (one process per sequence)."""
        return self.version_dir(version) / f".{_folder_name(sequence_id)}.lock"

    def builtin_dir(self, version: str, sequence_id: str) -> Path:
        """Where the builtin stage keeps a sequence's native memory files.

        A sequence id is dataset text: one that is not a plain name (`../x`, `a/b`) gets
        a slug and a short hash, so it can never name a path outside the run's folder."""
        return self.version_dir(version) / "_builtin" / _folder_name(sequence_id)

    def provider_dir(self, version: str, sequence_id: str) -> Path:
        """Where a --memory-server run keeps a sequence's provider data (named as `builtin_dir`)."""
        return self.version_dir(version) / "_provider" / _folder_name(sequence_id)

    def open_ledger(
        self, *, create: bool = False, readonly: bool = False, init_empty: bool = False, check: bool | None = None
    ) -> Ledger:
        """Open the ledger; `init_empty` only for `swecl init` (see `Ledger.open`).

        A read (`readonly`, unless `check` says otherwise) first checks the chain from the
        last verified checkpoint, and prints one warning line if it does not verify: the
        user is told, and the command goes on (`swecl verify` is the place to refuse).
        """
        ledger = Ledger.open(self.ledger_path, create=create, readonly=readonly, init_empty=init_empty)
        if readonly if check is None else check:
            try:
                problem = chain_problem(ledger, ChainCheckpoints(self.projections_path))
            except BaseException:
                ledger.close()
                raise
            warning = f"{ledger.path} does not verify ({' '.join((problem or '').split())})"
            if problem is not None and warning not in _WARNED:
                _WARNED.add(warning)
                sys.stderr.write(f"swecl: warning: {warning}; reading it anyway: run `swecl verify`\n")
        return ledger

    def checkpoints(self) -> CheckpointStore:
        return CheckpointStore(self.projections_path)

    def projector(self, ledger: Ledger) -> Projector:
        # A read-only ledger usually sits in a read-only directory: don't try to cache there.
        return Projector(ledger, None if ledger.readonly else self.checkpoints())


# Warnings this process has printed: a command that opens its ledger twice warns once.
_WARNED: set[str] = set()


def chain_problem(ledger: Ledger, checkpoints: ChainCheckpoints) -> str | None:
    """Why the ledger's chain does not verify, checked cheaply, or None; the checkpoint
    moves to the head when it does verify.

    Only the events after the last verified checkpoint are recomputed (plus the schema
    and metadata rows, a few dozen), so a read costs about nothing on a ledger that has
    not grown, and the first read after a run pays for that run's events once. An event
    altered below the checkpoint, with the stored hashes left alone or recomputed by
    hand, is NOT seen here: reading the whole chain at every read would cost about half a
    second per 100k events (measured), where from the checkpoint it costs well under a
    millisecond. Finding that is `swecl verify`'s job, which reads everything.
    """
    try:
        problem = ledger.structure_problem()
        if problem is not None:
            return problem
        after, prev, moved = 0, GENESIS_HASH, None
        start = checkpoints.load(ledger.ledger_id)
        if start is not None:
            seq, digest = start
            if ledger.hash_at(seq) == digest:
                after, prev = start
            else:
                # Cut short, or rewritten from there on: verify from the start, and say so
                # once (the new checkpoint below makes the next read quiet again).
                moved = f"seq {seq} is not the event verified there before: the ledger was cut short or replaced"
        head, head_hash = ledger.check_chain(after, prev)
    except IntegrityError as exc:
        return str(exc)
    # Anything else (a malformed page, a lock) propagates: the read itself would fail on
    # it, and one error line says it better than a warning followed by that error.
    if head > 0 and (head > after or moved):
        checkpoints.save(ledger.ledger_id, head, head_hash)
    return moved


def _folder_name(sequence_id: str) -> str:
    """A sequence id as a folder name that stays inside its parent."""
    if _PLAIN.fullmatch(sequence_id):
        return sequence_id
    digest = hashlib.sha256(sequence_id.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{_UNSAFE.sub('_', sequence_id).strip('._-')[:60] or 'sequence'}-{digest}"
