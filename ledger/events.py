"""The event catalog: every fact swecl records, as msgspec Structs in one tagged union.

Names follow docs/design.md section 3. Payloads carry blob hashes, never large texts. Each
class has a `SCHEMA` number; a change that old rows cannot decode into bumps it and
registers an upcaster (see `_upcasting`), so old rows are read, never rewritten.

Field `pass_` is spelled `pass` on the wire (a Python keyword otherwise).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar, Union

import msgspec

PASS = msgspec.field(name="pass")


class Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", omit_defaults=False):
    """Base of all event payloads. `type` on the wire is the class's tag."""

    SCHEMA: ClassVar[int] = 1

    @classmethod
    def type_name(cls) -> str:
        return cls.__struct_config__.tag  # type: ignore[return-value]


# --- runs and passes -------------------------------------------------------------------


class TaskRef(msgspec.Struct, frozen=True):
    """One task of a run's plan: enough to know what is missing without the dataset."""

    instance_id: str
    order: int
    repo: str
    difficulty: int | None = None


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
    memory_mode: str  # off | builtin | plugin-real
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


# How a recorded per-test result (the values of grade.finished's f2p and p2p) counts, by
# swebench 5.0.2's rules: the grader decides with these and the read side explains its
# decisions with the same ones, so they sit with the events both read.
TEST_PASSING = frozenset({"PASSED", "XFAIL"})
TEST_MAINTAINED = TEST_PASSING | {"SKIPPED"}


def f2p_passes(status: str) -> bool:
    """Whether a FAIL_TO_PASS test with this status counts as passing."""
    return status in TEST_PASSING


def p2p_passes(status: str) -> bool:
    """Whether a PASS_TO_PASS test with this status counts as maintained."""
    return status in TEST_MAINTAINED


class GradeStatus(StrEnum):
    """How a task's grade ends: the one vocabulary of the grader, the events (`status` of
    grade.finished and grade.corrected holds the value, kept a plain string so a status a
    newer swecl adds still reads), the projections and the CLI.

    | status        | resolved | scored (1 or 0) | SWE-bench report error |
    |---------------|----------|-----------------|------------------------|
    | resolved      | True     | yes             |                        |
    | unresolved    | False    | yes             |                        |
    | empty_patch   | False    | yes             |                        |
    | patch_failed  | False    | yes             | yes                    |
    | timeout       | False    | yes             | yes                    |
    | env_failed    | None     | no: the host's  | yes                    |
    | infra_error   | None     | no: the host's  | yes                    |
    | agent_error   | None     | no: the host's  | yes                    |
    | ungraded      | None     | no              | yes                    |

    A test run becomes resolved, unresolved or infra_error in one place
    (`graders._decide.decide`); the other statuses end a grade before tests run.
    """

    RESOLVED = "resolved"
    UNRESOLVED = "unresolved"
    EMPTY_PATCH = "empty_patch"
    PATCH_FAILED = "patch_failed"
    TIMEOUT = "timeout"
    ENV_FAILED = "env_failed"
    INFRA_ERROR = "infra_error"
    AGENT_ERROR = "agent_error"
    UNGRADED = "ungraded"

    @property
    def scored(self) -> bool:
        """A valid outcome: counted 1 (resolved) or 0 in every metric."""
        return self in _SCORED

    @property
    def resolved(self) -> bool | None:
        """The verdict it stands for; None when there is none (the task counts missing)."""
        return (self is GradeStatus.RESOLVED) if self in _SCORED else None

    @property
    def not_the_patch(self) -> bool:
        """An end the set-up caused (the host, the harness, the agent's process), not the patch."""
        return self in (GradeStatus.ENV_FAILED, GradeStatus.INFRA_ERROR, GradeStatus.AGENT_ERROR)

    @property
    def report_error(self) -> bool:
        """Counted among `error_ids` of SWE-bench's run report."""
        return self not in (GradeStatus.RESOLVED, GradeStatus.UNRESOLVED, GradeStatus.EMPTY_PATCH)


_SCORED = frozenset({GradeStatus.RESOLVED, GradeStatus.UNRESOLVED, GradeStatus.EMPTY_PATCH, GradeStatus.PATCH_FAILED,
                     GradeStatus.TIMEOUT})


