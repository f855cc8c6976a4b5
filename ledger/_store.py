"""The apsw-backed event store: one SQLite file, append-only, hash-chained.

Writers serialise on `BEGIN IMMEDIATE`; each append is one transaction, so a batch is
all or nothing. `seq` is assigned inside that transaction as head + 1, which keeps it
gapless (SQLite's autoincrement would leave holes after a rollback).
"""

from __future__ import annotations

import hashlib
import os
import re
import urllib.parse
import uuid
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import apsw
import msgspec

from .errors import ConcurrencyConflict, IntegrityError, LedgerDamaged, LedgerError
from .events import BY_TYPE, Event, UnknownEvent
from ._integrity import file_damage, meta_problem, schema_problem
from ._schema import DDL, GENESIS_HASH, STORE_SCHEMA
from ._upcasting import upcast

_SQLITE_MAGIC = b"SQLite format 3\x00"
_ENCODER = msgspec.json.Encoder(order="deterministic")
_RAW_DECODER = msgspec.json.Decoder()
_DECODERS: dict[type, msgspec.json.Decoder[Any]] = {}
_HASH_FIELDS = msgspec.msgpack.Encoder()

# Blobs smaller than this are stored as they are: compressing them saves nothing.
_COMPRESS_MIN = 1024


def _uuid_text(digest: bytes, version: str) -> str:
    """The canonical text of the UUID made of the first 16 bytes of `digest` with
    `version` and the RFC 4122 variant set: what `str(uuid.UUID(bytes=..., version=...))`
    gives, without building a UUID object (which cost more than hashing the event, measured)."""
    h = digest[:16].hex()
    return f"{h[:8]}-{h[8:12]}-{version}{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:32]}"


# The variant's top bits are 10: the high hex digit of byte 8 becomes 8, 9, a or b.
_VARIANT = {d: "89ab"[int(d, 16) & 3] for d in "0123456789abcdef"}


def new_event_id() -> str:
    """A random (version 4) UUID, as `str(uuid.uuid4())`."""
    return _uuid_text(os.urandom(16), "4")


_NAMESPACE = uuid.UUID("5f0c2a4e-8d1b-4c3e-9a57-2b6e1f3d7c90")
_NAMESPACE_BYTES = _NAMESPACE.bytes


def event_id_for(*parts: object) -> str:
    """A deterministic event id: the same decision retried gets the same id (idempotent).

    Exactly `str(uuid.uuid5(_NAMESPACE, "\\x1f".join(map(str, parts))))`.
    """
    name = "\x1f".join([str(p) for p in parts])
    return _uuid_text(hashlib.sha1(_NAMESPACE_BYTES + name.encode("utf-8", "surrogatepass")).digest(), "5")


def utc_now() -> str:
    """UTC now as `2024-05-01T12:00:00.000000Z` (isoformat: half the cost of strftime)."""
    return datetime.now(UTC).isoformat(timespec="microseconds")[:-6] + "Z"


def encode_payload(event: Event) -> bytes:
    try:
        return _ENCODER.encode(event)
    except UnicodeEncodeError:
        return _ENCODER.encode(_scrubbed(event))


def _scrubbed(event: Event) -> Event:
    """A copy of `event` whose unpaired surrogates became U+FFFD.

    Text from the outside (an agent's output, a file name read with surrogateescape)
    can hold lone surrogates, which UTF-8 cannot carry: the event is recorded with the
    replacement character rather than lost with a traceback."""
    return msgspec.convert(_scrub_surrogates(msgspec.to_builtins(event)), type(event))


def _scrub_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_scrub_surrogates(k): _scrub_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_surrogates(v) for v in value]
    return value


_SURROGATE = re.compile("[\ud800-\udfff]")


def chain_hash(
    prev_hash: bytes,
    seq: int,
    event_id: str,
    stream: str,
    stream_version: int,
    type_: str,
    schema: int,
    time: str,
    payload: bytes,
) -> bytes:
    """SHA-256 over the previous hash and a msgpack array of the row's fields.

    msgpack of ints, strings and bytes has exactly one encoding, so any reader can
    recompute the chain from the stored columns.
    """
    return hashlib.sha256(
        prev_hash + _HASH_FIELDS.encode((seq, event_id, stream, stream_version, type_, schema, time, payload))
    ).digest()


