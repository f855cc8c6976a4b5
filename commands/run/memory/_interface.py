"""The memory backend interface: what the run loop asks of a run's memory, and nothing more.

A run has one `MemoryBackend` (the stage and its options choose it: `_factory`); each
sequence a `SequenceMemory`; each task attempt a `TaskMemory`. The run loop, the task
step, the executors and the agent adapters call these operations and never ask which
kind of memory they hold. The base classes are the memory that does nothing (the
`base` stage, and every stage's baseline pass): a new kind overrides what it does.

The operations, in a run's order:

- run: `check` (its options, one line each, before anything is claimed), `check_seed`
  (a seed that cannot be found is refused before a version is claimed), `prepare`
  (seeding, the pre-eval dream, a fork's dream: events on the run's header stream),
  `check_fork` / `fork_snapshots` (what a fork may take of it), `finish` (after the
  run's end is recorded: the memory's files), and for `swecl counterfactual`
  `cannot_hide_items`, `hideable_items`, `recalled_items`;
- sequence: `sequence` (its state, where it lives: `sequence_folder`, or
  `restore_folder` on a Ray node), `resume` (what a resumed sequence restores or runs
  again), `close`;
- task: `task` (a context manager, entered before `task.started`: a memory that cannot
  start fails the run, not a task), `for_agent` (what the agent gets: a recall handle, a
  prompt style, a native memory folder, the earlier tasks for its prompt), `after_grade` (writes that may fail the memory,
  never the agent), `finish` (what the task's final batch holds: lessons, snapshots,
  native files).
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ledger import StreamRange, SweclError

if TYPE_CHECKING:
    from agents import AgentResult, Recall, TaskHistory
    from commands.inputs import Benchmark, Sequence, Task
    from ledger import Event, Ledger, NewEvent
    from ledger.events import GradeFinished
    from projections import Results, RunOutcomes

    from .._progress import Reporter
    from .._stages import Stage

__all__ = ["AgentMemory", "MemoryBackend", "SequenceMemory", "SequencePlace", "TaskMemory"]


@dataclass(frozen=True)
class AgentMemory:
    """What one task's agent gets of the memory: nothing, by default."""

    recall: Recall | None = None  # the recall handle (its MCP server, the harness's recall)
    prompt_style: str = "plain"  # plain | recall | natural
    memory_dir: Path | None = None  # a native memory folder the agent keeps, across tasks
    history: TaskHistory | None = None  # the earlier tasks of the sequence, for the prompt (full-history)


@dataclass(frozen=True)
class SequencePlace:
    """Where a sequence of a run is run, as far as its memory cares."""

    ledger: Ledger
    version: str
    sequence: Sequence
    reporter: Reporter
    folder: Path | None = None  # the sequence's own folder for live memory state; None: none kept
    sandbox: Any = None  # the agents' sandbox (a memory server runs in one like it)
    network: bool = False  # --allow-host given: a sandboxed memory server may reach the network
    hidden: frozenset[str] = frozenset()  # memory items recall leaves out (`swecl counterfactual`)

    @property
    def stream(self) -> str:
        return f"run/{self.version}/{self.sequence.id}"


class TaskMemory:
    """One task attempt's memory. The base: none. Used as a context manager: what the
    attempt holds of the memory (a lock on a shared server) is let go however it ends."""

    def __enter__(self) -> TaskMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """The attempt is over (finished, abandoned or failed)."""

    def for_agent(self, stack: ExitStack, scratch: Path) -> AgentMemory:
        """What the agent gets; `stack` closes what this opens when the agent is done."""
        return AgentMemory()

    def after_grade(self, task: Task, result: AgentResult, grade: GradeFinished, failure: str | None) -> str | None:
        """After the grade, before it is appended: the memory's writes that may fail. Returns
        why the memory failed during the task (the grade is then infra_error, never the
        agent's 0), else None."""
        return None

    def finish(self, task: Task, result: AgentResult, grade: GradeFinished,
               ids: Any) -> tuple[list[Event | NewEvent], list[bytes]]:
        """The events (and their blobs) the task's final batch holds beside task.finished.
        `ids(kind)` gives an event id of this attempt."""
        return [], []


class SequenceMemory:
    """One sequence's memory in one run. The base: none."""

    # Whether the initial pass's tasks must run in order (each reads what the last wrote).
    ordered_initial: ClassVar[bool] = False
    # Whether a `retest-{i}` row waits for the initial pass's chain (its tasks copy state
    # the chain's task in flight is writing).
    rows_wait_for_chain: ClassVar[bool] = False

    def __init__(self, place: SequencePlace) -> None:
        self.place = place

    def resume(self, state: RunOutcomes) -> None:
        """A (re)started sequence: restore what the ledger says; `state` may be narrowed to
        make tasks run again."""

    def task(self, task: Task, pass_: str, attempt: int) -> TaskMemory:
        return TaskMemory()

    def close(self) -> None:
        """The sequence's passes are over (or stopped): nothing of the memory outlives them."""


