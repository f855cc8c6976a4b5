"""The passes of one sequence in one run, resumable at any task.

What is done is read from the ledger (the outcome projection), never kept elsewhere: a
finished task is skipped, a started-but-unfinished one is recorded as abandoned and
redone as the next attempt.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import replace
from typing import Any

from commands.inputs import Task
from graders import parallel_runs, preferred_slot
from ledger import Ledger, NewEvent, StreamRange, event_id_for
from ledger.events import PassFinished, PassStarted
from projections import Cell, OutcomeProjection, Projector, RunOutcomes, SequenceCells

from ._stages import Stage
from ._task import SequenceContext, abandon, run_attempt


def order_free(stage: Stage, pass_: str) -> bool:
    """Whether a pass's tasks may run in any order, at once: nothing one task does is
    read by another (no memory in the stage, or the baseline pass, which runs without it)."""
    return not stage.memory_on or pass_ == "baseline"


def plan_passes(passes: Iterable[str], n_tasks: int, retest_every: int | None) -> list[tuple[str, int]]:
    """(pass, upto): the order passes run in; `retest-{i}` rows follow initial task i."""
    passes = tuple(passes)
    steps: list[tuple[str, int]] = []
    if "initial" in passes:
        if retest_every:
            for i in range(retest_every, n_tasks, retest_every):
                steps.append(("initial", i))
                steps.append((f"retest-{i}", i))
        steps.append(("initial", n_tasks))
    for name in ("retest", "baseline"):
        if name in passes:
            steps.append((name, n_tasks))
    return steps


def run_sequence(ctx: SequenceContext, passes: Iterable[str], retest_every: int | None) -> None:
    state = Projector(ctx.ledger).run(OutcomeProjection(ctx.version)).state
    marks = _pass_marks(ctx)
    tasks = list(ctx.sequence.tasks)
    _restore_progress(ctx, state)
    if ctx.stage.memory_mode == "builtin":
        ctx.builtin_seen = _builtin_files(ctx)
    for pass_, upto in plan_passes(passes, len(tasks), retest_every):
        if (pass_, "pass.started") not in marks:
            ctx.append([NewEvent(PassStarted(sequence_id=ctx.sequence.id, pass_=pass_), _mark_id(ctx, pass_, "started"))])
            marks.add((pass_, "pass.started"))
        first = _first_open(state, ctx, tasks, upto) if pass_ == "initial" else 1
        todo = tasks[first - 1 : upto]
        if ctx.task_jobs > 1 and len(todo) > 1 and order_free(ctx.stage, pass_):
            _run_tasks_at_once(ctx, state, todo, pass_)
        else:
            for task in todo:
                _run_task(ctx, state, task, pass_)
        if upto == len(tasks) or pass_.startswith("retest-"):
            if (pass_, "pass.finished") not in marks:
                ctx.append(
                    [NewEvent(PassFinished(sequence_id=ctx.sequence.id, pass_=pass_), _mark_id(ctx, pass_, "finished"))],
                    durable=True,
                )
                marks.add((pass_, "pass.finished"))


def _first_open(state: RunOutcomes, ctx: SequenceContext, tasks: list[Task], upto: int) -> int:
    """Initial-pass steps of a --retest-every plan overlap; start after the done prefix.

    A position in `tasks` (1-based), not a task's order: with --instance the list holds
    only some tasks of the sequence, and their orders have gaps."""
    for position, task in enumerate(tasks[:upto], start=1):
        cell = state.cell(ctx.sequence.id, "initial", task.order)
        if cell is None or not cell.done:
            return position
    return upto + 1


def _run_task(ctx: SequenceContext, state: RunOutcomes, task: Task, pass_: str) -> None:
    cell = state.cell(ctx.sequence.id, pass_, task.order)
    seq = state.sequences.setdefault(ctx.sequence.id, SequenceCells())
    if cell is not None:
        if cell.done:
            return
        abandon(ctx, task, pass_, cell.attempt, "interrupted: the run stopped before this task finished")
    # After every attempt ever started, abandoned ones included (a crash right after an
    # abandon leaves no open cell, yet that attempt's ids are taken).
    attempt = max(seq.last_attempt(pass_, task.order), cell.attempt if cell else 0) + 1
    finished = run_attempt(ctx, task, pass_, attempt)
    seq.attempts.setdefault(pass_, {})[task.order] = attempt
    # Keep the local view in step so an overlapping step of the plan skips this task.
    cells = seq.passes.setdefault(pass_, {})
    cells[task.order] = Cell(
        instance_id=task.instance_id, attempt=attempt, done=True, status=finished.status, resolved=finished.resolved
    )


def _run_tasks_at_once(ctx: SequenceContext, state: RunOutcomes, tasks: list[Task], pass_: str) -> None:
    """`ctx.task_jobs` threads, each with its own ledger connection and its own worktree
    slot. The tasks of one environment (repo and version) stay on one thread, in order:
    an environment is used by one grade at a time, and its install, made in one slot, is
    reused there instead of redone in another."""
    groups: dict[tuple[str, str], list[Task]] = {}
    for task in tasks:
        groups.setdefault((task.repo, str(task.version)), []).append(task)
    queue = sorted(groups.values(), key=len, reverse=True)  # the longest first: the wall time is the slowest thread's
    taken = threading.Lock()
    stop = threading.Event()
    reporter = _LockedReporter(ctx.reporter)

    def worker(number: int) -> None:
        ledger = Ledger.open(ctx.ledger.path)
        try:
            mine = replace(ctx, ledger=ledger, reporter=reporter)
            with preferred_slot(number):
                while not stop.is_set():
                    with taken:
                        if not queue:
                            return
                        group = queue.pop(0)
                    for task in group:
                        if stop.is_set():
                            return
                        _run_task(mine, state, task, pass_)
        finally:
            ledger.close()

    with parallel_runs(), ThreadPoolExecutor(max_workers=min(ctx.task_jobs, len(queue)),
                                             thread_name_prefix="swecl-task") as pool:
        futures = [pool.submit(worker, n) for n in range(min(ctx.task_jobs, len(queue)))]
        try:
            wait(futures, return_when=FIRST_EXCEPTION)
        finally:
            stop.set()  # on an error or Ctrl-C: no thread starts another task
        for fut in futures:
            exc = fut.exception()
            if exc is not None:
                raise exc


class _LockedReporter:
    """One reporter for several threads: one call at a time."""

    def __init__(self, inner: Any) -> None:
        self._inner, self._lock = inner, threading.Lock()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._inner, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return method(*args, **kwargs)

        return call


def _builtin_files(ctx: SequenceContext) -> dict[str, tuple[str, str]]:
    """The native memory files recorded so far in this sequence: path -> (item id, sha256)."""
    seen: dict[str, tuple[str, str]] = {}
    for rec in ctx.ledger.read(types=["memory.written"], ranges=[StreamRange(ctx.stream)]):
        ev = rec.event
        if ev.kind == "builtin-file":
            digest = next((t.split(":", 1)[1] for t in ev.tags if t.startswith("sha256:")), "")
            seen[ev.title] = (ev.item_id, digest)
    return seen


def _pass_marks(ctx: SequenceContext) -> set[tuple[str, str]]:
    return {
        (rec.event.pass_, rec.type)
        for rec in ctx.ledger.read(types=["pass.started", "pass.finished"], ranges=[StreamRange(ctx.stream)])
    }


def _mark_id(ctx: SequenceContext, pass_: str, what: str) -> str:
    return event_id_for(ctx.version, ctx.sequence.id, pass_, "pass", what)


def _restore_progress(ctx: SequenceContext, state: RunOutcomes) -> None:
    seq = state.sequences.get(ctx.sequence.id)
    if seq is None:
        return
    for pass_, cells in seq.passes.items():
        done = [c for c in cells.values() if c.done]
        ctx.progress[pass_] = (len(done), sum(1 for c in done if c.resolved))
