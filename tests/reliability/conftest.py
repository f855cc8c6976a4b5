from __future__ import annotations

from pathlib import Path

import pytest

from tests.shared_runs import BLANK_INITIAL, BLANK_PAIR, BLANK_PREFIX, BLANK_SPANS, demo_run_copy

from .support import DemoCurriculum, demo_curriculum

SPANS_ARGS = BLANK_SPANS
PREFIX_ARGS = BLANK_PREFIX
INITIAL_ARGS = BLANK_INITIAL
PAIR_ARGS = BLANK_PAIR


@pytest.fixture(scope="session")
def curriculum(tmp_path_factory: pytest.TempPathFactory) -> DemoCurriculum:
    """The demo benchmark as a curriculum file whose repositories sit beside it."""
    return demo_curriculum(tmp_path_factory.mktemp("curriculum"))


# The references are built once per test session (whichever worker needs one first) and
# each worker reads its own copy (tests.shared_runs).


@pytest.fixture(scope="session")
def reference_spans(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    """An uninterrupted plugin-blank run of the spans sequence: version `1`."""
    return demo_run_copy(tmp_path_factory, cache, "blank-spans")


@pytest.fixture(scope="session")
def reference_prefix(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    """The same over the spans sequence's first four tasks: version `1`."""
    return demo_run_copy(tmp_path_factory, cache, "blank-prefix")


@pytest.fixture(scope="session")
def reference_initial(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    """The same, initial pass only: version `ref`."""
    return demo_run_copy(tmp_path_factory, cache, "ref-initial")


@pytest.fixture(scope="session")
def reference_pair(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    """An uninterrupted plugin-blank run of spans + iniconf (initial pass) with --jobs 2: version `ref`."""
    return demo_run_copy(tmp_path_factory, cache, "ref-pair")
