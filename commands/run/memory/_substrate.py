"""swecl's own memory substrate: recall through the recall service (its MCP server) before
and during a task, the daydream's lessons after it, copy-seeding and the dream pass
around the run, the memory folder at its end (docs/design.md section 5)."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any

from agents import AgentResult, RecallService
from commands.inputs import Benchmark, Sequence, Task
from commands.memory import GradingSecrets, TaskView, dream, materialise_version, plan_daydream, resolve_seed, seed_memory
from ledger import Event, Ledger, NewEvent
from ledger.events import GradeFinished

from .._progress import Reporter
from ._interface import AgentMemory, MemoryBackend, SequenceMemory, TaskMemory

__all__ = ["SubstrateMemory", "SubstrateSequence", "SubstrateTask"]


class _SubstrateTask(TaskMemory):
    def __init__(self, sequence: _SubstrateSequence, task: Task, pass_: str, attempt: int) -> None:
        self.sequence, self.task, self.pass_, self.attempt = sequence, task, pass_, attempt

    def for_agent(self, stack: ExitStack, scratch: Path) -> AgentMemory:
        place, task = self.sequence.place, self.task
        recall = RecallService(place.ledger, place.version, place.sequence.id, self.pass_, task.order,
                               task.instance_id, self.attempt, task.repo, hidden=place.hidden)
        stack.callback(recall.close)
        return AgentMemory(recall=recall, prompt_style=self.sequence.prompt_style)

    def finish(self, task: Task, result: AgentResult, grade: GradeFinished,
               ids: Any) -> tuple[list[Event | NewEvent], list[bytes]]:
        if self.pass_ != "initial":
            return [], []
        return self.lessons(task, patch=result.patch or None, status=grade.status, resolved=grade.resolved,
                            transcript=result.transcript)

    def lessons(self, task: Task, **taught: Any) -> tuple[list[Event | NewEvent], list[bytes]]:
        """What the daydream writes of `task` given what it `taught` (`plan_daydream`'s
        patch, status, resolved, transcript and extractor), through governance with the
        task's grading secrets."""
        place = self.sequence.place
        lessons, blobs = plan_daydream(
            place.version,
            TaskView(instance_id=task.instance_id, repo=task.repo, order=task.order, sequence_id=place.sequence.id,
                     issue=task.problem_statement or "", pass_=self.pass_, attempt=self.attempt),
            secrets=GradingSecrets(test_patch=task.test_patch or "", fail_to_pass=tuple(task.fail_to_pass or ()),
                                   pass_to_pass=tuple(task.pass_to_pass or ())),
            **taught,
        )
        return list(lessons), blobs


class _SubstrateSequence(SequenceMemory):
    ordered_initial = True
    task_memory: type[_SubstrateTask] = _SubstrateTask  # what each attempt's memory is

    def __init__(self, place: Any, prompt_style: str) -> None:
        super().__init__(place)
        self.prompt_style = prompt_style  # the stage's: recall, or plugin-primed's natural

    def task(self, task: Task, pass_: str, attempt: int) -> TaskMemory:
        return TaskMemory() if pass_ == "baseline" else self.task_memory(self, task, pass_, attempt)


class SubstrateMemory(MemoryBackend):
    kind = "substrate"
    recorded_mode = "plugin-real"
    sequence_memory = _SubstrateSequence
    writes_files = True

    def check_seed(self, ledger: Ledger, version: str, benchmark: Benchmark, sequences: list[Sequence]) -> None:
        if self.stage.seeds:
            resolve_seed(ledger, version, self.opts.source_memory, dataset_hash=benchmark.content_hash,
                         sequences=[s.id for s in sequences])

    def prepare(self, ledger: Ledger, version: str, benchmark: Benchmark, sequences: list[Sequence],
                reporter: Reporter, fork: Any = None) -> None:
        if fork is not None:
            # A fork runs on its source's memory as it stood before K: dreamed there only
            # when asked (--dream-at-fork), whatever the stage, so that a fork with its
            # source's options goes on as its source did.
            if self.opts.dream_at_fork:
                _notes(reporter, dream(ledger, version, reason="fork").lines())
            return
        if self.stage.seeds:
            _notes(reporter, seed_memory(ledger, version, self.opts.source_memory, dataset_hash=benchmark.content_hash,
                                         sequences=[s.id for s in sequences]).lines())
        if self.stage.dreams_before_eval:
            _notes(reporter, dream(ledger, version, reason="pre-eval").lines())

    def finish(self, ledger: Ledger, version: str, version_dir: Path) -> None:
        materialise_version(ledger, version, version_dir)

    def cannot_hide_items(self, version: str) -> str | None:
        return None  # its recall leaves the hidden items out

    def sequence(self, place: Any) -> SequenceMemory:
        return self.sequence_memory(place, self.stage.prompt_style)  # type: ignore[call-arg]


def _notes(reporter: Reporter, lines: Any) -> None:
    for line in lines:
        reporter.note(line)


SubstrateSequence, SubstrateTask = _SubstrateSequence, _SubstrateTask  # what another kind builds on (`_oracle`)
