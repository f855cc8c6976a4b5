"""The runs projection: one summary per run version, from the run header streams."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec

from ledger import Recorded, SweclError

from ._runner import Projection, Selection

if TYPE_CHECKING:
    from ledger import Ledger


class RunSummary(msgspec.Struct):
    version: str
    stage: str
    sequences: list[str]
    agent: str
    model: str | None
    grader: str
    benchmark: str
    dataset_hash: str
    memory_mode: str
    passes: list[str]
    started_seq: int
    started_at: str
    source_memory: str | None = None
    seeded_from: str | None = None
    seeded_seq: int | None = None
    status: str = "incomplete"  # incomplete | finished | failed | interrupted | budget_reached
    finished_at: str | None = None
    resumed: int = 0
    config: dict[str, Any] = msgspec.field(default_factory=dict)
    repeat_group: str | None = None
    """`swecl run --repeat K`: the version of the group's first repeat; None for a run started alone."""
    repeat_index: int | None = None
    repeat_count: int | None = None
    code_mode: str = "agentic"
    suite: str | None = None
    """The first run of the `swecl run` that started several (demo suite, --repeat); None: alone."""
    suite_stages: list[str] | None = None
    task_order: str | None = None
    """`swecl run --order`/`--orders`: how the plan was ordered (`permute:SEED`, `reverse`, `file:NAME`); None: the dataset's."""
    visible: dict[str, list[dict[str, str]]] | None = None
    """What the sandbox showed the agent and the tests (`run.started.visible`); None: unconfined, or not recorded."""


class RunsState(msgspec.Struct):
    runs: dict[str, RunSummary] = msgspec.field(default_factory=dict)


class RunsProjection(Projection[RunsState]):
    name: ClassVar[str] = "runs"
    version: ClassVar[int] = 5  # 2: repeat_group, repeat_index, repeat_count, code_mode; 3: suite; 4: task_order; 5: visible
    state_type: ClassVar[type] = RunsState
    # `apply` reads nothing of a run.resumed but its stream; the rest in full (see `_views`).
    reads: ClassVar[Mapping[str, tuple[str, ...]] | None] = {"run.resumed": ()}

    def selection(self) -> Selection:
        return Selection(types=frozenset({"run.started", "run.resumed", "run.finished", "memory.seeded"}))

    def initial(self) -> RunsState:
        return RunsState()

    def apply(self, state: RunsState, rec: Recorded) -> RunsState:
        ev = rec.event
        # Header streams are `run/{version}`; anything deeper is a sequence stream.
        parts = rec.stream.split("/")
        if len(parts) != 2 or parts[0] != "run":
            return state
        version = parts[1]
        if rec.type == "run.started":
            state.runs[version] = RunSummary(
                version=version,
                stage=ev.stage,
                sequences=list(ev.sequences),
                agent=ev.agent,
                model=ev.model,
                grader=ev.grader,
                benchmark=ev.benchmark,
                dataset_hash=ev.dataset_hash,
                memory_mode=ev.memory_mode,
                passes=list(ev.passes),
                started_seq=rec.seq,
                started_at=rec.time,
                source_memory=ev.source_memory,
                config=dict(ev.config),
                repeat_group=ev.repeat_group,
                repeat_index=ev.repeat_index,
                repeat_count=ev.repeat_count,
                code_mode=ev.code_mode,
                suite=ev.suite,
                suite_stages=None if ev.suite_stages is None else list(ev.suite_stages),
                task_order=ev.task_order,
                visible=ev.visible,
            )
            return state
        run = state.runs.get(version)
        if run is None:
            return state
        if rec.type == "run.resumed":
            run.resumed += 1
            run.status = "incomplete"
            run.finished_at = None
        elif rec.type == "run.finished":
            run.status = ev.status
            run.finished_at = rec.time
        elif rec.type == "memory.seeded":
            run.seeded_from = ev.source_run or ev.source_path
            run.seeded_seq = ev.source_seq
        return state


def run_started_record(ledger: Ledger, version: str, *, doing: str) -> Recorded:
    """The `run.started` record of `version` (the first event of its stream); a SweclError
    saying there is nothing to `doing` when there is no such run."""
    for rec in ledger.read_stream(f"run/{version}"):
        if rec.type == "run.started":
            return rec
        break
    raise SweclError(f"no run version {version!r} in {ledger.path}: nothing to {doing}")
