"""What a Ray job of a sequence (`_ray_job`) and a Ray task of its free tasks (`_ray_tasks`)
share on a node: `streamed` (a thread's items as a streaming generator), `open_copy` (a
snapshot made a checked local ledger), the `Cutter` that cuts what was appended into
shards, the `JobReporter` that forwards progress, and `error_item` (how a failure is
reported).
"""

from __future__ import annotations

import os
import queue
import re
import shutil
import socket
import tempfile
import threading
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ledger import Ledger, SweclError, blob_refs_of

from .._failpoints import reset_failpoints
from ._context import open_benchmark
from ._options import RunOptions
from ._progress import TaskProgress
from ._ray_session import code_identity
from ._task import AgentUnavailable

FAILPOINTS = "SWECL_FAILPOINTS"


def raise_point(name: str, counts: dict[str, int]) -> None:
    """`name:N` in SWECL_FAILPOINTS: raise (not die) the N-th time this job passes here."""
    for part in os.environ.get(FAILPOINTS, "").split(","):
        key, _, n = part.strip().partition(":")
        if key == name:
            counts[name] = counts.get(name, 0) + 1
            if counts[name] == int(n or "1"):
                raise RuntimeError(f"failpoint {name}: injected failure")


class Cutter:
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
        raise_point("ray.job.raise", self.raised)


class JobReporter:
    """The job's Reporter: progress goes to the driver in the job's stream of items; a
    finished task first cuts the shard that holds it. `where`: this process, named in
    the progress of the tasks it ran itself."""

    def __init__(self, emit: Any, where: str | None = None) -> None:
        self.emit = emit
        self.where = where
        self.cutter: Cutter | None = None

    def run_started(self, version: str, stage: str, plan: dict[str, int], passes: tuple[str, ...]) -> None:
        pass

    def task_started(self, p: TaskProgress) -> None:
        self.emit(("progress", "task_started", {**p.__dict__, "where": p.where or self.where}))

    def task_finished(self, p: TaskProgress) -> None:
        if self.cutter is not None:
            self.cutter.cut()
        self.emit(("progress", "task_finished", {**p.__dict__, "where": p.where or self.where}))

    def note(self, text: str) -> None:
        self.emit(("note", text))

    def run_finished(self, version: str, status: str) -> None:
        pass

    def close(self) -> None:
        pass


def streamed(target: Any, args: tuple, *, version: str, failpoints: str | None, name: str) -> Iterator[tuple]:
    """What `target(emit, work, *args)` emits, as the items of a Ray streaming generator:
    it runs in a thread of its own (this one yields), with `failpoints` as this process's
    SWECL_FAILPOINTS and a fresh local folder `work` (removed at the end)."""
    saved = os.environ.get(FAILPOINTS)
    if failpoints:
        os.environ[FAILPOINTS] = failpoints
    else:
        os.environ.pop(FAILPOINTS, None)
    reset_failpoints()  # a Ray worker process runs many jobs; counts are per job
    work = _work_dir(version)
    items: queue.Queue[tuple | None] = queue.Queue()
    try:
        thread = threading.Thread(target=target, args=(items.put, work, *args), name=name, daemon=True)
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


def error_item(exc: BaseException, host: str) -> tuple[str, str, str]:
    """How a job or task that raised `exc` ends its stream: ("error", kind, message). The
    kind says what its owner does: `agent_unavailable` stops the run; `failed` (swecl
    refused something) and `crashed` (a bug or an infrastructure failure) are retried."""
    if isinstance(exc, AgentUnavailable):
        return ("error", "agent_unavailable", str(exc))
    if isinstance(exc, SweclError):
        return ("error", "failed", f"on {host}: {exc}")
    detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return ("error", "crashed", f"on {host}: {detail}")


def open_copy(base: bytes | str, base_head: tuple[int, str], ledger_path: Path, version: str, opts: RunOptions,
              identity: dict[str, str]) -> Any:
    """Write the snapshot `base` to `ledger_path` and check it and this node: the same
    swecl as the submitter's, the copy's head as taken, the run's dataset here. Returns
    the benchmark."""
    host = socket.gethostname()
    mine = code_identity()
    differs = [k for k in identity if k in mine and mine[k] != identity[k]]
    if differs:
        raise SweclError(f"node {host} runs swecl {mine} but the driver {identity}: install the same swecl on every node")
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
    return benchmark


def safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)
