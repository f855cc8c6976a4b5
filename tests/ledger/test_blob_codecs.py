"""How blobs are stored: zstd on the bulk path of a schema-3 ledger, zlib elsewhere and in
older ledgers, every encoding read back and checked against its hash."""

from __future__ import annotations

import hashlib
from pathlib import Path

import apsw
import pytest

from ledger import IntegrityError, Ledger, decode_blob

from .test_file_ledger import make_old_ledger

TEXT = "".join(f'{{"type": "entity", "name": "task-{i}", "observations": ["lesson {i}"]}}\n'
               for i in range(5000)).encode()


def _stored(path: Path, digest: str) -> tuple[str, bytes]:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        encoding, data = conn.execute("SELECT encoding, data FROM blobs WHERE sha256 = ?", (digest,)).fetchone()
        return encoding, bytes(data)
    finally:
        conn.close()


def test_bulk_blobs_are_zstd_in_a_new_ledger_and_the_others_stay_zlib(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    with Ledger.open(path, create=True) as led:
        [bulk] = led.put_blobs([TEXT])
        single = led.put_blob(TEXT + b"one more line\n")
        assert led.verify().blobs == 2
    assert bulk == hashlib.sha256(TEXT).hexdigest()
    encoding, data = _stored(path, bulk)
    assert encoding == "zstd" and len(data) < len(TEXT) // 4
    assert decode_blob(encoding, data) == TEXT
    assert _stored(path, single)[0] == "zlib"
    with Ledger.open(path, readonly=True) as led:
        assert led.get_blob(bulk) == TEXT


@pytest.mark.parametrize("schema", [1, 2])
def test_an_older_ledger_stores_bulk_blobs_with_zlib(tmp_path: Path, schema: int) -> None:
    """Its blobs table's CHECK allows no zstd: the ledger keeps the schema it was made with."""
    path = tmp_path / "ledger.db"
    make_old_ledger(path, schema)
    with Ledger.open(path) as led:
        [digest] = led.put_blobs([TEXT])
        assert led.get_blob(digest) == TEXT
        assert led.structure_problem() is None and led.verify().blobs == 1
    assert _stored(path, digest)[0] == "zlib"


def test_incompressible_bulk_blobs_are_stored_as_they_are(tmp_path: Path) -> None:
    noise = hashlib.shake_256(b"seed").digest(300_000)
    path = tmp_path / "ledger.db"
    with Ledger.open(path, create=True) as led:
        [digest] = led.put_blobs([noise])
    assert _stored(path, digest) == ("identity", noise)


def test_a_damaged_zstd_blob_is_named_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    with Ledger.open(path, create=True) as led:
        [digest] = led.put_blobs([TEXT])
    _, data = _stored(path, digest)
    flipped = bytearray(data)
    flipped[len(flipped) // 2] ^= 0x40
    conn = apsw.Connection(str(path))
    conn.execute("DROP TRIGGER blobs_no_update")
    conn.execute("UPDATE blobs SET data = ? WHERE sha256 = ?", (bytes(flipped), digest))
    conn.close()
    with Ledger.open(path, readonly=True) as led:
        with pytest.raises(IntegrityError, match=f"blob {digest}"):
            led.get_blob(digest)
        with pytest.raises(IntegrityError, match=f"blob {digest}"):
            led.verify()


def test_decode_blob_refuses_what_it_cannot_read() -> None:
    with pytest.raises(ValueError, match="unknown encoding 'lz4'"):
        decode_blob("lz4", b"x")
    with pytest.raises(ValueError):
        decode_blob("zstd", b"not a frame")
    assert decode_blob("identity", b"as is") == b"as is"
