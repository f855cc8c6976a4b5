"""Fixtures of the bundle tests: a base and a plugin-blank run over a prefix of a demo
sequence (the memory run is compared against the base, so a bundle of it carries both),
bundled once per module and copied for each test that changes it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench.processes import SPANS, swecl
from tests.run.support import first_of

TASKS = first_of(3, SPANS)


@pytest.fixture(scope="module")
def demo_results(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    results = tmp_path_factory.mktemp("bundle-runs") / "results"
    for stage in ("base", "plugin-blank"):
        swecl(results, "run", "--stage", stage, "--sequence", SPANS, *TASKS, "--passes", "initial", "--quiet",
              cache=cache)
    return results


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory, demo_results: Path, cache: Path) -> Path:
    folder = tmp_path_factory.mktemp("keys")
    for name in ("mine", "theirs"):
        swecl(demo_results, "keygen", str(folder / name), cache=cache)
    return folder


@pytest.fixture(scope="module")
def signed_bundle(tmp_path_factory: pytest.TempPathFactory, demo_results: Path, keys: Path, cache: Path) -> Path:
    out = tmp_path_factory.mktemp("bundle") / "blank.bundle"
    swecl(demo_results, "bundle", "2", "--out", str(out), "--sign", str(keys / "mine"), cache=cache)
    return out


@pytest.fixture
def bundle_copy(signed_bundle: Path, tmp_path: Path) -> Path:
    """A private copy of the signed bundle, free to tamper with."""
    return Path(shutil.copyfile(signed_bundle, tmp_path / "copy.bundle"))
