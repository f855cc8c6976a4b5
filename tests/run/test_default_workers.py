"""The demo suite's default workers: `--task-jobs C` on C usable cores when the command
line gives neither --jobs nor --task-jobs; nothing parallel on one core."""

from __future__ import annotations

import pytest

from commands.run import ExecutionOptions, RunOptions
from commands.run import _demo_suite
from commands.run._demo_suite import usable_cores, with_default_workers


def test_two_cores_run_two_tasks_at_once_in_one_process() -> None:
    opts = RunOptions(stage="base")
    chosen = with_default_workers(opts, given=False, cores=2)
    assert (chosen.execution.jobs, chosen.execution.task_jobs) == (1, 2)
    assert (opts.execution.jobs, opts.execution.task_jobs) == (1, 1)  # the given options are not changed
    assert chosen.to_config()["task_jobs"] == 2  # recorded in run.started.config as if given
    assert with_default_workers(opts, given=False, cores=64).execution.task_jobs == 8  # each a worktree slot


def test_one_core_given_workers_or_ray_leave_the_options_alone() -> None:
    opts = RunOptions(stage="base")
    assert with_default_workers(opts, given=False, cores=1) is opts
    assert with_default_workers(opts, given=True, cores=8) is opts
    ray = RunOptions(stage="base", execution=ExecutionOptions(executor="ray"))
    assert with_default_workers(ray, given=False, cores=8) is ray


def test_the_cores_are_the_affinity_not_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_demo_suite.os, "sched_getaffinity", lambda pid: {3}, raising=False)
    monkeypatch.setattr(_demo_suite.os, "cpu_count", lambda: 64)
    assert usable_cores() == 1