class GradeFinished(Event, tag="grade.finished", kw_only=True):
    sequence_id: str
    instance_id: str
    order: int
    pass_: str = PASS
    attempt: int = 1
    grader: str
    status: str  # a GradeStatus value
    resolved: bool | None
    applied_with: str | None = None
    test_files_reverted: list[str] = msgspec.field(default_factory=list)
    f2p: dict[str, str] = msgspec.field(default_factory=dict)
    p2p: dict[str, str] = msgspec.field(default_factory=dict)
    tests: dict[str, str] = msgspec.field(default_factory=dict)
    log: str | None = None  # blob
    test_exit_code: int | None = None
    test_cmd: list[str] = msgspec.field(default_factory=list)
    duration_s: float = 0.0
    env_key: str | None = None
    error: str | None = None
    similarity: dict[str, float] | None = None
    parser: str | None = None  # the log parser used; a regrade re-reads the log with it
    # PASS_TO_PASS tests left out of the verdict: `swecl validate` found them failing on
    # this host with the fix and without it (network, a missing system tool)
    p2p_excluded: list[str] = msgspec.field(default_factory=list)
    # What the results channel changed of the log's statuses (test -> the status counted;
    # "" where a pass was void: pytest never ran it, or without evidence of the test's own
    # code). The channel's file is gone once the grade is made: a regrade re-reads the log
    # and applies these, so it cannot bring back a pass the channel refused.
    channel_overrides: dict[str, str] = msgspec.field(default_factory=dict)
    # Where the grade's time went, in seconds, by phase (graders.GradeOutcome.timings:
    # checkout, lock, env, install, apply, prepare, tests, parse, reset); empty before it was recorded
    timings: dict[str, float] = msgspec.field(default_factory=dict)


class GradeCorrected(Event, tag="grade.corrected", kw_only=True):
    """A re-decision from the recorded log with newer parsers; the original stays."""

    corrects: str  # event_id of the grade.finished (or earlier correction) it replaces
    sequence_id: str
    instance_id: str
    order: int
    pass_: str = PASS
    attempt: int = 1
    status: str
    resolved: bool | None
    f2p: dict[str, str] = msgspec.field(default_factory=dict)
    p2p: dict[str, str] = msgspec.field(default_factory=dict)
    tests: dict[str, str] = msgspec.field(default_factory=dict)
    error: str | None = None
    reason: str = ""
    parser: str | None = None
    p2p_excluded: list[str] = msgspec.field(default_factory=list)  # as in grade.finished


# --- memory ----------------------------------------------------------------------------


class MemoryContent(msgspec.Struct, kw_only=True):
    """What a memory item says and where it came from: the fields of `memory.written`.

    Declared once and shared: the event, the substrate's item (projections) and an
    import of exported items all carry exactly these. `Event` declares no fields, so the
    event's wire encoding is these fields in this order after its `type`.
    """

    item_id: str
    kind: str  # episode | builtin-file (`consolidated` is reserved: dreams only prune, merge, supersede)
    title: str
    body: str
    repo: str
    source_run: str
    sequence_id: str | None = None
    source_instance: str | None = None
    source_order: int | None = None
    source_pass: str | None = None
    files: list[str] = msgspec.field(default_factory=list)
    symbols: list[str] = msgspec.field(default_factory=list)
    tags: list[str] = msgspec.field(default_factory=list)
    outcome: str | None = None
    patch: str | None = None  # blob
    ttl_tasks: int | None = None
    ttl_seconds: float | None = None
    extractor: str = "deterministic"
    derived_from: list[str] = msgspec.field(default_factory=list)


def memory_content(source: Any, **overrides: Any) -> dict[str, Any]:
    """The `MemoryContent` fields `source` has (an event, an item, an exported item), as
    keyword arguments, lists copied so the new owner never shares them; `overrides` win."""
    if isinstance(source, MemoryContent):
        # Every field is there: the fast path (a fold makes one item per memory.written).
        out = msgspec.structs.asdict(source) if type(source) in _CONTENT_ONLY else _content_of(source)
        for name in _CONTENT_LISTS:
            out[name] = list(out[name])
    else:
        out = {}
        for name in _CONTENT_FIELDS:
            if hasattr(source, name):
                value = getattr(source, name)
                out[name] = list(value) if isinstance(value, list) else value
    out.update(overrides)
    return out


def _content_of(source: MemoryContent) -> dict[str, Any]:
    return {name: getattr(source, name) for name in _CONTENT_FIELDS}


_CONTENT_FIELDS = MemoryContent.__struct_fields__
_CONTENT_LISTS = tuple(
    f.name for f in msgspec.structs.fields(MemoryContent) if getattr(f.type, "__origin__", None) is list
)


class MemoryWritten(Event, MemoryContent, tag="memory.written", kw_only=True):
    """An item added to a run's substrate (daydream, a builtin memory file, import)."""


# Types whose fields are exactly MemoryContent's (`asdict` gives those and nothing else).
_CONTENT_ONLY = frozenset({MemoryContent, MemoryWritten})


class MemoryRejected(Event, tag="memory.rejected", kw_only=True):
    """Governance refused an item at write time (test leak, secret, oversize)."""

    reason: str
    rule: str
    title: str = ""
    repo: str | None = None
    source_instance: str | None = None
    item_id: str | None = None


