"""The memory funnel's read model: per task, per sequence and for the run (msgspec Structs,
so `--json` is the model as it is)."""

from __future__ import annotations

import msgspec

# The labels of an unresolved task (a resolved one has none), in funnel order.
STORAGE_GAP = "storage gap"
RETRIEVAL_GAP = "retrieval gap"
USE_GAP = "use gap"
NO_DEPENDENCY = "no dependency"
LABELS = (STORAGE_GAP, RETRIEVAL_GAP, USE_GAP, NO_DEPENDENCY)

# What stands behind a step (`Source.kind`).
ITEM = "item"  # a substrate item (`ref`: its item id)
SERVER = "server"  # a memory server's write call (`ref`: `provider:write@SEQ`)
HISTORY = "history"  # a full-history prompt (`ref`: `history@SEQ`, the memory.history event)


class Source(msgspec.Struct, frozen=True, kw_only=True):
    """One thing behind a step: what it is and the dependency task it stands for."""

    kind: str
    ref: str
    instance_id: str  # the dependency task (by instance id) it came from
    files: list[str] = msgspec.field(default_factory=list)  # what it names that `used` compares (items)
    symbols: list[str] = msgspec.field(default_factory=list)


class TaskFunnel(msgspec.Struct, kw_only=True):
    """One task of the initial pass, as its attempt in force met its dependencies' knowledge."""

    sequence_id: str
    order: int
    instance_id: str
    dependencies: list[str]
    attempt: int | None  # the attempt in force; None: the task never ran
    stored: bool = False
    retrieved: bool = False
    used: bool = False
    resolved: bool = False
    status: str | None = None  # the verdict in force's status (None: no verdict)
    label: str | None = None  # one of LABELS for an unresolved task that ran; None otherwise
    used_by: str | None = None  # why `used`: "patch" (files/functions) or "counterfactual: VERDICT"
    stored_from: list[Source] = msgspec.field(default_factory=list)
    retrieved_from: list[Source] = msgspec.field(default_factory=list)
    used_from: list[Source] = msgspec.field(default_factory=list)
    touched: list[str] = msgspec.field(default_factory=list)  # files and functions the task's patch touches


class FunnelCounts(msgspec.Struct, kw_only=True):
    """Counts and rates of a set of tasks (see the design's "The memory funnel")."""

    tasks: int = 0  # tasks of the plan
    ran: int = 0  # with an attempt in force
    with_deps: int = 0  # ran, with at least one dependency
    stored: int = 0  # with_deps and stored
    retrieved: int = 0  # stored and retrieved
    used: int = 0  # retrieved and used
    resolved: int = 0  # with_deps and resolved
    resolved_used: int = 0  # used and resolved
    labels: dict[str, int] = msgspec.field(default_factory=dict)  # every label of LABELS, 0 included
    stored_rate: float | None = None  # stored / with_deps
    retrieved_rate: float | None = None  # retrieved / stored
    used_rate: float | None = None  # used / retrieved
    resolved_rate: float | None = None  # resolved / with_deps
    resolved_used_rate: float | None = None  # resolved_used / used


class SequenceFunnel(msgspec.Struct, kw_only=True):
    sequence_id: str
    counts: FunnelCounts
    tasks: list[TaskFunnel]


class MacroFunnel(msgspec.Struct, kw_only=True):
    """Counts summed over sequences; each rate the unweighted mean of the sequences' rates
    where defined (`rate_sequences`: how many sequences each mean used)."""

    counts: FunnelCounts
    rate_sequences: dict[str, int] = msgspec.field(default_factory=dict)


class RunFunnel(msgspec.Struct, kw_only=True):
    """The memory funnel of one run's initial pass; `na` says why there is none (then
    `sequences` is empty and `macro` None)."""

    version: str
    stage: str
    memory: str  # "substrate", "server NAME", "history", or "none"
    upto: int  # the ledger's seq the funnel is as of
    na: str | None = None
    sequences: list[SequenceFunnel] = msgspec.field(default_factory=list)
    macro: MacroFunnel | None = None

    def task(self, instance_id: str) -> TaskFunnel | None:
        return next((t for s in self.sequences for t in s.tasks if t.instance_id == instance_id), None)


class LabelDifference(msgspec.Struct, kw_only=True):
    label: str  # one of LABELS, or "resolved"
    a: int
    b: int
    difference: int  # b - a


class LabelChange(msgspec.Struct, kw_only=True):
    sequence_id: str
    order: int
    instance_id: str
    a: str  # the label in A ("resolved" for a resolved task, "not run")
    b: str


class FunnelDifference(msgspec.Struct, kw_only=True):
    """Two runs' funnels over the same tasks: per label the counts and B - A, and the
    tasks whose label changed; `na` when either run has no funnel."""

    a: str
    b: str
    na: str | None = None
    labels: list[LabelDifference] = msgspec.field(default_factory=list)
    changed: list[LabelChange] = msgspec.field(default_factory=list)
