"""The passes of one sequence on `ctx.task_jobs` workers at once.

Only the initial pass of a memory stage is ordered (each task recalls what the earlier
ones wrote); every other task reads nothing another task of its pass writes:

- the baseline pass runs without memory, so it may run at any time, alongside the
  initial pass too;
- the re-test pass recalls the substrate as it stood when the initial pass finished
  (its `pass.finished` is the cut-off), so it is released once that is recorded;
- a `retest-{i}` row recalls the substrate as it stood when its `pass.started` was
  recorded, right after initial task i finished, so it runs beside initial tasks i+1...
  (the builtin stage excepted: its native memory is a folder the initial pass keeps
  writing, so there the initial pass waits for the row).

One coordinator (the calling thread) decides what runs and appends the pass marks; N
worker threads run tasks, each with its own ledger connection and its own worktree
slot. The events are those of a serial run (deterministic ids), in another order.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from typing import Any

from commands.inputs import Task
from graders import parallel_runs, preferred_slot
from ledger import Ledger
from projections import RunOutcomes

from ._task import SequenceContext


@dataclass
class Batch:
    """Tasks of one pass that one worker runs in turn."""

    pass_: str
    tasks: list[Task]
    position: int | None = None  # an initial-pass chain link: the task's 1-based position


RunTask = Any  # (ctx, state, task, pass_) -> None; _sequence._run_task, passed in to avoid an import cycle
Mark = Any  # (pass_, "started" | "finished") -> None


class SequenceSchedule:
    """What is left of one sequence's passes, and what each part waits for."""

    def __init__(self, ctx: SequenceContext, state: RunOutcomes, passes: list[str], retest_every: int | None,
                 *, ordered_initial: bool, first_open: int, mark: Mark) -> None:
        self.ctx, self.state, self.passes, self.mark = ctx, state, passes, mark
        self.tasks = list(ctx.sequence.tasks)
        n = len(self.tasks)
        self.rows = list(range(retest_every, n, retest_every)) if retest_every and "initial" in passes else []
        self.ordered_initial = ordered_initial and "initial" in passes
        self.next_initial = first_open  # the chain's next position (n + 1: none left)
        self.chain_busy = False
        self.free: deque[Batch] = deque()
        self.left: dict[str, int] = {}  # released pass -> tasks not yet run
        self.waiting_rows: set[int] = set()  # builtin: the chain waits for these rows to finish

    # -- releasing and finishing passes ---------------------------------------------------

    def start(self) -> None:
        n = len(self.tasks)
        if "initial" in self.passes:
            if self.ordered_initial:
                self.mark("initial", "started")
                # Resumed: rows of initial tasks already finished are released now.
                for i in self.rows:
                    if i < self.next_initial:
                        self.release(f"retest-{i}", self.tasks[:i])
                if self.next_initial > n:
                    self.finish("initial")
            else:
                self.release("initial", self.tasks)
        elif "retest" in self.passes:
            self.release("retest", self.tasks)
        if "baseline" in self.passes:
            self.release("baseline", self.tasks)

    def release(self, pass_: str, tasks: list[Task]) -> None:
        """The pass may run now: its mark, then its tasks as free batches."""
        self.mark(pass_, "started")
        todo = [t for t in tasks if not _done(self.state, self.ctx, pass_, t)]
        self.left[pass_] = len(todo)
        if self.ctx.group_by_environment:
            # Grading only: one environment's tasks in turn on one worker (its install is
            # made once, in that worker's slot); the longest group first.
            groups: dict[tuple[str, str], list[Task]] = {}
            for task in todo:
                groups.setdefault((task.repo, str(task.version)), []).append(task)
            for group in sorted(groups.values(), key=len, reverse=True):
                self.free.append(Batch(pass_, group))
        else:
            # An agent's time dominates a task, and a grade holds its environment's lock
            # while it tests: tasks one by one keep every worker busy.
            self.free.extend(Batch(pass_, [t]) for t in todo)
        if not todo:
            self.finish(pass_)

    def finish(self, pass_: str) -> None:
        self.mark(pass_, "finished")
        if pass_ == "initial" and "retest" in self.passes:
            self.release("retest", self.tasks)  # its cut-off, initial's pass.finished, now exists

    # -- what to run next -----------------------------------------------------------------

    def next_batch(self) -> Batch | None:
        """The initial pass's next task first (the critical path), else free work."""
        if self.ordered_initial and not self.chain_busy and not self.waiting_rows \
                and self.next_initial <= len(self.tasks):
            self.chain_busy = True
            return Batch("initial", [self.tasks[self.next_initial - 1]], position=self.next_initial)
        return self.free.popleft() if self.free else None

    def done(self, batch: Batch) -> None:
        if batch.position is not None:
            self.chain_busy = False
            i = batch.position
            self.next_initial = i + 1
            if i in self.rows:
                self.release(f"retest-{i}", self.tasks[:i])
                if self.ctx.stage.memory_mode == "builtin" and self.left.get(f"retest-{i}"):
                    self.waiting_rows.add(i)
            if i == len(self.tasks):
                self.finish("initial")
            return
        self.left[batch.pass_] -= len(batch.tasks)
        if self.left[batch.pass_] == 0:
            self.finish(batch.pass_)
            if batch.pass_.startswith("retest-"):
                self.waiting_rows.discard(int(batch.pass_.split("-", 1)[1]))

    def finished(self) -> bool:
        chain_left = self.ordered_initial and self.next_initial <= len(self.tasks)
        return not chain_left and not self.free and not self.chain_busy


