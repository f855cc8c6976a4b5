"""The catalog's run events: a run's header (claim, resume, fork, budget, end), its
passes, one task's attempt and its agent's result, and counterfactual re-runs.

Part of the event catalog; import these names from `ledger.events`.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ._event_base import PASS, Event


# --- runs and passes -------------------------------------------------------------------


class TaskRef(msgspec.Struct, frozen=True):
    """One task of a run's plan: enough to know what is missing without the dataset."""

    instance_id: str
    order: int
    repo: str
    difficulty: int | None = None
    dependencies: list[str] | None = None
    """The dataset's `dependencies` of the task (earlier tasks of its repository that changed
    the same files), as instance ids; [] none; None: not recorded (a run recorded before the
    field existed). What the memory funnel (`projections.funnel`) reads without the dataset."""


class RunStarted(Event, tag="run.started", kw_only=True):
    """A run version claimed: its stage, agent, grader, dataset and provenance.

    Appended at version 0 of stream `run/{version}`; a second claim of the same version
    loses the optimistic-concurrency race and is refused.
    """

    version: str
    benchmark: str
    dataset_hash: str
    sequences: list[str]
    stage: str
    memory_mode: str  # off | builtin | plugin-real | oracle | history (`MemoryBackend.recorded_mode`)
    agent: str
    model: str | None = None
    code_mode: str = "agentic"
    grader: str = "swebench"
    passes: list[str] = msgspec.field(default_factory=lambda: ["initial", "retest", "baseline"])
    retest_every: int | None = None
    source_memory: str | None = None  # as requested; the resolved seed is memory.seeded
    tasks: dict[str, list[TaskRef]] = msgspec.field(default_factory=dict)  # sequence -> plan, in order
    config: dict[str, Any] = msgspec.field(default_factory=dict)
    provenance: dict[str, Any] = msgspec.field(default_factory=dict)
    # `swecl run --repeat K`: the K runs of one setting form a group, named by the version
    # of its first repeat; this run is repeat `repeat_index` (1-based) of `repeat_count`.
    # None for a run started alone (and in every ledger older than these fields).
    repeat_group: str | None = None
    repeat_index: int | None = None
    repeat_count: int | None = None
    # One `swecl run` that starts several runs (the demo suite's stages, --repeat K): the
    # version of its first run, and the stages each repeat runs, in order. `swecl run
    # --resume` of any of them carries on with the whole invocation, starting what never
    # began. None for a run started alone (and in every ledger older than these fields).
    suite: str | None = None
    suite_stages: list[str] | None = None
    # `swecl run --order`: how the plan's order was made (`permute:SEED`, `reverse`,
    # `file:NAME`); the plan in `tasks` is that order, numbered 1..N. None: the dataset's
    # order (and every ledger older than this field).
    task_order: str | None = None
    # What the sandbox showed the run's processes: "agent" and "tests", each a list of
    # {path, mode (ro | rw | link | empty | devices | procfs), what[, target]} in the order
    # the sandbox made them; a task's own paths by what they are ({checkout}, {worktree}).
    # None: unconfined (everything visible), and every ledger older than this field.
    visible: dict[str, list[dict[str, str]]] | None = None


class RunResumed(Event, tag="run.resumed", kw_only=True):
    attempt: int
    provenance: dict[str, Any] = msgspec.field(default_factory=dict)
    # `--resume V --budget-usd X`: the run's cost budget from here on; None: unchanged.
    budget_usd: float | None = None


class RunBudgetReached(Event, tag="run.budget_reached", kw_only=True):
    """The run stopped before a task: its agents had spent `spent_usd` of `budget_usd`."""

    spent_usd: float
    budget_usd: float


class RunFinished(Event, tag="run.finished", kw_only=True):
    status: str  # finished | failed | interrupted | budget_reached
    error: str | None = None


class RunForked(Event, tag="run.forked", kw_only=True):
    """`swecl run --fork V@K`: this run's initial pass takes `source_run`'s tasks before
    order `order` as they were (and its `retest-{i}` rows with i < K), in every sequence.

    Those events are referenced, never copied: the read side splices them into this run's
    (`projections._fork`), as `source_run`'s ledger held them at this event's seq. Appended
    on the header stream right after run.started; the memory seed is a memory.seeded."""

    source_run: str
    order: int


class PassStarted(Event, tag="pass.started", kw_only=True):
    sequence_id: str
    pass_: str = PASS


class PassFinished(Event, tag="pass.finished", kw_only=True):
    sequence_id: str
    pass_: str = PASS


# --- one task of one pass --------------------------------------------------------------


class TaskStarted(Event, tag="task.started", kw_only=True):
    """`pass` is initial, retest or baseline; `retest-{i}` is an extra row a(i, j<=i)."""

    sequence_id: str
    instance_id: str
    repo: str
    order: int  # 1-based position in the sequence
    pass_: str = PASS
    attempt: int = 1
    difficulty: int | None = None


