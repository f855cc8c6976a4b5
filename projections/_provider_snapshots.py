"""A `--memory-server` run's snapshots of its server's data directory, read from the ledger.

`provider_snapshots` lists them (`swecl memory snapshots`): per `memory.provider.snapshot`
its files, total bytes and new bytes, the bytes of the contents no earlier snapshot of the
ledger held (what the snapshot added to the blob store; a file that did not change is
stored once, and of a large file that did, only its new chunks). `provider_cut` is what `swecl replay --upto-order K` restores for each
sequence: the last initial-pass snapshot of a task with order < K, else the seed the
sequence's server started on (plugin-accum from another such run), else nothing (the
server started on an empty directory). A server reached by URL keeps its data where
swecl cannot see it: its run has nothing to restore.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ledger import Ledger, SweclError
from ledger.events import ProviderSnapshot, SnapshotFile

from ._runs import run_started_record

__all__ = ["ProviderCut", "SnapshotRow", "provider_cut", "provider_snapshots", "provider_transport"]


@dataclass(frozen=True)
class SnapshotRow:
    seq: int
    sequence_id: str
    pass_: str
    order: int
    instance_id: str | None
    attempt: int
    files: int
    total_bytes: int
    new_bytes: int  # of contents no earlier snapshot in the ledger held

    def document(self) -> dict[str, object]:
        return {"seq": self.seq, "sequence_id": self.sequence_id, "pass": self.pass_, "order": self.order,
                "instance_id": self.instance_id, "attempt": self.attempt, "files": self.files,
                "total_bytes": self.total_bytes, "new_bytes": self.new_bytes}


@dataclass(frozen=True)
class ProviderCut:
    """What one sequence's server held before task K: `source` "snapshot" (of task
    `order`, at `seq`), "seed" (the snapshot at `seq` of the run it was seeded from) or
    "none" (an empty directory)."""

    sequence_id: str
    source: str
    seq: int | None = None
    order: int | None = None
    instance_id: str | None = None
    files: list[SnapshotFile] = field(default_factory=list)

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)


def provider_transport(ledger: Ledger, version: str) -> str | None:
    """"stdio" or "http" for a `--memory-server` run (its recorded SPEC), else None."""
    spec = run_started_record(ledger, version, doing="read").event.config.get("memory_server")
    if not spec:
        return None
    scheme = str(spec).split("://", 1)[0].lower() if "://" in str(spec) else ""
    return "http" if scheme in ("http", "https") else "stdio"


def provider_snapshots(ledger: Ledger, version: str, sequence_id: str | None = None) -> list[SnapshotRow]:
    """Run `version`'s snapshots in seq order (of `sequence_id` only, when given)."""
    started = run_started_record(ledger, version, doing="list snapshots of").event
    if sequence_id is not None and sequence_id not in started.sequences:
        raise SweclError(f"--sequence {sequence_id!r}: run {version} has sequences "
                         f"{', '.join(started.sequences) or 'none'}")
    seen: set[str] = set()
    rows: list[SnapshotRow] = []
    prefix = f"run/{version}/"
    # Every snapshot of the ledger, for what counts as new: a seeded run's first snapshot
    # shares its source's blobs.
    for rec in ledger.read(types=["memory.provider.snapshot"]):
        snap = rec.event
        fresh: dict[str, int] = {}
        for blob, size in _blobs(snap.files):
            if blob not in seen:
                fresh[blob] = size
        seen.update(fresh)
        if not rec.stream.startswith(prefix) or (sequence_id is not None and snap.sequence_id != sequence_id):
            continue
        rows.append(SnapshotRow(seq=rec.seq, sequence_id=snap.sequence_id, pass_=snap.pass_, order=snap.order,
                                instance_id=snap.instance_id, attempt=snap.attempt, files=len(snap.files),
                                total_bytes=sum(f.size for f in snap.files), new_bytes=sum(fresh.values())))
    return rows


def _blobs(files: list[SnapshotFile]) -> list[tuple[str, int]]:
    """(blob, size) of each blob a snapshot's files are stored in: a file's, or its chunks'."""
    out: list[tuple[str, int]] = []
    for f in files:
        if f.blob is not None:
            out.append((f.blob, f.size))
        out.extend((c.blob, c.size) for c in f.chunks)
    return out


def provider_cut(ledger: Ledger, version: str, sequences: list[str], upto_order: int) -> dict[str, ProviderCut]:
    """Each sequence's server data as it stood before initial-pass task `upto_order` started."""
    from ._fork import fork_links, read_run  # lazy: _fork is the outcomes' neighbour

    links = fork_links(ledger, version)
    cuts: dict[str, ProviderCut] = {}
    # A fork's snapshots before K are its source's (spliced in, as its tasks are).
    for rec in read_run(ledger, version, ["memory.provider.snapshot"], links=links):
        snap = rec.event
        if snap.pass_ == "initial" and snap.order < upto_order and snap.sequence_id in sequences:
            cuts[snap.sequence_id] = ProviderCut(snap.sequence_id, "snapshot", rec.seq, snap.order, snap.instance_id,
                                                 list(snap.files))
    # What a server started on before any snapshot: the run's seed, or a fork's source's
    # (a fork's own seed is a snapshot of its source before K, spliced in above).
    seeds: dict[str, int] = {}
    for stream, upto in [(f"run/{version}", None), *((f"run/{l.source}", l.upto) for l in links)]:
        for rec in ledger.read(types=["memory.seeded"], streams=[stream], upto=upto):
            if rec.event.chosen != "fork":
                for sequence_id, seq in rec.event.provider_snapshots.items():
                    seeds.setdefault(sequence_id, seq)
    out: dict[str, ProviderCut] = {}
    for sequence_id in sequences:
        if sequence_id in cuts:
            out[sequence_id] = cuts[sequence_id]
            continue
        seq = seeds.get(sequence_id)
        seed = ledger.get(seq) if seq is not None else None
        if seed is not None and isinstance(seed.event, ProviderSnapshot):
            out[sequence_id] = ProviderCut(sequence_id, "seed", seq, seed.event.order, seed.event.instance_id,
                                           list(seed.event.files))
        else:
            out[sequence_id] = ProviderCut(sequence_id, "none")
    return out
