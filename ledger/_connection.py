"""Opening, creating and copying a ledger file, and the one-line errors SQLite's own
errors become.

Separate from the store (`_store.Ledger`) because it runs before there is a `Ledger`:
the checks that refuse a file without writing a byte (not a ledger, a newer schema,
empty, cut short), the atomic creation of a new one, and the connection's settings.
`_ledger_error` lives here as every part of the ledger that talks to SQLite uses it.
"""

from __future__ import annotations

import os
import urllib.parse
import uuid
from pathlib import Path

import apsw

from .errors import ConcurrencyConflict, LedgerDamaged, LedgerError
from ._codec import utc_now
from ._integrity import file_damage, meta_problem
from ._schema import STORE_DDL, STORE_SCHEMA

_SQLITE_MAGIC = b"SQLite format 3\x00"
# The page cache of a connection, in KiB (as `PRAGMA cache_size` takes it: negative).
_CACHE_KIB = -32768


def _busy_timeout_ms() -> int:
    try:
        return int(os.environ.get("SWECL_BUSY_TIMEOUT_MS", "30000"))
    except ValueError:
        return 30000


def open_connection(
    path: str | os.PathLike[str],
    *,
    create: bool = False,
    readonly: bool = False,
    init_empty: bool = False,
) -> tuple[apsw.Connection, Path, str, bool]:
    """The work of `Ledger.open` (see there): the connection to the checked (or newly
    initialised) file, its path, its ledger id and whether it is read-only."""
    p = Path(path)
    exists = _check_file(p, create=create, readonly=readonly, init_empty=init_empty)
    conn, meta = _connect(p, exists=exists, create=create, readonly=readonly)
    if meta is None:
        meta = _initialise_unclaimed(conn, p, create=create)
    _check_meta(conn, p, meta)
    is_readonly = readonly or bool(conn.readonly("main"))
    if not is_readonly:
        try:
            conn.pragma("journal_mode", "wal")
            conn.pragma("synchronous", "NORMAL")
        except apsw.Error as exc:
            raise _ledger_error(p, exc, "open") from None
    return conn, p, meta["ledger_id"], is_readonly


def _check_file(p: Path, *, create: bool, readonly: bool, init_empty: bool) -> bool:
    """Whether the file exists (made here when `create` asks for it), once it is known
    to be an SQLite file that is whole: these checks refuse a file before SQLite opens it,
    so a refused file never has a byte written to it."""
    exists = p.exists()
    if p.is_dir():
        raise LedgerError(f"{p} is a directory, not a ledger file")
    if not exists:
        if not create or readonly:
            raise LedgerError(f"no ledger at {p.absolute()}: nothing has run here yet; start with `swecl run`, "
                              "or point at an existing experiment with --results DIR (or SWECL_RESULTS)")
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LedgerError(f"cannot create {p.parent}: {exc.strerror}") from None
        _create_atomically(p)
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
    return exists


def _connect(p: Path, *, exists: bool, create: bool, readonly: bool) -> tuple[apsw.Connection, dict[str, str] | None]:
    """The connection with its settings, and the file's swecl_meta rows (None: no such table)."""
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
        meta = _read_meta(conn, p)
    except apsw.Error as exc:
        raise _ledger_error(p, exc, "open") from None
    except UnicodeDecodeError:
        conn.close()
        raise LedgerDamaged(f"{p} is damaged: its schema or swecl_meta holds text that is not UTF-8") from None
    return conn, meta


def _initialise_unclaimed(conn: apsw.Connection, p: Path, *, create: bool) -> dict[str, str]:
    """A file with no swecl_meta becomes a ledger only when asked to and only when it is
    an empty database: an SQLite file of someone else's is never touched."""
    if not create:
        raise LedgerError(f"{p} is not a swecl ledger (no swecl_meta table)")
    if conn.readonly("main"):
        raise LedgerError(f"cannot initialise {p}: the file is read-only")
    try:
        if _has_tables(conn):
            raise LedgerError(f"{p} is an SQLite database but not a swecl ledger; not touching it")
        return _initialise(conn)
    except apsw.Error as exc:
        raise _ledger_error(p, exc, "initialise") from None


def _check_meta(conn: apsw.Connection, p: Path, meta: dict[str, str]) -> None:
    """Refuse (closing the connection) meta rows that are unreadable or name a store
    schema newer than this swecl knows."""
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


def _has_tables(conn: apsw.Connection) -> bool:
    return conn.execute("SELECT count(*) FROM sqlite_schema").get > 0


def _create_atomically(p: Path) -> None:
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
            _initialise(conn)
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


def _read_meta(conn: apsw.Connection, path: Path) -> dict[str, str] | None:
    if not conn.table_exists("main", "swecl_meta"):
        return None
    return dict(conn.execute("SELECT key, value FROM swecl_meta"))


def _initialise(conn: apsw.Connection) -> dict[str, str]:
    meta = {
        "store_schema": str(STORE_SCHEMA),
        "ledger_id": str(uuid.uuid4()),
        "created_at": utc_now(),
    }
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(STORE_DDL)
        conn.executemany("INSERT INTO swecl_meta (key, value) VALUES (?, ?)", list(meta.items()))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return meta


def snapshot_file(source: str | Path, target: str | Path) -> None:
    """The work of `Ledger.snapshot_file` (see there)."""
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
