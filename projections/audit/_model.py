"""The audit's documents: the msgspec structs `audit_task` and `audit_summary` return
(`TaskAudit`, `RunAuditSummary` and their parts), with the reuse threshold and the flag
kinds they report."""

from __future__ import annotations

from typing import Any

import msgspec

REUSE_THRESHOLD = 0.5
FLAG_KINDS = ("same-instance", "later-task", "test-content")
PASS = msgspec.field(name="pass")


# -- the documents ------------------------------------------------------------------------


class DatasetNote(msgspec.Struct, kw_only=True):
    """Whether the grading secrets were available for the test-content check."""

    available: bool
    source: str | None = None
    note: str | None = None


class Reuse(msgspec.Struct, kw_only=True):
    compared: bool
    reason: str | None = None  # why not compared
    score: float | None = None  # shared_lines / item_lines
    reused: bool | None = None  # score >= REUSE_THRESHOLD
    basis: str | None = None  # added | removed: the lines compared
    shared_lines: int = 0
    item_lines: int = 0
    agent_lines: int = 0
    shared_files: list[str] = msgspec.field(default_factory=list)
    item_files: list[str] = msgspec.field(default_factory=list)


class Flag(msgspec.Struct, kw_only=True):
    kind: str  # one of FLAG_KINDS
    detail: str


class WrittenBy(msgspec.Struct, kw_only=True):
    """The task whose daydream wrote the item (in this ledger or, for imports, another)."""

    run: str
    seq: int | None  # the memory.written in this ledger; None if it was written elsewhere
    time: str | None = None
    sequence_id: str | None = None
    instance_id: str | None = None
    order: int | None = None
    pass_: str | None = PASS
    attempt: int | None = None
    outcome: str | None = None
    kind: str = "episode"
    extractor: str = "deterministic"


class CopyHop(msgspec.Struct, kw_only=True):
    """The item reached `into` by a seed from `source_run` as of `source_seq`, or an import from `path`."""

    via: str  # seeded | imported
    into: str
    seq: int | None
    source_run: str | None = None
    source_seq: int | None = None
    path: str | None = None
    chosen: str | None = None


class Decision(msgspec.Struct, kw_only=True):
    """A change of the item's status: written, rewritten, pruned, merged (into `by`), superseded (by `by`)."""

    status: str
    seq: int
    reason: str = ""
    by: str | None = None
    dream_id: str | None = None
    dream_run: str | None = None
    dream_reason: str | None = None  # manual | pre-eval


class Provenance(msgspec.Struct, kw_only=True):
    written: WrittenBy
    hops: list[CopyHop]
    decisions: list[Decision]
    status_at_recall: str
    status_now: str
    merged_into: str | None = None
    merged_from: list[str] = msgspec.field(default_factory=list)
    superseded_by: str | None = None
    supersedes: list[str] = msgspec.field(default_factory=list)  # items this one made obsolete
    derived_from: list[str] = msgspec.field(default_factory=list)
    upstream: dict[str, Any] | None = None  # an imported item's record in the export it came from


class AuditedHit(msgspec.Struct, kw_only=True):
    item_id: str
    rank: int
    score: float
    known: bool  # the item is in this run's substrate (an id recall returned but the ledger never wrote is not)
    title: str | None = None
    kind: str | None = None
    repo: str | None = None
    outcome: str | None = None
    provenance: Provenance | None = None
    reuse: Reuse
    flags: list[Flag] = msgspec.field(default_factory=list)
    test_content_checked: bool = False


class Attempt(msgspec.Struct, kw_only=True):
    pass_: str = PASS
    attempt: int
    status: str  # finished | abandoned | unfinished
    in_force: bool  # the attempt the a(i,j) cell scores (the latest)
    started_seq: int | None = None
    ended_seq: int | None = None
    grade_status: str | None = None
    resolved: bool | None = None
    abandon_reason: str | None = None
    agent_patch: str | None = None  # blob sha256


class AuditedRecall(msgspec.Struct, kw_only=True):
    seq: int
    time: str
    sequence_id: str
    pass_: str = PASS
    attempt: int
    attempt_status: str
    in_force: bool
    via: str
    ranker: str
    query_hash: str
    query: str
    repo: str | None
    k: int
    agent_patch: str | None
    hits: list[AuditedHit]


