"""Run budgets, in-process through `Experiment`: a command agent that reports its spend
through `{usage_file}` (as a user's agent would), the real sandbox, the real grader.

A run with `--budget-usd` stops after the task that crosses it, records why, and a
resume with a larger budget finishes it with the outcomes of an unbudgeted run; an
attempt cut by `--task-timeout` or over `--max-tokens-per-task` is the agent's attempt
at the limit, graded on its patch."""

from __future__ import annotations

from pathlib import Path

import pytest

from commands import Experiment
from commands.run import QuietReporter, ResumeOverrides, RunOptions
from commands.run._budget import BUDGET_EXIT_CODE, BudgetReached
from ledger import SweclError
from tests.run.support import SPANS, TEXTKIT, events, first_tasks, swecl_json

# Each attempt edits the checkout (a patch to grade) and reports $0.40, 1200 tokens and 7 turns.
AGENT = """#!/bin/sh
echo "# touched" >> "$1/README.md"
printf '{"cost_usd": 0.4, "tokens": {"input": 1000, "output": 200}, "turns": 7}' > "$2"
[ "$3" = slow ] && exec sleep 60
exit 0
"""


def _agent(tmp_path: Path, *mode: str) -> str:
    script = tmp_path / "agent.sh"
    script.write_text(AGENT)
    script.chmod(0o755)
    return " ".join([str(script), "{workdir}", "{usage_file}", *mode])


def _opts(command: str, tasks: int, *, sequences: tuple[str, ...] = (SPANS,), **limits: object) -> RunOptions:
    # By the options' recorded names (`budget_usd`, `jobs` ...), as `swecl run` records them.
    return RunOptions.from_config(dict(stage="base", sequences=list(sequences), passes=["initial"],
                                       instances=[iid for seq in sequences for iid in first_tasks(seq, tasks)],
                                       agent="command", command=command, **limits))


def _statuses(root: Path, version: str) -> list[tuple[int, str]]:
    return sorted((p["order"], p["status"]) for _, stream, _, p in events(root, "task.finished")
                  if stream.startswith(f"run/{version}/"))


