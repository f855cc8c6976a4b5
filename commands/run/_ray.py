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

Progress. A job forwards its reporter calls (task started, task finished, notes) as
items of the same stream; the driver hands them to its own `Reporter` in order, and a
task's "finished" only after the shard holding it was merged: what the display counts
is what the driver's ledger holds.

Failpoints (tests; see `commands._failpoints`). A job gets `SWECL_FAILPOINTS` of the
driver on its first attempt only (a crash that recurs on every retry would test
nothing), never from the environment of the node. Beyond the task failpoints:
`ray.job.raise:N` makes a job raise after cutting its N-th shard; on the driver,
`ray.merged:N` dies after its N-th merge, `ray.sequence.merged:N` after the N-th
sequence was merged complete.
"""

from __future__ import annotations

import os
import queue
import re
import shutil
import socket
import sys
import tempfile
import threading
import traceback
import uuid
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ledger import Ledger, LedgerError, StreamRange, SweclError, blob_refs_of, merge_ledgers

from .._failpoints import failpoint
from projections import Results
from ._options import RunOptions
from ._progress import Reporter, TaskProgress
from ._sequence import plan_passes
from ._stages import get_stage

INSTALL_HINT = "pip install 'swecl[ray]' (or uv sync --extra ray)"
FAILPOINTS = "SWECL_FAILPOINTS"


# -- Ray itself ----------------------------------------------------------------------------


def import_ray() -> Any:
    # A driver started under `uv run` would otherwise have Ray start every worker with
    # that `uv run` command line in a copy of the driver's project: a job must run the
    # swecl installed on its node (read by Ray when it is imported; a user's own setting
    # wins).
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    try:
        import ray
    except ImportError:
        raise SweclError(f"--executor ray needs Ray on this machine and on every node: {INSTALL_HINT}") from None
    return ray


def check_ray(opts: RunOptions) -> None:
    """Fail fast, before a run is claimed or resumed: Ray is importable, and a HOST:PORT
    address answers (ray.init would otherwise retry against it for minutes)."""
    import_ray()
    address = opts.ray_address or ""
    host, sep, port = address.rpartition(":")
    if "://" in address or not sep or not port.isdigit() or not host:
        return  # auto, local, ray://..., or nothing: Ray resolves those itself
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=10).close()
    except OSError as exc:
        raise SweclError(
            f"--ray-address {address}: nothing answers there ({exc.strerror or exc}); start the cluster with "
            "`ray start --head` and pass its address"
        ) from None


@contextmanager
def ray_session(opts: RunOptions) -> Iterator[Any]:
    """Ray, connected as `--ray-address` says; disconnected (a local instance it started:
    stopped) on exit. Nested sessions share the outer connection."""
    check_ray(opts)
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
    import logging

    address = opts.ray_address
    kwargs: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False}
    if address == "local":
        kwargs["include_dashboard"] = False  # a throwaway local instance: no web UI to serve
    # Ray prints what it hears from the cluster (a worker died, ...) on stdout, which
    # belongs to `--json` progress lines: while connected, stray output goes to stderr.
    # The reporters hold their stream from before, so they still write where they should.
    with redirect_stdout(sys.stderr):
        try:
            ray.init(address=address, **kwargs)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = address or os.environ.get("RAY_ADDRESS") or "a new local instance"
            raise SweclError(f"--ray-address {where}: cannot connect to Ray ({' '.join(str(exc).split())[:300]})") from None
        try:
            yield ray
        finally:
            ray.shutdown()


# -- what runs on a node -------------------------------------------------------------------


def _code_identity() -> dict[str, str]:
    """What must match between the driver and a node: event ids and payloads come from the code."""
    from .._provenance import _git_sha, _version

    found = {"swecl": _version("swecl") or "", **{k: str(v) for k, v in _git_sha().items() if k == "git_sha"}}
    return {k: v for k, v in found.items() if v}


def _raise_point(name: str, counts: dict[str, int]) -> None:
    """`name:N` in SWECL_FAILPOINTS: raise (not die) the N-th time this job passes here."""
    for part in os.environ.get(FAILPOINTS, "").split(","):
        key, _, n = part.strip().partition(":")
        if key == name:
            counts[name] = counts.get(name, 0) + 1
            if counts[name] == int(n or "1"):
                raise RuntimeError(f"failpoint {name}: injected failure")


class _Cutter:
    """Cuts the events the job appended since the last cut into a shard ledger."""

    def __init__(self, work: Path, ledger_path: Path, after: int, stream: str, shard_dir: str | None,
                 tag: str, emit: Any) -> None:
        self.work = work
        self.ledger_path = ledger_path
        self.after = after
        self.stream = stream
        self.shard_dir = Path(shard_dir) if shard_dir else None
        self.tag = tag
        self.emit = emit
        self.cuts = 0
        self.raised: dict[str, int] = {}

    def cut(self) -> None:
        with Ledger.open(self.ledger_path, readonly=True) as src:
            rows = list(src.read(after=self.after))
            if not rows:
                return
            strays = sorted({r.stream for r in rows if r.stream != self.stream})
            if strays:
                raise SweclError(f"a sequence job appended to {strays[0]!r}, outside its stream {self.stream!r}")
            digests = sorted({d for r in rows for d in blob_refs_of(r.event)})
            blobs = [src.get_blob(d) for d in digests]
        self.cuts += 1
        path = self.work / f"shard-{self.cuts:05d}.db"
        with Ledger.open(path, create=True) as shard:
            if blobs:
                shard.append_batches([], blobs=blobs, durable=False)
            shard.import_recorded(rows, durable=False)
        # Closing the only connection checkpoints the WAL into the file: the file is the shard.
        wal, shm = path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")
        if wal.exists() and wal.stat().st_size:
            raise SweclError(f"shard {path}: its SQLite WAL was not checkpointed on close")
        wal.unlink(missing_ok=True)
        shm.unlink(missing_ok=True)
        if self.shard_dir is None:
            payload: bytes | str = path.read_bytes()
        else:
            final = self.shard_dir / f"{self.tag}-{self.cuts:05d}.db"
            partial = final.with_name(final.name + ".part")
            shutil.copyfile(path, partial)
            os.replace(partial, final)  # the driver never sees half a file
            payload = str(final)
        path.unlink()
        self.after = rows[-1].seq
        self.emit(("chunk", payload, len(rows)))
        _raise_point("ray.job.raise", self.raised)


class _JobReporter:
    """The job's Reporter: progress goes to the driver in the job's stream of items; a
    finished task first cuts the shard that holds it."""

    def __init__(self, emit: Any) -> None:
        self.emit = emit
        self.cutter: _Cutter | None = None

    def run_started(self, version: str, stage: str, plan: dict[str, int], passes: tuple[str, ...]) -> None:
        pass

    def task_started(self, p: TaskProgress) -> None:
        self.emit(("progress", "task_started", p.__dict__.copy()))

    def task_finished(self, p: TaskProgress) -> None:
        if self.cutter is not None:
            self.cutter.cut()
        self.emit(("progress", "task_finished", p.__dict__.copy()))

    def note(self, text: str) -> None:
        self.emit(("note", text))

    def run_finished(self, version: str, status: str) -> None:
        pass

    def close(self) -> None:
        pass


def sequence_job(base: bytes | str, base_head: tuple[int, str], version: str, opts_raw: dict[str, Any],
                 sequence_id: str, attempt: int, failpoints: str | None, identity: dict[str, str],
                 shard_folder: str | None) -> Iterator[tuple]:
    """One sequence of run `version` on this node, as a stream of items for the driver:
    ("chunk", bytes | path in `shard_folder`, n_events), ("progress", kind, fields),
    ("note", text), and last, if it failed, ("error", kind, message)."""
    saved = os.environ.get(FAILPOINTS)
    if failpoints:
        os.environ[FAILPOINTS] = failpoints
    else:
        os.environ.pop(FAILPOINTS, None)
    from .. import _failpoints

    _failpoints._counts.clear()  # a Ray worker process runs many jobs; counts are per job
    work = _work_dir(version)
    items: queue.Queue[tuple | None] = queue.Queue()
    try:
        thread = threading.Thread(
            target=_run_job,
            args=(items.put, work, base, base_head, version, opts_raw, sequence_id, attempt, identity, shard_folder),
            name=f"swecl {sequence_id}", daemon=True,
        )
        thread.start()
        while (item := items.get()) is not None:
            yield item
        thread.join()
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if saved is None:
            os.environ.pop(FAILPOINTS, None)
        else:
            os.environ[FAILPOINTS] = saved


def _work_dir(version: str) -> Path:
    """A local folder for this job's ledger copy and shards. Folders of jobs whose worker
    process is gone (killed: a retry, a cancelled fan-out) are removed first: each holds
    a copy of the ledger."""
    parent = Path(tempfile.gettempdir()) / "swecl-ray"
    parent.mkdir(parents=True, exist_ok=True)
    for old in parent.iterdir():
        try:
            pid = int((old / "pid").read_text())
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(old, ignore_errors=True)
        except (OSError, ValueError):
            continue  # being created right now, or not ours to judge
    work = Path(tempfile.mkdtemp(prefix=f"v{version}-", dir=parent))
    (work / "pid").write_text(str(os.getpid()))
    return work


def _run_job(emit: Any, work: Path, base: bytes | str, base_head: tuple[int, str], version: str,
             opts_raw: dict[str, Any], sequence_id: str, attempt: int, identity: dict[str, str],
             shard_folder: str | None) -> None:
    from ._orchestrate import open_benchmark, run_sequence_on
    from ._task import AgentUnavailable

    host = socket.gethostname()
    cutter: _Cutter | None = None
    try:
        try:
            mine = _code_identity()
            differs = [k for k in identity if k in mine and mine[k] != identity[k]]
            if differs:
                raise SweclError(
                    f"node {host} runs swecl {mine} but the driver {identity}: install the same swecl on every node"
                )
            opts = RunOptions.from_config(opts_raw)
            ledger_path = work / "ledger.db"
            if isinstance(base, bytes):
                ledger_path.write_bytes(base)
            else:
                shutil.copyfile(base, ledger_path)
            with Ledger.open(ledger_path) as ledger:
                head = ledger.head()
                head_hash = (ledger.hash_at(head) or b"").hex()
                if (head, head_hash) != tuple(base_head):
                    raise SweclError(f"node {host}: the ledger snapshot arrived damaged (head {head}, not {base_head[0]})")
                started = next(ledger.read_stream(f"run/{version}")).event
                benchmark = open_benchmark(opts)
                if benchmark.content_hash != started.dataset_hash:
                    raise SweclError(
                        f"node {host}: {opts.dataset or 'the demo benchmark'} hashes to {benchmark.content_hash[:12]}, "
                        f"the run's dataset to {started.dataset_hash[:12]}: every node needs the same dataset file"
                    )
                tag = f"{_safe(sequence_id)}-{uuid.uuid4().hex[:12]}"
                cutter = _Cutter(work, ledger_path, head, f"run/{version}/{sequence_id}", shard_folder, tag, emit)
                reporter = _JobReporter(emit)
                reporter.cutter = cutter
                emit(("note", f"v{version} {sequence_id}: attempt {attempt} running on {host}"))
                builtin = None
                if get_stage(opts.stage).memory_mode == "builtin":
                    builtin = work / "builtin"
                    restore_builtin_files(ledger, version, sequence_id, builtin)
                run_sequence_on(ledger, version, opts, sequence_id, reporter, builtin_dir=builtin, benchmark=benchmark)
            cutter.cut()
        except BaseException:
            if cutter is not None:  # deliver what was done before the failure: the retry resumes from it
                try:
                    cutter.cut()
                except BaseException:
                    pass
            raise
    except AgentUnavailable as exc:
        emit(("error", "agent_unavailable", str(exc)))
    except SweclError as exc:
        emit(("error", "failed", f"on {host}: {exc}"))
    except BaseException as exc:  # a bug or an infrastructure failure on the node: retried
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        emit(("error", "crashed", f"on {host}: {detail}"))
    finally:
        emit(None)


def restore_builtin_files(ledger: Ledger, version: str, sequence_id: str, dest: Path) -> int:
    """The builtin stage's native memory files as the ledger recorded them (latest text
    per path), written under `dest/auto-memory`. A job may run on any node, so its
    memory directory is rebuilt from the ledger rather than found on disk."""
    latest: dict[str, str] = {}
    for rec in ledger.read(types=["memory.written"], ranges=[StreamRange(f"run/{version}/{sequence_id}")]):
        ev = rec.event
        if ev.kind == "builtin-file":
            latest[ev.title] = ev.body
    root = (dest / "auto-memory").resolve()
    for rel, text in latest.items():
        target = (root / rel).resolve()
        if root not in target.parents:
            continue  # a recorded path that would escape the folder is not written
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return len(latest)


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)


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

    def __init__(self, ray: Any, results: Results, version: str, opts: RunOptions, reporter: Reporter) -> None:
        self.ray = ray
        self.results = results
        self.version = version
        self.opts = opts
        self.reporter = reporter
        # Folders of this run's fan-out only (the run lock makes this driver their one
        # user): what a killed driver left there is swept when the next one starts.
        self.tmp = results.version_dir(version) / ".fanout"
        self.shared: Path | None = None
        if opts.shard_dir:
            with results.open_ledger(readonly=True) as ledger:
                # Several experiments may share one folder, each with its own v1, v2, ...
                self.shared = Path(opts.shard_dir) / f"ledger-{ledger.ledger_id}" / f"v{version}"
        self.raw = opts.to_config()
        self.identity = _code_identity()
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
        Ledger.snapshot_file(self.results.ledger_path, local)
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
            num_cpus=self.opts.ray_num_cpus,
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
            merge_ledgers(local, self.results.ledger_path)
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
        with self.results.open_ledger() as ledger:
            done = finished_sequences(ledger, self.version, self.opts, sequence_ids)
        for sid in sequence_ids:
            if sid in done:
                self.reporter.note(f"v{self.version} {sid}: already finished, not submitted")
        todo = deque((sid, 1) for sid in sequence_ids if sid not in done)
        cap = self.opts.jobs if self.opts.jobs > 1 else max(len(todo), 1)
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
                    if job.attempt <= self.opts.max_retries:
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
            from ._task import AgentUnavailable

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


def run_on_ray(results: Results, version: str, opts: RunOptions, sequence_ids: list[str], reporter: Reporter) -> None:
    """Run the sequences of run `version` as Ray jobs, merging their shards into the
    results dir's ledger as they arrive. Raises SweclError if a sequence failed all its
    attempts (the run then stops as failed and resumes with --resume)."""
    with ray_session(opts) as ray:
        FanOut(ray, results, version, opts, reporter).run(sequence_ids)
    if get_stage(opts.stage).memory_mode == "builtin":
        # The local executor keeps these files in the results dir; so does the fan-out,
        # from the ledger, so that a later local resume finds them where it looks.
        with results.open_ledger(readonly=True) as ledger:
            for sid in sequence_ids:
                restore_builtin_files(ledger, version, sid, results.builtin_dir(version, sid))
