"""The apsw-backed event store: one SQLite file, append-only, hash-chained.

Writers serialise on `BEGIN IMMEDIATE`; each append is one transaction, so a batch is
all or nothing. `seq` is assigned inside that transaction as head + 1, which keeps it
gapless (SQLite's autoincrement would leave holes after a rollback).

The parts of the store live beside it: the codec (`_codec`: ids, payloads, the chain's
hash, the value types), opening and SQLite's errors (`_connection`), the append path's
internals (`_append`), blobs (`_blobs`) and verification (`_verify`). `Ledger` is the
one object over them all; its public methods are here.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import apsw

from . import _blobs, _connection, _verify
from .errors import ConcurrencyConflict, LedgerDamaged, LedgerError
from .events import Event
from ._append import _Appending, _Tail
from ._codec import (
    _ENCODER,
    _SELECT,
    PAYLOAD_ERRORS,
    NewEvent,
    Recorded,
    StreamBatch,
    StreamRange,
    _encode_batches,
    _range_sql,
    _row_to_recorded,
    chain_hash,
    encode_payload,
)
from ._connection import _ledger_error
from ._schema import GENESIS_HASH
from ._verify import VerifyReport


# Up to this many seqs between `after` and `upto`, a ranged read takes the rowid range.
_SHORT_SPAN = 2048


class Ledger(_Appending):
    """One ledger file. Not thread-safe; open one per process (or thread)."""

    def __init__(self, conn: apsw.Connection, path: Path, ledger_id: str, readonly: bool) -> None:
        self._conn = conn
        # The head our last append left (seq, hash, stream heads), and SQLite's data
        # version right after it: the next append reuses it when the data version says
        # no other connection committed in between, and reads it afresh otherwise.
        self._tail: _Tail | None = None
        self._pending_tail: _Tail | None = None
        self.path = path
        self.ledger_id = ledger_id
        self.readonly = readonly

    # -- opening -------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        create: bool = False,
        readonly: bool = False,
        init_empty: bool = False,
    ) -> Ledger:
        """Open (or with `create`, initialise) the ledger at `path`.

        Refuses, with a one-line `LedgerError` and without writing a byte, a file that is
        not a swecl ledger, a ledger of a newer store schema, and a read-only file when
        writing was asked for; and with `LedgerDamaged`, a file that is empty, cut short
        or malformed. An existing empty file is initialised only with `init_empty` (what
        `swecl init` asks for): anywhere else it may be a ledger that lost its contents,
        and a fresh one in its place would bury the evidence.
        """
        return cls(*_connection.open_connection(path, create=create, readonly=readonly, init_empty=init_empty))

    @staticmethod
    def snapshot_file(source: str | Path, target: str | Path) -> None:
        """Copy the ledger file `source` to `target` as one consistent snapshot: SQLite's
        backup API copies the pages under one read transaction, so appends made meanwhile
        by another process are either wholly in the copy or not at all."""
        _connection.snapshot_file(source, target)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing -------------------------------------------------------------------------

    def append(
        self,
        stream: str,
        events: Sequence[Event | NewEvent],
        *,
        expected_version: int | None = None,
        blobs: Iterable[bytes | str] = (),
        durable: bool = False,
    ) -> list[Recorded]:
        """Append `events` to `stream` atomically; see `append_batches`."""
        return self.append_batches([StreamBatch(stream, events, expected_version)], blobs=blobs, durable=durable)

    def append_batches(
        self,
        batches: Sequence[StreamBatch],
        *,
        blobs: Iterable[bytes | str] = (),
        durable: bool = False,
    ) -> list[Recorded]:
        """Append several streams' events (and blobs) in one transaction.

        `expected_version` is the stream's last version before this batch (-1 for a new
        stream); a mismatch raises `ConcurrencyConflict` and writes nothing. A batch whose
        event ids are all recorded already is a no-op that returns the recorded events
        (a retried append is not a duplicate). `durable` syncs the commit to disk
        (`synchronous=FULL`): used when a task finishes.
        """
        self._require_writable()
        encoded = _encode_batches(batches)
        blob_list = [b.encode() if isinstance(b, str) else b for b in blobs]

        conn = self._conn
        try:
            if durable:
                conn.pragma("synchronous", "FULL")
            conn.execute("BEGIN IMMEDIATE")
            try:
                return self._write_and_commit(encoded, blob_list)
            except (apsw.ConstraintError, ConcurrencyConflict):
                # An event id already recorded or a stream moved on: a retried append
                # is either, and is a no-op, not a conflict. Roll back and decide with
                # the full check (ids first, as the contract says), which writes
                # nothing or everything. The fresh append, by far the common case,
                # pays for no lookup of its ids.
                conn.execute("ROLLBACK")
                return self._append_checked(encoded, blob_list)
            except BaseException:
                if not conn.get_autocommit():
                    conn.execute("ROLLBACK")
                raise
        except apsw.Error as exc:
            raise _ledger_error(self.path, exc, "append to") from None
        finally:
            if durable:
                conn.pragma("synchronous", "NORMAL")

    def import_recorded(self, rows: Iterable[Recorded], *, durable: bool = True,
                        restream: bool = False) -> tuple[int, int]:
        """Copy events from another ledger (merge), keeping their ids, streams and times.

        Rows already present by event_id are skipped (idempotent); each kept row gets the
        next seq of this ledger and joins its hash chain. A row whose stream version is
        taken by a different event is a conflict and nothing is written. `restream`: each
        kept row takes its stream's next version here instead (rows cut from a copy of
        this ledger whose streams this ledger kept appending to; see `merge_branch`).
        Returns (added, skipped).
        """
        self._require_writable()
        rows = list(rows)
        conn = self._conn
        try:
            if durable:
                conn.pragma("synchronous", "FULL")
            conn.execute("BEGIN IMMEDIATE")
            try:
                existing = self._existing([r.event_id for r in rows])
                head = conn.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
                seq, prev = (head[0], head[1]) if head else (0, GENESIS_HASH)
                added = 0
                heads: dict[str, int] = {}
                for r in rows:
                    if r.event_id in existing:
                        continue
                    version = r.stream_version
                    if restream:
                        version = heads.get(r.stream, self._stream_head(r.stream)) + 1
                        heads[r.stream] = version
                    taken = conn.execute(
                        "SELECT event_id FROM events WHERE stream = ? AND stream_version = ?",
                        (r.stream, version),
                    ).fetchone()
                    if taken:
                        raise ConcurrencyConflict(r.stream, version - 1, self._stream_head(r.stream))
                    payload = encode_payload(r.event) if isinstance(r.event, Event) else _ENCODER.encode(r.event.raw)
                    seq += 1
                    digest = chain_hash(prev, seq, r.event_id, r.stream, version, r.type, r.schema, r.time, payload)
                    conn.execute(
                        "INSERT INTO events (seq, event_id, stream, stream_version, type, schema, time, payload,"
                        " prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (seq, r.event_id, r.stream, version, r.type, r.schema, r.time, payload, prev, digest),
                    )
                    prev = digest
                    added += 1
                conn.execute("COMMIT")
                # SQLite's data_version does not move for this connection's own commits:
                # the head the last append remembered is stale now.
                self._tail = None
                return added, len(rows) - added
            except BaseException:
                if not conn.get_autocommit():
                    conn.execute("ROLLBACK")
                raise
        except apsw.Error as exc:
            raise _ledger_error(self.path, exc, "merge into") from None
        finally:
            if durable:
                conn.pragma("synchronous", "NORMAL")

    def _require_writable(self) -> None:
        if self.readonly:
            raise LedgerError(f"ledger {self.path} is read-only; nothing was written")

    # -- blobs ---------------------------------------------------------------------------

    def put_blob(self, data: bytes | str) -> str:
        """Store `data` once under its SHA-256 and return that hash."""
        self._require_writable()
        raw = data.encode() if isinstance(data, str) else data
        return _blobs.put_blob(self._conn, self.path, raw)

    def put_blobs(self, items: Sequence[bytes | memoryview]) -> list[str]:
        """Store each of `items` once under its SHA-256 and return the hashes, in order:
        each hashed once, those not yet stored written in one transaction (none when all
        are: a snapshot of unchanged files takes no write lock). Items may be memoryviews
        (the chunks of a file, cut without copying)."""
        self._require_writable()
        return _blobs.put_blobs(self._conn, self.path, list(items))

    def get_blob(self, digest: str) -> bytes:
        """The content stored under `digest`, checked against it: a blob altered in the file
        raises `IntegrityError` naming it instead of being used (a grade re-decided from a
        forged log, a patch replayed that the agent never wrote). SHA-256 costs far less
        than the decompression before it."""
        return _blobs.get_blob(self._conn, self.path, digest)

    def has_blob(self, digest: str) -> bool:
        return _blobs.has_blob(self._conn, digest)

    def iter_blobs(self) -> Iterator[tuple[str, int, bytes]]:
        """(sha256, size, decoded data) of every blob, for verify and merge (which check the
        hashes themselves); `IntegrityError` naming a blob that cannot be decoded."""
        return _blobs.iter_blobs(self._conn)

    # -- reading -------------------------------------------------------------------------

    def head(self) -> int:
        """The last seq (0 for an empty ledger)."""
        row = self._conn.execute("SELECT MAX(seq) FROM events").fetchone()
        return int(row[0] or 0)

    def stream_version(self, stream: str) -> int:
        """The stream's last version, -1 if it has no events."""
        return self._stream_head(stream)

    def hash_at(self, seq: int) -> bytes | None:
        try:
            row = self._conn.execute("SELECT hash FROM events WHERE seq = ?", (seq,)).fetchone()
        except apsw.Error as exc:
            raise _ledger_error(self.path, exc, "read") from None
        return None if row is None else bytes(row[0])

    def get(self, seq: int) -> Recorded | None:
        row = self._conn.execute(f"{_SELECT} WHERE seq = ?", (seq,)).fetchone()
        return None if row is None else _row_to_recorded(row)

    def get_by_id(self, event_id: str) -> Recorded | None:
        row = self._conn.execute(f"{_SELECT} WHERE event_id = ?", (event_id,)).fetchone()
        return None if row is None else _row_to_recorded(row)

    def read(
        self,
        *,
        after: int = 0,
        upto: int | None = None,
        types: Iterable[str] | None = None,
        streams: Iterable[str] | None = None,
        ranges: Sequence[StreamRange] | None = None,
    ) -> Iterator[Recorded]:
        """Events with `after < seq <= upto`, in seq order, decoded (upcast if old).

        `types` keeps only those event types; `streams` only those exact streams;
        `ranges` only events under those stream prefixes (each up to its own seq).
        """
        sql, params = self._select(after, upto, types, streams, ranges)
        seq = after
        try:
            for row in self._conn.execute(sql, params):
                seq = row[0]
                yield _row_to_recorded(row)
        except apsw.Error as exc:
            # A malformed page met halfway through: one line for the user, not a traceback.
            raise _ledger_error(self.path, exc, "read") from None
        except UnicodeDecodeError:
            raise LedgerDamaged(f"{self.path} is damaged: an event after seq {seq} holds text that is not UTF-8") from None
        except PAYLOAD_ERRORS as exc:
            raise self.undecodable(seq, exc) from None

    def undecodable(self, seq: int, exc: BaseException) -> LedgerDamaged:
        """The error for a payload that no longer decodes as its type (an altered row: the
        read's chain check has warned already). Folds that decode `read_raw` rows raise it
        too, so every read stops in the same one line instead of a traceback."""
        return LedgerDamaged(f"{self.path} is damaged: seq {seq} does not decode ({exc}); run `swecl verify`")

    def read_raw(
        self,
        *,
        after: int = 0,
        upto: int | None = None,
        types: Iterable[str] | None = None,
        streams: Iterable[str] | None = None,
        ranges: Sequence[StreamRange] | None = None,
    ) -> Iterator[tuple[Any, ...]]:
        """Like `read` but undecoded rows: (seq, event_id, stream, stream_version, type, schema, time,
        payload, prev_hash, hash)."""
        sql, params = self._select(after, upto, types, streams, ranges)
        # The cursor itself, not a generator around it: a full scan pays nothing per row
        # beyond SQLite's own work.
        return self._conn.execute(sql, params)

    def _select(
        self,
        after: int,
        upto: int | None,
        types: Iterable[str] | None,
        streams: Iterable[str] | None,
        ranges: Sequence[StreamRange] | None,
    ) -> tuple[str, list[Any]]:
        # With streams or ranges, an index on the stream must drive the query: a run's
        # events are found in its own range, and `seq` (the rowid) is in every index
        # entry, so the seq bounds are checked without touching the table. SQLite has no
        # statistics here and would rather take the type index (every event of those
        # types in the whole ledger: 1.8 s instead of 11 ms for one run's outcomes in a
        # 1M-event ledger) or scan the table by rowid; the unary `+` rules those out.
        # Except for a short span of seqs (a catch-up after a checkpoint, the next cursor
        # of a replay): then reading that span by rowid is cheapest, and the stream
        # terms are the ones kept off the indexes. Without streams or ranges, the type
        # index or the rowid range is the right plan as it is.
        by_stream = streams is not None or ranges is not None
        short = by_stream and upto is not None and upto - after <= _SHORT_SPAN
        seq_col = "+seq" if by_stream and not short else "seq"
        type_col = "+type" if by_stream else "type"
        stream_col = "+stream" if short else "stream"
        where = [f"{seq_col} > ?"]
        params: list[Any] = [after]
        if upto is not None:
            where.append(f"{seq_col} <= ?")
            params.append(upto)
        if types is not None:
            type_list = list(types)
            where.append(f"{type_col} IN ({','.join('?' * len(type_list))})" if type_list else "0")
            params.extend(type_list)
        if streams is not None:
            stream_list = list(streams)
            where.append(f"{stream_col} IN ({','.join('?' * len(stream_list))})" if stream_list else "0")
            params.extend(stream_list)
        if ranges is not None:
            where.append(_range_sql(ranges, params, stream_col) if ranges else "0")
        if by_stream and not short:
            # The matching seqs first (a sorted list of integers), then the rows in that
            # order: SQLite does not have to sort whole rows, payloads and all.
            return f"{_SELECT} WHERE seq IN (SELECT seq FROM events WHERE {' AND '.join(where)}) ORDER BY seq", params
        return f"{_SELECT} WHERE {' AND '.join(where)} ORDER BY seq", params

    def read_stream(self, stream: str, *, after_version: int = -1) -> Iterator[Recorded]:
        for row in self._conn.execute(
            f"{_SELECT} WHERE stream = ? AND stream_version > ? ORDER BY stream_version", (stream, after_version)
        ):
            yield _row_to_recorded(row)

    def streams(self, prefix: str | None = None) -> list[str]:
        if prefix is None:
            return [r[0] for r in self._conn.execute("SELECT DISTINCT stream FROM events ORDER BY stream")]
        return [
            r[0]
            for r in self._conn.execute(
                "SELECT DISTINCT stream FROM events WHERE stream = ? OR (stream >= ? AND stream < ?) ORDER BY stream",
                (prefix, prefix + "/", prefix + "0"),
            )
        ]

    def count(self) -> int:
        return int(self._conn.execute("SELECT count(*) FROM events").fetchone()[0])

    def task_position(
        self, version: str, order: int, *, pass_: str = "initial", sequence_id: str | None = None
    ) -> int | None:
        """The seq at which task `order` of `pass_` first started in run `version`.

        "As it stood before task K started" is every event with a smaller seq.
        """
        prefix = f"run/{version}/{sequence_id}" if sequence_id else f"run/{version}"
        for rec in self.read(types=["task.started"], ranges=[StreamRange(prefix)]):
            ev = rec.event
            if ev.order == order and ev.pass_ == pass_:
                return rec.seq
        return None

    # -- integrity -----------------------------------------------------------------------

    def verify(self) -> VerifyReport:
        """Check everything the file holds; raise `IntegrityError` at the first bad thing.

        In this order: the hash chain and every payload (naming the first bad seq), every
        blob's content against its hash, every blob reference, the schema objects (the
        append-only triggers above all) and the metadata rows, and last SQLite's own
        integrity check of the pages and indexes that the reads before did not touch.
        """
        return _verify.verify(self._conn, self.path)

    def check_chain(self, after: int = 0, prev: bytes = GENESIS_HASH) -> tuple[int, bytes]:
        """Recompute the hash chain from seq `after` (whose hash is `prev`) to the head.

        Returns the head's (seq, hash); raises `IntegrityError` at the first bad link. The
        cheap check of the read commands: no payload decoding, no blobs (`verify` does those).
        """
        return _verify.check_chain(self._conn, self.path, after, prev)

    def structure_problem(self) -> str | None:
        """What is wrong with the schema objects or the metadata rows, or None."""
        return _verify.structure_problem(self._conn, self.path)
