"""The run jobs of the core, called in-process: `Experiment(root).run(...)` of a small demo
run, `resume` of a finished run (nothing redone), the summary a run command shows, and the
refusals `swecl run` says in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from commands import Experiment
from commands.cli._run import _print_summary
from commands.run import QuietReporter, RunOptions
from ledger import SweclError
from tests.run.support import SPANS, events, first_tasks, swecl, swecl_json

TASKS = 2


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    """plugin-blank over the first tasks of spans, initial pass, run through the core."""
    root = tmp_path_factory.mktemp("run-jobs") / "results"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SWECL_CACHE", str(cache))  # where `swecl run` finds the demo repositories
        opts = RunOptions(stage="plugin-blank", sequences=[SPANS], instances=first_tasks(SPANS, TASKS),
                          passes=["initial"])
        done = Experiment(root).run(opts, QuietReporter())
    assert done.versions == ["1"] and not done.grouped
    (report,) = done.reports
    assert (report.stage, report.status, report.error) == ("plugin-blank", "finished", None)
    return root


def test_a_run_through_the_core_is_what_swecl_runs_lists(finished: Path, cache: Path) -> None:
    (run,) = swecl_json(finished, "runs", cache=cache)
    assert (run["version"], run["stage"], run["status"]) == ("1", "plugin-blank", "finished")
    assert len(events(finished, "task.finished")) == TASKS
    assert "ledger OK" in swecl(finished, "verify", cache=cache).stdout


def test_resuming_a_finished_run_redoes_nothing(finished: Path, cache: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    root = tmp_path / "results"
    shutil.copytree(finished, root)
    before = events(root, "task.finished")
    monkeypatch.setenv("SWECL_CACHE", str(cache))
    done = Experiment(root).resume("1", QuietReporter())
    assert [(r.version, r.status) for r in done.reports] == [("1", "finished")] and not done.grouped
    assert events(root, "task.finished") == before
    assert [e[3]["attempt"] for e in events(root, "run.resumed")] == [2]
    assert swecl_json(root, "runs", cache=cache)[0]["status"] == "finished"


def test_the_summary_document_is_what_the_run_command_prints(finished: Path, cache: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    summary = Experiment(finished).run_summary(["1"])
    assert summary.versions == ["1"] and summary.stages == {"1": "plugin-blank"} and summary.groups == []
    assert summary.where() == {"ledger": str(finished / "ledger.db"), "results": str(finished),
                               "version_dirs": {"1": str(finished / "v1")}}
    assert summary.on_disk["1"].startswith(f"memory in {finished / 'v1' / '_memory'}")
    # The --json summary line holds the metrics document of `swecl metrics --json`, and the places.
    _print_summary(summary, quiet=False, as_json=True)
    line = json.loads(capsys.readouterr().out)
    metrics = swecl_json(finished, "metrics", "--version", "1", cache=cache)
    assert line["event"] == "summary" and line["versions"] == metrics["versions"]
    assert {k: line[k] for k in ("ledger", "results", "version_dirs")} == summary.where()
    # The table and the places, as `swecl run` ends.
    _print_summary(summary, quiet=False, as_json=False)
    out = capsys.readouterr().out
    assert f"ledger:  {finished / 'ledger.db'}" in out
    assert f"run 1 (plugin-blank): {summary.on_disk['1']}" in out


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"demo_suite": True, "version": "x"}, "--version names one run; the demo suite makes four: add --stage"),
    ({"demo_suite": True, "memory_server": "true"},
     "--memory-server is for one memory stage: add --stage plugin-blank (or plugin-primed)"),
    ({"repeat": 3, "version": "x"},
     "--version names one run; --repeat 3 makes 3: drop --version (the repeats take the next numbers)"),
])
def test_a_new_run_refuses_what_swecl_run_refuses(tmp_path: Path, kwargs: dict, message: str) -> None:
    demo_suite, repeat = kwargs.pop("demo_suite", False), kwargs.pop("repeat", 1)
    opts = RunOptions.from_config({"stage": "base", **kwargs})
    with pytest.raises(SweclError) as caught:
        Experiment(tmp_path).run(opts, QuietReporter(), repeat=repeat, demo_suite=demo_suite)
    assert str(caught.value) == message
    assert not (tmp_path / "ledger.db").exists()  # refused before anything was claimed


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"repeat": 2}, "--resume continues one run; --repeat starts new ones: drop --repeat"),
])
def test_a_resume_refuses_the_options_of_a_new_run(tmp_path: Path, kwargs: dict, message: str) -> None:
    with pytest.raises(SweclError) as caught:
        Experiment(tmp_path).resume("1", QuietReporter(), **kwargs)
    assert str(caught.value) == message
