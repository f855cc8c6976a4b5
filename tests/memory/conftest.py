"""Fixtures shared by the memory tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger import Ledger

from .builders import start_run


@pytest.fixture
def led(tmp_path: Path) -> Iterator[Ledger]:
    """A fresh ledger holding the header of run version V."""
    ledger = Ledger.open(tmp_path / "ledger.db", create=True)
    start_run(ledger, "V")
    yield ledger
    ledger.close()
