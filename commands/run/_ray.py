"""`swecl run --executor ray`: one Ray job per (run version, sequence), shards merged into one ledger.

The driver (the `swecl run` process) claims the version, seeds and dreams on the run's
header stream exactly as the local executor does; only the sequences fan out.

Shard bootstrapping. Before submitting, the driver takes a consistent snapshot of its
ledger (SQLite's backup API: pages copied under one read transaction). A job starts from
that snapshot, so it sees the run header, the seed and the seed source's memory events
at the very seqs the driver has them (`memory.seeded.source_seq` means the same thing in
both), plus whatever of its own sequence a previous attempt or run already finished:
`run_sequence` resumes from the ledger, as `--resume` does. The snapshot travels as bytes
through Ray's object store (one `ray.put`, shared by every job), or with `--shard-dir` as
a file on a filesystem every node and the driver share. The job copies it to a local temp
file (SQLite wants a local disk) and appends only to its own stream `run/{V}/{sequence}`.

Shards. The job is a Ray streaming generator. Each time a task finishes (and once at
the end) it cuts the events appended since the last cut into a small ledger of its own
(its events with their ids, streams, stream versions and times, and the blobs they
refer to; a chain of its own, so it verifies standalone) and yields it: bytes, or a file
in `--shard-dir`. The driver merges shards with `merge_ledgers` (what `swecl merge`
does: verified, imported by event_id, idempotent) as they arrive, in arrival order;
the shards of one sequence arrive in the order they were cut, and different sequences
write different streams. So the driver's ledger is always a valid ledger, behind the
workers by at most the task in flight, and a killed driver loses nothing that was
merged. Everything that arrived together is merged in one call (one verification).

Retries. A job that fails (the worker died, its node died, it raised) is submitted
again from a fresh snapshot of the driver's ledger, which holds everything the failed
attempt delivered; the sequence resumes from there. Event ids are deterministic per
(version, sequence, pass, order, attempt, kind), so nothing is ever recorded twice. A
task whose finish never reached the driver is done again: from scratch if the driver
has nothing of it, or abandoned and retried as the next attempt if it holds its start
(as a local resume does). Ray's own task retries are off
(`max_retries=0`): a Ray-level re-execution would start again from the old snapshot.
An agent that cannot run (not logged in) stops the fan-out without retries, as it stops
a local run. A resumed fan-out (`--resume V --executor ray`) submits only the sequences
whose passes are not all finished.

Transport. Bytes through the object store need nothing shared, but the snapshot (the
whole ledger, blobs included) sits in the object store of the driver's node and of
each node that runs a job (Ray spills it to disk when memory is short). `--shard-dir`
needs a folder mounted at the same path on the driver and every node; the driver's
memory is spared, which matters for ledgers of gigabytes. Either way a job works on a
local copy in `$TMPDIR/swecl-ray/`, and the driver in `v{V}/.fanout/` of its results.

Tasks of their own (`--task-jobs N`). The job is the coordinator of its sequence: it
runs the initial pass's chain itself and hands the order-free tasks (re-test, baseline,
`retest-{i}` rows) to Ray tasks of their own, at most N of the sequence's tasks at once
(one in the job, N - 1 as Ray tasks, each asking `--ray-cpus`), so they run on any node.
A Ray task starts from a snapshot of the job's ledger (the pass's memory cut-off is in
it) and returns the events of its task as a shard, which the job merges into its own
ledger (`merge_branch`: new stream versions, the same ids) and forwards like its own
events: the driver cannot tell them apart. A failed Ray task is submitted again by the
job from a fresh snapshot, up to `--max-retries` times; then the job fails and is
retried as above. See `_ray_tasks`.

Progress. A job forwards its reporter calls (task started, task finished, notes) as
items of the same stream; the driver hands them to its own `Reporter` in order, and a
task's "finished" only after the shard holding it was merged: what the display counts
is what the driver's ledger holds.

Failpoints (tests; see `commands._failpoints`). A job gets `SWECL_FAILPOINTS` of the
driver on its first attempt only (a crash that recurs on every retry would test
nothing), never from the environment of the node. Beyond the task failpoints:
`ray.job.raise:N` makes a job raise after cutting its N-th shard; `ray.task.raise:N`
and `ray.task.kill:N` make the N-th Ray task of a job raise, or kill its worker, once its
task finished (see `_ray_tasks`); on the driver, `ray.merged:N` dies after its N-th
merge, `ray.sequence.merged:N` after the N-th sequence was merged complete.

This module is the driver; the job that runs on a node is in `_ray_job`, the Ray tasks
of its free tasks in `_ray_tasks`, Ray itself (import, checks, connection) in
`_ray_session`.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ledger import Ledger, LedgerError, StreamRange, SweclError, merge_ledgers

from .._failpoints import failpoint
from .._folder import ExperimentFolder
from ._options import RunOptions
from ._progress import Reporter, TaskProgress
from ._ray_job import sequence_job
from ._ray_node import FAILPOINTS
from ._ray_session import code_identity, ray_session
from ._sequence import plan_passes
from ._task import AgentUnavailable
from .memory import memory_of


# -- the driver ----------------------------------------------------------------------------


def finished_sequences(ledger: Ledger, version: str, opts: RunOptions, sequence_ids: list[str]) -> set[str]:
    """Sequences of run `version` whose planned passes all have their pass.finished."""
    started = next(ledger.read_stream(f"run/{version}")).event
    done: set[str] = set()
    for sid in sequence_ids:
        n = len(started.tasks.get(sid, []))
        plan = plan_passes(opts.pass_list, n, opts.retest_every)
        needed = {p for p, upto in plan if upto == n or p.startswith("retest-")}
        marks = {r.event.pass_ for r in ledger.read(types=["pass.finished"], ranges=[StreamRange(f"run/{version}/{sid}")])}
        if needed <= marks:
            done.add(sid)
    return done


@dataclass
class _Base:
    """A snapshot of the driver's ledger, as jobs receive it."""

    ref: Any  # an ObjectRef to the bytes (Ray frees them once no job needs them), or the path in --shard-dir
    head: tuple[int, str]  # (seq, hash) of its last event: the job checks its copy against it


