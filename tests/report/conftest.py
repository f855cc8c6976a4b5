"""Fixtures of the report tests: one realistic ledger, its report, and a headless Chromium."""

from __future__ import annotations

import pytest

from commands import Experiment
from projections.report import ReportSummary

from .browser import ensure_chromium
from .realistic import Realistic, build_realistic


@pytest.fixture(scope="session")
def realistic(tmp_path_factory: pytest.TempPathFactory) -> Realistic:
    return build_realistic(tmp_path_factory.mktemp("report-ledger") / "results")


@pytest.fixture(scope="session")
def report(realistic: Realistic, tmp_path_factory: pytest.TempPathFactory) -> ReportSummary:
    return Experiment(realistic.root).report(out_dir=tmp_path_factory.mktemp("report-out") / "report")


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's chromium, installed once (as root, under a file lock) when it is missing."""
    path, why = ensure_chromium()
    if path is None:
        pytest.skip(
            "SKIPPED LOUDLY: no headless Chromium, so the report was NOT checked in a browser: " + why
        )
    return path
