"""What one grading run cost in time (`swecl validate` prints it per pass), read from the
run's own events, so the figures docs/validation.md reports are what any user gets from
their ledger, on their machine, with no script of their own.

  * wall seconds: the run's (`run_wall_s`: run.started and each run.resumed to its end,
    never the pause between a stop and a resume);
  * workers: the run's options (`jobs` sequences at once times `task_jobs` tasks of each);
  * worker-seconds a grade: workers times wall over the grades, the figure the validation
    page compares (a worker that waits counts as spent: the machine was held);
  * busy seconds by phase, from each grade.finished (`duration_s` and `timings`): the
    environment build (`env`), the repository's install (`install`), the test command
    (`tests`) and the rest (checkout, waiting on an environment's lock, applying the patch,
    parsing, resetting the worktree), per repository (run.started's plan names each
    task's repository) and over the run.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ledger import Ledger, StreamRange

from ._estimate import _workers_of  # the same workers the estimate reads
from ._spend import run_wall_s

__all__ = ["GradingCost", "PhaseSeconds", "grading_cost"]


class PhaseSeconds(msgspec.Struct, kw_only=True):
    """Seconds the grades spent, summed, by phase; `other_s` is busy less the three named."""

    grades: int = 0
    busy_s: float = 0.0
    env_s: float = 0.0
    install_s: float = 0.0
    tests_s: float = 0.0
    other_s: float = 0.0

    def add(self, duration_s: float, timings: dict[str, float]) -> None:
        env, install, tests = (float(timings.get(k, 0.0)) for k in ("env", "install", "tests"))
        self.grades += 1
        self.busy_s += duration_s
        self.env_s += env
        self.install_s += install
        self.tests_s += tests
        self.other_s += max(0.0, duration_s - env - install - tests)

    def per_grade(self) -> dict[str, float]:
        """The phases' mean seconds a grade, rounded to 0.1."""
        n = self.grades or 1
        return {k: round(getattr(self, k) / n, 1) for k in ("busy_s", "env_s", "install_s", "tests_s", "other_s")}


class GradingCost(msgspec.Struct, kw_only=True):
    version: str
    workers: int
    grades: int
    wall_s: float
    finished: bool  # its last stretch ended with run.finished (else: stopped, or running now)
    worker_s_per_grade: float
    phases: PhaseSeconds
    by_repo: dict[str, PhaseSeconds]

    def document(self) -> dict[str, Any]:
        return {
            "version": self.version, "workers": self.workers, "grades": self.grades,
            "wall_s": round(self.wall_s, 1), "finished": self.finished,
            "worker_s_per_grade": round(self.worker_s_per_grade, 1),
            "per_grade": self.phases.per_grade(),
            "by_repo": {repo: {"grades": p.grades, **p.per_grade()} for repo, p in sorted(self.by_repo.items())},
        }


def grading_cost(ledger: Ledger, version: str) -> GradingCost | None:
    """The cost of run `version`; None: no such run."""
    wall = run_wall_s(ledger, version)
    if wall is None:
        return None
    repo_of: dict[str, str] = {}
    workers, finished = 1, False
    total = PhaseSeconds()
    by_repo: dict[str, PhaseSeconds] = {}
    header = f"run/{version}"
    for rec in ledger.read(types=["run.started", "run.resumed", "run.finished", "grade.finished"],
                           ranges=[StreamRange(header)]):
        ev = rec.event
        if rec.type == "grade.finished":
            timings = dict(ev.timings or {})
            total.add(ev.duration_s, timings)
            by_repo.setdefault(repo_of.get(ev.instance_id, "?"), PhaseSeconds()).add(ev.duration_s, timings)
        elif rec.stream == header:
            finished = rec.type == "run.finished"
            if rec.type == "run.started":
                workers = _workers_of(ev)
                repo_of = {ref.instance_id: ref.repo for plan in ev.tasks.values() for ref in plan}
    return GradingCost(version=version, workers=workers, grades=total.grades, wall_s=wall, finished=finished,
                       worker_s_per_grade=workers * wall / total.grades if total.grades else 0.0,
                       phases=total, by_repo=by_repo)
