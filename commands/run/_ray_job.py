"""What runs on a node for `swecl run --executor ray` (see `_ray`, the driver): the Ray
job of one sequence (`sequence_job`), which runs the sequence on a local copy of the
driver's ledger snapshot, cuts what it appends into shards (`Cutter`) and forwards its
progress (`JobReporter`), with the pieces it shares with the Ray tasks of its free tasks
(`_ray_tasks`) in `_ray_node`.

Ray pickles `sequence_job` by reference (this module and its name): a node imports
this module from the swecl installed there.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ledger import Ledger

from ._context import run_sequence_on
from ._options import RunOptions
from ._ray_node import Cutter, JobReporter, error_item, open_copy, safe_name, streamed
from ._ray_tasks import RayTasks
from .memory import memory_of


def sequence_job(base: bytes | str, base_head: tuple[int, str], version: str, opts_raw: dict[str, Any],
                 sequence_id: str, attempt: int, failpoints: str | None, identity: dict[str, str],
                 shard_folder: str | None) -> Iterator[tuple]:
    """One sequence of run `version` on this node, as a stream of items for the driver:
    ("chunk", bytes | path in `shard_folder`, n_events), ("progress", kind, fields),
    ("note", text), and last, if it failed, ("error", kind, message)."""
    yield from streamed(_run_job, (base, base_head, version, opts_raw, sequence_id, attempt, identity, shard_folder),
                        version=version, failpoints=failpoints, name=f"swecl {sequence_id}")


def _run_job(emit: Any, work: Path, base: bytes | str, base_head: tuple[int, str], version: str,
             opts_raw: dict[str, Any], sequence_id: str, attempt: int, identity: dict[str, str],
             shard_folder: str | None) -> None:
    host = socket.gethostname()
    cutter: Cutter | None = None
    tasks = None
    try:
        try:
            opts = RunOptions.from_config(opts_raw)
            ledger_path = work / "ledger.db"
            benchmark = open_copy(base, base_head, ledger_path, version, opts, identity)
            with Ledger.open(ledger_path) as ledger:
                tag = f"{safe_name(sequence_id)}-{uuid.uuid4().hex[:12]}"
                cutter = Cutter(work, ledger_path, ledger.head(), f"run/{version}/{sequence_id}", shard_folder, tag, emit)
                reporter = JobReporter(emit, where=f"sequence job, pid {os.getpid()} on {host}")
                reporter.cutter = cutter
                emit(("note", f"v{version} {sequence_id}: attempt {attempt} running on {host}"))
                # The memory's live state, rebuilt from the ledger: a job may run on any node.
                memory_folder = memory_of(opts).restore_folder(
                    ledger, version, sequence_id, work / "memory")
                if opts.execution.task_jobs > 1:
                    # The order-free tasks fan out as Ray tasks of their own (see _ray_tasks).
                    tasks = RayTasks(work, ledger_path, version, opts, opts_raw, sequence_id, identity, shard_folder,
                                     emit)
                run_sequence_on(ledger, version, opts, sequence_id, reporter, memory_folder=memory_folder,
                                benchmark=benchmark, elsewhere=tasks)
            cutter.cut()
        except BaseException:
            if cutter is not None:  # deliver what was done before the failure: the retry resumes from it
                try:
                    cutter.cut()
                except BaseException:
                    pass
            raise
    except BaseException as exc:
        emit(error_item(exc, host))
    finally:
        if tasks is not None:
            tasks.close()
        emit(None)



