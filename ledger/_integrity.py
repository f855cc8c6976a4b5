"""Checks of a ledger file beyond its hash chain: its size against its SQLite header, its
schema objects against the DDL, its metadata rows.

The chain proves the events; these catch what the chain cannot see: a file cut short
(which SQLite would only half-notice, deep inside a query), a dropped or rewritten
trigger (the log is no longer append-only), an edited `swecl_meta` row.
"""

from __future__ import annotations

import re
import uuid
from functools import cache
from pathlib import Path

import apsw

from ._schema import META_KEYS, STORE_DDLS, STORE_SCHEMA

_HEADER_SIZE = 100  # the SQLite file header: https://www.sqlite.org/fileformat.html
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


def file_damage(path: Path) -> str | None:
    """Why the SQLite file at `path` cannot be whole, from its header and size alone, or None.

    Read before SQLite opens the file, because SQLite reports a cut file only when a
    query reaches a missing page, and as "not a database" or "malformed", which does
    not say what happened.
    """
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            header = fh.read(_HEADER_SIZE)
    except OSError:
        return None  # the open that follows says why it cannot read the file
    if size < _HEADER_SIZE:
        return f"it is {size} bytes long, shorter than an SQLite header (the file was cut short)"
    page_size = int.from_bytes(header[16:18], "big")
    if page_size == 1:
        page_size = 65536
    if page_size < 512 or page_size & (page_size - 1):
        return None  # not a header at all: SQLite's own open says what the file is
    if size % page_size:
        return f"it ends {size % page_size} bytes into a {page_size}-byte page (the file was cut short)"
    pages = int.from_bytes(header[28:32], "big")
    # The page count in the header is valid only when the version-valid-for number
    # matches the change counter (older writers did not keep it up to date).
    counted = header[92:96] == header[24:28] and pages > 0
    if counted and size < pages * page_size and not _hot_journal(path):
        return f"it holds {size // page_size} pages where its header counts {pages} (the file was cut short)"
    return None


def _hot_journal(path: Path) -> bool:
    """A WAL or rollback journal with content beside `path`: a checkpoint or a rollback may
    be half done, so the main file's size alone proves nothing (SQLite finishes it)."""
    for suffix in ("-wal", "-journal"):
        try:
            if path.with_name(path.name + suffix).stat().st_size > 0:
                return True
        except OSError:
            continue
    return False


@cache
def _expected_objects(schema: int = STORE_SCHEMA) -> tuple[tuple[str, str, str | None], ...]:
    """(type, name, sql) of every object the DDL of store schema `schema` creates, in the
    order it creates them."""
    conn = apsw.Connection(":memory:")
    try:
        conn.execute(STORE_DDLS[schema])
        return tuple(_objects(conn))
    finally:
        conn.close()


def _objects(conn: apsw.Connection) -> list[tuple[str, str, str | None]]:
    # SQLite's own objects (automatic indexes of UNIQUE columns, sqlite_stat1 of an
    # ANALYZE) follow from the tables or are harmless statistics: not compared.
    return [
        (type_, name, sql)
        for type_, name, sql in conn.execute("SELECT type, name, sql FROM sqlite_schema ORDER BY rowid")
        if not name.startswith("sqlite_")
    ]


def schema_problem(conn: apsw.Connection, schema: int = STORE_SCHEMA) -> str | None:
    """What differs between the ledger's tables, indexes and triggers and those the DDL of
    its store schema `schema` creates (missing, rewritten, or added), or None."""
    found = {(type_, name): sql for type_, name, sql in _objects(conn)}
    expected = _expected_objects(schema)
    for type_, name, sql in expected:
        if (type_, name) not in found:
            return f"{type_} {name} of the ledger schema is missing (dropped)"
        if found[(type_, name)] != sql:
            return f"{type_} {name} is not the one the ledger schema creates (rewritten)"
    extra = sorted(found.keys() - {(type_, name) for type_, name, _ in expected})
    if extra:
        return f"{extra[0][0]} {extra[0][1]} is not part of the ledger schema (added)"
    return None


def meta_problem(meta: dict[str, str]) -> str | None:
    """What is wrong with the `swecl_meta` rows, or None.

    The metadata is outside the hash chain: what can be checked is that it holds exactly
    the keys swecl writes, each in the form swecl writes it. A value replaced by another
    well-formed one (another UUID, another time) is beyond what the file can prove.
    """
    missing = sorted(META_KEYS - meta.keys())
    if missing:
        return f"swecl_meta has no {missing[0]!r} row"
    extra = sorted(meta.keys() - META_KEYS)
    if extra:
        return f"swecl_meta has a row {extra[0]!r} that swecl never writes"
    schema = meta["store_schema"]
    if not (schema.isascii() and schema.isdigit() and str(int(schema)) == schema and 1 <= int(schema) <= STORE_SCHEMA):
        return f"swecl_meta store_schema is {schema!r}, not a store schema swecl writes (1 to {STORE_SCHEMA})"
    ledger_id = meta["ledger_id"]
    if not _is_uuid4(ledger_id):
        return f"swecl_meta ledger_id is {ledger_id!r}, not the random UUID swecl writes"
    created_at = meta["created_at"]
    if not _TIME.fullmatch(created_at):
        return f"swecl_meta created_at is {created_at!r}, not a UTC time as swecl writes it"
    return None


def _is_uuid4(text: str) -> bool:
    try:
        parsed = uuid.UUID(text)
    except ValueError:
        return False
    return str(parsed) == text and parsed.version == 4
