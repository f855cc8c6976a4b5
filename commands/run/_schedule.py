"""The passes of one or more sequences of a run on N workers at once.

Only the initial pass of a memory stage is ordered (each task recalls what the earlier
ones wrote); every other task reads nothing another task of its pass writes:

- the baseline pass runs without memory, so it may run at any time, alongside the
  initial pass too;
- the re-test pass recalls the substrate as it stood when the initial pass finished
  (its `pass.finished` is the cut-off), so it is released once that is recorded;
- a `retest-{i}` row recalls the substrate as it stood when its `pass.started` was
  recorded, right after initial task i finished, so it runs beside initial tasks i+1...
  (unless the memory says its rows wait for the chain, `SequenceMemory.rows_wait_for_chain`:
  the agent's native memory is a folder the initial pass keeps writing, so there the
  initial pass waits for the row).

One coordinator (the calling thread) decides what runs and appends the pass marks; N
worker threads run tasks, each with its own ledger connection and its own worktree
slot. The sequences share the workers: an initial pass's next task goes first (of the
sequence with the most left: the critical path), then the work that has waited
longest, so no worker idles while any sequence has a task that may start. The events
are those of a serial run (deterministic ids), in another order.

Elsewhere (a Ray job's sequence, see `_ray_tasks`): of the N workers, one runs tasks
here, the chain's first; the other N - 1 hand free batches to somewhere else that runs
them and records them in this ledger before it returns. A batch handed over that has
not started there yet is taken back when the worker here has nothing else to do: work
that waits elsewhere (for CPUs held by jobs like this one) never leaves this one idle.
"""

from __future__ import annotations

import itertools
import os
import signal
import threading
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from commands.inputs import Task
from graders.host import descendants, parallel_runs, preferred_slot
from ledger import Ledger
from projections import RunOutcomes

from .. import _stops
from .._failpoints import failpoint
from ._halt import Halt
from ._task import Halted, SequenceContext


@dataclass
class Batch:
    """Tasks of one pass that one worker runs in turn."""

    pass_: str
    tasks: list[Task]
    position: int | None = None  # an initial-pass chain link: the task's 1-based position
    stamp: int = 0  # when it became ready (free work runs oldest first, across sequences)


_READY = itertools.count()
RunTask = Any  # (ctx, state, task, pass_) -> None; _sequence._run_task, passed in to avoid an import cycle
Mark = Any  # (pass_, "started" | "finished") -> None


@dataclass
class Handoff:
    """A free batch handed to `Elsewhere`: whether it started there, and whether the
    coordinator took it back (then nothing more of that run is recorded)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    started: bool = False
    taken_back: bool = False
    cancel: Any = None  # () -> None: stop the run elsewhere; set once it was submitted

    def take_back(self) -> bool:
        """Take the batch back if it has not started elsewhere (called by the coordinator)."""
        with self.lock:
            if self.started or self.taken_back:
                return False
            self.taken_back = True
            cancel = self.cancel
        if cancel is not None:
            cancel()
        return True


class Elsewhere(Protocol):
    """Where free batches may run besides this process's workers."""

    slots: int  # batches it runs at once (of the N workers; one stays here)

    def run(self, ctx: SequenceContext, state: RunOutcomes, batch: Batch, handoff: Handoff) -> None:
        """Run `batch` elsewhere and record its events in `ctx.ledger`; blocks until done.
        Marks `handoff.started` once it started; stops early once it was taken back."""
        ...


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
        self.waiting_rows: set[int] = set()  # the chain waits for these rows to finish (see the module doc)

    # -- releasing and finishing passes ---------------------------------------------------

    def start(self) -> None:
        n = len(self.tasks)
        if "initial" in self.passes:
            if self.ordered_initial:
                self.mark("initial", "started")
                # Resumed: rows of initial tasks already finished are released now.
                for i in self.rows:
                    if i < self.next_initial:
                        self.release_row(i)
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
                self.free.append(Batch(pass_, group, stamp=next(_READY)))
        else:
            # An agent's time dominates a task, and a grade holds its environment's lock
            # while it tests: tasks one by one keep every worker busy.
            self.free.extend(Batch(pass_, [t], stamp=next(_READY)) for t in todo)
        if not todo:
            self.finish(pass_)

    def release_row(self, i: int) -> None:
        """The `retest-{i}` row, once initial task i has finished."""
        self.release(f"retest-{i}", self.tasks[:i])
        if self.ctx.memory.rows_wait_for_chain and self.left.get(f"retest-{i}"):
            self.waiting_rows.add(i)  # its tasks copy memory state the chain writes

    def finish(self, pass_: str) -> None:
        self.mark(pass_, "finished")
        if pass_ == "initial" and "retest" in self.passes:
            self.release("retest", self.tasks)  # its cut-off, initial's pass.finished, now exists

    # -- what to run next -----------------------------------------------------------------

    def chain_ready(self) -> bool:
        return self.ordered_initial and not self.chain_busy and not self.waiting_rows \
            and self.next_initial <= len(self.tasks)

    def chain_left(self) -> int:
        return len(self.tasks) - self.next_initial + 1 if self.ordered_initial else 0

    def take_chain(self) -> Batch:
        self.chain_busy = True
        return Batch("initial", [self.tasks[self.next_initial - 1]], position=self.next_initial)

    def done(self, batch: Batch) -> None:
        if batch.position is not None:
            self.chain_busy = False
            i = batch.position
            self.next_initial = i + 1
            if i in self.rows:
                self.release_row(i)
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


