"""The order-free tasks of a Ray sequence job as Ray tasks of their own (`--task-jobs N`).

The sequence job (`_ray_job`) stays the coordinator of its sequence: it runs the
scheduler of a local `--task-jobs` run (`_schedule`) on its copy of the ledger, appends
the pass marks, and runs the initial pass's chain itself. Of its N workers, one runs
tasks in the job; the other N - 1 hand free batches (re-test, baseline and `retest-{i}`
tasks: what `_schedule` treats as free) to `RayTasks`, which runs each as a Ray task,
asking Ray for `--ray-cpus` CPUs, so they spread over the cluster. At most N of a
sequence's tasks run at once, as in a local run.

A Ray task (`task_job`, on any node) starts from a snapshot of the job's ledger taken
when it is submitted. A free task's memory cut-off (the re-test's `initial` pass.finished,
a row's own pass.started) is recorded before the task is released, so any snapshot that
holds its pass's pass.started is as good as the job's live ledger: one snapshot serves
every first try until a pass that it does not hold is released; a retry takes a fresh
one. The task runs what a local worker runs (`run_free_tasks`: `_run_task` on a context
over the copy) and, after each finished task, sends the events it appended as a shard
(cut as the job cuts its own, `Cutter`). The job merges the shard into its own ledger
with `merge_branch` (the job kept appending to the same stream meanwhile, so the events
take its next stream versions; ids, payloads and times are kept) and then reports the
task finished, which cuts the job's next shard for the driver: the driver gets these
events as it gets the job's own.

Failures. Ray's own retries are off (`max_retries=0`). A Ray task that raises, or
whose worker or node dies, delivered nothing of the task in flight (a shard is cut only
when a task finished), so it is submitted again, from a fresh snapshot, up to
`--max-retries` times; the task then runs again as the same attempt, with the same event
ids. After that the job fails and the driver retries the job, which resumes from what
the driver holds. An agent that cannot run stops the run, as everywhere.

Waiting. The job holds its CPUs for the whole sequence. A Ray task handed a batch may
wait for CPUs that jobs like this one hold; the job's own worker takes such a batch
back (the Ray task is cancelled before it started) when it has nothing else to do, so
a cluster full of sequence jobs still finishes (`_schedule.Handoff`).

Failpoints (tests): `ray.task.raise:N` in the job's SWECL_FAILPOINTS makes the N-th Ray
task the job submits raise once its task finished, before the shard is cut;
`ray.task.kill:N` makes it SIGKILL its worker there (`task.finished:1` in that task).
"""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from commands.inputs import Task
from ledger import Ledger, LedgerError, StreamRange, SweclError, merge_branch
from projections import RunOutcomes

from ._context import sequence_context
from ._options import RunOptions
from ._progress import TaskProgress
from ._ray_node import (
    FAILPOINTS,
    Cutter,
    JobReporter,
    error_item,
    open_copy,
    raise_point,
    safe_name,
    streamed,
)
from ._ray_session import import_ray
from ._schedule import Batch, Handoff
from ._sequence import record_finished, run_free_tasks
from ._task import AgentUnavailable, SequenceContext
from .memory import memory_of

# What the N-th Ray task of a job gets for a failpoint of the job (see the module doc).
TASK_FAILPOINTS = {"ray.task.raise": "ray.task.raise:1", "ray.task.kill": "task.finished:1"}


# -- the job's side --------------------------------------------------------------------------


@dataclass
class _Snapshot:
    """A snapshot of the job's ledger, as Ray tasks receive it."""

    ref: Any  # an ObjectRef to the bytes, or the path of a file in the shared folder
    head: tuple[int, str]  # (seq, hash) of its last event: the task checks its copy against it
    passes: frozenset[str]  # the passes of the sequence whose pass.started it holds
    file: Path | None  # in the shared folder: removed once no task needs it
    users: int = 0
    current: bool = True


