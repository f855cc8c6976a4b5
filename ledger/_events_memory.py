"""The catalog's memory events: an item's content and its writing, rejection and
recall, seeding, a dream's decisions, and a user's own MCP memory server's handshake,
calls and data snapshots.

Part of the event catalog; import these names from `ledger.events`.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ._event_base import PASS, Event
from ._events_run import EgressConnection


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


class MemoryHistory(Event, tag="memory.history", kw_only=True):
    """The earlier tasks a full-history task's prompt carried (stage `full-history`): their
    instance ids, most recent first, cut to a token budget (tokens estimated as characters
    / 4). Appended when the attempt's agent is given its memory, as a recall is."""

    sequence_id: str
    instance_id: str
    order: int
    pass_: str = PASS
    attempt: int = 1
    entries: list[str]  # instance ids given, most recent first
    tokens: int  # estimate of the text given (characters / 4)
    budget: int  # --history-tokens
    dropped: int  # earlier tasks left out by the budget
    text: str | None = None  # blob: the prompt section as given (None: no section)


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
    # `--memory-server NAME`: the preset and the version of its package that ran (None: a
    # command line or URL given as is); the recall and write tools the harness calls, and
    # where they came from (None: the flags; preset; discovered from the tool list).
    preset: str | None = None
    preset_version: str | None = None
    recall_tool: str | None = None
    write_tool: str | None = None
    tools_from: str | None = None


class ProviderCalled(Event, tag="memory.provider.called", kw_only=True):
    """One tool call to the provider, by the task in flight (`via`: agent, or later the
    harness's own recall/write calls). `arguments` and `result` are blobs (JSON of the
    arguments; the result's text contents joined by newlines); `structured` the
    structured content when the tool gave one. `is_error` is the tool's own error
    answer; `error` an infrastructure failure (crash, hang, garbage, gone): the task's
    outcome is then the harness's, never the agent's. `egress`: the connections a confined
    server behind the egress proxy (a model gateway, `--memory-allow-host`) asked for that
    ended since its previous call (those of its start with its first call), allowed or
    refused: where else it tried to go."""

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
    egress: list[EgressConnection] = msgspec.field(default_factory=list)


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


class MemoryModelCalled(Event, tag="memory.model.called", kw_only=True):
    """One request of a memory server to its own model API (an OpenAI-compatible endpoint,
    `--memory-model-endpoint`), seen by swecl's recording gateway, which the server reaches
    as `{model_gateway}`: recorded under the task in flight (the provider call it came
    during, or the last one), as `memory.provider.called` is. No header, key or body is
    kept: the endpoint's host, the path, the model the request named, the kind (chat,
    embeddings, other), the answer's status and the tokens its `usage` reported (a
    streamed answer's last chunk with one). `cost_usd` is priced from swecl's table
    (`commands.run.memory`'s model prices) and None for a model it does not know or an
    answer without usage: never a false 0. `error` says why no answer came (`status` None)."""

    sequence_id: str
    instance_id: str
    order: int
    pass_: str = PASS
    attempt: int = 1
    via: str = "agent"  # the provider call's in flight: agent | recall | write | dream | replay | start
    call: int = 0  # 1, 2, ... per gateway (a provider host)
    host: str = ""  # upstream host[:port]
    method: str = "POST"
    path: str = ""  # upstream path, without its query
    model: str | None = None
    kind: str = "other"  # chat | embeddings | other
    stream: bool = False
    status: int | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    duration_s: float = 0.0
    error: str | None = None
