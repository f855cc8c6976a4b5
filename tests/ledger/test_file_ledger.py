"""The apsw file ledger against the store contract, one connection or one per operation."""

from __future__ import annotations

import uuid
from pathlib import Path

import apsw
import pytest

from ledger import Ledger
from ledger._schema import STORE_DDLS

from .contract import LedgerContract, OpenLedger


class TestSharedConnection(LedgerContract):
    @pytest.fixture
    def open_ledger(self, tmp_path: Path) -> OpenLedger:
        led = Ledger.open(tmp_path / "ledger.db", create=True)
        yield lambda: led
        led.close()


class TestConnectionPerOperation(LedgerContract):
    """Every call reopens the file: what one process wrote, the next one reads."""

    @pytest.fixture
    def open_ledger(self, tmp_path: Path) -> OpenLedger:
        path = tmp_path / "ledger.db"
        Ledger.open(path, create=True).close()
        opened: list[Ledger] = []

        def reopen() -> Ledger:
            led = Ledger.open(path)
            opened.append(led)
            return led

        yield reopen
        for led in opened:
            led.close()


def make_old_ledger(path: Path, schema: int) -> None:
    """An empty ledger as a swecl of an older store schema made it: its DDL, its meta rows."""
    conn = apsw.Connection(str(path))
    conn.execute(STORE_DDLS[schema])
    conn.executemany(
        "INSERT INTO swecl_meta (key, value) VALUES (?, ?)",
        [("store_schema", str(schema)), ("ledger_id", str(uuid.uuid4())),
         ("created_at", "2026-01-01T00:00:00.000000Z")],
    )
    conn.close()


def make_schema1_ledger(path: Path) -> None:
    make_old_ledger(path, 1)


class TestSchema1Ledger(LedgerContract):
    """A ledger made under store schema 1 (before the append rework) keeps every promise:
    it opens, reads, takes appends and verifies against schema 1's own DDL."""

    @pytest.fixture
    def open_ledger(self, tmp_path: Path) -> OpenLedger:
        path = tmp_path / "ledger.db"
        make_schema1_ledger(path)
        led = Ledger.open(path)
        assert led.structure_problem() is None
        yield lambda: led
        led.close()


class TestSchema2Ledger(LedgerContract):
    """A ledger made under store schema 2 (before zstd blobs) keeps every promise too: its
    blobs table allows no `zstd`, so its bulk blobs are stored with zlib."""

    @pytest.fixture
    def open_ledger(self, tmp_path: Path) -> OpenLedger:
        path = tmp_path / "ledger.db"
        make_old_ledger(path, 2)
        led = Ledger.open(path)
        assert led.structure_problem() is None
        yield lambda: led
        led.close()
