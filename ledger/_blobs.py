"""Blobs: large content (patches, transcripts, logs) stored once under its SHA-256 in
the ledger's `blobs` table, compressed when that pays, and checked against its hash
whenever it is read.

Separate from the store (`_store.Ledger`, whose blob methods call these with its
connection) because blobs are a store of their own beside the event log: content
addressed, not chained, referred to by the events that `blob_refs_of` names.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw

from .errors import IntegrityError, LedgerError
from .events import UnknownEvent
from ._connection import _ledger_error

# Blobs smaller than this are stored as they are: compressing them saves nothing.
_COMPRESS_MIN = 1024


_BLOB_FIELDS: dict[str, tuple[str, ...]] = {
    "agent.finished": ("patch", "transcript", "prompt"),
    "grade.finished": ("log",),
    "memory.written": ("patch",),
    "memory.seeded": ("items",),
    "memory.provider.started": ("tools_listing",),
    "memory.provider.called": ("arguments", "result", "structured"),
    "counterfactual.finished": ("patch",),
}
# Events whose blobs sit in a list of structs: type -> (list field, blob field).
_BLOB_LISTS: dict[str, tuple[str, str]] = {
    "memory.provider.snapshot": ("files", "blob"),
}


def blob_refs_of(event: Any) -> list[str]:
    """Blob hashes an event refers to (they must all be in the ledger)."""
    if isinstance(event, UnknownEvent):
        return []
    names = _BLOB_FIELDS.get(event.type_name(), ())
    refs = [ref for ref in (getattr(event, n) for n in names) if ref]
    listed = _BLOB_LISTS.get(event.type_name())
    if listed is not None:
        refs += [ref for ref in (getattr(item, listed[1]) for item in getattr(event, listed[0])) if ref]
    return refs


def blob_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def put_blob(conn: apsw.Connection, path: Path, raw: bytes) -> str:
    """The work of `Ledger.put_blob` (see there), in a transaction of its own."""
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            digest = put_blob_in_txn(conn, raw)
            conn.execute("COMMIT")
            return digest
        except BaseException:
            if not conn.get_autocommit():
                conn.execute("ROLLBACK")
            raise
    except apsw.Error as exc:
        raise _ledger_error(path, exc, "store a blob in") from None


def put_blob_in_txn(conn: apsw.Connection, raw: bytes) -> str:
    """Store `raw` inside the caller's transaction; its hash."""
    digest = blob_hash(raw)
    if conn.execute("SELECT 1 FROM blobs WHERE sha256 = ?", (digest,)).fetchone():
        return digest
    encoding, stored = "identity", raw
    if len(raw) >= _COMPRESS_MIN:
        packed = zlib.compress(raw, 6)
        if len(packed) < len(raw):
            encoding, stored = "zlib", packed
    conn.execute(
        "INSERT INTO blobs (sha256, size, encoding, data) VALUES (?, ?, ?, ?)",
        (digest, len(raw), encoding, stored),
    )
    return digest


def get_blob(conn: apsw.Connection, path: Path, digest: str) -> bytes:
    """The work of `Ledger.get_blob` (see there)."""
    try:
        row = conn.execute("SELECT encoding, data FROM blobs WHERE sha256 = ?", (digest,)).fetchone()
    except apsw.Error as exc:
        raise _ledger_error(path, exc, "read a blob of") from None
    if row is None:
        raise LedgerError(f"blob {digest} is not in {path}")
    data = _decoded(digest, row[0], row[1])
    if blob_hash(data) != digest:
        raise IntegrityError(None, f"blob {digest}: content does not match its hash")
    return data


def has_blob(conn: apsw.Connection, digest: str) -> bool:
    return conn.execute("SELECT 1 FROM blobs WHERE sha256 = ?", (digest,)).fetchone() is not None


def iter_blobs(conn: apsw.Connection) -> Iterator[tuple[str, int, bytes]]:
    """The work of `Ledger.iter_blobs` (see there)."""
    digest = ""
    try:
        for digest, size, encoding, data in conn.execute(
            "SELECT sha256, size, encoding, data FROM blobs ORDER BY sha256"
        ):
            yield digest, size, _decoded(digest, encoding, data)
    except UnicodeDecodeError:
        which = f"the blob after {digest}" if digest else "the first blob"
        raise IntegrityError(None, f"{which} has a hash or encoding that is not UTF-8 (altered)") from None


def _decoded(digest: str, encoding: str, data: bytes) -> bytes:
    """A stored blob's content; `IntegrityError` naming it if it cannot be decoded (a byte
    changed inside compressed data usually breaks zlib's own check)."""
    if encoding == "identity":
        return bytes(data)
    if encoding != "zlib":
        raise IntegrityError(None, f"blob {digest}: unknown encoding {encoding!r}")
    try:
        return zlib.decompress(data)
    except zlib.error as exc:
        raise IntegrityError(None, f"blob {digest}: its compressed data is damaged ({exc})") from None