class RayTasks:
    """The `Elsewhere` of a Ray sequence job (see the module doc)."""

    def __init__(self, work: Path, ledger_path: Path, version: str, opts: RunOptions, opts_raw: dict[str, Any],
                 sequence_id: str, identity: dict[str, str], shard_folder: str | None, emit: Any) -> None:
        self.ray = import_ray()
        self.remote = self.ray.remote(task_job)
        self.work = work
        self.ledger_path = ledger_path
        self.version = version
        self.opts_raw = opts_raw
        self.sequence_id = sequence_id
        self.stream = f"run/{version}/{sequence_id}"
        self.identity = identity
        self.shard_folder = shard_folder
        self.slots = opts.execution.task_jobs - 1
        self.cpus = opts.execution.ray_num_cpus
        self.max_retries = opts.execution.max_retries
        self.lock = threading.Lock()
        self.snapshot: _Snapshot | None = None
        self.shards = itertools.count(1)
        self.submitted = 0  # first tries of batches, in submission order (failpoints count them)
        self.failpoints = _task_failpoints(os.environ.get(FAILPOINTS))

    # -- running a batch ---------------------------------------------------------------

    def run(self, ctx: SequenceContext, state: RunOutcomes, batch: Batch, handoff: Handoff) -> None:
        tries = 0
        while True:
            todo = [t for t in batch.tasks if not _done(state, ctx, batch.pass_, t)]
            if not todo or handoff.taken_back:
                return
            tries += 1
            failure = self._try(ctx, state, batch.pass_, todo, handoff, tries)
            if handoff.taken_back:
                return
            left = [t.order for t in todo if not _done(state, ctx, batch.pass_, t)]
            if failure is None:
                if not left:
                    return
                failure = ("crashed", f"the Ray task ended with task(s) {left} not done")
            kind, message = failure
            if kind == "agent_unavailable":
                raise AgentUnavailable(message)
            what = f"{batch.pass_} task(s) {_orders(left)}"
            if tries > self.max_retries:
                raise SweclError(f"{what} failed as Ray tasks: {message} (after {tries} tries)")
            ctx.reporter.note(
                f"v{self.version} {self.sequence_id}: the Ray task of {what} failed ({message}); "
                f"submitting it again from the job's ledger (try {tries + 1})"
            )

    def _try(self, ctx: SequenceContext, state: RunOutcomes, pass_: str, todo: list[Task], handoff: Handoff,
             tries: int) -> tuple[str, str] | None:
        """One Ray task for `todo`; None, or (kind, message) of how it failed."""
        snap = self._take(pass_, fresh=tries > 1)
        try:
            orders = [t.order for t in todo]
            with handoff.lock:
                if handoff.taken_back:
                    return None
                failpoints = None
                if tries == 1:
                    with self.lock:
                        self.submitted += 1
                        failpoints = self.failpoints.get(self.submitted)
                gen = self.remote.options(
                    name=f"swecl v{self.version} {self.sequence_id} {pass_} {_orders(orders)} #{tries}",
                    num_returns="streaming", max_retries=0, num_cpus=self.cpus,
                ).remote(
                    snap.ref, snap.head, self.version, self.opts_raw, self.sequence_id, pass_, orders, failpoints,
                    self.identity, self.shard_folder,
                )
                handoff.started = False
                handoff.cancel = lambda: self._cancel(gen)
            return self._follow(ctx, state, gen, handoff)
        finally:
            self._release(snap)

    def _follow(self, ctx: SequenceContext, state: RunOutcomes, gen: Any, handoff: Handoff) -> tuple[str, str] | None:
        ray = self.ray
        try:
            for ref in gen:
                item = ray.get(ref)
                if item[0] == "started":
                    with handoff.lock:
                        if handoff.taken_back:
                            return None  # taken back meanwhile: it is being cancelled
                        handoff.started = True
                elif item[0] == "chunk":
                    self._merge(ctx, state, item[1])
                elif item[0] == "progress":
                    self._forward(ctx, item[1], TaskProgress(**item[2]))
                elif item[0] == "note":
                    ctx.reporter.note(item[1])
                elif item[0] == "error":
                    return item[1], item[2]
        except ray.exceptions.RayError as exc:
            return "crashed", " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        return None

    def _merge(self, ctx: SequenceContext, state: RunOutcomes, payload: bytes | str) -> None:
        """A finished task's shard into the job's ledger, and into its view of the run."""
        path = self.work / f"task-shard-{next(self.shards):05d}.db"
        try:
            if isinstance(payload, bytes):
                path.write_bytes(payload)
            else:
                shutil.copyfile(payload, path)  # SQLite reads a local copy, not a network filesystem
            with Ledger.open(path, readonly=True) as shard:
                finished = [r.event for r in shard.read(types=["task.finished"])]
            merge_branch(path, ctx.ledger, streams=[self.stream])
        except LedgerError as exc:
            raise SweclError(f"merging a Ray task's shard of {self.sequence_id}: {exc}") from None
        finally:
            for leftover in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
                leftover.unlink(missing_ok=True)
            if isinstance(payload, str):
                Path(payload).unlink(missing_ok=True)
        for event in finished:
            record_finished(ctx, state, event)

    def _forward(self, ctx: SequenceContext, kind: str, p: TaskProgress) -> None:
        """A Ray task's progress, counted in the job's own tally of the pass (the task's
        copy knows only what its snapshot held)."""
        if kind == "task_finished":
            done, resolved, unscored = ctx.tally.finished(p.pass_, p.resolved, p.status or "")
        else:
            done, resolved, unscored = ctx.tally.so_far(p.pass_)
        p.done_so_far, p.resolved_so_far, p.unscored_so_far = done, resolved, unscored
        if kind == "task_started":
            ctx.reporter.task_started(p)
        else:
            ctx.reporter.task_finished(p)  # the job's reporter cuts a shard for the driver first

    def _cancel(self, gen: Any) -> None:
        try:
            self.ray.cancel(gen, force=True)
        except Exception:  # finished or gone already: nothing to stop
            pass

    # -- snapshots ---------------------------------------------------------------------

    def _take(self, pass_: str, *, fresh: bool) -> _Snapshot:
        with self.lock:
            snap = self.snapshot
            if fresh or snap is None or pass_ not in snap.passes:
                snap = self._snapshot()
                if self.snapshot is not None:
                    self.snapshot.current = False
                    self._drop_if_unused(self.snapshot)
                self.snapshot = snap
            snap.users += 1
            return snap

    def _release(self, snap: _Snapshot) -> None:
        with self.lock:
            snap.users -= 1
            self._drop_if_unused(snap)

    def _drop_if_unused(self, snap: _Snapshot) -> None:
        if snap.current or snap.users:
            return
        snap.ref = None  # Ray frees the bytes once no task holds them either
        if snap.file is not None:
            snap.file.unlink(missing_ok=True)

    def _snapshot(self) -> _Snapshot:
        """A consistent snapshot of the job's ledger (SQLite's backup API, as the driver
        takes its own), put where Ray tasks can read it."""
        name = f"task-base-{safe_name(self.sequence_id)}-{uuid.uuid4().hex[:12]}.db"
        local = self.work / name
        Ledger.snapshot_file(self.ledger_path, local)
        with Ledger.open(local) as snap:
            head = snap.head()
            head_hash = (snap.hash_at(head) or b"").hex()
            passes = frozenset(r.event.pass_ for r in snap.read(types=["pass.started"], ranges=[StreamRange(self.stream)]))
        file: Path | None = None
        if self.shard_folder is None:
            ref: Any = self.ray.put(local.read_bytes())
        else:
            file = Path(self.shard_folder) / name
            partial = file.with_name(file.name + ".part")
            shutil.copyfile(local, partial)
            os.replace(partial, file)  # a task never reads half a file
            ref = str(file)
        local.unlink()
        return _Snapshot(ref, (head, head_hash), passes, file)

    def close(self) -> None:
        with self.lock:
            if self.snapshot is not None:
                self.snapshot.current = False
                self.snapshot.users = 0
                self._drop_if_unused(self.snapshot)
                self.snapshot = None