def test_a_run_stops_on_its_budget_and_a_larger_one_finishes_it(tmp_path: Path, cache: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWECL_CACHE", str(cache))
    root = tmp_path / "results"
    exp = Experiment(root)
    command = _agent(tmp_path)
    with pytest.raises(BudgetReached) as stop:
        exp.run(_opts(command, 3, budget_usd=0.5, version="b"), QuietReporter())
    # Task 1 spent $0.40 (under), task 2 crossed it and finished; task 3 never started.
    assert str(stop.value) == "budget reached: $0.80 spent of $0.50; resume with --resume b --budget-usd 1.3"
    assert stop.value.exit_code == BUDGET_EXIT_CODE
    assert [order for order, _ in _statuses(root, "b")] == [1, 2]
    assert [(p["spent_usd"], p["budget_usd"]) for *_, p in events(root, "run.budget_reached")] == [(0.8, 0.5)]
    assert events(root, "run.finished")[-1][3]["status"] == "budget_reached"
    (row,) = swecl_json(root, "runs", cache=cache)
    assert row["status"] == "budget_reached" and row["order"] is None  # the dataset's order
    assert (row["spend"]["cost_usd"], row["spend"]["budget_usd"], row["spend"]["attempts"]) == (0.8, 0.5, 2)
    page = exp.view(log_error=print).respond("/").body.decode()  # the view's runs page says it too
    assert 'data-spend="0.8"' in page and "spent $0.80 of $0.50" in page
    exp.report(out_dir=tmp_path / "report")  # and the report's runs table
    assert "<td>$0.80 of $0.50</td>" in (tmp_path / "report" / "index.html").read_text()

    # The same budget again is refused before anything is appended; a larger one finishes it.
    with pytest.raises(SweclError, match=r"spent \$0.80 of its \$0.50 budget: give a larger --budget-usd"):
        exp.resume("b", QuietReporter())
    assert events(root, "run.resumed") == []
    done = exp.resume("b", QuietReporter(), ResumeOverrides(budget_usd=2.0))
    assert [r.status for r in done.reports] == ["finished"]
    assert [p["budget_usd"] for *_, p in events(root, "run.resumed")] == [2.0]

    exp.run(_opts(command, 3, version="free"), QuietReporter())
    assert _statuses(root, "b") == _statuses(root, "free") and len(_statuses(root, "b")) == 3
    metrics = swecl_json(root, "metrics", "--version", "b", cache=cache)
    assert metrics["spend"]["b"]["cost_usd"] == 1.2 and metrics["spend"]["b"]["tokens_out"] == 600


def test_an_attempt_cut_by_a_limit_is_the_agents_and_graded(tmp_path: Path, cache: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWECL_CACHE", str(cache))
    root = tmp_path / "results"
    done = Experiment(root).run(_opts(_agent(tmp_path, "slow"), 1, agent_timeout_s=1.0, max_tokens_per_task=1000),
                                QuietReporter())
    assert [r.status for r in done.reports] == ["finished"]
    ((*_, agent),) = events(root, "agent.finished")
    assert (agent["exit"], agent["over_limit"]) == ("timeout", "tokens") and agent["patch"]
    ((*_, grade),) = events(root, "grade.finished")
    assert grade["status"] not in ("infra_error", "agent_error") and grade["resolved"] is False
    assert len(events(root, "task.finished")) == 1


def test_an_attempt_over_the_turn_limit_is_said_and_graded(tmp_path: Path, cache: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # A command is held to no turn limit of its own: its reported turns are checked after it.
    monkeypatch.setenv("SWECL_CACHE", str(cache))
    root = tmp_path / "results"
    Experiment(root).run(_opts(_agent(tmp_path), 1, max_turns=5), QuietReporter())
    ((*_, agent),) = events(root, "agent.finished")
    assert (agent["exit"], agent["turns"], agent["over_limit"]) == ("completed", 7, "turns") and agent["patch"]
    ((*_, grade),) = events(root, "grade.finished")
    assert grade["status"] not in ("infra_error", "agent_error")
    (row,) = swecl_json(root, "runs", cache=cache)
    assert row["spend"]["over_limit"] == 1
    Experiment(root).run(_opts(_agent(tmp_path), 1, version="within"), QuietReporter())  # 7 of the default 50
    assert [p["over_limit"] for _, stream, _, p in events(root, "agent.finished") if stream.startswith("run/within/")] == [None]


def test_with_jobs_every_sequence_stops_after_its_task_in_flight(tmp_path: Path, cache: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Two sequences in two processes, a budget one task crosses: each sequence finishes
    the task it has in flight (one each, or none for a sequence that starts after the
    other's task was recorded) and starts no other; the run records one stop, and a
    resume with a larger budget finishes both."""
    monkeypatch.setenv("SWECL_CACHE", str(cache))
    root = tmp_path / "results"
    exp = Experiment(root)
    with pytest.raises(BudgetReached):
        exp.run(_opts(_agent(tmp_path), 2, sequences=(SPANS, TEXTKIT), jobs=2, budget_usd=0.3, version="j"),
                QuietReporter())
    started = [(stream.split("/")[2], p["order"]) for _, stream, _, p in events(root, "task.started")]
    finished = [(stream.split("/")[2], p["order"]) for _, stream, _, p in events(root, "task.finished")]
    assert sorted(started) == sorted(finished) and 1 <= len(finished) <= 2  # no task cut, none after the stop
    assert all(order == 1 for _, order in finished)
    assert events(root, "task.abandoned") == []
    (reached,) = [p for *_, p in events(root, "run.budget_reached")]
    assert reached["budget_usd"] == 0.3 and reached["spent_usd"] == pytest.approx(0.4 * len(finished))
    assert [p["status"] for *_, p in events(root, "run.finished")] == ["budget_reached"]

    done = exp.resume("j", QuietReporter(), ResumeOverrides(jobs=2, budget_usd=5.0))
    assert [r.status for r in done.reports] == ["finished"]
    cells = sorted((stream.split("/")[2], p["order"]) for _, stream, _, p in events(root, "task.finished"))
    assert cells == sorted((seq, order) for seq in (SPANS, TEXTKIT) for order in (1, 2))  # each once
    assert len(events(root, "run.budget_reached")) == 1