# What decoding an altered payload raises (msgspec's errors, an upcaster's KeyError/TypeError).
PAYLOAD_ERRORS = (msgspec.MsgspecError, LookupError, TypeError, ValueError)


def decode_payload(type_: str, schema: int, payload: bytes) -> Event | UnknownEvent:
    cls = BY_TYPE.get(type_)
    if cls is None:
        return UnknownEvent(type=type_, raw=_RAW_DECODER.decode(payload))
    if schema < cls.SCHEMA:
        raw = upcast(type_, _RAW_DECODER.decode(payload), schema, cls.SCHEMA)
        return msgspec.convert(raw, cls)
    # Keyed by class, not type name: a type re-bound to another class (tests do) gets its own.
    decoder = _DECODERS.get(cls)
    if decoder is None:
        decoder = _DECODERS[cls] = msgspec.json.Decoder(cls)
    return decoder.decode(payload)


class Recorded(msgspec.Struct, frozen=True):
    """An event as stored: its position, identity and decoded payload."""

    seq: int
    event_id: str
    stream: str
    stream_version: int
    type: str
    schema: int
    time: str
    event: Any  # Event | UnknownEvent
    prev_hash: bytes
    hash: bytes


@dataclass(frozen=True)
class NewEvent:
    """An event to append, with the client-made id that makes a retry idempotent."""

    event: Event
    event_id: str = ""

    def with_id(self) -> NewEvent:
        return self if self.event_id else NewEvent(self.event, new_event_id())


@dataclass(frozen=True)
class StreamBatch:
    stream: str
    events: Sequence[Event | NewEvent]
    expected_version: int | None = None  # None: append at the head, whatever it is


@dataclass(frozen=True)
class StreamRange:
    """Events of one stream (or every stream under `prefix/`) up to an optional seq."""

    prefix: str
    upto: int | None = None


def _range_sql(ranges: Sequence[StreamRange], params: list[Any], column: str = "stream") -> str:
    clauses = []
    for r in ranges:
        # `prefix` itself or anything below `prefix/`; '0' is the character after '/',
        # so the half-open range is index-friendly where LIKE would not be. Written as
        # flat disjuncts (each one stream-index search) rather than nested ORs, which
        # SQLite's OR optimisation cannot split, and would scan the table instead.
        limit = "" if r.upto is None else " AND +seq <= ?"
        clauses.append(f"({column} = ?{limit})")
        params.append(r.prefix)
        if r.upto is not None:
            params.append(r.upto)
        clauses.append(f"({column} >= ? AND {column} < ?{limit})")
        params.extend([r.prefix + "/", r.prefix + "0"])
        if r.upto is not None:
            params.append(r.upto)
    return "(" + " OR ".join(clauses) + ")"


# Up to this many seqs between `after` and `upto`, a ranged read takes the rowid range.
_SHORT_SPAN = 2048
# The page cache of a connection, in KiB (as `PRAGMA cache_size` takes it: negative).
_CACHE_KIB = -32768


def _busy_timeout_ms() -> int:
    try:
        return int(os.environ.get("SWECL_BUSY_TIMEOUT_MS", "30000"))
    except ValueError:
        return 30000


@dataclass(slots=True)
class _Tail:
    data_version: int
    seq: int
    hash: bytes
    heads: dict[str, int]


_TAIL_STREAMS = 4096  # stream heads remembered between appends (a run has a few dozen)


