"""The environments of a validation built ahead of its grades, on one more thread.

Why: a cold validation's first grade of each environment waits for its build, mostly
downloads and source builds (xarray's four, about 300 s each from an empty package
cache, were a fifth of the cold gold pass), and a worker waiting on the network leaves
its core idle. One thread builds the environments of the tasks in their order while the
workers grade: a grade finds its environment complete, or waits on its build lock for
the rest of a build already under way (never two builds of one environment).

Nothing a grade depends on differs: the build is the grade's own call with the grade's
inputs (`SwebenchGrader.build_env_ahead`); an environment whose files would come from a
grade's checkout, or whose build fails, is left to the grade, which builds it and says
why. The thread runs at the lowest CPU priority (nice 19; Linux: per thread, inherited by
its processes), so it takes what the grades leave rather than slow their tests.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .inputs import Task
from .run import environment_spec

__all__ = ["EnvsAhead"]


class EnvsAhead:
    """`with EnvsAhead(tasks, ...):` builds their environments on a thread while the block
    grades them. On leaving, the thread stops after the build under way (the block ends
    when every task was graded, so their environments are built by then)."""

    def __init__(self, tasks: Iterable[Task], *, cache_dir: Path, repo_sources: Mapping[str, str],
                 python_paths: Mapping[str, str]) -> None:
        self._tasks = list(tasks)
        self._args = {"cache_dir": cache_dir, "repo_sources": dict(repo_sources), "python": dict(python_paths)}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="swecl-envs-ahead", daemon=True)
        self.built: list[str] = []  # instance ids whose environment this thread built or found built

    def __enter__(self) -> EnvsAhead:
        self._thread.start()
        return self

    def wait(self) -> None:
        """Until every environment was tried."""
        self._thread.join()

    def __exit__(self, kind: object, *_: object) -> None:
        self._stop.set()
        if kind is None:  # done: the build under way is one no grade needed; interrupted: not waited for
            self._thread.join()

    def _run(self) -> None:
        from graders import GradeRequest, get_grader  # lazy: the graders load when grading does

        try:
            # the lowest priority short of never (SCHED_IDLE could starve a grade waiting on
            # this build's lock when more workers than cores run): at nice 10 a cold
            # validation's tests and first astropy installs ran 30 to 50% slower beside it
            os.nice(19)
        except OSError:
            pass
        grader: Any = get_grader("swebench", sandbox="none", **self._args)  # builds, runs no test
        seen: set[str] = set()
        for task in self._tasks:
            if self._stop.is_set():
                return
            environment = environment_spec(task)
            key = json.dumps([task.repo, str(task.version), task.environment_setup_commit, environment],
                             sort_keys=True, default=str)
            if key in seen:
                continue
            seen.add(key)
            request = GradeRequest(instance_id=task.instance_id, repo=task.repo, version=task.version,
                                   base_commit=task.base_commit, model_patch="", environment=environment,
                                   environment_setup_commit=task.environment_setup_commit)
            try:
                if grader.build_env_ahead(request):
                    self.built.append(task.instance_id)
            except Exception:  # noqa: BLE001 - the grade builds it again and records why it fails
                continue
