"""The memory tests' short spellings of the shared `bench.ledgers` builder."""

from __future__ import annotations

from typing import Any

from bench.ledgers import LedgerBuilder, memory_item
from ledger import Ledger, Recorded
from ledger.events import MemoryWritten

REPO = "acme/widgets"
OTHER_REPO = "acme/gadgets"


def start_run(
    led: Ledger, version: str, *, sequences: tuple[str, ...] = ("s",), dataset_hash: str = "d" * 64,
    stage: str = "plugin-blank",
) -> Recorded:
    """A run header without a plan: tasks are named `{sequence}-{order}`."""
    rec = LedgerBuilder(led).start_run(version, stage=stage, sequences=sequences, benchmark="demo",
                                       dataset_hash=dataset_hash, memory_mode="plugin-real")
    assert rec is not None
    return rec


def task_started(
    led: Ledger, version: str, order: int, *, sequence: str = "s", pass_: str = "initial", repo: str = REPO
) -> Recorded:
    return LedgerBuilder(led).task_started(version, sequence, order, pass_=pass_, repo=repo)[0]


def item(item_id: str, version: str, order: int | None = 1, *, repo: str = REPO, sequence: str = "s",
         **fields: Any) -> MemoryWritten:
    return memory_item(item_id, version, order, repo=repo, sequence=sequence, **fields)


def write(led: Ledger, version: str, *events: MemoryWritten, sequence: str = "s") -> list[Recorded]:
    return LedgerBuilder(led).write(version, sequence, *events)
