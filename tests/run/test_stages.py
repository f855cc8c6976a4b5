"""Composing stages across separate invocations, through copy-seeded memory in the ledger."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.shared_runs import demo_run_copy

from .support import SPANS, events, swecl, swecl_json

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def blank(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    """plugin-blank over the spans sequence (version 1), a copy of the session's shared
    run: the tests here add runs to it."""
    return demo_run_copy(tmp_path_factory, cache, "blank-spans")


def test_plugin_accum_seeds_itself_from_plugin_blank_without_being_told(blank: Path, cache: Path) -> None:
    swecl(blank, "run", "--stage", "plugin-accum", "--sequence", SPANS, "--passes", "initial", "--quiet", cache=cache)
    runs = {r["stage"]: r for r in swecl_json(blank, "runs", cache=cache)}
    assert runs["plugin-accum"]["seeded_from"] == runs["plugin-blank"]["version"]
    (seeded,) = [p for _, s, _, p in events(blank, "memory.seeded") if s == f"run/{runs['plugin-accum']['version']}"]
    assert seeded["chosen"] == "newest-prior" and seeded["item_count"] > 0


def test_a_run_may_not_write_to_its_source_version(blank: Path, cache: Path) -> None:
    before = events(blank)
    proc = swecl(blank, "run", "--stage", "plugin-accum", "--version", "9", "--source-memory", "9", cache=cache, check=False)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "cannot be seeded from itself" in proc.stderr
    taken = swecl(blank, "run", "--stage", "plugin-accum", "--version", "1", "--sequence", SPANS, cache=cache, check=False)
    assert taken.returncode == 2 and "already exists" in taken.stderr and "Traceback" not in taken.stderr
    assert events(blank) == before  # refused before a byte was written


def test_seeding_a_stage_that_does_not_seed_is_refused(blank: Path, cache: Path) -> None:
    proc = swecl(blank, "run", "--stage", "plugin-blank", "--source-memory", "1", cache=cache, check=False)
    assert proc.returncode == 2 and "seeded stages" in proc.stderr


def test_bad_options_are_one_line_errors(blank: Path, cache: Path) -> None:
    for args, needle in (
        (["--stage", "plugin-blank", "--passes", "initial,sideways"], "--passes"),
        (["--stage", "base", "--retest-every", "2"], "needs memory"),
        (["--stage", "base", "--sequence", "no-such-sequence"], "no-such-sequence"),
        (["--stage", "base", "--agent", "nobody"], "unknown agent"),
        (["--stage", "base", "--dataset", str(blank / "missing.json")], "missing.json"),
        (["--resume", "404"], "404"),
    ):
        proc = swecl(blank, "run", *args, cache=cache, check=False)
        assert proc.returncode == 2, (args, proc.stderr)
        assert needle in proc.stderr and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
