"""swecl's one door to SQLite besides the event log itself.

The ledger owns SQLite: the event log (`ledger._store`) and every other file swecl
writes in SQLite's format go through this package, so a new SQLite version, a pragma, a
build flag or an error mapping is decided in one place. Others are the read side's
outputs: the memory folder's `memory.db` / `graph.db` and the in-memory FTS index recall
ranks with (apsw, as the log), and the chain checkpoint in `projections.db` (the stdlib's
sqlite3, the library SQLModel uses on that file: one SQLite library per file).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import apsw

__all__ = [
    "Connection",
    "CorruptError",
    "FullError",
    "SqliteError",
    "StdlibError",
    "connect",
    "connect_stdlib",
    "library_versions",
]

Connection = apsw.Connection
SqliteError = apsw.Error
CorruptError = apsw.CorruptError
FullError = apsw.FullError
StdlibError = sqlite3.Error


def connect(path: str | Path, *, readonly: bool = False) -> apsw.Connection:
    """An apsw connection to the file `path` (":memory:" for a private in-memory one);
    `readonly`: the file must exist and is never written."""
    if readonly:
        return apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    return apsw.Connection(str(path))


def library_versions() -> dict[str, str]:
    """The SQLite library and its binding, for reports of where a number was measured."""
    return {"apsw": apsw.apsw_version(), "sqlite": apsw.sqlite_lib_version()}


def connect_stdlib(path: str | Path, *, readonly: bool = False, timeout: float = 2) -> sqlite3.Connection:
    """A stdlib sqlite3 connection, for files SQLModel (SQLAlchemy on sqlite3) also opens."""
    if readonly:
        return sqlite3.connect(Path(path).resolve().as_uri() + "?mode=ro", uri=True, timeout=timeout)
    return sqlite3.connect(path, timeout=timeout)