class Ledger:
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
        p = Path(path)
        exists = p.exists()
        if p.is_dir():
            raise LedgerError(f"{p} is a directory, not a ledger file")
        if not exists:
            if not create or readonly:
                raise LedgerError(f"no ledger at {p}: run `swecl init` (or pass --results DIR)")
            try:
                p.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise LedgerError(f"cannot create {p.parent}: {exc.strerror}") from None
            cls._create_atomically(p)
            exists = True
        if exists:
            try:
                with p.open("rb") as fh:
                    head = fh.read(len(_SQLITE_MAGIC))
            except OSError as exc:
                raise LedgerError(f"cannot read {p}: {exc.strerror}") from None
            if head and head != _SQLITE_MAGIC:
                raise LedgerError(f"{p} is not a swecl ledger (not an SQLite database)")
            if not head and (readonly or not (create and init_empty)):
                raise LedgerDamaged(
                    f"{p} is damaged: it is an empty file (0 bytes). If it should hold recorded runs, restore it "
                    "from a copy: `swecl init` would not bring them back, it starts a new, empty ledger"
                )
            damage = file_damage(p) if head else None
            if damage is not None:
                raise LedgerDamaged(f"{p} is damaged: {damage}; restore it from a copy (nothing was written to it)")

        flags = apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE
        if create and not exists:
            flags |= apsw.SQLITE_OPEN_CREATE
        target = str(p)
        if readonly and exists and _archived(p):
            # A settled ledger in a directory we cannot write (an archive, a read-only
            # mount): SQLite would need to create the -shm file of WAL mode and fail.
            # Nothing can be written there, so nobody can change it under us either.
            target = f"file:{urllib.parse.quote(str(p.resolve()))}?immutable=1"
            flags |= apsw.SQLITE_OPEN_URI
        try:
            conn = apsw.Connection(target, flags=flags)
            conn.set_busy_timeout(_busy_timeout_ms())
            # A projection of one run visits a few thousand pages, several times over (a
            # replay folds at several cursors); SQLite's default 2 MiB cache holds 500.
            # Pages are cached as they are read, so a small ledger costs no more memory.
            conn.pragma("cache_size", _CACHE_KIB)
            meta = cls._read_meta(conn, p)
        except apsw.Error as exc:
            raise _ledger_error(p, exc, "open") from None
        except UnicodeDecodeError:
            conn.close()
            raise LedgerDamaged(f"{p} is damaged: its schema or swecl_meta holds text that is not UTF-8") from None

        if meta is None:
            if not create:
                raise LedgerError(f"{p} is not a swecl ledger (no swecl_meta table)")
            if conn.readonly("main"):
                raise LedgerError(f"cannot initialise {p}: the file is read-only")
            try:
                if cls._has_tables(conn):
                    raise LedgerError(f"{p} is an SQLite database but not a swecl ledger; not touching it")
                meta = cls._initialise(conn)
            except apsw.Error as exc:
                raise _ledger_error(p, exc, "initialise") from None

        raw_schema = meta.get("store_schema", "0")
        if not (raw_schema.isascii() and raw_schema.isdigit()) or "ledger_id" not in meta:
            conn.close()
            # Only a hand edit gets here (swecl writes both rows when it makes the file).
            raise LedgerDamaged(f"{p} is damaged: {meta_problem(meta) or 'its swecl_meta rows are unreadable'}")
        schema = int(raw_schema)
        if schema > STORE_SCHEMA:
            conn.close()
            raise LedgerError(
                f"{p} has store schema {schema}; this swecl understands up to {STORE_SCHEMA}: upgrade swecl"
            )
        is_readonly = readonly or bool(conn.readonly("main"))
        if not is_readonly:
            try:
                conn.pragma("journal_mode", "wal")
                conn.pragma("synchronous", "NORMAL")
            except apsw.Error as exc:
                raise _ledger_error(p, exc, "open") from None
        return cls(conn, p, meta["ledger_id"], is_readonly)

    @staticmethod
    def _has_tables(conn: apsw.Connection) -> bool:
        return conn.execute("SELECT count(*) FROM sqlite_schema").get > 0

    @classmethod
    def _create_atomically(cls, p: Path) -> None:
        """A new ledger appears whole or not at all: made beside `p` and linked into place
        once its schema is committed. A process killed while creating one leaves no empty
        `ledger.db` behind (which the next open would rightly refuse as damaged)."""
        tmp = p.with_name(f".{p.name}.creating-{os.getpid()}")
        leftovers = [tmp, *(tmp.with_name(tmp.name + suffix) for suffix in ("-wal", "-shm", "-journal"))]
        for leftover in leftovers:
            leftover.unlink(missing_ok=True)
        try:
            conn = apsw.Connection(str(tmp), flags=apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE)
            try:
                cls._initialise(conn)
            finally:
                conn.close()
            try:
                os.link(tmp, p)
            except FileExistsError:
                pass  # another process made it first: theirs is the ledger
        except apsw.Error as exc:
            raise _ledger_error(p, exc, "initialise") from None
        except OSError as exc:
            raise LedgerError(f"cannot create {p}: {exc.strerror}") from None
        finally:
            for leftover in leftovers:
                leftover.unlink(missing_ok=True)

    @staticmethod
    def _read_meta(conn: apsw.Connection, path: Path) -> dict[str, str] | None:
        if not conn.table_exists("main", "swecl_meta"):
            return None
        return dict(conn.execute("SELECT key, value FROM swecl_meta"))

    @staticmethod
    def _initialise(conn: apsw.Connection) -> dict[str, str]:
        meta = {
            "store_schema": str(STORE_SCHEMA),
            "ledger_id": str(uuid.uuid4()),
            "created_at": utc_now(),
        }
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(DDL)
            conn.executemany("INSERT INTO swecl_meta (key, value) VALUES (?, ?)", list(meta.items()))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return meta

    @staticmethod
    def snapshot_file(source: str | Path, target: str | Path) -> None:
        """Copy the ledger file `source` to `target` as one consistent snapshot: SQLite's
        backup API copies the pages under one read transaction, so appends made meanwhile
        by another process are either wholly in the copy or not at all."""
        try:
            src = apsw.Connection(str(source), flags=apsw.SQLITE_OPEN_READONLY)
            try:
                copy = apsw.Connection(str(target))
                try:
                    with copy.backup("main", src, "main") as backup:
                        while not backup.done:
                            backup.step(-1)
                finally:
                    copy.close()
            finally:
                src.close()
        except apsw.Error as exc:
            raise _ledger_error(Path(source), exc, "copy") from None

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
            self._put_blob_in_txn(data)
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

    def import_recorded(self, rows: Iterable[Recorded], *, durable: bool = True) -> tuple[int, int]:
        """Copy events from another ledger (merge), keeping their ids, streams and times.

        Rows already present by event_id are skipped (idempotent); each kept row gets the
        next seq of this ledger and joins its hash chain. A row whose stream version is
        taken by a different event is a conflict and nothing is written. Returns
        (added, skipped).
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
                for r in rows:
                    if r.event_id in existing:
                        continue
                    taken = conn.execute(
                        "SELECT event_id FROM events WHERE stream = ? AND stream_version = ?",
                        (r.stream, r.stream_version),
                    ).fetchone()
                    if taken:
                        raise ConcurrencyConflict(r.stream, r.stream_version - 1, self._stream_head(r.stream))
                    payload = encode_payload(r.event) if isinstance(r.event, Event) else _ENCODER.encode(r.event.raw)
                    seq += 1
                    digest = chain_hash(prev, seq, r.event_id, r.stream, r.stream_version, r.type, r.schema, r.time, payload)
                    conn.execute(
                        "INSERT INTO events (seq, event_id, stream, stream_version, type, schema, time, payload,"
                        " prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (seq, r.event_id, r.stream, r.stream_version, r.type, r.schema, r.time, payload, prev, digest),
                    )
                    prev = digest
                    added += 1
                conn.execute("COMMIT")
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

    def _require_writable(self) -> None:
        if self.readonly:
            raise LedgerError(f"ledger {self.path} is read-only; nothing was written")

    # -- blobs ---------------------------------------------------------------------------

    def put_blob(self, data: bytes | str) -> str:
        """Store `data` once under its SHA-256 and return that hash."""
        self._require_writable()
        raw = data.encode() if isinstance(data, str) else data
        try:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                digest = self._put_blob_in_txn(raw)
                self._conn.execute("COMMIT")
                return digest
            except BaseException:
                if not self._conn.get_autocommit():
                    self._conn.execute("ROLLBACK")
                raise
        except apsw.Error as exc:
            raise _ledger_error(self.path, exc, "store a blob in") from None

    def _put_blob_in_txn(self, raw: bytes) -> str:
        digest = blob_hash(raw)
        if self._conn.execute("SELECT 1 FROM blobs WHERE sha256 = ?", (digest,)).fetchone():
            return digest
        encoding, stored = "identity", raw
        if len(raw) >= _COMPRESS_MIN:
            packed = zlib.compress(raw, 6)
            if len(packed) < len(raw):
                encoding, stored = "zlib", packed
        self._conn.execute(
            "INSERT INTO blobs (sha256, size, encoding, data) VALUES (?, ?, ?, ?)",
            (digest, len(raw), encoding, stored),
        )
        return digest

    def get_blob(self, digest: str) -> bytes:
        """The content stored under `digest`, checked against it: a blob altered in the file
        raises `IntegrityError` naming it instead of being used (a grade re-decided from a
        forged log, a patch replayed that the agent never wrote). SHA-256 costs far less
        than the decompression before it."""
        try:
            row = self._conn.execute("SELECT encoding, data FROM blobs WHERE sha256 = ?", (digest,)).fetchone()
        except apsw.Error as exc:
            raise _ledger_error(self.path, exc, "read a blob of") from None
        if row is None:
            raise LedgerError(f"blob {digest} is not in {self.path}")
        data = _decoded(digest, row[0], row[1])
        if blob_hash(data) != digest:
            raise IntegrityError(None, f"blob {digest}: content does not match its hash")
        return data

    def has_blob(self, digest: str) -> bool:
        return self._conn.execute("SELECT 1 FROM blobs WHERE sha256 = ?", (digest,)).fetchone() is not None

    def iter_blobs(self) -> Iterator[tuple[str, int, bytes]]:
        """(sha256, size, decoded data) of every blob, for verify and merge (which check the
        hashes themselves); `IntegrityError` naming a blob that cannot be decoded."""
        digest = ""
        try:
            for digest, size, encoding, data in self._conn.execute(
                "SELECT sha256, size, encoding, data FROM blobs ORDER BY sha256"
            ):
                yield digest, size, _decoded(digest, encoding, data)
        except UnicodeDecodeError:
            which = f"the blob after {digest}" if digest else "the first blob"
            raise IntegrityError(None, f"{which} has a hash or encoding that is not UTF-8 (altered)") from None

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
        prev = GENESIS_HASH
        blob_refs: dict[str, int] = {}
        events = blobs = 0
        where = "reading the events"
        try:
            for seq, type_, schema, payload, digest in self._verified_rows(0, GENESIS_HASH):
                try:
                    event = decode_payload(type_, schema, payload)
                except (msgspec.MsgspecError, LookupError, ValueError, TypeError) as exc:
                    raise IntegrityError(seq, f"seq {seq}: payload does not decode as {type_}: {exc}") from None
                for ref in blob_refs_of(event):
                    blob_refs.setdefault(ref, seq)
                prev = digest
                events += 1
            where = "reading the blobs"
            for blob_digest, size, data in self.iter_blobs():
                if blob_hash(data) != blob_digest or len(data) != size:
                    raise IntegrityError(None, f"blob {blob_digest}: content does not match its hash")
                blobs += 1
                blob_refs.pop(blob_digest, None)
            if blob_refs:
                missing, seq = min(blob_refs.items(), key=lambda kv: kv[1])
                raise IntegrityError(seq, f"seq {seq}: references blob {missing}, which is not in the ledger")
            where = "reading the schema"
            problem = self.structure_problem()
            if problem is not None:
                raise IntegrityError(None, problem)
            where = "checking the pages"
            found = [row[0] for row in self._conn.execute("PRAGMA integrity_check(3)")]
            if found != ["ok"]:
                raise IntegrityError(None, f"{self.path} is corrupt: SQLite's integrity check finds {'; '.join(found)}")
        except apsw.CorruptError as exc:
            raise IntegrityError(
                None, f"{self.path} is corrupt: SQLite reports a malformed database image {where} ({exc})"
            ) from None
        except apsw.Error as exc:
            raise _ledger_error(self.path, exc, "verify") from None
        return VerifyReport(events=events, blobs=blobs, head_hash=prev.hex())

    def check_chain(self, after: int = 0, prev: bytes = GENESIS_HASH) -> tuple[int, bytes]:
        """Recompute the hash chain from seq `after` (whose hash is `prev`) to the head.

        Returns the head's (seq, hash); raises `IntegrityError` at the first bad link. The
        cheap check of the read commands: no payload decoding, no blobs (`verify` does those).
        """
        seq, last = after, prev
        try:
            for seq, _, _, _, last in self._verified_rows(after, prev):
                pass
        except apsw.Error as exc:
            raise _ledger_error(self.path, exc, "check") from None
        except _Unreadable as exc:
            # Not a warning: no read could get past that row either.
            raise LedgerDamaged(f"{self.path} is damaged: {exc}") from None
        return seq, last

    def structure_problem(self) -> str | None:
        """What is wrong with the schema objects or the metadata rows, or None."""
        try:
            problem = schema_problem(self._conn)
            if problem is None:
                problem = meta_problem(dict(self._conn.execute("SELECT key, value FROM swecl_meta")))
        except apsw.Error as exc:
            raise _ledger_error(self.path, exc, "check") from None
        except UnicodeDecodeError:
            return "the schema or swecl_meta holds text that is not UTF-8 (it was altered)"
        return problem

    def _verified_rows(self, after: int, prev: bytes) -> Iterator[tuple[int, str, int, bytes, bytes]]:
        """(seq, type, schema, payload, hash) of each event after `after`, its link and hash
        checked first; `IntegrityError` at the first gap, broken link or altered event."""
        expected_seq = after
        rows = self._conn.execute(
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


_BLOB_FIELDS: dict[str, tuple[str, ...]] = {
    "agent.finished": ("patch", "transcript", "prompt"),
    "grade.finished": ("log",),
    "memory.written": ("patch",),
    "memory.seeded": ("items",),
}


def blob_refs_of(event: Any) -> list[str]:
    """Blob hashes an event refers to (they must all be in the ledger)."""
    if isinstance(event, UnknownEvent):
        return []
    names = _BLOB_FIELDS.get(event.type_name(), ())
    return [ref for ref in (getattr(event, n) for n in names) if ref]


def blob_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


_SELECT = (
    "SELECT seq, event_id, stream, stream_version, type, schema, time, payload, prev_hash, hash FROM events"
)


def _row_to_recorded(row: Sequence[Any]) -> Recorded:
    seq, event_id, stream, version, type_, schema, time, payload, prev_hash, digest = row
    return Recorded(
        seq, event_id, stream, version, type_, schema, time, decode_payload(type_, schema, payload), prev_hash, digest
    )


def _as_new(e: Event | NewEvent) -> NewEvent:
    if isinstance(e, NewEvent):
        return e.with_id()
    if not isinstance(e, Event):
        raise TypeError(f"not an event: {e!r}")
    return NewEvent(e, new_event_id())


_EncodedBatch = tuple[str, "int | None", list[tuple[NewEvent, str, int, bytes]]]

_INSERT = (
    "INSERT INTO events (seq, event_id, stream, stream_version, type, schema, time, payload, prev_hash, hash)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _encode_batches(batches: Sequence[StreamBatch]) -> list[_EncodedBatch]:
    """Ids given (or made), types and payloads encoded: everything done before the transaction."""
    encoded: list[_EncodedBatch] = []
    seen: set[str] = set()
    count = 0
    encode = _ENCODER.encode
    for b in batches:
        evs = []
        for e in b.events:
            ne = _as_new(e)
            event = ne.event
            try:
                payload = encode(event)
            except UnicodeEncodeError:
                ne = NewEvent(_scrubbed(event), ne.event_id)
                event = ne.event
                payload = encode(event)
            evs.append((ne, event.type_name(), event.SCHEMA, payload))
            seen.add(ne.event_id)
            count += 1
        encoded.append((b.stream, b.expected_version, evs))
    if len(seen) != count:
        raise LedgerError("a batch repeats an event_id")
    return encoded


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


def _archived(path: Path) -> bool:
    """True when `path` has no live WAL beside it and its directory is not writable."""
    wal = path.with_name(path.name + "-wal")
    try:
        if wal.exists() and wal.stat().st_size > 0:
            return False
    except OSError:
        return False
    return not os.access(path.parent, os.W_OK)


def _ledger_error(path: Path, exc: apsw.Error, doing: str) -> LedgerError:
    if isinstance(exc, ConcurrencyConflict):
        return exc
    if isinstance(exc, apsw.BusyError | apsw.LockedError):
        return LedgerError(f"cannot {doing} {path}: it is locked by another process (gave up waiting)")
    if isinstance(exc, apsw.ReadOnlyError):
        return LedgerError(f"cannot {doing} {path}: it is read-only; nothing was written")
    if isinstance(exc, apsw.CorruptError):
        return LedgerDamaged(
            f"{path} is damaged: SQLite reports a corrupt (malformed) database image; restore it from a copy"
        )
    if isinstance(exc, apsw.NotADBError):
        return LedgerError(f"{path} is not a swecl ledger (not a valid SQLite database)")
    if isinstance(exc, apsw.FullError):
        return LedgerError(f"cannot {doing} {path}: the disk is full; nothing of this batch was written")
    if isinstance(exc, apsw.CantOpenError):
        return LedgerError(f"cannot {doing} {path}: unable to open the file (permissions or a missing directory)")
    if isinstance(exc, apsw.ConstraintError):
        return LedgerError(f"cannot {doing} {path}: {exc}")
    return LedgerError(f"cannot {doing} {path}: {exc}")