def _done(state: RunOutcomes, ctx: SequenceContext, pass_: str, task: Task) -> bool:
    cell = state.cell(ctx.sequence.id, pass_, task.order)
    return cell is not None and cell.done


def _orders(orders: list[int]) -> str:
    return ",".join(str(o) for o in orders)


def _task_failpoints(spec: str | None) -> dict[int, str]:
    """N -> the SWECL_FAILPOINTS the N-th Ray task gets, from the job's own."""
    plan: dict[int, list[str]] = {}
    for part in (spec or "").split(","):
        key, _, n = part.strip().partition(":")
        if key in TASK_FAILPOINTS:
            plan.setdefault(int(n or "1"), []).append(TASK_FAILPOINTS[key])
    return {n: ",".join(points) for n, points in plan.items()}


# -- what runs on a node ---------------------------------------------------------------------


class _TaskReporter(JobReporter):
    """A Ray task's Reporter: the job's, with the `ray.task.raise` failpoint before the cut."""

    def __init__(self, emit: Any, where: str) -> None:
        super().__init__(emit, where)
        self.raised: dict[str, int] = {}

    def task_finished(self, p: TaskProgress) -> None:
        raise_point("ray.task.raise", self.raised)
        super().task_finished(p)


def task_job(base: bytes | str, base_head: tuple[int, str], version: str, opts_raw: dict[str, Any],
             sequence_id: str, pass_: str, orders: list[int], failpoints: str | None, identity: dict[str, str],
             shard_folder: str | None) -> Iterator[tuple]:
    """Tasks `orders` of one free pass of a sequence, on this node, as a stream of items
    for the job: ("started", where) first, then ("progress", kind, fields) and ("chunk",
    bytes | path in `shard_folder`, n_events) per task, and last, if it failed, ("error",
    kind, message)."""
    import ray  # lazy: ray is an optional, heavy dependency, loaded only on a node

    where = f"ray task {ray.get_runtime_context().get_task_id()[:16]}, pid {os.getpid()} on {socket.gethostname()}"
    yield ("started", where)
    yield from streamed(_run_tasks, (base, base_head, version, opts_raw, sequence_id, pass_, orders, identity,
                                     shard_folder, where),
                        version=version, failpoints=failpoints, name=f"swecl {sequence_id} {pass_}")