@dataclass
class _Job:
    sequence_id: str
    attempt: int
    gen: Any
    shards: int = 0
    error: tuple[str, str] | None = None  # (kind, message)
    ended: bool = False


@dataclass
class _Drained:
    chunks: list[tuple[_Job, bytes | str]] = field(default_factory=list)
    items: list[tuple[_Job, tuple]] = field(default_factory=list)
    ended: list[_Job] = field(default_factory=list)


class FanOut:
    """The driver's side of one run's fan-out."""

    def __init__(self, ray: Any, folder: ExperimentFolder, version: str, opts: RunOptions, reporter: Reporter) -> None:
        self.ray = ray
        self.folder = folder
        self.version = version
        self.opts = opts
        self.reporter = reporter
        # Folders of this run's fan-out only (the run lock makes this driver their one
        # user): what a killed driver left there is swept when the next one starts.
        self.tmp = folder.version_dir(version) / ".fanout"
        self.shared: Path | None = None
        if opts.execution.shard_dir:
            with folder.open_ledger(readonly=True) as ledger:
                # Several experiments may share one folder, each with its own v1, v2, ...
                self.shared = Path(opts.execution.shard_dir) / f"ledger-{ledger.ledger_id}" / f"v{version}"
        self.raw = opts.to_wire()
        self.identity = code_identity()
        self.failpoints = os.environ.get(FAILPOINTS) or None
        self.remote = ray.remote(sequence_job)
        self.base: _Base | None = None
        self.merged_since_base: set[str] = set()
        self.jobs: dict[Any, _Job] = {}
        self.merges = 0

    # -- snapshots -------------------------------------------------------------------

    def take_base(self) -> _Base:
        name = f"base-{uuid.uuid4().hex[:12]}.db"
        local = self.tmp / name
        # A consistent snapshot, taken while nothing of this run writes (merges happen on
        # this thread).
        Ledger.snapshot_file(self.folder.ledger_path, local)
        with Ledger.open(local) as snap:
            head = snap.head()
            head_hash = (snap.hash_at(head) or b"").hex()
        if self.shared is None:
            base = _Base(self.ray.put(local.read_bytes()), (head, head_hash))
        else:
            final = self.shared / name
            shutil.copyfile(local, final.with_name(final.name + ".part"))
            os.replace(final.with_name(final.name + ".part"), final)
            base = _Base(str(final), (head, head_hash))
        local.unlink()
        self.merged_since_base = set()
        return base

    # -- jobs ------------------------------------------------------------------------

    def submit(self, sequence_id: str, attempt: int) -> None:
        # A job needs its own sequence's progress in its snapshot; other sequences'
        # streams are not its business, so an older snapshot serves a first attempt.
        if self.base is None or sequence_id in self.merged_since_base:
            self.base = self.take_base()
        gen = self.remote.options(
            name=f"swecl v{self.version} {sequence_id} #{attempt}", num_returns="streaming", max_retries=0,
            num_cpus=self.opts.execution.ray_num_cpus,
        ).remote(
            self.base.ref, self.base.head, self.version, self.raw, sequence_id, attempt,
            self.failpoints if attempt == 1 else None, self.identity, str(self.shared) if self.shared else None,
        )
        self.jobs[gen] = _Job(sequence_id, attempt, gen)

    def drain(self) -> _Drained:
        """Wait for at least one job to have something, then take everything ready."""
        ray = self.ray
        out = _Drained()
        gens = list(self.jobs)
        ready: list[Any] = []
        while not ready:
            ready, _ = ray.wait(gens, num_returns=1, timeout=1.0)
        ready, _ = ray.wait(gens, num_returns=len(gens), timeout=0)
        for gen in ready:
            job = self.jobs[gen]
            while not job.ended:
                if not ray.wait([gen], num_returns=1, timeout=0)[0]:
                    break
                try:
                    item = ray.get(next(gen))
                except StopIteration:
                    job.ended = True
                    break
                except ray.exceptions.RayError as exc:
                    job.error = ("crashed", _ray_error(exc))
                    job.ended = True
                    break
                if item[0] == "chunk":
                    out.chunks.append((job, item[1]))
                    job.shards += 1
                elif item[0] == "error":
                    job.error = (item[1], item[2])
                else:
                    out.items.append((job, item))
            if job.ended:
                out.ended.append(job)
        return out

    def merge(self, chunks: list[tuple[_Job, bytes | str]]) -> None:
        if not chunks:
            return
        local: list[Path] = []
        shared: list[Path] = []
        for i, (job, data) in enumerate(chunks):
            path = self.tmp / f"merge-{self.merges}-{i:05d}.db"
            if isinstance(data, bytes):
                path.write_bytes(data)
            else:
                shutil.copyfile(data, path)  # SQLite reads a local copy, not a network filesystem
                shared.append(Path(data))
            local.append(path)
            self.merged_since_base.add(job.sequence_id)
        try:
            merge_ledgers(local, self.folder.ledger_path)
        except LedgerError as exc:
            raise SweclError(f"merging shards of run {self.version}: {exc}") from None
        finally:
            for path in local:
                path.unlink(missing_ok=True)
        for path in shared:
            path.unlink(missing_ok=True)
        self.merges += 1
        failpoint("ray.merged")

    def cancel_all(self) -> None:
        for gen in list(self.jobs):
            try:
                self.ray.cancel(gen, force=True)
            except Exception:  # already finished or gone: nothing to stop
                pass
        self.jobs.clear()

    def sweep(self) -> None:
        """Remove this fan-out's folders (snapshots, shards not merged)."""
        self.base = None
        shutil.rmtree(self.tmp, ignore_errors=True)
        if self.shared is not None:
            shutil.rmtree(self.shared, ignore_errors=True)
            try:
                self.shared.parent.rmdir()  # the ledger's folder, once no run of it uses it
            except OSError:
                pass

    # -- the loop --------------------------------------------------------------------

    def run(self, sequence_ids: list[str]) -> None:
        with self.folder.open_ledger() as ledger:
            done = finished_sequences(ledger, self.version, self.opts, sequence_ids)
        for sid in sequence_ids:
            if sid in done:
                self.reporter.note(f"v{self.version} {sid}: already finished, not submitted")
        todo = deque((sid, 1) for sid in sequence_ids if sid not in done)
        cap = self.opts.execution.jobs if self.opts.execution.jobs > 1 else max(len(todo), 1)
        failed: dict[str, str] = {}
        stopping: str | None = None
        self.sweep()
        self.tmp.mkdir(parents=True)
        if self.shared is not None:
            self.shared.mkdir(parents=True)
        try:
            while todo or self.jobs:
                while todo and len(self.jobs) < cap and stopping is None:
                    self.submit(*todo.popleft())
                if not self.jobs:
                    break
                drained = self.drain()
                self.merge(drained.chunks)
                for job, item in drained.items:
                    self._forward(item)
                for job in drained.ended:
                    del self.jobs[job.gen]
                    if job.error is None:
                        failpoint("ray.sequence.merged")
                        continue
                    kind, message = job.error
                    if kind == "agent_unavailable":
                        stopping = message
                        todo.clear()
                        self.cancel_all()
                        break
                    if job.attempt <= self.opts.execution.max_retries:
                        self.reporter.note(
                            f"v{self.version} {job.sequence_id}: attempt {job.attempt} failed ({message}); "
                            f"retrying from the {job.shards} shard(s) it delivered (attempt {job.attempt + 1})"
                        )
                        todo.appendleft((job.sequence_id, job.attempt + 1))
                    else:
                        failed[job.sequence_id] = f"{message} (after {job.attempt} attempt(s))"
        finally:
            self.cancel_all()
            self.sweep()
        if stopping is not None:
            raise AgentUnavailable(stopping)
        if failed:
            sid, message = next(iter(failed.items()))
            more = f" and {len(failed) - 1} more sequence(s)" if len(failed) > 1 else ""
            raise SweclError(f"sequence {sid} failed on Ray: {message}{more}")

    def _forward(self, item: tuple) -> None:
        if item[0] == "note":
            self.reporter.note(item[1])
        elif item[0] == "progress":
            progress = TaskProgress(**item[2])
            if item[1] == "task_started":
                self.reporter.task_started(progress)
            else:
                self.reporter.task_finished(progress)


def _ray_error(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}"


def run_on_ray(folder: ExperimentFolder, version: str, opts: RunOptions, sequence_ids: list[str],
               reporter: Reporter) -> None:
    """Run the sequences of run `version` as Ray jobs, merging their shards into the
    results dir's ledger as they arrive. Raises SweclError if a sequence failed all its
    attempts (the run then stops as failed and resumes with --resume)."""
    with ray_session(opts) as ray:
        FanOut(ray, folder, version, opts, reporter).run(sequence_ids)
    # The local executor keeps the memory's live state in the results dir; so does the
    # fan-out, from the ledger, so that a later local resume finds it where it looks.
    memory = memory_of(opts)
    with folder.open_ledger(readonly=True) as ledger:
        for sid in sequence_ids:
            if (place := memory.sequence_folder(folder.results, version, sid)) is not None:
                memory.restore_folder(ledger, version, sid, place)
