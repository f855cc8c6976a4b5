"""`swecl verify` checks seed references: a seed must name a run this ledger holds, at a
position that run had reached; a path seed must carry its items blob."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.ledgers import LedgerBuilder
from commands.cli._ledger import verify_cmd
from commands.memory import export_memory, import_seed
from ledger import IntegrityError, Ledger
from ledger._references import check_references
from ledger.events import MemorySeeded

from .crafted import SEQ, TASKS, accum_run, blank_run


def _ledger(path: Path) -> LedgerBuilder:
    return LedgerBuilder(Ledger.open(path, create=True))


def test_a_sound_ledger_has_no_problem(tmp_path: Path) -> None:
    r = _ledger(tmp_path / "results" / "ledger.db")
    blank_run(r, "1")
    accum_run(r, "2", "1")
    export_memory(r.ledger, "1", tmp_path / "export")
    r.start_run("3", stage="plugin-accum", plan={SEQ: TASKS})
    import_seed(r.ledger, "3", tmp_path / "export")
    assert check_references(r.ledger) is None
    r.ledger.close()
    out = CliRunner().invoke(verify_cmd, ["--results", str(tmp_path / "results")])
    assert out.exit_code == 0 and out.output.startswith("ledger OK")


def test_verify_flags_a_dangling_seed_reference(tmp_path: Path) -> None:
    r = _ledger(tmp_path / "results" / "ledger.db")
    blank_run(r, "1")
    r.start_run("2", stage="plugin-accum", plan={SEQ: TASKS})
    bad = r.seed("2", "ghost")
    problem = check_references(r.ledger)
    r.ledger.close()
    assert isinstance(problem, IntegrityError) and problem.seq == bad.seq
    assert "'ghost'" in str(problem) and "dangling" in str(problem)
    out = CliRunner().invoke(verify_cmd, ["--results", str(tmp_path / "results")])
    assert out.exit_code == 1
    assert f"seq {bad.seq}" in out.output and out.output.count("\n") == 1


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda r, start2: r.seed("2", "1", source_seq=start2 + 50), "after the seed itself"),
        (lambda r, start2: r.seed("2", "1", source_seq=0), "before that run started"),
        (lambda r, start2: r.seed("2", "2"), "from itself"),
        (lambda r, start2: r.seed("2", "3"), "comes after the seed"),
        (lambda r, start2: r.ledger.append("run/2", [MemorySeeded(item_count=1, source_path="/x/items.json")])[0],
         "without the imported items blob"),
        (lambda r, start2: r.ledger.append("run/2", [MemorySeeded(item_count=1)])[0], "neither a source run"),
        (lambda r, start2: r.ledger.append(f"run/2/{SEQ}", [MemorySeeded(item_count=1, source_run="1")])[0],
         "not on a run header stream"),
    ],
)
def test_each_broken_reference_names_its_seq(tmp_path: Path, make, needle: str) -> None:  # type: ignore[no-untyped-def]
    r = _ledger(tmp_path / "ledger.db")
    with r.ledger:
        blank_run(r, "1")
        start2 = r.start_run("2", stage="plugin-accum", plan={SEQ: TASKS}).seq
        bad = make(r, start2)
        r.start_run("3", stage="plugin-blank", plan={SEQ: TASKS})
        problem = check_references(r.ledger)
    assert problem is not None and problem.seq == bad.seq and needle in str(problem), problem


def test_a_seed_of_a_run_that_never_started(tmp_path: Path) -> None:
    r = _ledger(tmp_path / "ledger.db")
    with r.ledger:
        blank_run(r, "1")
        bad = r.seed("4", "1")
        problem = check_references(r.ledger)
    assert problem is not None and problem.seq == bad.seq and "no run.started before it" in str(problem)