def run_scheduled(schedule: SequenceSchedule, run_task: RunTask) -> None:
    ctx, state = schedule.ctx, schedule.state
    reporter = LockedReporter(ctx.reporter)
    local = threading.local()
    opened: list[Ledger] = []
    numbers = itertools.count()
    guard = threading.Lock()
    stop = threading.Event()

    def set_up() -> None:
        # Each worker thread: its own connection (apsw connections are not shared between
        # threads here) and a worktree slot of its own, kept from task to task.
        ledger = Ledger.open(ctx.ledger.path)
        with guard:
            opened.append(ledger)
            number = next(numbers)
        slot = preferred_slot(number)
        slot.__enter__()  # for the thread's life: the pool's threads end with this function's pool
        local.ctx = replace(ctx, ledger=ledger, reporter=reporter)

    def work(batch: Batch) -> Batch:
        for task in batch.tasks:
            if stop.is_set():
                break
            run_task(local.ctx, state, task, batch.pass_)
        return batch

    running: dict[Future[Batch], Batch] = {}
    error: BaseException | None = None
    try:
        with parallel_runs(), ThreadPoolExecutor(max_workers=ctx.task_jobs, thread_name_prefix="swecl-task",
                                                 initializer=set_up) as pool:
            try:
                schedule.start()
                while True:
                    while error is None and len(running) < ctx.task_jobs:
                        batch = schedule.next_batch()
                        if batch is None:
                            break
                        running[pool.submit(work, batch)] = batch
                    if not running:
                        break
                    finished, _ = wait(running, return_when=FIRST_COMPLETED)
                    for fut in finished:
                        batch = running.pop(fut)
                        exc = fut.exception()
                        if exc is not None:
                            error = error or exc
                            stop.set()  # no worker starts another task; the running ones end
                        elif error is None and not stop.is_set():
                            schedule.done(batch)
            finally:
                stop.set()  # on an error or Ctrl-C: no thread starts another task
    finally:
        for ledger in opened:
            ledger.close()
    if error is not None:
        raise error


def _done(state: RunOutcomes, ctx: SequenceContext, pass_: str, task: Task) -> bool:
    cell = state.cell(ctx.sequence.id, pass_, task.order)
    return cell is not None and cell.done


class LockedReporter:
    """One reporter for several threads: one call at a time."""

    def __init__(self, inner: Any) -> None:
        self._inner, self._lock = inner, threading.Lock()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._inner, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return method(*args, **kwargs)

        return call
