from __future__ import annotations

from pathlib import Path

import pytest

from bench.processes import INICONF, SPANS, swecl

from .support import DemoCurriculum, demo_curriculum

SPANS_ARGS = ("--stage", "plugin-blank", "--sequence", SPANS)
INITIAL_ARGS = ("--stage", "plugin-blank", "--sequence", SPANS, "--passes", "initial")
PAIR_ARGS = ("--stage", "plugin-blank", "--sequence", SPANS, "--sequence", INICONF, "--passes", "initial", "--jobs", "2")


@pytest.fixture(scope="session")
def curriculum(tmp_path_factory: pytest.TempPathFactory) -> DemoCurriculum:
    """The demo benchmark as a curriculum file whose repositories sit beside it."""
    return demo_curriculum(tmp_path_factory.mktemp("curriculum"))


@pytest.fixture(scope="session")
def reference_spans(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    """An uninterrupted plugin-blank run of the spans sequence: version `ref`."""
    results = tmp_path_factory.mktemp("reference-spans")
    swecl(results, "run", *SPANS_ARGS, "--version", "ref", "--quiet", cache=cache)
    return results


@pytest.fixture(scope="session")
def reference_initial(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    """The same, initial pass only (6 tasks): version `ref`."""
    results = tmp_path_factory.mktemp("reference-initial")
    swecl(results, "run", *INITIAL_ARGS, "--version", "ref", "--quiet", cache=cache)
    return results


@pytest.fixture(scope="session")
def reference_pair(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    """An uninterrupted plugin-blank run of spans + iniconf (initial pass) with --jobs 2: version `ref`."""
    results = tmp_path_factory.mktemp("reference-pair")
    swecl(results, "run", *PAIR_ARGS, "--version", "ref", "--quiet", cache=cache)
    return results