def next_batch(schedules: list[SequenceSchedule]) -> tuple[SequenceSchedule, Batch] | None:
    """What a free worker runs next: an initial pass's next task first, of the sequence
    with the most initial tasks left (the critical path); else the oldest free work."""
    chains = [s for s in schedules if s.chain_ready()]
    if chains:
        owner = max(chains, key=SequenceSchedule.chain_left)
        return owner, owner.take_chain()
    waiting = [s for s in schedules if s.free]
    if not waiting:
        return None
    owner = min(waiting, key=lambda s: s.free[0].stamp)
    return owner, owner.free.popleft()


def next_free_batch(schedules: list[SequenceSchedule]) -> tuple[SequenceSchedule, Batch] | None:
    """The oldest free work (what may run elsewhere: never a chain link)."""
    waiting = [s for s in schedules if s.free]
    if not waiting:
        return None
    owner = min(waiting, key=lambda s: s.free[0].stamp)
    return owner, owner.free.popleft()


# What is in flight: each batch with its schedule, and its handoff if it was handed over.
Running = dict[Future[None], tuple[SequenceSchedule, Batch, Handoff | None]]


def run_scheduled(schedules: list[SequenceSchedule], run_task: RunTask, workers: int,
                  elsewhere: Elsewhere | None = None) -> None:
    """Run the schedules' work on `workers` threads; the calling thread coordinates
    (decides, and appends the pass marks on the contexts' own ledger connection). With
    `elsewhere`, `elsewhere.slots` of the threads hand free batches to it instead."""
    crew = _Crew(schedules[0].ctx, run_task, elsewhere)
    away = min(elsewhere.slots, workers - 1) if elsewhere is not None else 0
    before = descendants()
    error: BaseException | None = None
    try:
        # halt first: it still sees a stop while the pool's exit waits for the workers
        with crew.halt, parallel_runs(), ThreadPoolExecutor(max_workers=workers, thread_name_prefix="swecl-task",
                                                            initializer=crew.set_up) as pool:
            try:
                error = _Coordinator(schedules, crew, pool, here=workers - away, away=away).run()
            except BaseException:  # Ctrl-C or SIGTERM, in this thread: the workers' tasks stop unrecorded
                crew.halt.set()
                _end_processes(before)  # what they run (agents, test runs) would otherwise run to its end
                raise
            finally:
                crew.stop.set()  # on an error or Ctrl-C: no thread starts another task
    finally:
        crew.close()
    _stops.raise_if_requested()
    if isinstance(error, Halted):
        # A worker saw the stop (Halt) before this thread's handler ran, and it never did.
        raise KeyboardInterrupt()
    if error is not None:
        raise error