class RecallHit(msgspec.Struct, frozen=True):
    item_id: str
    score: float
    rank: int


class MemoryRecalled(Event, tag="memory.recalled", kw_only=True):
    sequence_id: str
    instance_id: str
    order: int
    pass_: str = PASS
    attempt: int = 1
    query_hash: str
    query: str = ""
    repo: str | None = None
    k: int = 5
    results: list[RecallHit] = msgspec.field(default_factory=list)
    via: str = "inproc"  # inproc | mcp
    ranker: str = "bm25"


class MemorySeeded(Event, tag="memory.seeded", kw_only=True):
    """Copy-seeding: this run's substrate starts from another run's, as of a seq.

    From a run: `source_run` + `source_seq`. From an exported folder: `source_path` and
    the items themselves as a blob (`items`), since no ledger holds their history.
    """

    item_count: int
    source_run: str | None = None
    source_seq: int | None = None
    source_path: str | None = None
    items: str | None = None  # blob of exported items (path seeds)
    chosen: str = "explicit"  # explicit | newest-prior | fork
    # A --memory-server seed: sequence id -> the seq of the source run's
    # `memory.provider.snapshot` that sequence's server starts on (item_count is then 0:
    # the seed is the server's data, not swecl memory items).
    provider_snapshots: dict[str, int] = msgspec.field(default_factory=dict)
    # A fork's seed (`chosen="fork"`): sequence id -> the seq its stream of the source is
    # taken up to (just before the source's initial task K started there); the source's
    # header is taken up to `source_seq`, the smallest of them.
    sequence_seqs: dict[str, int] = msgspec.field(default_factory=dict)


class DreamStarted(Event, tag="dream.started", kw_only=True):
    dream_id: str
    reason: str = "manual"  # manual | pre-eval | fork (--dream-at-fork)
    params: dict[str, Any] = msgspec.field(default_factory=dict)


class MemoryPruned(Event, tag="memory.pruned", kw_only=True):
    item_id: str
    reason: str
    dream_id: str | None = None


class MemoryMerged(Event, tag="memory.merged", kw_only=True):
    into: str
    from_: list[str] = msgspec.field(name="from", default_factory=list)
    reason: str = ""
    similarity: float | None = None
    dream_id: str | None = None


class MemorySuperseded(Event, tag="memory.superseded", kw_only=True):
    item_id: str
    by: str
    reason: str = ""
    dream_id: str | None = None


class DreamFinished(Event, tag="dream.finished", kw_only=True):
    dream_id: str
    decisions: int = 0


# --- a user's own MCP memory server (`--memory-server`, in progress) -------------------


class ProviderStarted(Event, tag="memory.provider.started", kw_only=True):
    """A user's MCP memory server ("provider") answered the handshake for this sequence.

    `spec` is the command line or URL with credentials redacted; of the mapped
    variables only the names are kept (a value may be a token). `tools_listing` is a blob
    of the tools as listed (name, description, input schema), JSON."""

    sequence_id: str
    transport: str = "stdio"  # stdio | http
    spec: str = ""
    env_names: list[str] = msgspec.field(default_factory=list)
    server_name: str = ""
    server_version: str = ""
    protocol_version: str = ""
    tools: list[str] = msgspec.field(default_factory=list)
    tools_listing: str | None = None  # blob
    confined: bool = False  # started inside bubblewrap (no network unless allowed)
    network: bool = False


class ProviderCalled(Event, tag="memory.provider.called", kw_only=True):
    """One tool call to the provider, by the task in flight (`via`: agent, or later the
    harness's own recall/write calls). `arguments` and `result` are blobs (JSON of the
    arguments; the result's text contents joined by newlines); `structured` the
    structured content when the tool gave one. `is_error` is the tool's own error
    answer; `error` an infrastructure failure (crash, hang, garbage, gone): the task's
    outcome is then the harness's, never the agent's."""

    sequence_id: str
    instance_id: str
    order: int
    pass_: str = PASS
    attempt: int = 1
    call: int = 0  # 1, 2, ... per provider host (a run's sequence)
    tool: str = ""
    arguments: str | None = None  # blob
    result: str | None = None  # blob
    structured: str | None = None  # blob
    is_error: bool = False
    error: str | None = None
    failure: str | None = None  # crashed | timeout | garbage | unavailable (with `error`)
    duration_s: float = 0.0
    via: str = "agent"


class SnapshotChunk(msgspec.Struct, frozen=True, array_like=True):
    """One content-defined chunk of a large snapshot file: its blob and its size (a
    [blob, size] pair in the payload: a 10 MB file has a few hundred)."""

    blob: str
    size: int


