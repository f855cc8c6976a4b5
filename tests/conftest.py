"""Fixtures every test package shares."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def shared_dir() -> Path | None:
    """`../shared` beside the checkout (CI always has it), or $SWECL_SHARED."""
    explicit = os.environ.get("SWECL_SHARED")
    candidate = Path(explicit) if explicit else REPO_ROOT.parent / "shared"
    return candidate if (candidate / "docs" / "DESIGN.md").is_file() else None


@pytest.fixture(scope="session")
def shared() -> Path:
    found = shared_dir()
    if found is None:
        pytest.skip("SKIPPED LOUDLY: ../shared (real logs, manifests, CLI captures) is not beside this checkout; set SWECL_SHARED")
    return found


@pytest.fixture(scope="session")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One swecl cache (demo repositories, test environments) per test process: the demo
    is built once per process, whichever package's tests ask for it first."""
    return tmp_path_factory.mktemp("swecl-cache")