class TaskAbandoned(Event, tag="task.abandoned", kw_only=True):
    """A task that started and never finished (crash, kill); resume redoes it."""

    sequence_id: str
    instance_id: str
    order: int
    pass_: str = PASS
    attempt: int = 1
    reason: str = "interrupted"


class TaskFinished(Event, tag="task.finished", kw_only=True):
    sequence_id: str
    instance_id: str
    order: int
    pass_: str = PASS
    attempt: int = 1
    resolved: bool | None = None  # None: no valid verdict (infrastructure, ungraded)
    status: str = "unresolved"


class ToolCall(msgspec.Struct, frozen=True):
    name: str
    error: bool = False


class AgentFinished(Event, tag="agent.finished", kw_only=True):
    sequence_id: str
    instance_id: str
    order: int
    pass_: str = PASS
    attempt: int = 1
    agent: str
    model: str | None = None
    patch: str | None = None  # blob sha256 of the worktree diff
    exit: str = "completed"  # completed | max_turns | budget | max_tokens | auth_failed | crashed | timeout | error
    exit_code: int | None = None
    turns: int | None = None
    tool_calls: list[ToolCall] = msgspec.field(default_factory=list)
    cost_usd: float | None = None
    tokens: dict[str, int] = msgspec.field(default_factory=dict)
    duration_s: float = 0.0
    transcript: str | None = None  # blob
    prompt: str | None = None  # blob
    session_id: str | None = None
    error: str | None = None
    # The per-task limit the attempt passed, seen after it ended (`tokens`: its reported
    # input + output tokens passed --max-tokens-per-task; `turns`: its model calls passed
    # --max-turns, for an agent held to no turn limit of its own); its patch is graded as left.
    over_limit: str | None = None


class EgressConnection(msgspec.Struct, frozen=True, kw_only=True):
    """One TCP connection a sandboxed agent asked its egress proxy for."""

    host: str
    port: int
    allowed: bool
    bytes_up: int = 0  # agent -> host
    bytes_down: int = 0  # host -> agent
    reason: str = ""  # why allowed (api endpoint, --allow-host) or refused


class AgentEgress(Event, tag="agent.egress", kw_only=True):
    """The connections one sandboxed attempt's agent made through its egress proxy (its
    only way out of its network namespace); appended with agent.finished."""

    sequence_id: str
    instance_id: str
    order: int
    pass_: str = PASS
    attempt: int = 1
    allowed_hosts: list[str] = msgspec.field(default_factory=list)  # host:port of the API endpoints, --allow-host
    connections: list[EgressConnection] = msgspec.field(default_factory=list)


# --- counterfactuals (`swecl counterfactual`) ---------------------------------------------


class CounterfactualStarted(Event, tag="counterfactual.started", kw_only=True):
    """One re-run of a task of run `version` with memory items hidden from its recall,
    on a private copy of the ledger cut before the original attempt started. Stream
    `counterfactual/{version}/{id}`: never one of the run's own streams, so nothing of
    the run (its outcomes, metrics, memory) changes."""

    version: str
    sequence_id: str
    instance_id: str
    order: int
    pass_: str = PASS
    attempt: int = 1  # the run's attempt this one stands beside
    hidden: list[str] = msgspec.field(default_factory=list)  # item ids left out of every recall
    repeat: int = 1  # 1-based, among the counterfactuals of this task, pass and hidden set
    cut_seq: int = 0  # the original attempt's task.started: the copy holds every event before it


class CounterfactualFinished(Event, tag="counterfactual.finished", kw_only=True):
    """How that re-run ended: the grade and what it cost."""

    version: str
    sequence_id: str
    instance_id: str
    order: int
    pass_: str = PASS
    attempt: int = 1
    hidden: list[str] = msgspec.field(default_factory=list)
    repeat: int = 1
    status: str = ""  # a GradeStatus value
    resolved: bool | None = None  # None: no valid verdict
    recalled: list[str] = msgspec.field(default_factory=list)  # item ids its recalls returned, first seen first
    patch: str | None = None  # blob sha256 of the agent's patch
    exit: str = "completed"
    cost_usd: float | None = None
    tokens: dict[str, int] = msgspec.field(default_factory=dict)
    duration_s: float = 0.0  # the agent's
    error: str | None = None


class BundleSealed(Event, tag="bundle.sealed", kw_only=True):
    """The last event of a run bundle (`swecl bundle`): what the bundle claims, and who
    signs it.

    `manifest` is a blob: canonical JSON naming the runs, the head it seals (the seq and
    hash of the event just before this one), the source ledger's id and head, the
    dataset's hashes, the metrics as printed, and the other blobs the bundle carries
    (task rows, environment locks, ATIF trajectories). `signature` is Ed25519 over the
    manifest's bytes, by `public_key` (both hex; none when unsigned); `key_fingerprint`
    is the SHA-256 of the raw public key, hex. The signature binds every event through
    the head hash, and every blob through the hashes the events and manifest hold.
    """

    manifest: str  # blob
    signature: str | None = None
    public_key: str | None = None
    key_fingerprint: str | None = None
