"""Small builders of real ledgers for the memory tests."""

from __future__ import annotations

from ledger import Ledger, Recorded
from ledger.events import MemoryWritten, RunStarted, TaskStarted

REPO = "acme/widgets"
OTHER_REPO = "acme/gadgets"


def start_run(
    led: Ledger,
    version: str,
    *,
    sequences: tuple[str, ...] = ("s",),
    dataset_hash: str = "d" * 64,
    stage: str = "plugin-blank",
) -> Recorded:
    return led.append(
        f"run/{version}",
        [
            RunStarted(
                version=version,
                benchmark="demo",
                dataset_hash=dataset_hash,
                sequences=list(sequences),
                stage=stage,
                memory_mode="plugin-real",
                agent="demo",
            )
        ],
        expected_version=-1,
    )[0]


def task_started(
    led: Ledger, version: str, order: int, *, sequence: str = "s", pass_: str = "initial", repo: str = REPO
) -> Recorded:
    return led.append(
        f"run/{version}/{sequence}",
        [TaskStarted(sequence_id=sequence, instance_id=f"{sequence}-{order}", repo=repo, order=order, pass_=pass_)],
    )[0]


def item(
    item_id: str,
    version: str,
    order: int | None = 1,
    *,
    title: str = "",
    body: str = "",
    repo: str = REPO,
    sequence: str = "s",
    files: list[str] | None = None,
    symbols: list[str] | None = None,
    outcome: str | None = "resolved",
    ttl_tasks: int | None = None,
    ttl_seconds: float | None = None,
    patch: str | None = None,
) -> MemoryWritten:
    return MemoryWritten(
        item_id=item_id,
        kind="episode",
        title=title or f"{item_id} title",
        body=body or f"body of {item_id}",
        repo=repo,
        source_run=version,
        sequence_id=sequence,
        source_instance=f"{sequence}-{order}",
        source_order=order,
        source_pass="initial",
        files=files or [],
        symbols=symbols or [],
        outcome=outcome,
        ttl_tasks=ttl_tasks,
        ttl_seconds=ttl_seconds,
        patch=patch,
    )


def write(led: Ledger, version: str, *events: MemoryWritten, sequence: str = "s") -> list[Recorded]:
    return led.append(f"run/{version}/{sequence}", list(events))