class _Crew:
    """What the worker threads share: each its own ledger connection and worktree slot,
    one locked reporter, the stop (start no other task) and the halt (record nothing more)."""

    def __init__(self, ctx: SequenceContext, run_task: RunTask, elsewhere: Elsewhere | None) -> None:
        self.run_task, self.elsewhere = run_task, elsewhere
        self.reporter = LockedReporter(ctx.reporter)
        self.path = ctx.ledger.path
        self.local = threading.local()
        self.opened: list[Ledger] = []
        self.numbers = itertools.count()
        self.guard = threading.Lock()
        self.stop = threading.Event()  # no worker starts another task
        self.halt = Halt()  # interrupted: attempts in flight record nothing more (see SequenceContext.halt)

    def set_up(self) -> None:
        # Each worker thread: its own connection (a connection is not shared between
        # threads here) and a worktree slot of its own, kept from task to task.
        ledger = Ledger.open(self.path)
        with self.guard:
            self.opened.append(ledger)
            number = next(self.numbers)
        preferred_slot(number).__enter__()  # for the thread's life, which ends with the pool
        self.local.ledger = ledger

    def context(self, owner: SequenceSchedule) -> SequenceContext:
        """`owner`'s context as this worker thread runs it."""
        return replace(owner.ctx, ledger=self.local.ledger, reporter=self.reporter, halt=self.halt)

    def work(self, owner: SequenceSchedule, batch: Batch) -> None:
        ctx = self.context(owner)
        for task in batch.tasks:
            if self.stop.is_set():
                break
            self.run_task(ctx, owner.state, task, batch.pass_)

    def hand_over(self, owner: SequenceSchedule, batch: Batch, handoff: Handoff) -> None:
        assert self.elsewhere is not None
        if not self.stop.is_set():
            self.elsewhere.run(self.context(owner), owner.state, batch, handoff)

    def close(self) -> None:
        """Close the workers' connections (once the pool has ended)."""
        for ledger in self.opened:
            ledger.close()


class _Coordinator:
    """The calling thread's loop: keep `here` workers running batches and `away` handing
    them over, and mark each batch done in its schedule, until nothing is left or a
    worker failed (then the first failure is returned once the running ones ended)."""

    def __init__(self, schedules: list[SequenceSchedule], crew: _Crew, pool: ThreadPoolExecutor,
                 *, here: int, away: int) -> None:
        self.schedules, self.crew, self.pool = schedules, crew, pool
        self.here, self.away = here, away
        self.running: Running = {}
        self.error: BaseException | None = None

    def run(self) -> BaseException | None:
        for schedule in self.schedules:
            schedule.start()
        while True:
            if self.error is None:
                self.dispatch()
            if not self.running:
                return self.error
            finished = self.wait()
            failpoint("schedule.woke")
            _stops.raise_if_requested()  # a stop whose KeyboardInterrupt a finalizer dropped
            self.collect(finished)

    def _handed(self) -> list[Handoff]:
        return [h for *_, h in self.running.values() if h is not None]

    def dispatch(self) -> None:
        """Give every idle worker a batch: here the next one, away the oldest free one;
        a worker here with nothing to run takes back a batch not yet started elsewhere."""
        running, schedules = self.running, self.schedules
        while True:
            handed = self._handed()
            if len(running) - len(handed) < self.here and (picked := next_batch(schedules)) is not None:
                running[self.pool.submit(self.crew.work, *picked)] = (*picked, None)
            elif len(handed) < self.away and (picked := next_free_batch(schedules)) is not None:
                handoff = Handoff()
                running[self.pool.submit(self.crew.hand_over, *picked, handoff)] = (*picked, handoff)
            elif len(running) - len(handed) < self.here and _take_back(running):
                continue  # a batch that had not started elsewhere: this worker runs it
            else:
                return

    def wait(self) -> set[Future[None]]:
        # While a worker here idles and a batch handed over may still be taken
        # back (it waits elsewhere), look again now and then.
        handed = self._handed()
        poll = self.error is None and handed and len(self.running) - len(handed) < self.here
        finished, _ = wait(self.running, timeout=1.0 if poll else None, return_when=FIRST_COMPLETED)
        return finished

    def collect(self, finished: set[Future[None]]) -> None:
        """Mark what finished done; on the first failure, stop the rest."""
        for fut in finished:
            owner, batch, handoff = self.running.pop(fut)
            exc = fut.exception()
            if handoff is not None and handoff.taken_back:
                continue  # back in its schedule's queue: whatever the run elsewhere did is not recorded
            if exc is not None:
                self.error = self.error or exc
                self.crew.stop.set()  # no worker starts another task; the running ones end
                for *_, other in self.running.values():
                    if other is not None:
                        other.take_back()  # what waits elsewhere need not start (and may wait for CPUs forever)
            elif self.error is None:
                owner.done(batch)


def _take_back(running: Running) -> bool:
    """Take back the oldest batch handed over that has not started elsewhere, to the front
    of its schedule's queue (a worker here runs it next)."""
    handed = sorted(((owner, batch, h) for owner, batch, h in running.values()
                     if h is not None and not h.started and not h.taken_back), key=lambda x: x[1].stamp)
    for owner, batch, handoff in handed:
        if handoff.take_back():
            owner.free.appendleft(batch)
            return True
    return False


def _end_processes(before: set[int]) -> None:
    """SIGKILL every process started since `before` (the workers' agents and test runs):
    once halted, nothing they return is recorded, so nothing is lost by ending them."""
    for pid in descendants() - before:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


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
