"""The experiment root: `results/` with `ledger.db`, `projections.db` and `v{version}/`."""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ledger import Ledger
from projections import CheckpointStore, Projector

DEFAULT_RESULTS = "results"
LEDGER_FILE = "ledger.db"
PROJECTIONS_FILE = "projections.db"


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

    def builtin_dir(self, version: str, sequence_id: str) -> Path:
        """Where the builtin stage keeps a sequence's native memory files.

        A sequence id is dataset text: one that is not a plain name (`../x`, `a/b`) gets
        a slug and a short hash, so it can never name a path outside the run's folder."""
        name = sequence_id
        if not _PLAIN.fullmatch(name):
            digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
            name = f"{_UNSAFE.sub('_', name).strip('._-')[:60] or 'sequence'}-{digest}"
        return self.version_dir(version) / "_builtin" / name

    def open_ledger(self, *, create: bool = False, readonly: bool = False) -> Ledger:
        return Ledger.open(self.ledger_path, create=create, readonly=readonly)

    def checkpoints(self) -> CheckpointStore:
        return CheckpointStore(self.projections_path)

    def projector(self, ledger: Ledger) -> Projector:
        # A read-only ledger usually sits in a read-only directory: don't try to cache there.
        return Projector(ledger, None if ledger.readonly else self.checkpoints())
