"""The passes of one sequence in one run, resumable at any task.

What is done is read from the ledger (the outcome projection), never kept elsewhere: a
finished task is skipped, a started-but-unfinished one is recorded as abandoned and
redone as the next attempt.
"""

from __future__ import annotations

from collections.abc import Iterable

from commands.inputs import Task
from ledger import NewEvent, StreamRange, event_id_for
from ledger.events import PassFinished, PassStarted
from projections import Cell, OutcomeProjection, Projector, RunOutcomes, SequenceCells

from ._task import SequenceContext, abandon, run_attempt


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
        for task in tasks[first - 1 : upto]:
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
