"""An agent that cannot run is the run's failure, found before the first task, never
scored as the agent's 0: the real `swecl run`, the real sandbox, the real `claude` CLI."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from projections import Results, outcomes
from tests.agents.conftest import claude_bin  # noqa: F401  (the session fixture: npm-installed CLI)
from tests.agents.fake_anthropic import FakeAnthropic

from tests.run.support import SPANS, demo_tasks, events, swecl, swecl_json

pytestmark = pytest.mark.slow


def test_a_claude_cli_in_a_hidden_place_is_refused_before_the_first_task(tmp_path: Path, cache: Path,
                                                                         claude_bin: str) -> None:  # noqa: F811
    """The sandbox hides swecl's results (and cache and dataset files) from the agent: a
    CLI installed in there cannot start in it. The run says so in one line, before any
    task, and leaves no run behind."""
    installed = tmp_path / "r" / "tools"
    installed.mkdir(parents=True)
    copy = installed / "claude"
    shutil.copy2(Path(claude_bin).resolve(), copy)  # the real CLI (one native file), only its place differs
    fake = FakeAnthropic().start()
    try:
        proc = swecl(tmp_path / "r", "run", "--stage", "base", "--agent", "claude", "--model", "claude-fake",
                     "--sequence", SPANS, "--passes", "initial", cache=cache, check=False,
                     env={"SWECL_CLAUDE_BIN": str(copy), "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "k",
                          "HOME": str(tmp_path)})
    finally:
        fake.stop()
    assert proc.returncode != 0 and proc.stderr.count("\n") == 1, proc.stderr
    line = proc.stderr
    assert "the claude CLI cannot start inside the sandbox" in line and "swecl-launcher: cannot execute" in line
    assert f"it is at {copy}" in line and f"the sandbox hides {tmp_path / 'r'}" in line
    assert "SWECL_CLAUDE_BIN" in line and "--sandbox none" in line
    assert fake.api_requests == []
    assert not (tmp_path / "r" / "ledger.db").exists() or events(tmp_path / "r") == []


def test_a_command_agent_that_vanishes_mid_run_stops_the_run_unscored(tmp_path: Path, cache: Path) -> None:
    """Task 1 runs the agent (it edits nothing, and deletes itself): a scored 0. Tasks 2-4
    find no program to exec: agent_error, said as they happen, never scored; the third in a
    row stops the run, resumable, its attempt abandoned to be redone. A resume while the
    program is still missing is refused before anything is recorded."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    agent = bin_dir / "agent.sh"
    agent.write_text('#!/bin/sh\nrm -f -- "$0"\n')  # the directory is named below: mounted read-write
    agent.chmod(0o755)
    results = tmp_path / "r"
    proc = swecl(results, "run", "--stage", "base", "--version", "v", "--agent", "command",
                 "--command", f"{agent} {{workdir}} {bin_dir}", "--sequence", SPANS, "--passes", "initial",
                 cache=cache, check=False)
    assert proc.returncode != 0
    said = proc.stderr.strip().splitlines()
    assert len([ln for ln in said if "agent_error, not scored" in ln and "swecl-launcher: cannot execute" in ln]) == 3, proc.stderr
    assert "could not run in 3 attempts in a row" in said[-1] and "swecl run --resume v" in said[-1]
    # the resolve rate so far is task 1's alone
    tasks = demo_tasks(SPANS)
    assert any(f" 3/{tasks}: 3: " in ln and "agent_error; resolved 0/1 (0%), 2 not scored," in ln for ln in said), said

    grades = {p["order"]: p for _, _, _, p in events(results, "grade.finished")}
    assert {o: g["status"] for o, g in grades.items()} == {1: "empty_patch", 2: "agent_error", 3: "agent_error"}
    assert all(grades[o]["resolved"] is None and "did not run" in grades[o]["error"] for o in (2, 3))
    (abandoned,) = [p for _, _, _, p in events(results, "task.abandoned")]
    assert (abandoned["order"], abandoned["reason"]) == (4, "agent could not run")
    (run,) = swecl_json(results, "runs", cache=cache)
    assert run["status"] == "failed"
    # The agent's 0 is task 1's alone: the others are missing, not failures.
    res = Results(results)
    with res.open_ledger(readonly=True) as ledger:
        (seq,) = outcomes(ledger, res.projector(ledger), "v").to_metric_inputs()
    assert seq.initial == [0] + [None] * (tasks - 1)

    before = len(events(results))
    again = swecl(results, "run", "--resume", "v", cache=cache, check=False)
    assert again.returncode != 0 and again.stderr.count("\n") == 1, again.stderr
    assert f"the agent command {agent} cannot start inside the sandbox" in again.stderr
    assert f"there is no {agent}" in again.stderr
    assert len(events(results)) == before  # no run.resumed, nothing
