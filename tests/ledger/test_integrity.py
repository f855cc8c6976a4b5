"""Integrity beyond the chain, on real ledger files: damaged blobs, a malformed page, a cut
or empty file, and the cheap chain check of the read commands with its checkpoint."""

from __future__ import annotations

import hashlib
import sqlite3
import zlib
from pathlib import Path

import apsw
import pytest

from projections import chain_problem
from ledger import IntegrityError, Ledger, LedgerError
from ledger import LedgerDamaged
from ledger._integrity import _expected_objects, file_damage
from ledger.events import RunFinished
from projections._checkpoints import ChainCheckpoints

from .test_bad_input import assert_one_line_error, swecl

TRIGGERS = {"events_append_only", "events_no_update", "events_no_delete", "blobs_no_update", "blobs_no_delete"}
LOG = b"".join(b"tests/test_mod.py::test_%d PASSED\n" % i for i in range(200))  # compressible: stored as zlib


def make_ledger(path: Path, events: int = 30) -> str:
    """A ledger of `events` events and two blobs (one stored compressed); the log's hash."""
    with Ledger.open(path, create=True) as led:
        digest = led.put_blob(LOG)
        led.put_blob(b"small")
        for i in range(events):
            led.append(f"s{i % 3}", [RunFinished(status=f"finished {i}")])
    return digest


def raw(path: Path, *statements: str, params: tuple = ()) -> None:
    """Plain SQL on the file, as anyone with it can: triggers dropped first, put back after."""
    conn = apsw.Connection(str(path))
    saved = conn.execute("SELECT name, sql FROM sqlite_schema WHERE type = 'trigger'").fetchall()
    for name, _ in saved:
        conn.execute(f"DROP TRIGGER {name}")
    for statement in statements:
        conn.execute(statement, params)
    for _, sql in saved:
        conn.execute(sql)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def test_the_schema_check_knows_every_trigger_and_index() -> None:
    """Guards the check against passing vacuously: what it compares with is the DDL's."""
    names = {(type_, name) for type_, name, _ in _expected_objects()}
    assert {("trigger", t) for t in TRIGGERS} <= names
    assert {("index", "events_by_type"), ("index", "events_by_stream")} <= names
    assert {("index", "events_by_type"), ("index", "events_by_stream_type")} <= {(t, n) for t, n, _ in _expected_objects(1)}


def test_a_fresh_ledger_verifies(tmp_path: Path) -> None:
    make_ledger(tmp_path / "ledger.db")
    with Ledger.open(tmp_path / "ledger.db", readonly=True) as led:
        assert led.structure_problem() is None
        report = led.verify()
        assert (report.events, report.blobs) == (30, 2)
        assert led.check_chain() == (30, bytes.fromhex(report.head_hash))


# -- blobs --------------------------------------------------------------------------------


