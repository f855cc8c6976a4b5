from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One swecl cache (demo repos, test environment) per test process: built once."""
    return tmp_path_factory.mktemp("swecl-cache")
