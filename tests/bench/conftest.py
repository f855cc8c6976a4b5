"""A realistic ledger for the fast-path tests: generated runs plus the rare shapes by hand."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from bench._synth import LedgerSpec, generate
from ledger import Event, Ledger, NewEvent
from ledger.events import (
    GradeCorrected,
    MemoryPruned,
    MemoryRecalled,
    MemorySeeded,
    MemoryWritten,
    RecallHit,
    RunFinished,
    RunResumed,
    RunStarted,
    TaskFinished,
    TaskStarted,
)


class NotInThisCatalog(Event, tag="test.not-in-catalog", kw_only=True):
    """Written by "a newer swecl": read back as an UnknownEvent, folded by nothing."""

    note: str


@dataclass(frozen=True)
class Built:
    path: Path
    cursors: list[int]  # interesting cursors to fold up to (the head last)


def _memory(version: str, item: str, repo: str = "django/django") -> MemoryWritten:
    return MemoryWritten(item_id=item, kind="episode", title=item, body="b", repo=repo, source_run=version)


def _run(version: str, source: str | None = None) -> RunStarted:
    return RunStarted(version=version, benchmark="b", dataset_hash="h", sequences=["s"], stage="plugin-accum",
                      memory_mode="plugin-real", agent="demo", source_memory=source)


def build_ledger(path: Path) -> Built:
    """Generated runs (seeds, dreams, abandoned attempts, rejections) and by hand: a seed
    chain of length 2, a path seed, a correction, a resume, a cycle, a source whose name
    holds a '/', and an event type this catalog does not know."""
    generate(path, LedgerSpec("fast-paths", runs=9, attempts=2, task_scale=0.1))
    cursors = []
    with Ledger.open(path) as led:
        cursors.append(led.head() // 3)
        # run 3 (plugin-accum) was seeded from run 2; x2 is seeded from 3: a chain of two
        led.append("run/x2", [_run("x2", "3")], expected_version=-1)
        led.append("run/x2", [MemorySeeded(item_count=1, source_run="3", source_seq=led.head())])
        cursors.append(led.head())
        led.append("run/x2/s", [
            TaskStarted(sequence_id="s", instance_id="i1", repo="django/django", order=1, pass_="initial"),
            MemoryRecalled(sequence_id="s", instance_id="i1", order=1, pass_="initial", query_hash="q",
                           results=[RecallHit("missing", 1.0, 1)]),
            _memory("x2", "x2-item"),
            TaskFinished(sequence_id="s", instance_id="i1", order=1, pass_="initial", resolved=True, status="resolved"),
        ])
        # a path seed: the imported items follow their memory.seeded in the header
        led.append("run/p", [_run("p"), MemorySeeded(item_count=2, source_path="/exports/_memory"),
                             _memory("q", "imported-1"), _memory("q", "imported-2")])
        # a correction of a grade, a resume, a failed finish (run 2)
        grade = None
        for rec in led.read(types=["grade.finished"]):
            if rec.stream.startswith("run/2/"):
                grade = rec
                break
        assert grade is not None
        ev = grade.event
        led.append(grade.stream, [GradeCorrected(corrects=grade.event_id, sequence_id=ev.sequence_id,
                                                 instance_id=ev.instance_id, order=ev.order, pass_=ev.pass_,
                                                 attempt=ev.attempt, status="resolved", resolved=True)])
        led.append("run/2", [RunResumed(attempt=2), RunFinished(status="failed")])
        # a cycle (hand-made: swecl refuses it) and a source named with a '/'
        led.append("run/c1", [_run("c1"), MemorySeeded(item_count=0, source_run="c2", source_seq=led.head())])
        led.append("run/c2", [_run("c2"), MemorySeeded(item_count=0, source_run="c1", source_seq=led.head())])
        led.append("run/a/b", [_memory("a/b", "slash-item")])
        led.append("run/sl", [_run("sl"), MemorySeeded(item_count=1, source_run="a/b", source_seq=led.head())])
        led.append("run/sl", [MemoryPruned(item_id="slash-item", reason="ttl")])
        led.append("elsewhere", [NewEvent(NotInThisCatalog(note="x"), "unknown-1")])
        cursors.append(led.head() - 3)
        cursors.append(led.head())
    return Built(path, cursors)


@pytest.fixture(scope="session")
def fast_paths_ledger(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return build_ledger(tmp_path_factory.mktemp("fast-paths") / "ledger.db")
