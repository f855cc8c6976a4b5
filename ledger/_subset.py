"""Copying part of a ledger into a new one: what a run bundle (`swecl bundle`) is made of.

The copy holds, in the source's seq order, every event of the source up to `prefix`
(kept as they are: same seqs, same hashes, since the copy starts from the same genesis)
and after it the events `keep` accepts, renumbered and chained anew. Why a verbatim
prefix: a run seed (`memory.seeded`) names its source run's state by a seq of the ledger
it was recorded in. Renumbered, the same number could name another point of the source
run's history; with every event up to the highest seed position copied unchanged, each
seed names exactly what it named in the source. `prefix` 0 copies only what `keep`
accepts.

Only the blobs the copied events refer to are copied (the copy is verified at the end,
references included). The copy is written to a new file; nothing is appended to an
existing ledger.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .errors import LedgerError
from ._blobs import blob_refs_of
from ._codec import Recorded
from ._merge import _faithful_rows
from ._store import Ledger


@dataclass(frozen=True)
class SubsetReport:
    events: int  # events copied
    prefix: int  # of which, the verbatim prefix
    blobs: int  # blobs copied
    head_seq: int
    head_hash: str


def copy_subset(source: Ledger, target: str | os.PathLike[str], keep: Callable[[Recorded], bool],
                *, prefix: int = 0) -> SubsetReport:
    """Copy the source's events up to seq `prefix` and those after it that `keep`
    accepts, with the blobs they refer to, into a new ledger at `target` (which must not
    exist). The copy is verified before this returns."""
    path = Path(target)
    if path.exists():
        raise LedgerError(f"{path} exists already; a ledger subset is written to a new file")
    rows = [r for r in _faithful_rows(source, Path(source.path)) if r.seq <= prefix or keep(r)]
    refs: list[str] = []
    seen: set[str] = set()
    for r in rows:
        for ref in blob_refs_of(r.event):
            if ref not in seen:
                seen.add(ref)
                refs.append(ref)
    with Ledger.open(path, create=True) as copy:
        # Blobs first, in batches: a crash leaves an unfinished file the caller removes.
        batch: list[bytes] = []
        size = 0
        for ref in refs:
            data = source.get_blob(ref)  # re-hashed on read: a bad blob fails here
            batch.append(data)
            size += len(data)
            if size > 64 << 20:
                copy.append_batches([], blobs=batch, durable=False)
                batch, size = [], 0
        if batch:
            copy.append_batches([], blobs=batch, durable=False)
        copy.import_recorded(rows, durable=True)
        report = copy.verify()
    prefix_kept = sum(1 for r in rows if r.seq <= prefix)
    return SubsetReport(len(rows), prefix_kept, len(refs), report.events, report.head_hash)
