"""The apsw file ledger against the store contract, one connection or one per operation."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger import Ledger

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