def test_a_damaged_compressed_blob_is_named_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    digest = make_ledger(path)
    conn = apsw.Connection(str(path))
    encoding, stored = conn.execute("SELECT encoding, data FROM blobs WHERE sha256 = ?", (digest,)).fetchone()
    conn.close()
    assert encoding == "zlib"
    flipped = bytearray(stored)
    flipped[len(flipped) // 2] ^= 0x40
    raw(path, "UPDATE blobs SET data = ? WHERE sha256 = ?", params=(bytes(flipped), digest))
    with Ledger.open(path, readonly=True) as led:
        with pytest.raises(IntegrityError, match=f"blob {digest}"):
            led.verify()
        with pytest.raises(IntegrityError, match=f"blob {digest}"):
            led.get_blob(digest)
        assert led.get_blob(hashlib.sha256(b"small").hexdigest()) == b"small"  # the others still read


def test_get_blob_refuses_content_that_is_not_its_hash(tmp_path: Path) -> None:
    """Decompresses fine, hashes wrong: what regrade used to parse."""
    path = tmp_path / "ledger.db"
    digest = make_ledger(path)
    raw(path, "UPDATE blobs SET data = ? WHERE sha256 = ?", params=(zlib.compress(b"1 passed\n" * 300), digest))
    with Ledger.open(path, readonly=True) as led:
        with pytest.raises(IntegrityError, match=f"blob {digest}: content does not match its hash"):
            led.get_blob(digest)
        with pytest.raises(IntegrityError, match=f"blob {digest}: content does not match its hash"):
            led.verify()


# -- a malformed page ---------------------------------------------------------------------


def test_a_malformed_index_page_fails_verify_and_reads_in_one_line(tmp_path: Path) -> None:
    """The chain is read by rowid and never touches the index: SQLite's integrity check does."""
    path = tmp_path / "ledger.db"
    make_ledger(path, events=400)
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    (page,) = conn.execute("SELECT pageno FROM dbstat WHERE name = 'events_by_type' AND pagetype = 'leaf'").fetchone()
    conn.close()
    with path.open("r+b") as fh:
        fh.seek((page - 1) * page_size)
        fh.write(b"\xa5" * page_size)
    with Ledger.open(path, readonly=True) as led:
        with pytest.raises(IntegrityError, match="is corrupt"):
            led.verify()
    before = path.read_bytes()
    done = swecl("--results", str(tmp_path), "verify")
    assert done.returncode == 1 and "internal error" not in done.stderr
    assert done.stderr.startswith("swecl: verify failed: ") and "corrupt" in done.stderr
    assert_one_line_error(swecl("--results", str(tmp_path), "log", "--type", "run.finished"), "damaged")
    assert path.read_bytes() == before


# -- a cut or empty file ------------------------------------------------------------------


def test_file_damage_reads_the_header(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    make_ledger(path, events=300)
    whole = path.read_bytes()
    page = int.from_bytes(whole[16:18], "big")
    assert file_damage(path) is None
    path.write_bytes(whole[: 2 * page])
    assert "holds 2 pages where its header counts" in (file_damage(path) or "")
    path.write_bytes(whole[: 2 * page + 10])
    assert "ends 10 bytes into a" in (file_damage(path) or "")
    path.write_bytes(whole[:99])
    assert "shorter than an SQLite header" in (file_damage(path) or "")


def test_an_empty_file_is_made_a_ledger_only_when_asked_by_name(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    path.write_bytes(b"")
    for kwargs in ({}, {"create": True}, {"readonly": True}):
        with pytest.raises(LedgerDamaged, match="empty file .*`swecl init` would not bring them back"):
            Ledger.open(path, **kwargs)
        assert path.read_bytes() == b""
    with Ledger.open(path, create=True, init_empty=True) as led:
        assert led.count() == 0
    assert path.stat().st_size > 0


def test_a_cut_file_is_refused_even_for_create(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    make_ledger(path, events=300)
    path.write_bytes(path.read_bytes()[:8192])
    before = path.read_bytes()
    for kwargs in ({}, {"create": True}, {"create": True, "init_empty": True}, {"readonly": True}):
        with pytest.raises(LedgerDamaged, match="is damaged: .*cut short"):
            Ledger.open(path, **kwargs)
    assert path.read_bytes() == before


def test_edited_meta_that_cannot_be_read_is_damage_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    make_ledger(path)
    raw(path, "UPDATE swecl_meta SET value = 'v2' WHERE key = 'store_schema'")
    with pytest.raises(LedgerDamaged, match="store_schema is 'v2'"):
        Ledger.open(path, readonly=True)
    assert isinstance(LedgerDamaged("x"), LedgerError)


# -- the read commands' cheap check -------------------------------------------------------


def checkpoint_of(projections: Path) -> tuple[int, bytes]:
    conn = sqlite3.connect(projections)
    try:
        ((seq, digest),) = conn.execute("SELECT seq, hash FROM verified_chain").fetchall()
    finally:
        conn.close()
    return seq, digest


def _checked_once(tmp_path: Path) -> tuple[Path, Path, ChainCheckpoints]:
    """A ledger of 30 events whose chain one read has checked (a checkpoint at its head)."""
    path, projections = tmp_path / "ledger.db", tmp_path / "projections.db"
    make_ledger(path)
    checkpoints = ChainCheckpoints(projections)
    with Ledger.open(path, readonly=True) as led:
        assert chain_problem(led, checkpoints) is None
    return path, projections, checkpoints


def test_the_read_check_starts_from_its_checkpoint(tmp_path: Path) -> None:
    path, projections, checkpoints = _checked_once(tmp_path)
    with Ledger.open(path, readonly=True) as led:
        head_hash = led.hash_at(30)
    assert checkpoint_of(projections) == (30, head_hash)

    # An event altered below the checkpoint is not looked at (`swecl verify` finds it) ...
    raw(path, "UPDATE events SET time = 'then' WHERE seq = 5")
    with Ledger.open(path, readonly=True) as led:
        assert chain_problem(led, checkpoints) is None
    # ... with the cache gone, the next read checks from the start and finds it.
    projections.unlink()
    with Ledger.open(path, readonly=True) as led:
        assert chain_problem(led, checkpoints) == "seq 5: hash mismatch (the event was altered)"
    assert not projections.exists()  # a chain that does not verify moves no checkpoint


def test_the_read_check_sees_events_after_its_checkpoint(tmp_path: Path) -> None:
    path, projections, checkpoints = _checked_once(tmp_path)
    with Ledger.open(path) as led:
        led.append("s0", [RunFinished(status="later")])
    raw(path, "UPDATE events SET payload = CAST('{\"status\":\"forged\"}' AS BLOB) WHERE seq = 31")
    with Ledger.open(path, readonly=True) as led:
        assert chain_problem(led, checkpoints) == "seq 31: hash mismatch (the event was altered)"
    assert checkpoint_of(projections)[0] == 30


def test_a_ledger_cut_below_its_checkpoint_is_said_once(tmp_path: Path) -> None:
    path, projections = tmp_path / "ledger.db", tmp_path / "projections.db"
    make_ledger(path)
    checkpoints = ChainCheckpoints(projections)
    with Ledger.open(path, readonly=True) as led:
        assert chain_problem(led, checkpoints) is None
    raw(path, "DELETE FROM events WHERE seq > 20")
    with Ledger.open(path, readonly=True) as led:
        assert "seq 30 is not the event verified there before" in (chain_problem(led, checkpoints) or "")
        assert chain_problem(led, checkpoints) is None  # the chain itself is sound: said once
    assert checkpoint_of(projections)[0] == 20


def test_a_dropped_trigger_is_a_read_problem_too(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    make_ledger(path)
    conn = apsw.Connection(str(path))
    conn.execute("DROP TRIGGER blobs_no_delete")
    conn.close()
    with Ledger.open(path, readonly=True) as led:
        problem = chain_problem(led, ChainCheckpoints(tmp_path / "projections.db"))
    assert problem == "trigger blobs_no_delete of the ledger schema is missing (dropped)"


def test_an_unwritable_cache_only_costs_a_full_check(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    make_ledger(path)
    cache = tmp_path / "no-such-dir" / "projections.db"
    with Ledger.open(path, readonly=True) as led:
        assert chain_problem(led, ChainCheckpoints(cache)) is None
    assert not cache.exists()
