"""Merging ledger shards into one ledger: what parallel and multi-machine runs end with.

Each shard is verified first (hash chain, blob hashes, blob references); one that fails
refuses the whole merge before a byte is written anywhere, the target included. Then,
shard by shard in the order given, its blobs and then its events are copied with
`Ledger.import_recorded`, in the shard's own seq order: events keep their ids, streams,
stream versions and times, and get the target's next seqs and join its hash chain.
An event id the target already holds is skipped, and blobs are content-addressed, so
merging the same shard twice adds nothing. The target is verified again at the end.

One shard's events are one transaction (`import_recorded`). Its blobs are copied just
before, in one transaction of their own: a crash in between leaves only unreferenced
blobs, which verify accepts and a retried merge skips. (Both in one transaction would
need `import_recorded` to take blobs; see the note in `merge_ledgers`.)

A run seed (`memory.seeded`) names its source run's state by a seq, which is a position
in the ledger it was recorded in. A shard whose seeds would name a different point of
their source's history once renumbered in the target is refused (`_check_seed_positions`);
merging into an empty ledger keeps every seq, so it never is.

`merge_branch` merges a shard cut from a copy of the target that the target itself kept
appending to, in the same streams (a Ray task's events into its sequence job's ledger):
there the shard's stream versions are taken, and its events get the target's next ones.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import msgspec

from .errors import ConcurrencyConflict, IntegrityError, LedgerError
from ._codec import Recorded, StreamRange, decode_payload, encode_payload
from ._store import Ledger
from .events import Event, UnknownEvent

_RAW_ENCODER = msgspec.json.Encoder(order="deterministic")


@dataclass(frozen=True)
class ShardReport:
    path: Path
    events: int  # events in the shard
    added: int  # events new to the target
    skipped: int  # events the target already held (by event_id)
    blobs_added: int


@dataclass(frozen=True)
class MergeReport:
    target: Path
    created: bool
    shards: tuple[ShardReport, ...]
    events: int  # events in the target after the merge
    blobs: int
    head_hash: str

    def lines(self) -> list[str]:
        rows = [
            f"merged {s.path}: {s.added} new event(s), {s.skipped} already present, {s.blobs_added} new blob(s)"
            for s in self.shards
        ]
        state = "created" if self.created else "verified"
        rows.append(
            f"{self.target} ({state}): {self.events} events, {self.blobs} blobs, head hash {self.head_hash}"
        )
        return rows


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _verify_shard(path: Path) -> int:
    """Open `path` read-only and verify it; the number of events, or a one-line refusal."""
    try:
        with Ledger.open(path, readonly=True) as shard:
            return shard.verify().events
    except IntegrityError as exc:
        raise IntegrityError(
            exc.seq, f"shard {path} fails verification ({exc}); nothing was merged"
        ) from None
    except LedgerError as exc:
        raise LedgerError(f"shard {path}: {exc}; nothing was merged") from None


def _faithful_rows(shard: Ledger, path: Path) -> Iterator[Recorded]:
    """The shard's events in seq order, refusing any that `import_recorded` would not copy
    byte for byte.

    `import_recorded` re-encodes the decoded payload. For a current-schema event that
    gives back the stored bytes (the store wrote them with the same encoder); for an
    event read through an upcaster, or of a type this swecl does not know, it may not,
    and the target would then hold a payload the shard never had.
    """
    for row in shard.read_raw():
        seq, event_id, stream, version, type_, schema, time, payload, prev_hash, digest = row
        payload = bytes(payload)
        event = decode_payload(type_, schema, payload)
        again = encode_payload(event) if isinstance(event, Event) else _RAW_ENCODER.encode(event.raw)
        if (isinstance(event, Event) and schema != event.SCHEMA) or again != payload:
            kind = "an unknown event type" if isinstance(event, UnknownEvent) else f"payload schema {schema}"
            raise LedgerError(
                f"shard {path}: seq {seq} ({type_}) has {kind} that this swecl cannot copy unchanged; "
                "merge with the swecl that wrote the shard; nothing of this shard was merged"
            )
        yield Recorded(seq, event_id, stream, version, type_, schema, time, event, bytes(prev_hash), bytes(digest))


def _held_ids(target: Ledger, rows: list[Recorded], path: Path, *, restream: bool = False) -> dict[str, int]:
    """event_id -> target seq of the shard's events the target already holds.

    Such an event must be the same event: only then is skipping it idempotent. With
    `restream` (a branch, `merge_branch`) its stream version is the target's to give.
    """
    held: dict[str, int] = {}
    for r in rows:
        found = target.get_by_id(r.event_id)
        if found is None:
            continue
        if (found.stream, None if restream else found.stream_version, found.type, found.schema, found.time,
                found.event) != (r.stream, None if restream else r.stream_version, r.type, r.schema, r.time, r.event):
            raise LedgerError(
                f"shard {path}: event {r.event_id} (seq {r.seq}) is already in the target as a different event; "
                "nothing of this shard was merged"
            )
        held[r.event_id] = found.seq
    return held


def _in_run(stream: str, version: str) -> bool:
    return stream == f"run/{version}" or stream.startswith(f"run/{version}/")


def _check_seed_positions(target: Ledger, rows: list[Recorded], held: dict[str, int], path: Path) -> None:
    """Refuse a shard whose run seeds would read a different history once merged.

    `memory.seeded` names its source run's state by a seq, a position in the ledger it
    was recorded in. Merged events get the target's next seqs, so the same number can
    name another point of the source run's history there (or none of it). A seed is
    kept only if the source-run events at or before its position are the same set in
    the shard and in the merged target; always true when merging into an empty ledger.
    """
    new_seq: dict[str, int] = {}
    nxt = target.head()
    for r in rows:
        if r.event_id not in held:
            nxt += 1
            new_seq[r.event_id] = nxt
    for r in rows:
        ev = r.event
        if r.type != "memory.seeded" or r.event_id in held or getattr(ev, "source_run", None) is None:
            continue
        source = ev.source_run
        # The projection's own reading of a seed position (see resolve_seed_chain).
        here = min(ev.source_seq if ev.source_seq is not None else r.seq - 1, r.seq - 1)
        there = min(ev.source_seq if ev.source_seq is not None else new_seq[r.event_id] - 1, new_seq[r.event_id] - 1)
        in_shard = {x.event_id for x in rows if _in_run(x.stream, source) and x.seq <= here}
        in_target = {x.event_id for x in target.read(ranges=[StreamRange(f"run/{source}", upto=there)])}
        in_target |= {
            x.event_id
            for x in rows
            if x.event_id in new_seq and _in_run(x.stream, source) and new_seq[x.event_id] <= there
        }
        if in_shard != in_target:
            raise LedgerError(
                f"shard {path}: the memory.seeded at seq {r.seq} reads run {source!r} as of seq {ev.source_seq}, a "
                f"position in the shard; merged here that seq would name a different point of run {source!r}'s "
                "history (merge this shard into an empty ledger first, or seed from an exported folder); "
                "nothing of this shard was merged"
            )


def _copy_blobs(shard: Ledger, target: Ledger) -> int:
    """Copy the shard's blobs the target lacks, in one transaction; how many were new."""
    missing = [data for digest, _, data in shard.iter_blobs() if not target.has_blob(digest)]
    if missing:
        # An append of no events is one transaction that stores just the blobs.
        target.append_batches([], blobs=missing, durable=True)
    return len(missing)