class SnapshotFile(msgspec.Struct, frozen=True, kw_only=True):
    """A file of a provider snapshot: one blob (`blob`), or, above the chunking threshold,
    its content-defined chunks in order (`chunks`, `blob` None: a whole-file hash would
    cost a second pass over the file); `size` is the file's."""

    path: str  # relative to the data directory, '/'-separated
    blob: str | None = None
    size: int
    mode: int = 0o644
    chunks: list[SnapshotChunk] = msgspec.field(default_factory=list)


class ProviderSnapshot(Event, tag="memory.provider.snapshot", kw_only=True):
    """The provider's data directory as it stood after a task (files as blobs, each
    stored once whatever the number of snapshots holding it)."""

    sequence_id: str
    instance_id: str | None = None
    order: int = 0
    pass_: str = PASS
    attempt: int = 1
    files: list[SnapshotFile] = msgspec.field(default_factory=list)
    total_bytes: int = 0


class TaskValidity(msgspec.Struct, frozen=True, kw_only=True):
    """What `swecl validate` found for one task on this host."""

    instance_id: str
    gradeable: bool
    gold: str  # grade status of the gold patch
    noop: str  # ... of a patch that changes no code (the tests run, the fix is absent)
    empty: str  # ... of the empty patch
    reason: str | None = None  # why not gradeable, in the grader's words
    # PASS_TO_PASS tests that fail here with the gold patch and with the no-op patch alike:
    # SWE-bench's own validation keeps a test in PASS_TO_PASS only if it passes before and
    # after the fix, so grades on this host leave these out (recorded on each grade)
    p2p_excluded: list[str] = msgspec.field(default_factory=list)


class TasksValidated(Event, tag="tasks.validated", kw_only=True):
    """SWE-bench's validation step on this host: the tasks whose gold patch does not
    resolve (PASS_TO_PASS tests failing here with and without the fix left out), or
    whose no-op patch passes FAIL_TO_PASS, are not gradeable here. Metrics report them as
    missing (with the reason), never as the agent's 0. A later validation of the same
    task replaces an earlier one."""

    runs: dict[str, str]  # patch kind (gold, noop, empty) -> run version that graded it
    tasks: list[TaskValidity]


# --- environment recipes (`swecl env verify`) ----------------------------------------------


class VerifiedFailure(msgspec.Struct, frozen=True, kw_only=True):
    test: str
    status: str  # FAILED or ERROR
    cause: str = ""  # the log's own words (pytest's summary message, the traceback's last line)


class EnvVerified(Event, tag="env.verified", kw_only=True):
    """`swecl env verify`: one repo@version's environment recipe run on this host, as a
    task of that version gets it (spec, era cut-off, install), on the repository's release
    sdist or a checkout, with the version's test modules sampled. It checks the recipe, not
    any task's gold patch; grades and validations never read it."""

    repo: str
    version: str
    source: str = ""  # `sdist NAME-X.Y.Z.tar.gz`, `checkout at COMMIT`, `directory as it is`
    cutoff: str | None = None  # the era cut-off the build resolved packages as of
    cutoff_from: str = ""  # where it came from (the setup commit, or --cutoff)
    env_key: str | None = None
    python: str | None = None  # the interpreter's version
    built: bool = False  # False: an environment of the cache was reused
    build_ok: bool = False
    build_s: float = 0.0
    install_ok: bool | None = None  # None: not reached, or the spec installs nothing
    tests: list[str] = msgspec.field(default_factory=list)  # the sample the test command was given
    collected: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    failures: list[VerifiedFailure] = msgspec.field(default_factory=list)
    exit_code: int | None = None
    duration_s: float = 0.0  # the whole check of this version
    error: str | None = None  # why it stopped short (no era, no sdist, build or install failed, no results)
    warnings: list[str] = msgspec.field(default_factory=list)


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


class UnknownEvent(msgspec.Struct, frozen=True):
    """A row whose type this swecl does not know (written by a newer one); kept raw."""

    type: str
    raw: dict[str, Any]


EVENT_TYPES: tuple[type[Event], ...] = (
    RunStarted,
    RunResumed,
    RunForked,
    RunBudgetReached,
    RunFinished,
    PassStarted,
    PassFinished,
    TaskStarted,
    TaskAbandoned,
    TaskFinished,
    AgentFinished,
    AgentEgress,
    GradeFinished,
    GradeCorrected,
    MemoryWritten,
    MemoryRejected,
    MemoryRecalled,
    MemorySeeded,
    DreamStarted,
    MemoryPruned,
    MemoryMerged,
    MemorySuperseded,
    DreamFinished,
    TasksValidated,
    ProviderStarted,
    ProviderCalled,
    ProviderSnapshot,
    CounterfactualStarted,
    CounterfactualFinished,
    EnvVerified,
)

AnyEvent = Union[EVENT_TYPES]  # type: ignore[valid-type]

BY_TYPE: dict[str, type[Event]] = {cls.type_name(): cls for cls in EVENT_TYPES}
