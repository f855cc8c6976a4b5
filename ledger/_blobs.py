"""Blobs: large content (patches, transcripts, logs) stored once under its SHA-256 in
the ledger's `blobs` table, compressed when that pays, and checked against its hash
whenever it is read.

The `encoding` column says how a blob's bytes are stored: `identity`, `zlib` (level 6),
or `zstd` (a Zstandard frame, level 1, with its checksum; store schema 3 on). The bulk
path, `put_blobs` (a memory server's data directory snapshotted after each task, on the
task's path), compresses with zstd where the ledger's schema allows it: zlib's level 6
costs some 50 ms per MB, zstd's level 1 a few (and packs text about as tightly). The
other blobs (patches, logs, transcripts: small, written once per task) keep zlib, as
before. Every encoding is read whatever the schema; the hash is always of the content,
never of the stored bytes.

Separate from the store (`_store.Ledger`, whose blob methods call these with its
connection) because blobs are a store of their own beside the event log: content
addressed, not chained, referred to by the events that `blob_refs_of` names.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import apsw
import zstandard

from .errors import IntegrityError, LedgerError
from .events import UnknownEvent
from ._connection import _ledger_error

T = TypeVar("T")

# Blobs smaller than this are stored as they are: compressing them saves nothing.
_COMPRESS_MIN = 1024
_ZSTD_LEVEL = 1
# The first store schema whose blobs table accepts `zstd`.
_ZSTD_SCHEMA = 3


_BLOB_FIELDS: dict[str, tuple[str, ...]] = {
    "agent.finished": ("patch", "transcript", "prompt"),
    "grade.finished": ("log",),
    "memory.written": ("patch",),
    "memory.history": ("text",),
    "memory.seeded": ("items",),
    "memory.provider.started": ("tools_listing",),
    "memory.provider.called": ("arguments", "result", "structured"),
    "counterfactual.finished": ("patch",),
    "bundle.sealed": ("manifest",),
}
# Events whose blobs sit in a list of structs: type -> (list field, blob field, and the
# field of each struct's list of chunks, each a struct with a `blob`, or "").
_BLOB_LISTS: dict[str, tuple[str, str, str]] = {
    "memory.provider.snapshot": ("files", "blob", "chunks"),
}


def blob_refs_of(event: Any) -> list[str]:
    """Blob hashes an event refers to (they must all be in the ledger)."""
    if isinstance(event, UnknownEvent):
        return []
    names = _BLOB_FIELDS.get(event.type_name(), ())
    refs = [ref for ref in (getattr(event, n) for n in names) if ref]
    listed = _BLOB_LISTS.get(event.type_name())
    if listed is not None:
        items, blob, chunks = listed
        for item in getattr(event, items):
            if ref := getattr(item, blob):
                refs.append(ref)
            if chunks:
                refs += [chunk.blob for chunk in getattr(item, chunks)]
    return refs


def blob_hash(data: bytes | memoryview) -> str:
    return hashlib.sha256(data).hexdigest()


def _in_transaction(conn: apsw.Connection, path: Path, what: str, work: Callable[[], T]) -> T:
    """`work()` in a write transaction of its own, rolled back if it fails; an SQLite error
    as the ledger's error saying it could not `what` the ledger."""
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            done = work()
            conn.execute("COMMIT")
            return done
        except BaseException:
            if not conn.get_autocommit():
                conn.execute("ROLLBACK")
            raise
    except apsw.Error as exc:
        raise _ledger_error(path, exc, what) from None


def put_blob(conn: apsw.Connection, path: Path, raw: bytes) -> str:
    """The work of `Ledger.put_blob` (see there), in a transaction of its own."""
    return _in_transaction(conn, path, "store a blob in", lambda: put_blob_in_txn(conn, raw))


def put_blob_in_txn(conn: apsw.Connection, raw: bytes | memoryview, digest: str | None = None, *,
                    bulk: bool = False) -> str:
    """Store `raw` inside the caller's transaction; its hash (`digest`, when the caller has
    just computed it from `raw`: a large blob is not hashed twice). `bulk`: zstd where the
    schema allows it (see the module doc)."""
    digest = digest or blob_hash(raw)
    if conn.execute("SELECT 1 FROM blobs WHERE sha256 = ?", (digest,)).fetchone():
        return digest
    encoding, stored = _encoded(conn, raw, bulk)
    conn.execute(
        "INSERT INTO blobs (sha256, size, encoding, data) VALUES (?, ?, ?, ?)",
        (digest, len(raw), encoding, stored),
    )
    return digest


def put_blobs(conn: apsw.Connection, path: Path, items: list[bytes | memoryview]) -> list[str]:
    """The work of `Ledger.put_blobs` (see there): each hashed once, the missing ones
    stored in one transaction (none when all are present). An item may be a memoryview
    (a chunk of a file read once): only a stored one is copied."""
    digests = [blob_hash(raw) for raw in items]
    try:
        missing = [(d, raw) for d, raw in zip(digests, items) if not has_blob(conn, d)]
    except apsw.Error as exc:
        raise _ledger_error(path, exc, "store blobs in") from None
    if missing:
        _in_transaction(conn, path, "store blobs in",
                        lambda: [put_blob_in_txn(conn, raw, digest, bulk=True) for digest, raw in missing])
    return digests


def _encoded(conn: apsw.Connection, raw: bytes | memoryview, bulk: bool) -> tuple[str, bytes | memoryview]:
    """(encoding, stored bytes) of a new blob (see the module doc)."""
    if len(raw) < _COMPRESS_MIN:
        return "identity", raw
    if bulk and _store_schema(conn) >= _ZSTD_SCHEMA:
        encoding, packed = "zstd", zstandard.ZstdCompressor(level=_ZSTD_LEVEL, write_checksum=True).compress(raw)
    else:
        encoding, packed = "zlib", zlib.compress(raw, 6)
    return (encoding, packed) if len(packed) < len(raw) else ("identity", raw)


def _store_schema(conn: apsw.Connection) -> int:
    row = conn.execute("SELECT value FROM swecl_meta WHERE key = 'store_schema'").fetchone()
    return int(row[0]) if row is not None and str(row[0]).isdigit() else 0


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


def decode_blob(encoding: str, data: bytes) -> bytes:
    """A stored blob's content from its `encoding` and stored bytes (for tools that read
    the blobs table themselves); `ValueError` for an unknown encoding or damaged data."""
    if encoding == "identity":
        return bytes(data)
    if encoding == "zlib":
        try:
            return zlib.decompress(data)
        except zlib.error as exc:
            raise ValueError(str(exc)) from None
    if encoding == "zstd":
        try:
            # The frame names its content size (the compressor writes it).
            return zstandard.ZstdDecompressor().decompress(data)
        except zstandard.ZstdError as exc:
            raise ValueError(str(exc)) from None
    raise ValueError(f"unknown encoding {encoding!r}")


def _decoded(digest: str, encoding: str, data: bytes) -> bytes:
    """A stored blob's content; `IntegrityError` naming it if it cannot be decoded (a byte
    changed inside compressed data usually breaks the codec's own check)."""
    if encoding not in ("identity", "zlib", "zstd"):
        raise IntegrityError(None, f"blob {digest}: unknown encoding {encoding!r}")
    try:
        return decode_blob(encoding, data)
    except ValueError as exc:
        raise IntegrityError(None, f"blob {digest}: its compressed data is damaged ({exc})") from None
