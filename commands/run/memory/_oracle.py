"""The oracle reference arm (stage `oracle`): after each initial-pass task the memory
receives what the task's gold patch and issue teach, through the same write path as the
memory it stands for, instead of what the agent did.

- swecl's substrate (kind `oracle`): the task's lessons are `plan_daydream`'s for the gold
  patch, status resolved, no transcript, with the task's grading secrets (governance refuses
  test content as for any lesson; test-file hunks are dropped), extractor label
  `ORACLE_EXTRACTOR`. The agent's own daydream writes nothing. Recall is the substrate's.
- a user's memory server (kind `oracle-server`, with `--memory-server`): the harness's write
  call (`--memory-write-tool`) carries the gold patch's facts and outcome `resolved`.
  Whatever the agent writes through the server's own tools stays as for the memory under
  test.

A memory system scored between `base` and this arm shows how much of what the real fixes
teach it gets across to later tasks.
"""

from __future__ import annotations

from typing import Any

from commands.inputs import Task
from commands.memory import deterministic_extractor
from ledger import Event, NewEvent
from ledger.events import GradeFinished

from ._server import ServerMemory, ServerSequence, ServerTask
from ._substrate import SubstrateMemory, SubstrateSequence, SubstrateTask

__all__ = ["ORACLE_EXTRACTOR", "OracleMemory", "OracleServerMemory"]

# `memory.written.extractor` of the oracle arm's lessons: what audit and show tell them by.
ORACLE_EXTRACTOR = "oracle-gold"
RECORDED_MODE = "oracle"  # run.started.memory_mode of both oracle kinds


class _OracleTask(SubstrateTask):
    def finish(self, task: Task, result: Any, grade: GradeFinished,
               ids: Any) -> tuple[list[Event | NewEvent], list[bytes]]:
        if self.pass_ != "initial":
            return [], []
        return self.lessons(task, patch=task.patch or None, status="resolved", resolved=True, transcript=None,
                            extractor=deterministic_extractor, extractor_name=ORACLE_EXTRACTOR)


class _OracleSequence(SubstrateSequence):
    task_memory = _OracleTask


class OracleMemory(SubstrateMemory):
    """swecl's substrate, written from the gold patches."""

    kind = "oracle"
    recorded_mode = RECORDED_MODE
    sequence_memory = _OracleSequence


class _OracleServerTask(ServerTask):
    def taught(self, task: Task, result: Any, grade: GradeFinished) -> tuple[str | None, str]:
        return task.patch or None, "resolved"


class _OracleServerSequence(ServerSequence):
    task_memory = _OracleServerTask


class OracleServerMemory(ServerMemory):
    """A user's memory server, whose harness write carries the gold patch."""

    kind = "oracle-server"
    recorded_mode = RECORDED_MODE
    sequence_memory = _OracleServerSequence