class ProviderWrite(msgspec.Struct, kw_only=True):
    """An earlier task's write call to a --memory-server run's server (`memory.provider.called`:
    swecl's, `via` write, or the agent's own call of a writing tool, `via` agent) that stored
    text a recall returned; `lines`: how many returned lines it holds."""

    seq: int
    call: int
    tool: str
    via: str = "write"  # write (swecl's write step) | agent (the agent's own call)
    instance_id: str
    order: int
    pass_: str = PASS
    attempt: int = 1
    lines: int = 0
    run: str | None = None  # the run that made the call: this one, or the run a seed came from
    flags: list[Flag] = msgspec.field(default_factory=list)  # leakage flags, relative to the recalling task


class AttributedLine(msgspec.Struct, kw_only=True):
    """A line the server returned, and the earliest earlier write whose arguments hold it
    (`write_seq` None: unattributed)."""

    text: str
    write_seq: int | None = None
    instance_id: str | None = None
    order: int | None = None
    run: str | None = None


class ProviderRecall(msgspec.Struct, kw_only=True):
    """A recall call of the task to a --memory-server run's server (swecl's, or the agent's
    call of the recall tool or of a tool the server marks read-only), what it returned, and
    where the returned text came from."""

    seq: int
    call: int
    tool: str
    via: str  # recall | agent
    sequence_id: str
    instance_id: str = ""  # the recalling task
    order: int = 0
    pass_: str = PASS
    attempt: int = 1
    is_error: bool = False
    failure: str | None = None
    error: str | None = None
    arguments: str | None = None  # an excerpt, one line
    result_blob: str | None = None
    returned: bool = True  # False: no answer recorded (a failed call), or its blob is missing
    lines: list[AttributedLine] = msgspec.field(default_factory=list)
    writes: list[ProviderWrite] = msgspec.field(default_factory=list)  # attributed, in order of first line
    unattributed: int = 0  # lines no earlier write holds
    unattributed_flags: list[Flag] = msgspec.field(default_factory=list)  # test-content of those lines
    test_content_checked: bool = False
    flags: list[str] = msgspec.field(default_factory=list)  # the kinds raised, in FLAG_KINDS order


class TaskAudit(msgspec.Struct, kw_only=True):
    version: str
    stage: str
    instance_id: str
    sequence_id: str
    order: int
    repo: str
    pass_filter: str | None
    dataset: DatasetNote
    reuse_threshold: float
    attempts: list[Attempt]
    recalls: list[AuditedRecall]
    flags: list[str]  # the kinds raised by any hit, in FLAG_KINDS order
    # A --memory-server run's provider and the task's recall calls to it (`_provider`);
    # None and empty for every other run.
    memory_server: str | None = None
    provider_recalls: list[ProviderRecall] = msgspec.field(default_factory=list)
    # `swecl counterfactual`'s re-runs of the task without some recalled items, with their
    # verdicts (`projections._counterfactuals.CounterfactualVerdict`); empty when none ran.
    counterfactuals: list[Any] = msgspec.field(default_factory=list)


class FlaggedTask(msgspec.Struct, kw_only=True):
    sequence_id: str
    instance_id: str
    order: int
    pass_: str = PASS
    attempts: list[int]
    kinds: list[str]
    items: list[str]  # flagged item ids, by first recall
    reused_items: list[str]  # of those, the ones the agent's patch reused
    hits: int = 0  # flagged hits of this task's recalls (an item recalled twice counts twice, as in the run's counts)
    by_kind: dict[str, int] = msgspec.field(default_factory=dict)  # of those, per kind present, in FLAG_KINDS order


class RunAuditSummary(msgspec.Struct, kw_only=True):
    version: str
    stage: str
    dataset: DatasetNote
    reuse_threshold: float
    recalls: int
    hits: int
    flagged_hits: int
    reused_hits: int
    by_kind: dict[str, int]  # flagged hits per kind
    flagged: list[FlaggedTask]
    # Of `recalls` and `hits`: a --memory-server run's recall calls, and the items they
    # returned (each attributed write, and a call's unattributed lines as one).
    provider_recalls: int = 0
    provider_hits: int = 0
