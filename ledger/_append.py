"""The append path's internals: numbering, chaining and inserting a batch inside its
transaction, the look-up that makes a retried batch a no-op, and the head remembered
between appends.

Separate from the store (`_store.Ledger`) to keep that module to its public methods;
a mixin rather than functions because these share the `Ledger`'s cached head
(`_tail`) with it. `Ledger.append_batches` and `Ledger.import_recorded` call them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import apsw

from .errors import ConcurrencyConflict, LedgerError
from ._blobs import put_blob_in_txn
from ._codec import _SELECT, Recorded, _EncodedBatch, _row_to_recorded, chain_hash, utc_now
from ._schema import GENESIS_HASH


@dataclass(slots=True)
class _Tail:
    data_version: int
    seq: int
    hash: bytes
    heads: dict[str, int]


_TAIL_STREAMS = 4096  # stream heads remembered between appends (a run has a few dozen)


_INSERT = (
    "INSERT INTO events (seq, event_id, stream, stream_version, type, schema, time, payload, prev_hash, hash)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


class _Appending:
    """The append internals `Ledger` inherits; they work on its connection and head."""

    _conn: apsw.Connection
    _tail: _Tail | None
    _pending_tail: _Tail | None

    def _append_checked(self, encoded: list[_EncodedBatch], blob_list: list[bytes]) -> list[Recorded]:
        """Append after looking the batch's ids up: all recorded already -> the recorded
        events (idempotent retry); some -> refused; none -> appended."""
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            existing = self._existing([ne.event_id for _, _, evs in encoded for ne, _, _, _ in evs])
            if existing:
                result = self._idempotent_result(encoded, existing)
                conn.execute("ROLLBACK")
                return result
            return self._write_and_commit(encoded, blob_list)
        except BaseException:
            if not conn.get_autocommit():
                conn.execute("ROLLBACK")
            raise

    def _write_and_commit(self, encoded: list[_EncodedBatch], blob_list: list[bytes]) -> list[Recorded]:
        """Blobs and events, then COMMIT (inside the caller's BEGIN IMMEDIATE)."""
        for data in blob_list:
            put_blob_in_txn(self._conn, data)
        recorded = self._insert(encoded)
        self._conn.execute("COMMIT")
        self._committed()
        return recorded

    def _insert(self, encoded: list[_EncodedBatch]) -> list[Recorded]:
        """Number, chain and insert the batch (inside the caller's transaction).

        Every row is made first (seq, stream version, hash chain: each hash needs only
        the previous one) and inserted with one `executemany`, so the per-row cost is
        SQLite's, not the interpreter's. A stream's head is read once per call.
        """
        conn = self._conn
        if not encoded:
            return []
        cached = self._tail
        self._tail = None  # until this transaction commits
        if cached is not None and cached.data_version == conn.data_version():
            # Nobody committed since our last append: its head is the ledger's head.
            seq, prev, heads = cached.seq, cached.hash, dict(cached.heads)
        else:
            heads = {}
            first = encoded[0][0]
            # The ledger's head and the first stream's head in one statement.
            row = conn.execute(
                "SELECT seq, hash, (SELECT MAX(stream_version) FROM events WHERE stream = ?)"
                " FROM events ORDER BY seq DESC LIMIT 1",
                (first,),
            ).fetchone()
            if row:
                seq, prev = row[0], row[1]
                heads[first] = -1 if row[2] is None else int(row[2])
            else:
                seq, prev = 0, GENESIS_HASH
                heads[first] = -1
        recorded: list[Recorded] = []
        rows: list[tuple[Any, ...]] = []
        now = utc_now()
        for stream, expected, evs in encoded:
            current = heads.get(stream)
            if current is None:
                current = self._stream_head(stream)
            if expected is not None and expected != current:
                raise ConcurrencyConflict(stream, expected, current)
            version = current
            for ne, type_, schema, payload in evs:
                seq += 1
                version += 1
                event_id = ne.event_id
                digest = chain_hash(prev, seq, event_id, stream, version, type_, schema, now, payload)
                rows.append((seq, event_id, stream, version, type_, schema, now, payload, prev, digest))
                recorded.append(Recorded(seq, event_id, stream, version, type_, schema, now, ne.event, prev, digest))
                prev = digest
            heads[stream] = version
        if rows:
            conn.executemany(_INSERT, rows)
        self._pending_tail = _Tail(0, seq, prev, heads)
        return recorded

    def _committed(self) -> None:
        """After a COMMIT of `_insert`'s rows: remember the head for the next append."""
        tail = self._pending_tail
        self._pending_tail = None
        if tail is not None:
            if len(tail.heads) > _TAIL_STREAMS:
                tail.heads.clear()
            tail.data_version = self._conn.data_version()
            self._tail = tail

    def _existing(self, event_ids: Sequence[str]) -> dict[str, tuple[str, str, bytes]]:
        found: dict[str, tuple[str, str, bytes]] = {}
        for start in range(0, len(event_ids), 500):
            chunk = event_ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for eid, stream, type_, payload in self._conn.execute(
                f"SELECT event_id, stream, type, payload FROM events WHERE event_id IN ({marks})", chunk
            ):
                found[eid] = (stream, type_, payload)
        return found

    def _idempotent_result(self, encoded: Any, existing: dict[str, tuple[str, str, bytes]]) -> list[Recorded]:
        wanted = [(stream, ne, type_, payload) for stream, _, evs in encoded for ne, type_, _, payload in evs]
        if len(existing) != len(wanted):
            raise LedgerError(
                "some event ids of this batch are recorded and some are not: a retried batch must be the same batch"
            )
        for stream, ne, type_, payload in wanted:
            if existing[ne.event_id] != (stream, type_, payload):
                raise LedgerError(f"event_id {ne.event_id} is already recorded with a different event")
        ids = [ne.event_id for _, ne, _, _ in wanted]
        marks = ",".join("?" * len(ids))
        rows = self._conn.execute(f"{_SELECT} WHERE event_id IN ({marks}) ORDER BY seq", ids).fetchall()
        return [_row_to_recorded(r) for r in rows]

    def _stream_head(self, stream: str) -> int:
        row = self._conn.execute("SELECT MAX(stream_version) FROM events WHERE stream = ?", (stream,)).fetchone()
        return -1 if row is None or row[0] is None else int(row[0])
