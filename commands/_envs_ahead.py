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
why.

Each build runs in a process of its own at the lowest CPU priority, so it takes what the
grades leave rather than slow their tests. A process of its own, because of how Linux
shares the CPU: where autogroups are on (the default of most distributions), every
session is a group, groups share the CPU as equals, and a nice value only orders the
processes of one group. Each test command leads a session of its own (so its clean-up ends
all it started), so a build thread at nice 19 in swecl's session took a full share beside
two test runs: sympy's test commands ran 28 s a task beside the builds against 17 without
them, whether the thread was at nice 10 or 19 (two spinning processes, each in a session
of its own, and a third for 7.5 s on 2 cores: the third at nice 19 in this session took
4.7 of the 15 CPU-seconds; in a session of its own at autogroup nice 19, 0.2). So the build is a run of its own
(`graders.host.run_in_session`: a session, the run's markers, other runs' clean-ups spare
it, its own ends what it left) whose group it sets to the lowest priority
(`/proc/self/autogroup`), and its processes to nice 19 (where there are no autogroups).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from .inputs import Task
from .run import environment_spec

if TYPE_CHECKING:
    from graders import GradeRequest

__all__ = ["EnvsAhead"]


class EnvsAhead:
    """`with EnvsAhead(tasks, ...):` builds their environments, one builder process at a
    time from a thread, while the block grades them. On leaving, the thread stops after the
    build under way (the block ends when every task was graded, so their environments are
    built by then); leaving on an exception ends the build under way."""

    def __init__(self, tasks: Iterable[Task], *, cache_dir: Path, repo_sources: Mapping[str, str],
                 python_paths: Mapping[str, str]) -> None:
        self._tasks = list(tasks)
        self._args = {"cache_dir": cache_dir, "repo_sources": dict(repo_sources), "python": dict(python_paths)}
        self._stop = threading.Event()
        # readable once the block ends interrupted: the build under way is ended with its group
        self._halt_r, self._halt_w = os.pipe()
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
        if kind is None:  # done: the build under way is one no grade needed
            self._thread.join()
        else:  # interrupted: the build under way is ended, and not waited for
            os.write(self._halt_w, b"x")
            self._thread.join(timeout=5)
        if not self._thread.is_alive():
            os.close(self._halt_r)
            os.close(self._halt_w)

    def _run(self) -> None:
        from graders import GradeRequest  # lazy: the graders load when grading does

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
            if self._build(request) == BUILT:
                self.built.append(task.instance_id)

    def _build(self, request: GradeRequest) -> int | None:
        """One environment built by a process of its own (module doc): its exit status, None
        when it was stopped or could not start. A failure is left to the grade, which builds
        it again and records why."""
        from graders.host import run_in_session  # lazy: the graders load when grading does

        job = msgspec.json.encode({"grader": self._args, "request": request}, enc_hook=str)
        try:
            # -I: swecl's own modules, never a `commands` folder where the user stands
            done = run_in_session([sys.executable, "-I", "-m", "commands._envs_ahead"], cwd=Path.cwd(),
                                  env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  timeout_s=None, stdin=job, halt=self._halt_r)
        except OSError:
            return None
        return done.returncode


BUILT, NOT_BUILT = 0, 3  # the builder's exit statuses; anything else: it failed


def lowest_priority() -> None:
    """This process, and what it starts, at the lowest CPU priority short of never: its
    session's autogroup at nice 19, and itself at nice 19 (module doc). SCHED_IDLE could
    starve a grade that waits on this build's lock when more workers than cores run."""
    try:
        os.nice(19)
    except OSError:
        pass
    for _ in range(20):  # the kernel takes one autogroup change per 100 ms from all its users
        try:
            with open("/proc/self/autogroup", "w", encoding="ascii") as fh:
                fh.write("19")
            return
        except BlockingIOError:
            time.sleep(0.1)
        except OSError:  # no autogroups here: nice alone orders the processes
            return


def _main() -> int:
    """The builder: one job (the grader's arguments and a grade request, JSON on stdin)."""
    lowest_priority()
    from graders import GradeRequest, get_grader

    job = msgspec.json.decode(sys.stdin.buffer.read())
    args = job["grader"]
    grader: Any = get_grader("swebench", sandbox="none", cache_dir=Path(args["cache_dir"]),
                             repo_sources=args["repo_sources"], python=args["python"])  # builds, runs no test
    request = msgspec.convert(job["request"], GradeRequest)
    return BUILT if grader.build_env_ahead(request) else NOT_BUILT


if __name__ == "__main__":
    sys.exit(_main())