def _run_tasks(emit: Any, work: Path, base: bytes | str, base_head: tuple[int, str], version: str,
               opts_raw: dict[str, Any], sequence_id: str, pass_: str, orders: list[int], identity: dict[str, str],
               shard_folder: str | None, where: str) -> None:
    try:
        opts = RunOptions.from_config(opts_raw)
        ledger_path = work / "ledger.db"
        benchmark = open_copy(base, base_head, ledger_path, version, opts, identity)
        with Ledger.open(ledger_path) as ledger:
            stream = f"run/{version}/{sequence_id}"
            tag = f"{safe_name(sequence_id)}-{safe_name(pass_)}-{uuid.uuid4().hex[:12]}"
            # Only whole tasks are cut, at their finish: a task that fails delivers
            # nothing, and its retry runs it again as the same attempt.
            reporter = _TaskReporter(emit, where)
            reporter.cutter = Cutter(work, ledger_path, ledger.head(), stream, shard_folder, tag, emit)
            # The memory's live state as of the snapshot, which holds the pass's cut-off.
            memory_folder = memory_of(opts).restore_folder(
                ledger, version, sequence_id, work / "memory")
            ctx = sequence_context(ledger, version, opts, sequence_id, reporter, memory_folder=memory_folder,
                                   benchmark=benchmark)
            run_free_tasks(ctx, pass_, orders)
    except BaseException as exc:
        emit(error_item(exc, socket.gethostname()))
    finally:
        emit(None)