class MemoryBackend:
    """A run's memory. The base: none (the `base` stage)."""

    kind: ClassVar[str] = "none"
    forkable: ClassVar[bool] = True  # its state can be taken as of a task (`--fork`)
    # run.started.memory_mode: off | builtin | plugin-real | oracle | history
    recorded_mode: ClassVar[str] = "off"
    sequence_memory: ClassVar[type[SequenceMemory]] = SequenceMemory
    writes_files: ClassVar[bool] = False  # `finish` writes the memory's files into the run's folder
    state_label: ClassVar[str] = "its memory"  # what a fork's seed takes, as a note says it

    def __init__(self, stage: Stage, opts: Any) -> None:
        self.stage, self.opts = stage, opts

    # -- the run --------------------------------------------------------------------------

    def check(self) -> None:
        """This memory's options, refused in one line."""

    def check_seed(self, ledger: Ledger, version: str, benchmark: Benchmark, sequences: list[Sequence]) -> None:
        """Before a version is claimed: the seed can be found."""

    def prepare(self, ledger: Ledger, version: str, benchmark: Benchmark, sequences: list[Sequence],
                reporter: Reporter, fork: Any = None) -> None:
        """After the claim, before the first task: seeding, the pre-eval dream, a fork's seed."""

    def check_fork(self, fork_text: str, source_version: str, source: MemoryBackend) -> None:
        """A fork of run `source_version`, whose memory was `source`, refused in one line:
        a memory that cannot be taken as of a task (`forkable`), or another kind of memory
        than the source's (the memory before K is the source's)."""
        if not (self.forkable and source.forkable):
            raise SweclError(f"--fork {fork_text}: the builtin stage's memory is the agent's own files, which a fork "
                             "cannot take as of a task: fork a plugin or base run into a plugin or base stage")
        if "none" not in (self.kind, source.kind) and self.kind != source.kind:
            if {self.kind, source.kind} in ({"substrate", "server"}, {"oracle", "oracle-server"}):
                used = source.kind.endswith("server")
                raise SweclError(f"--fork {fork_text}: run {source_version} {'used' if used else 'did not use'}"
                                 f" --memory-server; its fork must {'give it again' if used else 'not'}"
                                 " (the memory before K is that server's data)")
            raise SweclError(f"--fork {fork_text}: run {source_version}'s memory is of kind {source.kind!r}, this "
                             f"stage's {self.kind!r}: fork into a stage with the same memory (the memory before K "
                             "is the source's)")

    def fork_snapshots(self, ledger: Ledger, fork_text: str, source: str, cuts: dict[str, int]) -> dict[str, int]:
        """What a fork's seed records of the memory's own state: sequence -> event seq."""
        return {}

    def finish(self, ledger: Ledger, version: str, version_dir: Path) -> None:
        """After the run's end is recorded: the memory's files (a view; the ledger has it all)."""

    def hideable_items(self, ledger: Ledger, version: str) -> set[str]:
        """The item ids `swecl counterfactual --without` may name: swecl's memory items."""
        return {rec.event.item_id for rec in ledger.read(types=["memory.written"])}

    def recalled_items(self, ledger: Ledger, stream: str, cell: tuple[str, int, int], after: int = 0) -> list[str]:
        """The items an attempt (pass, order, attempt) recalled on `stream`, in order (events
        after seq `after`)."""
        found: list[str] = []
        for rec in ledger.read(types=["memory.recalled"], ranges=[StreamRange(stream)], after=after):
            ev = rec.event
            if (ev.pass_, ev.order, ev.attempt) == cell:
                found += [h.item_id for h in ev.results if h.item_id not in found]
        return found

    def cannot_hide_items(self, version: str) -> str | None:
        """Why `swecl counterfactual` cannot re-run a task of run `version` without some of
        this memory's items (one line), or None when it can (`SequencePlace.hidden`)."""
        return (f"run {version} is a {self.stage.name} run: it recalls nothing, so nothing can be hidden "
                "(counterfactuals need a plugin-* stage)")

    # -- its sequences ----------------------------------------------------------------------

    def sequence_folder(self, results: Results, version: str, sequence_id: str) -> Path | None:
        """Where a sequence keeps live memory state in the results folder; None: nowhere."""
        return None

    def restore_folder(self, ledger: Ledger, version: str, sequence_id: str, folder: Path) -> Path | None:
        """The sequence's live state rebuilt from the ledger into `folder` (a Ray node, the
        results folder after a fan-out); None: it keeps none."""
        return None

    def sequence(self, place: SequencePlace) -> SequenceMemory:
        return self.sequence_memory(place)

    def memory_on(self, pass_: str) -> bool:
        """Whether a pass's tasks have memory (the baseline pass never has)."""
        return self.kind != "none" and pass_ != "baseline"
