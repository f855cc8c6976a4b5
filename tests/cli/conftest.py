"""The real run the CLI tests that read a run's evidence share (`swecl show`, `swecl view`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.report.conftest import chromium  # noqa: F401 (a fixture: the report tests' headless Chromium)
from tests.run.support import events
from tests.shared_runs import demo_run_copy


@pytest.fixture(scope="session")
def demo(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    """One plugin-blank run of the textkit sequence: recalls, resolved and unresolved tasks
    (textkit #23 fails in the initial pass and in the re-test).
    Read it, never append to it (copy it first): every test of the process shares it.
    (This process's copy of the session's shared run.)"""
    return demo_run_copy(tmp_path_factory, cache, "blank-textkit")


def unresolved(results: Path) -> dict[str, Any]:
    """The first initial-pass grade.finished that did not resolve, straight from the ledger."""
    for _, _, _, p in events(results, "grade.finished"):
        if p["pass"] == "initial" and p["status"] == "unresolved":
            return p
    raise AssertionError("the demo run resolved every task: nothing unresolved to show")
