"""What a typo gets: a one-line error naming the mistake, never empty output and exit 0,
nor a run version claimed for a run that cannot start."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.ledgers import LedgerBuilder
from commands.cli import main
from ledger import Ledger
from tests.audit.crafted import blank_run
from tests.run.support import swecl, swecl_json


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """Run 1 finished (three tasks); run 2 failed before doing anything."""
    root = tmp_path / "results"
    root.mkdir()
    with Ledger.open(root / "ledger.db", create=True) as led:
        builder = LedgerBuilder(led)
        blank_run(builder, "1")
        builder.start_run("2", stage="plugin-accum", plan={})
        builder.finish_run("2", status="failed")
    return root


def call(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def refused(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code, out, err = call(capsys, *args)
    assert code == 2 and out == "" and "Traceback" not in err, (code, out, err)
    return err


@pytest.mark.parametrize("args", [
    ("export", "1", "--format", "events", "--out", "-", "--pass", "final"),
    ("audit", "1", "--summary", "--pass", "final"),
])
def test_an_unknown_pass_is_refused(results: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...]) -> None:
    err = refused(capsys, "--results", str(results), *args)
    assert "'final' is not a pass: initial, retest, baseline or retest-K" in err
    # the real names still work, a --retest-every row's among them
    assert call(capsys, "--results", str(results), *args[:-1], "retest-2")[0] == 0


def test_an_unknown_event_type_or_stream_is_refused(results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = refused(capsys, "--results", str(results), "log", "--type", "memory.recall")
    assert err.count("\n") == 1 and "no such event type; did you mean 'memory.recalled'" in err
    err = refused(capsys, "--results", str(results), "log", "--stream", "run/9")
    assert err.count("\n") == 1 and "--stream 'run/9': no such stream" in err and "'run/1'" in err
    code, out, _ = call(capsys, "--results", str(results), "log", "--stream", "run/1", "--type", "run.started")
    assert code == 0 and out.count("\n") == 1 and "run.started" in out


def test_a_version_may_be_named_as_its_folder(results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain = call(capsys, "--results", str(results), "metrics", "--version", "1", "--json")
    folder = call(capsys, "--results", str(results), "metrics", "--version", "v1", "--json")
    assert plain[0] == folder[0] == 0 and plain[1] == folder[1]
    assert call(capsys, "--results", str(results), "audit", "v1", "--summary")[0] == 0
    err = refused(capsys, "--results", str(results), "metrics", "--version", "v7")
    assert "no run version 'v7'" in err


def test_the_program_version_flag_does_not_swallow_a_run_version(results: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    err = refused(capsys, "--results", str(results), "--version", "1", "metrics")
    assert "put it after the command (swecl metrics --version 2)" in err
    code, out, _ = call(capsys, "--version")
    assert code == 0 and out.startswith("swecl, version ")


def test_an_order_past_the_run_is_refused(results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = refused(capsys, "--results", str(results), "metrics", "--version", "1", "--as-of-order", "99")
    assert "--as-of-order 99: run 1's sequences have tasks 1 to 3 (4: as the initial pass ended)" in err
    assert call(capsys, "--results", str(results), "metrics", "--version", "1", "--as-of-order", "4")[0] == 0


def test_failed_runs_are_hidden_unless_asked_for(results: Path, capsys: pytest.CaptureFixture[str],
                                                 tmp_path: Path) -> None:
    code, out, _ = call(capsys, "--results", str(results), "metrics", "--json")
    assert code == 0 and '"version":"1"' in out.replace(" ", "") and '"version":"2"' not in out.replace(" ", "")
    code, out, _ = call(capsys, "--results", str(results), "metrics", "--json", "--all")
    assert code == 0 and '"version":"2"' in out.replace(" ", "")
    code, out, _ = call(capsys, "--results", str(results), "report", "--out", str(tmp_path / "r"))
    assert code == 0 and "for 1 version(s)" in out
    code, out, _ = call(capsys, "--results", str(results), "report", "--all", "--out", str(tmp_path / "r2"))
    assert code == 0 and "for 2 version(s)" in out


def test_no_results_here_names_the_absolute_path_and_how_to_start(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SWECL_RESULTS", raising=False)
    err = refused(capsys, "runs")
    assert f"no ledger at {tmp_path / 'results' / 'ledger.db'}: nothing has run here yet; start with `swecl run`" in err
    assert "swecl init" not in err


def test_a_missing_seed_is_refused_before_a_version_is_claimed(tmp_path: Path, cache: Path) -> None:
    proc = swecl(tmp_path, "run", "--stage", "plugin-accum", "--source-memory", "99", "--sequence",
                 "swecl-demo_spans_sequence", "--quiet", cache=cache, check=False)
    assert proc.returncode == 2 and "--source-memory '99': no run version '99'" in proc.stderr, proc.stderr
    assert not (tmp_path / "ledger.db").exists() or swecl_json(tmp_path, "runs", cache=cache) == []
