"""What the store schema itself refuses to a writer that is not swecl (the sqlite3 shell,
another library), and the ledgers of the earlier store schema."""

from __future__ import annotations

import hashlib
from pathlib import Path

import apsw
import pytest

from ledger import STORE_SCHEMA, Ledger, NewEvent
from ledger._schema import STORE_DDLS

from .contract import task
from .test_file_ledger import make_schema1_ledger

# A copy of seq 1 appended as the next event, linked: each test changes one column of it.
_NEXT = (
    "INSERT {verb} INTO events SELECT (SELECT MAX(seq) + 1 FROM events), {event_id}, stream, {version}, type, schema,"
    " time, payload, (SELECT hash FROM events ORDER BY seq DESC LIMIT 1), hash FROM events WHERE seq = 1"
)


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    with Ledger.open(tmp_path / "ledger.db", create=True) as led:
        led.append("s", [NewEvent(task(1), "id-1"), NewEvent(task(2), "id-2")])
    return tmp_path / "ledger.db"


def _insert(path: Path, verb: str = "", event_id: str = "'id-3'", version: str = "2") -> None:
    conn = apsw.Connection(str(path))
    try:
        conn.execute(_NEXT.format(verb=verb, event_id=event_id, version=version))
    finally:
        conn.close()


def _rows(path: Path) -> list[tuple]:
    with Ledger.open(path, readonly=True) as led:
        return [(r.seq, r.event_id, r.stream_version) for r in led.read()]


def test_the_next_event_goes_in(ledger: Path) -> None:
    """The statement the refusals below vary is itself a valid append."""
    _insert(ledger)
    assert _rows(ledger)[-1] == (3, "id-3", 2)


@pytest.mark.parametrize(
    ("verb", "event_id", "version"),
    [
        ("", "'id-3'", "1"),  # a stream version taken
        ("", "'id-3'", "0"),
        ("", "'id-1'", "2"),  # an event id taken
        ("OR REPLACE", "'id-1'", "2"),  # ... would delete the event that holds it
        ("OR REPLACE", "'id-3'", "1"),  # ... or the event at that stream version
        ("OR IGNORE", "'id-1'", "2"),
    ],
    ids=["version-taken", "version-zero", "id-taken", "replace-by-id", "replace-by-version",
         "ignore-by-id"],
)
def test_the_database_refuses_what_breaks_a_stream_or_an_id(ledger: Path, verb: str, event_id: str, version: str) -> None:
    before = _rows(ledger)
    with pytest.raises(apsw.ConstraintError, match="at a new stream version"):
        _insert(ledger, verb, event_id, version)
    assert _rows(ledger) == before
    with Ledger.open(ledger, readonly=True) as led:
        assert led.verify().events == 2


def test_a_first_event_must_start_the_chain(tmp_path: Path) -> None:
    Ledger.open(tmp_path / "ledger.db", create=True).close()
    conn = apsw.Connection(str(tmp_path / "ledger.db"))
    row = "'{id}', 's', 0, 'task.started', 1, '2026-01-01T00:00:00.000000Z', x'7b7d', {prev}, zeroblob(32)"
    for seq, prev in ((2, "zeroblob(32)"), (1, "randomblob(32)"), ("NULL", "zeroblob(32)")):
        with pytest.raises(apsw.ConstraintError):
            conn.execute(f"INSERT INTO events VALUES ({seq}, {row.format(id='a', prev=prev)})")
    conn.execute(f"INSERT INTO events VALUES (1, {row.format(id='a', prev='zeroblob(32)')})")
    conn.close()


def test_a_ledger_keeps_its_store_schema(tmp_path: Path) -> None:
    """Schema 1 ledgers are not migrated: they verify against schema 1's objects, and
    against those only (schema 2's objects in one are found)."""
    old, new = tmp_path / "old.db", tmp_path / "new.db"
    make_schema1_ledger(old)
    with Ledger.open(old) as led:
        led.append("s", [task(1), task(2)])
        assert led.verify().events == 2
    with Ledger.open(new, create=True) as led:
        assert led.verify().events == 0
    conn = apsw.Connection(str(new))
    assert conn.execute("SELECT value FROM swecl_meta WHERE key = 'store_schema'").get == str(STORE_SCHEMA) == "3"
    conn.close()
    conn = apsw.Connection(str(old))
    conn.execute("DROP INDEX events_by_stream_type")
    conn.execute("CREATE INDEX events_by_stream ON events (stream, stream_version, type)")
    conn.close()
    with Ledger.open(old, readonly=True) as led:
        assert led.structure_problem() == "index events_by_stream_type of the ledger schema is missing (dropped)"
    assert STORE_DDLS[STORE_SCHEMA] != STORE_DDLS[1]


def test_schema_2_is_the_text_ledgers_hold() -> None:
    """Schema 2's DDL is what swecl wrote into every ledger before schema 3, to the byte."""
    assert hashlib.sha256(STORE_DDLS[2].encode()).hexdigest() == (
        "1ea22d6eced19d255b00c01d6f871b0233acdfe6894e15e60b2ca6c42c974e67"
    )


def test_schema_1_is_the_text_ledgers_hold() -> None:
    """Schema 1's DDL is what swecl wrote into every ledger before schema 2, to the byte
    (`verify` compares each object's SQL text): this is the hash of that text."""
    assert hashlib.sha256(STORE_DDLS[1].encode()).hexdigest() == (
        "dbe2ea3961326e651a624f633249868a9f8a9a636fc571ef4f1fcb5da6be8eb3"
    )
