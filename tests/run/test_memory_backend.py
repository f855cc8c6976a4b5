"""A new kind of memory is one class and its registration: a toy "history" memory (the
earlier tasks of the sequence, as the full-history reference arm would give them) runs
through the real run loop, in-process on the demo, without a line of the loop changed.

Real parts: the run loop, the demo agent, the grader's pytest runs, a real ledger."""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from commands import Experiment
from commands.run import QuietReporter, RunOptions, Stage
from commands.run.memory import AgentMemory, MemoryBackend, SequenceMemory, TaskMemory
from ledger import Ledger, NewEvent, StreamRange
from ledger.events import MemoryWritten
from tests.run.support import SPANS, events, first_tasks

TASKS = 3


@dataclass(frozen=True)
class _Item:
    item_id: str
    rank: int
    title: str
    body: str = ""
    score: float = 0.0
    outcome: str | None = None
    patch: str | None = None


@dataclass
class _HistoryRecall:
    """The earlier initial-pass tasks of the sequence, most recent first (what the agent's
    attempt at each recorded)."""

    ledger: Ledger
    stream: str
    order: int
    seen: list[list[str]] = field(default_factory=list)

    def recall(self, query: str, k: int = 5, repo: str | None = None) -> list[_Item]:
        earlier = [rec.event for rec in self.ledger.read(types=["agent.finished"], ranges=[StreamRange(self.stream)])
                   if rec.event.pass_ == "initial" and rec.event.order < self.order]
        items = [_Item(f"history:{ev.instance_id}", rank, f"{ev.instance_id}: {ev.exit}")
                 for rank, ev in enumerate(reversed(earlier), start=1)][:k]
        self.seen.append([i.item_id for i in items])
        return items

    def mcp_server_argv(self) -> list[str]:
        return []


class _HistoryTask(TaskMemory):
    def __init__(self, memory: _HistorySequence, task: Any, pass_: str) -> None:
        self.memory, self.task, self.pass_ = memory, task, pass_

    def for_agent(self, stack: ExitStack, scratch: Path) -> AgentMemory:
        place = self.memory.place
        handle = _HistoryRecall(place.ledger, place.stream, self.task.order)
        self.memory.handles.append(handle)
        return AgentMemory(recall=handle, prompt_style="recall")

    def finish(self, task: Any, result: Any, grade: Any, ids: Any) -> tuple[list[Any], list[bytes]]:
        self.memory.log.append(("finish", self.pass_, task.order, grade.status))
        if self.pass_ != "initial":
            return [], []
        place = self.memory.place
        note = MemoryWritten(item_id=f"history-{task.order}", kind="episode", title=task.instance_id,
                             body=f"{task.instance_id}: {grade.status}", repo=task.repo, source_run=place.version,
                             sequence_id=place.sequence.id, source_instance=task.instance_id, source_order=task.order,
                             source_pass="initial", extractor="history")
        return [NewEvent(note, ids("history"))], []

    def close(self) -> None:
        self.memory.log.append(("close", self.pass_, self.task.order, None))


class _HistorySequence(SequenceMemory):
    ordered_initial = True

    def __init__(self, place: Any) -> None:
        super().__init__(place)
        self.log: list[tuple[str, str, int, str | None]] = []
        self.handles: list[_HistoryRecall] = []
        SEQUENCES.append(self)

    def task(self, task: Any, pass_: str, attempt: int) -> TaskMemory:
        self.log.append(("task", pass_, task.order, None))
        return TaskMemory() if pass_ == "baseline" else _HistoryTask(self, task, pass_)


class HistoryMemory(MemoryBackend):
    kind = "history"
    recorded_mode = "plugin-real"  # a recall memory, as the run's record says of the plugin stages
    sequence_memory = _HistorySequence


SEQUENCES: list[_HistorySequence] = []


def test_a_new_kind_of_memory_is_one_class_and_its_registration(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from commands.run import STAGES
    from commands.run.memory import BACKENDS

    monkeypatch.setitem(BACKENDS, "history", HistoryMemory)
    monkeypatch.setitem(STAGES, "plugin-history", Stage("plugin-history", "history", False, False, "recall",
                                                        "the earlier tasks of the sequence, recalled"))
    monkeypatch.setenv("SWECL_CACHE", str(cache))
    SEQUENCES.clear()
    opts = RunOptions(stage="plugin-history", sequences=[SPANS], instances=first_tasks(SPANS, TASKS),
                      passes=["initial", "baseline"])
    done = Experiment(tmp_path / "results").run(opts, QuietReporter())
    assert [r.status for r in done.reports] == ["finished"]

    (memory,) = SEQUENCES
    # Each attempt: its memory taken, let go, and its finish asked; the baseline asked too
    # (it gets no memory: the base TaskMemory).
    initial = [(what, order) for what, pass_, order, _ in memory.log if pass_ == "initial"]
    assert initial == [(what, k) for k in range(1, TASKS + 1) for what in ("task", "finish", "close")]
    assert sorted(order for what, pass_, order, _ in memory.log if pass_ == "baseline") == list(range(1, TASKS + 1))
    # What each task recalled is what the earlier ones did, read from the ledger.
    tasks = first_tasks(SPANS, TASKS)
    assert [h.seen for h in memory.handles] == [[[]], [[f"history:{tasks[0]}"]],
                                               [[f"history:{tasks[1]}", f"history:{tasks[0]}"]]]
    # What it keeps joins each task's finish, like any memory's lessons.
    written = [p for *_, p in events(tmp_path / "results", "memory.written")]
    assert [(p["item_id"], p["extractor"]) for p in written] == [(f"history-{k}", "history") for k in range(1, 4)]
