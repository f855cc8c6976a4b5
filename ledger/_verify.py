"""Verification: the whole-file check (`verify`), the cheap chain check of the read
commands (`check_chain`) and the check of the schema objects and metadata rows.

Separate from the store (`_store.Ledger`, whose `verify`, `check_chain` and
`structure_problem` call these with its connection and path) because none of it is
needed to append or read: it recomputes from the stored columns what appending wrote.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import apsw
import msgspec

from .errors import IntegrityError, LedgerDamaged
from ._blobs import blob_hash, blob_refs_of, iter_blobs
from ._codec import chain_hash, decode_payload
from ._connection import _ledger_error
from ._integrity import meta_problem, schema_problem
from ._schema import GENESIS_HASH


def verify(conn: apsw.Connection, path: Path) -> VerifyReport:
    """The work of `Ledger.verify` (see there)."""
    prev = GENESIS_HASH
    blob_refs: dict[str, int] = {}
    events = blobs = 0
    where = "reading the events"
    try:
        for seq, type_, schema, payload, digest in _verified_rows(conn, 0, GENESIS_HASH):
            try:
                event = decode_payload(type_, schema, payload)
            except (msgspec.MsgspecError, LookupError, ValueError, TypeError) as exc:
                raise IntegrityError(seq, f"seq {seq}: payload does not decode as {type_}: {exc}") from None
            for ref in blob_refs_of(event):
                blob_refs.setdefault(ref, seq)
            prev = digest
            events += 1
        where = "reading the blobs"
        for blob_digest, size, data in iter_blobs(conn):
            if blob_hash(data) != blob_digest or len(data) != size:
                raise IntegrityError(None, f"blob {blob_digest}: content does not match its hash")
            blobs += 1
            blob_refs.pop(blob_digest, None)
        if blob_refs:
            missing, seq = min(blob_refs.items(), key=lambda kv: kv[1])
            raise IntegrityError(seq, f"seq {seq}: references blob {missing}, which is not in the ledger")
        where = "reading the schema"
        problem = structure_problem(conn, path)
        if problem is not None:
            raise IntegrityError(None, problem)
        where = "checking the pages"
        found = [row[0] for row in conn.execute("PRAGMA integrity_check(3)")]
        if found != ["ok"]:
            raise IntegrityError(None, f"{path} is corrupt: SQLite's integrity check finds {'; '.join(found)}")
    except apsw.CorruptError as exc:
        raise IntegrityError(
            None, f"{path} is corrupt: SQLite reports a malformed database image {where} ({exc})"
        ) from None
    except apsw.Error as exc:
        raise _ledger_error(path, exc, "verify") from None
    return VerifyReport(events=events, blobs=blobs, head_hash=prev.hex())


def check_chain(
    conn: apsw.Connection, path: Path, after: int = 0, prev: bytes = GENESIS_HASH
) -> tuple[int, bytes]:
    """The work of `Ledger.check_chain` (see there)."""
    seq, last = after, prev
    try:
        for seq, _, _, _, last in _verified_rows(conn, after, prev):
            pass
    except apsw.Error as exc:
        raise _ledger_error(path, exc, "check") from None
    except _Unreadable as exc:
        # Not a warning: no read could get past that row either.
        raise LedgerDamaged(f"{path} is damaged: {exc}") from None
    return seq, last


def structure_problem(conn: apsw.Connection, path: Path) -> str | None:
    """The work of `Ledger.structure_problem` (see there)."""
    try:
        meta = dict(conn.execute("SELECT key, value FROM swecl_meta"))
        problem = meta_problem(meta)
        if problem is None:
            # Compared with the DDL of the ledger's own store schema (a well-formed one, as
            # `meta_problem` found): a ledger made under schema 1 keeps schema 1's objects.
            problem = schema_problem(conn, int(meta["store_schema"]))
    except apsw.Error as exc:
        raise _ledger_error(path, exc, "check") from None
    except UnicodeDecodeError:
        return "the schema or swecl_meta holds text that is not UTF-8 (it was altered)"
    return problem


def _verified_rows(
    conn: apsw.Connection, after: int, prev: bytes
) -> Iterator[tuple[int, str, int, bytes, bytes]]:
    """(seq, type, schema, payload, hash) of each event after `after`, its link and hash
    checked first; `IntegrityError` at the first gap, broken link or altered event."""
    expected_seq = after
    rows = conn.execute(
        "SELECT seq, event_id, stream, stream_version, type, schema, time, payload, prev_hash, hash"
        " FROM events WHERE seq > ? ORDER BY seq",
        (after,),
    )
    try:
        for seq, event_id, stream, version, type_, schema, time, payload, prev_hash, digest in rows:
            expected_seq += 1
            if seq != expected_seq:
                raise IntegrityError(expected_seq, f"seq {expected_seq} is missing (gap before {seq})")
            if prev_hash != prev:
                raise IntegrityError(seq, f"seq {seq}: prev_hash does not link to seq {seq - 1}")
            if chain_hash(prev, seq, event_id, stream, version, type_, schema, time, payload) != digest:
                raise IntegrityError(seq, f"seq {seq}: hash mismatch (the event was altered)")
            yield seq, type_, schema, payload, digest
            prev = digest
    except UnicodeDecodeError:
        # SQLite hands back TEXT as UTF-8, so a byte changed inside a text column
        # fails while the row is fetched, before its seq can be read.
        raise _Unreadable(
            expected_seq + 1, f"the event after seq {expected_seq} holds text that is not UTF-8 (it was altered)"
        ) from None


class _Unreadable(IntegrityError):
    """A row that cannot even be fetched: for verify a failure like any other, for a
    read a damaged file."""


class VerifyReport(msgspec.Struct, frozen=True):
    events: int
    blobs: int
    head_hash: str
