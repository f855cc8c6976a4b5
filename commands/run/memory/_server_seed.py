"""Copy-seeding a --memory-server run (plugin-accum): each sequence's server starts on a
restore of the source run's last `memory.provider.snapshot` for that sequence.

The source is an earlier --memory-server run of the same ledger (`--source-memory
VERSION`, its state as of the ledger's head, or `VERSION@SEQ`, as of SEQ). The seed is
recorded as swecl's own `memory.seeded` (source run and seq, so `swecl verify` and merge
check it as any run seed) with `provider_snapshots`: sequence -> the seq of the snapshot
event the server starts on. Everything is resolved before the run claims a version.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ledger import Ledger, NewEvent, StreamRange, SweclError, event_id_for
from ledger.events import MemorySeeded, ProviderSnapshot, RunStarted, SnapshotFile
from projections import canonical_version

from commands.memory import VERSION_AT, seed_cut

__all__ = ["ServerSeedPlan", "apply_server_seed", "server_seed_files", "resolve_server_seed"]


@dataclass(frozen=True)
class ServerSeedPlan:
    version: str
    source_run: str
    source_seq: int
    snapshots: dict[str, int] = field(default_factory=dict)  # sequence -> seq of its snapshot

    def describe(self) -> str:
        return (f"v{self.version} seeded from v{self.source_run} as of seq {self.source_seq}: the memory server's "
                f"last snapshot of {len(self.snapshots)} sequence(s)")


def resolve_server_seed(ledger: Ledger, version: str, source_memory: str | None,
                          sequences: list[str]) -> ServerSeedPlan:
    """`--source-memory VERSION[@SEQ]` for a --memory-server run, checked (one line each)."""
    text = (source_memory or "").strip()
    if not text:
        raise SweclError("--memory-server with plugin-accum: give --source-memory VERSION, an earlier "
                         "--memory-server run of this ledger")
    source, source_seq = text, None
    m = VERSION_AT.match(text)
    if m and ledger.stream_version(f"run/{text}") < 0:
        source, source_seq = m["version"], int(m["seq"])
    source = canonical_version(ledger, source)
    started = next(ledger.read_stream(f"run/{source}"), None)
    if started is None or not isinstance(started.event, RunStarted):
        raise SweclError(f"--source-memory {text!r}: no run version {source!r} in {ledger.path} (with --memory-server "
                         "the source is an earlier --memory-server run of this ledger, not a folder)")
    if not started.event.config.get("memory_server"):
        raise SweclError(f"--source-memory {text!r}: run {source} is not a --memory-server run; its memory is "
                         "swecl's, not a memory server's data")
    source_seq = seed_cut(ledger, text, version, source, source_seq)
    snapshots: dict[str, int] = {}
    for sequence_id in sequences:
        last = None
        for rec in ledger.read(types=["memory.provider.snapshot"], ranges=[StreamRange(f"run/{source}/{sequence_id}")],
                               upto=source_seq):
            if rec.event.pass_ == "initial":
                last = rec.seq
        if last is None:
            raise SweclError(f"--source-memory {text!r}: run {source} has no memory server snapshot of sequence "
                             f"{sequence_id} as of seq {source_seq}; nothing to seed it from")
        snapshots[sequence_id] = last
    return ServerSeedPlan(version=version, source_run=source, source_seq=source_seq, snapshots=snapshots)


def apply_server_seed(ledger: Ledger, plan: ServerSeedPlan) -> None:
    """Record `plan` as `memory.seeded` on `run/{version}`, right after its run.started."""
    event = MemorySeeded(item_count=0, source_run=plan.source_run, source_seq=plan.source_seq,
                         chosen="explicit", provider_snapshots=dict(plan.snapshots))
    ledger.append(f"run/{plan.version}",
                  [NewEvent(event, event_id_for("memory.seeded", plan.version, plan.source_run, plan.source_seq))],
                  expected_version=ledger.stream_version(f"run/{plan.version}"), durable=True)


def server_seed_files(ledger: Ledger, version: str, sequence_id: str) -> list[SnapshotFile] | None:
    """The files a seeded run's server of `sequence_id` starts on; None when not seeded."""
    for rec in ledger.read(types=["memory.seeded"], streams=[f"run/{version}"]):
        seq = rec.event.provider_snapshots.get(sequence_id)
        if seq is not None:
            snap = ledger.get(seq)
            if snap is None or not isinstance(snap.event, ProviderSnapshot):
                raise SweclError(f"run {version}'s seed names seq {seq}, which is no memory.provider.snapshot")
            return list(snap.event.files)
    return None
