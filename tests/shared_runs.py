"""Demo runs built once per test session, whichever xdist worker asks first, and copied
for each test that reads or extends one.

A `swecl run` of a demo sequence costs tens of seconds of CPU (graded tasks: a pytest
run and dozens of git commands each); several test modules need the very same run.
The first worker to need one builds it under an exclusive `flock` in a directory all
workers of this session share; the others wait on the lock, then find it done. Every
caller gets its own copy of the whole results dir (the ledger is closed once the run's
process has exited, so its SQLite files copy consistently), free to read or extend.

The copy's ledger names the builder's cache in its grade records (the interpreters the
tests ran with); that cache is the builder worker's session cache, kept for the whole
session. A test that runs more stages on its copy uses its own cache, as any later run
may: nothing in the ledger ties a run to the cache it was graded from.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from bench.processes import INICONF, SPANS, TEXTKIT, swecl
from tests.run.support import first_of

# plugin-blank over the spans sequence (every pass), over its first four tasks (every
# pass), its initial pass only, spans + iniconf (initial pass) with --jobs 2, and spans
# with a retest-4 row.
BLANK_SPANS = ("--stage", "plugin-blank", "--sequence", SPANS)
PREFIX_TASKS = 4  # spans' first four: memory written by the first is recalled by the next
BLANK_PREFIX = (*BLANK_SPANS, *first_of(PREFIX_TASKS, SPANS))
BLANK_INITIAL = (*BLANK_SPANS, "--passes", "initial")
BLANK_PAIR = (*BLANK_SPANS, "--sequence", INICONF, "--passes", "initial", "--jobs", "2")
# Every kind of order-free work with memory on: a re-test, a baseline and one retest-4 row
# (--retest-every re-tests prefixes of the whole sequence: it does not combine with --instance).
BLANK_FREE = (*BLANK_SPANS, "--retest-every", "4")

# Every shared run, by name: one name, one argument list (of `swecl run ... --quiet`).
RUNS: dict[str, tuple[str, ...]] = {
    "blank-spans": (*BLANK_SPANS, "--version", "1"),  # also the reference of the random-crash test
    "blank-prefix": (*BLANK_PREFIX, "--version", "1"),  # the reference of the resume and --task-jobs crash tests
    "ref-initial": (*BLANK_INITIAL, "--version", "ref"),
    "ref-pair": (*BLANK_PAIR, "--version", "ref"),
    "blank-textkit": ("--stage", "plugin-blank", "--sequence", TEXTKIT),  # what tests/cli show and view
    "free-spans": (*BLANK_FREE, "--version", "1"),  # the serial reference of --task-jobs, local and on Ray
}


def _session_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory every worker of this test session shares, and no other session sees."""
    base = tmp_path_factory.getbasetemp()
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")  # the same in every worker of one session
    root = base.parent / f"shared-runs-{run_id}" if run_id else base / "shared-runs"
    root.mkdir(parents=True, exist_ok=True)
    return root


def shared_run(tmp_path_factory: pytest.TempPathFactory, cache: Path, name: str) -> Path:
    """The results dir of the run `RUNS[name]`, built once per session. Read-only:
    callers copy it (`copy_of`)."""
    root = _session_root(tmp_path_factory)
    done = root / name / "results"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, even if the build fails
        if not done.is_dir():
            building = root / name / "building"
            shutil.rmtree(building, ignore_errors=True)  # a build that failed in another worker
            building.mkdir(parents=True)
            swecl(building, "run", *RUNS[name], "--quiet", cache=cache)
            building.rename(done)  # only a finished run is ever seen under `results`
    return done


def shared_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """A folder `build(folder)` fills, built once per session (whichever worker asks first,
    under the same lock as the shared runs); read-only for callers."""
    root = _session_root(tmp_path_factory)
    done = root / name / "done"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.is_dir():
            building = root / name / "building"
            shutil.rmtree(building, ignore_errors=True)
            building.mkdir(parents=True)
            build(building)
            building.rename(done)
    return done


def copy_of(results: Path, dest: Path) -> Path:
    """A private copy of a shared results dir at `dest` (which must not exist yet)."""
    shutil.copytree(results, dest, symlinks=True)
    return dest


def demo_run_copy(tmp_path_factory: pytest.TempPathFactory, cache: Path, name: str) -> Path:
    """A fresh copy, in a new temp dir, of the shared run `name`."""
    built = shared_run(tmp_path_factory, cache, name)
    return copy_of(built, tmp_path_factory.mktemp(name) / "results")
