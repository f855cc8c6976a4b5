"""What a grading run cost (`projections.grading_cost`, printed per pass by `swecl
validate`) on a crafted ledger: the phases per repository from the grades' timings, the
workers from the run's options, and a run stopped before its end."""

from __future__ import annotations

from pathlib import Path

from bench.ledgers import LedgerBuilder
from ledger.events import TaskRef
from projections import grading_cost

A, B = "acme_w_sequence", "acme_x_sequence"


def _grade(duration: float, env: float, install: float, tests: float) -> dict:
    return {"duration_s": duration, "timings": {"env": env, "install": install, "tests": tests, "checkout": 0.5}}


def test_phases_per_repository_and_the_workers_of_the_run(tmp_path: Path) -> None:
    b = LedgerBuilder.create(tmp_path / "ledger.db")
    plan = {A: [TaskRef("acme__w-1", 1, "acme/w"), TaskRef("acme__w-2", 2, "acme/w")],
            B: [TaskRef("acme__x-1", 1, "acme/x")]}
    b.start_run("g", stage="base", plan=plan, config={"jobs": 1, "task_jobs": 2})
    b.task("g", A, 1, grade=_grade(30.0, 20.0, 5.0, 4.0))
    b.task("g", A, 2, grade=_grade(10.0, 0.0, 2.0, 7.0))
    b.task("g", B, 1, grade=_grade(6.0, 0.0, 1.0, 4.5))
    assert b.ledger is not None
    stopped = grading_cost(b.ledger, "g")  # no run.finished yet: stopped, or running now
    assert stopped is not None and not stopped.finished
    b.finish_run("g")
    cost = grading_cost(b.ledger, "g")
    assert cost is not None and cost.finished
    assert (cost.version, cost.workers, cost.grades) == ("g", 2, 3)
    w, x = cost.by_repo["acme/w"], cost.by_repo["acme/x"]
    assert (w.grades, w.busy_s, w.env_s, w.install_s, w.tests_s, w.other_s) == (2, 40.0, 20.0, 7.0, 11.0, 2.0)
    assert (x.grades, x.busy_s, x.other_s) == (1, 6.0, 0.5)
    assert cost.phases.busy_s == 46.0 and cost.phases.other_s == 2.5
    assert cost.worker_s_per_grade == 2 * cost.wall_s / 3
    doc = cost.document()
    assert doc["per_grade"] == {"busy_s": 15.3, "env_s": 6.7, "install_s": 2.7, "tests_s": 5.2, "other_s": 0.8}
    assert doc["by_repo"]["acme/w"] == {"grades": 2, "busy_s": 20.0, "env_s": 10.0, "install_s": 3.5,
                                        "tests_s": 5.5, "other_s": 1.0}
    assert grading_cost(b.ledger, "nope") is None
    b.close()
