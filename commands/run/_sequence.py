"""The passes of one sequence in one run, resumable at any task.

What is done is read from the ledger (the outcome projection), never kept elsewhere: a
finished task is skipped, a started-but-unfinished one is recorded as abandoned and
redone as the next attempt.
"""

from __future__ import annotations

from collections.abc import Iterable

from commands.inputs import Task
from ledger import NewEvent, StreamRange, SweclError, event_id_for
from ledger.events import PassFinished, PassStarted, TaskFinished
from projections import INVALID_STATUSES, Cell, Projector, RunOutcomes, SequenceCells, outcome_projection

from .. import _stops
from ._budget import check_budget
from ._schedule import Elsewhere, SequenceSchedule, run_scheduled
from ._task import SequenceContext, abandon, run_attempt


def order_free(ctx: SequenceContext, pass_: str) -> bool:
    """Whether a pass's tasks may run in any order, at once: nothing one task does is
    read by another. Only the initial pass of a memory that keeps what a task left is
    ordered: the baseline runs without memory, and the re-test pass and `retest-{i}` rows
    recall the memory as it stood at their fixed cut-off (see `_schedule`)."""
    return not ctx.memory.ordered_initial or pass_ != "initial"


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


def run_sequence(ctx: SequenceContext, passes: Iterable[str], retest_every: int | None,
                 elsewhere: Elsewhere | None = None) -> None:
    """`elsewhere` (with --task-jobs N > 1): where free tasks may run besides this process
    (a Ray job hands them to Ray tasks of their own)."""
    if ctx.task_jobs > 1:
        run_sequences_at_once([ctx], passes, retest_every, ctx.task_jobs, elsewhere)
        return
    try:
        _run_in_order(ctx, passes, retest_every)
    finally:
        ctx.memory.close()  # nothing of the memory (a server) outlives the sequence's passes


def _run_in_order(ctx: SequenceContext, passes: Iterable[str], retest_every: int | None) -> None:
    state = _prepare(ctx)
    marks = _pass_marks(ctx)
    tasks = list(ctx.sequence.tasks)
    for pass_, upto in plan_passes(passes, len(tasks), retest_every):
        if (pass_, "pass.started") not in marks:
            ctx.append([NewEvent(PassStarted(sequence_id=ctx.sequence.id, pass_=pass_), _mark_id(ctx, pass_, "started"))])
            marks.add((pass_, "pass.started"))
        first = _first_open(state, ctx, tasks, upto) if pass_ == "initial" else 1
        for task in tasks[first - 1 : upto]:
            _stops.raise_if_requested()  # a stop whose KeyboardInterrupt a finalizer dropped
            _run_task(ctx, state, task, pass_)
        if upto == len(tasks) or pass_.startswith("retest-"):
            if (pass_, "pass.finished") not in marks:
                ctx.append(
                    [NewEvent(PassFinished(sequence_id=ctx.sequence.id, pass_=pass_), _mark_id(ctx, pass_, "finished"))],
                    durable=True,
                )
                marks.add((pass_, "pass.finished"))


def run_sequences_at_once(contexts: list[SequenceContext], passes: Iterable[str], retest_every: int | None,
                          workers: int, elsewhere: Elsewhere | None = None) -> None:
    """The passes of these sequences (of one run) on `workers` workers shared by all of
    them: what may run at once does (`_schedule`), so one sequence's ordered initial pass
    never leaves a worker idle while another sequence has work that may start."""
    try:
        schedules = [_schedule_for(ctx, list(passes), retest_every) for ctx in contexts]
        run_scheduled(schedules, _run_task, workers, elsewhere)
    finally:
        for ctx in contexts:
            ctx.memory.close()
    for schedule in schedules:
        if not schedule.finished():
            raise SweclError(f"sequence {schedule.ctx.sequence.id}: the task scheduler stopped with work left (report this)")


def run_free_tasks(ctx: SequenceContext, pass_: str, orders: list[int]) -> None:
    """Tasks of one order-free pass in turn, as a worker of `run_scheduled` runs them, on
    `ctx.ledger` (a Ray task of their own runs them on a copy of its job's ledger)."""
    if not order_free(ctx, pass_):
        raise SweclError(f"the {pass_} pass of a {ctx.stage.name} run is ordered: its tasks run in the sequence's job")
    state = _prepare(ctx)
    tasks = {t.order: t for t in ctx.sequence.tasks}
    for order in orders:
        _run_task(ctx, state, tasks[order], pass_)


def _prepare(ctx: SequenceContext) -> RunOutcomes:
    """What the ledger says is done, what the memory restores (or runs again), and the
    sequence's progress."""
    state = Projector(ctx.ledger).run(outcome_projection(ctx.ledger, ctx.version)).state
    ctx.memory.resume(state)
    _restore_progress(ctx, state)
    return state


def _schedule_for(ctx: SequenceContext, passes: list[str], retest_every: int | None) -> SequenceSchedule:
    state = _prepare(ctx)
    marks = _pass_marks(ctx)

    def mark(pass_: str, what: str) -> None:
        # Called from the coordinator's thread only, on its ledger connection.
        if (pass_, f"pass.{what}") in marks:
            return
        event = PassStarted(sequence_id=ctx.sequence.id, pass_=pass_) if what == "started" \
            else PassFinished(sequence_id=ctx.sequence.id, pass_=pass_)
        ctx.append([NewEvent(event, _mark_id(ctx, pass_, what))], durable=what == "finished")
        marks.add((pass_, f"pass.{what}"))

    tasks = list(ctx.sequence.tasks)
    first = _first_open(state, ctx, tasks, len(tasks)) if "initial" in passes else len(tasks) + 1
    return SequenceSchedule(ctx, state, passes, retest_every, ordered_initial=not order_free(ctx, "initial"),
                            first_open=first, mark=mark)


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
    # The budget is checked before a task, never during one: the task in flight finishes.
    left = check_budget(ctx.ledger, ctx.version, ctx.budget_usd)
    finished = run_attempt(ctx, task, pass_, attempt, cost_cap=left)
    record_finished(ctx, state, finished)


def record_finished(ctx: SequenceContext, state: RunOutcomes, finished: TaskFinished) -> None:
    """A task's finish in this process's view of the run (what `_prepare` read, kept in
    step: an overlapping step of the plan skips the task), whoever ran it."""
    with ctx.tally.lock:  # workers of one sequence share this view
        seq = state.sequences.setdefault(ctx.sequence.id, SequenceCells())
        attempts = seq.attempts.setdefault(finished.pass_, {})
        attempts[finished.order] = max(attempts.get(finished.order, 0), finished.attempt)
        cells = seq.passes.setdefault(finished.pass_, {})
        cells[finished.order] = Cell(
            instance_id=finished.instance_id, attempt=finished.attempt, done=True, status=finished.status,
            resolved=finished.resolved,
        )


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
        ctx.tally.restore(pass_, len(done), sum(1 for c in done if c.resolved),
                          sum(1 for c in done if c.status in INVALID_STATUSES))