def merge_ledgers(shards: Sequence[str | os.PathLike[str]], into: str | os.PathLike[str]) -> MergeReport:
    """Merge `shards` (in this order) into the ledger at `into`, creating it if missing.

    Refuses, with nothing written: a shard that is missing, not a ledger, or fails
    verification; the target named as a shard; a target that itself fails verification.
    A shard whose event takes a stream version the target holds with a different event
    (two shards that both claimed run version 3, say) stops the merge at that shard,
    with nothing of that shard's events written; shards merged before it stay merged.

    Note: a shard's blobs and events are two transactions (blobs first). One would need
    `Ledger.import_recorded(rows, blobs=...)` storing both in its transaction.
    """
    target_path = Path(into)
    paths = [Path(s) for s in shards]
    if not paths:
        raise LedgerError("merge needs at least one shard ledger")
    seen: set[Path] = set()
    for path in paths:
        if _same_file(path, target_path) or path.resolve() == target_path.resolve():
            raise LedgerError(f"shard {path} is the target ledger itself; nothing was merged")
        if path.resolve() in seen:
            raise LedgerError(f"shard {path} is given twice; nothing was merged")
        seen.add(path.resolve())
        if not path.exists():
            raise LedgerError(f"shard {path}: no such ledger file; nothing was merged")
    counts = [_verify_shard(path) for path in paths]

    created = not target_path.exists()
    if not created:
        try:
            with Ledger.open(target_path, readonly=True) as existing:
                existing.verify()
        except IntegrityError as exc:
            raise IntegrityError(exc.seq, f"target {target_path} fails verification ({exc}); nothing was merged") from None

    reports: list[ShardReport] = []
    with Ledger.open(target_path, create=True) as target:
        for path, count in zip(paths, counts, strict=True):
            with Ledger.open(path, readonly=True) as shard:
                rows = list(_faithful_rows(shard, path))
                held = _held_ids(target, rows, path)
                _check_seed_positions(target, rows, held, path)
                blobs_added = _copy_blobs(shard, target)
                try:
                    added, skipped = target.import_recorded(rows, durable=True)
                except ConcurrencyConflict as exc:
                    raise LedgerError(
                        f"shard {path}: stream {exc.stream!r} version {exc.expected + 1} is already taken in "
                        f"{target_path} by a different event (two shards wrote the same stream); "
                        "nothing of this shard's events was merged"
                    ) from None
            reports.append(ShardReport(path, count, added, skipped, blobs_added))
        try:
            final = target.verify()
        except IntegrityError as exc:
            raise IntegrityError(exc.seq, f"merged ledger {target_path} fails verification: {exc}") from None
    return MergeReport(target_path, created, tuple(reports), final.events, final.blobs, final.head_hash)


def merge_branch(shard: str | os.PathLike[str], target: Ledger, *, streams: Sequence[str]) -> ShardReport:
    """Merge a shard cut from a copy of `target` (a branch) while `target` kept appending.

    The copy numbered its new events from the head it was taken at, which `target` has
    moved past since, in the same streams: its events get `target`'s next seqs and also
    the next versions of their streams (see `Ledger.import_recorded(restream=True)`).
    The shard is verified first; it may write only `streams`; an event `target` holds
    already must be the same event (its stream version aside). The target itself is
    not verified again: it is the caller's own, open file.
    """
    path = Path(shard)
    count = _verify_shard(path)
    with Ledger.open(path, readonly=True) as branch:
        rows = list(_faithful_rows(branch, path))
        strays = sorted({r.stream for r in rows} - set(streams))
        if strays:
            raise LedgerError(f"shard {path} writes {strays[0]!r}, outside {', '.join(streams)}; nothing was merged")
        _held_ids(target, rows, path, restream=True)
        blobs_added = _copy_blobs(branch, target)
        added, skipped = target.import_recorded(rows, durable=True, restream=True)
    return ShardReport(path, count, added, skipped, blobs_added)
