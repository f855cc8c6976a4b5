"""One builder of realistic ledgers, shared by the tests and the benchmarks.

It appends what a run of `commands.run` appends, through the real `Ledger` API, so a
test or a generated benchmark ledger never drifts from the runner's event sequence:

    b = LedgerBuilder.create(tmp_path / "ledger.db")
    b.start_run("1", stage="plugin-blank", plan={SEQ: [TaskRef("acme__w-1", 1, "acme/w", 1)]})
    b.pass_mark("1", SEQ, "initial", "started")
    b.task("1", SEQ, 1, patch=DIFF, recalls=[["item-a"]], write=b.item("1", SEQ, 1, "item-b"))
    b.pass_mark("1", SEQ, "initial", "finished")
    b.finish_run("1")

A task attempt is what the runner writes for one: `task.started`, one `memory.recalled`
per recall call, `agent.finished`, then `grade.finished` and `task.finished` (or
`task.abandoned`: a crash, and the resume runs attempt + 1), then the daydream's
`memory.written` of the initial pass, in the same transactions the runner uses.

Events go to a `Sink`. The default appends each group in its own transaction and hands
back the `Recorded` events (tests read their seqs); the benchmark generator passes a sink
that buffers thousands of events per transaction. `event_ids` makes the ids
deterministic (as the runner's are) from each event's place in the run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from ledger import Ledger, NewEvent, Recorded
from ledger.events import (
    AgentFinished,
    DreamFinished,
    DreamStarted,
    Event,
    GradeFinished,
    GradeStatus,
    MemoryRecalled,
    MemorySeeded,
    MemoryWritten,
    PassFinished,
    PassStarted,
    RecallHit,
    RunFinished,
    RunStarted,
    TaskAbandoned,
    TaskFinished,
    TaskRef,
    TaskStarted,
)

__all__ = ["Item", "LedgerBuilder", "LedgerSink", "Sink", "memory_item", "status_of"]

Hit = RecallHit | str | tuple[str, float]
"""A recall hit: a full `RecallHit`, an item id (scored by rank), or (item id, score)."""


class Sink(Protocol):
    """Where the builder's events go: one call is one transaction of the runner's."""

    def append(
        self, stream: str, events: Sequence[Event | NewEvent], *, blobs: Sequence[bytes], durable: bool,
        expected_version: int | None,
    ) -> list[Recorded]: ...


class LedgerSink:
    """Each group appended at once, in its own transaction (what the runner does)."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def append(
        self, stream: str, events: Sequence[Event | NewEvent], *, blobs: Sequence[bytes], durable: bool,
        expected_version: int | None,
    ) -> list[Recorded]:
        return self.ledger.append(stream, events, blobs=blobs, durable=durable, expected_version=expected_version)


def status_of(outcome: bool | int | None | str) -> str:
    """Shorthand outcomes of `run_pass`: 1/True resolved, 0/False unresolved, None
    infra_error (no valid verdict); a string is a status already."""
    if isinstance(outcome, str):
        return outcome
    return "infra_error" if outcome is None else "resolved" if outcome else "unresolved"


@dataclass(frozen=True)
class Item:
    """A daydream item to write after a task, filled in from that task (`LedgerBuilder.item`)."""

    item_id: str
    patch: str | None = None  # the diff it remembers, stored as a blob
    body: str = ""
    title: str = ""
    outcome: str = "resolved"


def _blob(data: str | bytes) -> tuple[str, bytes]:
    raw = data.encode() if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest(), raw


def memory_item(
    item_id: str,
    version: str,
    order: int | None = 1,
    *,
    sequence: str | None = "s",
    instance_id: str | None = None,
    repo: str = "acme/widgets",
    title: str = "",
    body: str = "",
    outcome: str | None = "resolved",
    patch: str | None = None,
    **fields: Any,
) -> MemoryWritten:
    """A daydream's item learned from task `order` of `sequence` in run `version`.
    `patch` is a blob hash; extra `fields` (files, symbols, tags, ttl_tasks, ...) pass on."""
    return MemoryWritten(
        item_id=item_id,
        kind=fields.pop("kind", "episode"),
        title=title or f"{item_id} title",
        body=body or f"body of {item_id}",
        repo=repo,
        source_run=fields.pop("source_run", version),
        sequence_id=sequence,
        source_instance=instance_id if instance_id is not None else f"{sequence}-{order}",
        source_order=order,
        source_pass="initial",
        outcome=outcome,
        patch=patch,
        **fields,
    )


class LedgerBuilder:
    """Appends runs as the runner does; see the module doc."""

    def __init__(
        self, ledger: Ledger | None = None, *, sink: Sink | None = None,
        event_ids: Callable[[str, tuple[object, ...]], str] | None = None,
    ) -> None:
        if sink is None:
            if ledger is None:
                raise ValueError("LedgerBuilder needs a ledger or a sink")
            sink = LedgerSink(ledger)
        self.ledger = ledger
        self.sink = sink
        self.event_ids = event_ids
        self.plans: dict[str, dict[str, list[TaskRef]]] = {}
        self._item_blobs: dict[str, bytes] = {}  # patches of items built, stored when written

    @classmethod
    def create(cls, path: Path) -> LedgerBuilder:
        return cls(Ledger.open(path, create=True))

    def close(self) -> None:
        if self.ledger is not None:
            self.ledger.close()

    # -- plumbing ----------------------------------------------------------------------

    def _append(
        self, version: str, stream: str, events: Sequence[tuple[Event, tuple[object, ...]]], *,
        blobs: Sequence[bytes] = (), durable: bool = False, expected_version: int | None = None,
    ) -> list[Recorded]:
        ids = self.event_ids
        blobs = [*blobs, *(self._item_blobs.pop(e.patch) for e, _ in events
                           if isinstance(e, MemoryWritten) and e.patch in self._item_blobs)]
        batch = [NewEvent(e, ids(version, key)) if ids else e for e, key in events]
        return self.sink.append(stream, batch, blobs=blobs, durable=durable, expected_version=expected_version)

    def task_of(self, version: str, sequence: str, order: int) -> TaskRef:
        """The plan's task; a run started without one names it `{sequence}-{order}`."""
        plan = self.plans.get(version, {}).get(sequence, [])
        if order <= len(plan):
            return plan[order - 1]
        return TaskRef(f"{sequence}-{order}", order, "acme/widgets", None)

    # -- runs and passes ---------------------------------------------------------------

    def start_run(
        self,
        version: str,
        *,
        stage: str = "plugin-blank",
        plan: Mapping[str, Sequence[TaskRef]] | None = None,
        sequences: Sequence[str] | None = None,
        benchmark: str = "swe-bench-cl",
        dataset_hash: str | None = None,
        memory_mode: str | None = None,
        agent: str = "demo",
        **fields: Any,
    ) -> Recorded | None:
        """`run.started`; `plan` maps each sequence to its tasks in order (none: `sequences`
        without a plan). Other RunStarted fields (passes, model, ...) pass on; passes
        default to the runner's for the memory mode."""
        tasks = {seq: list(ts) for seq, ts in (plan or {}).items()}
        self.plans[version] = tasks
        mode = memory_mode or ("off" if stage == "base" else "builtin" if stage == "builtin" else "plugin-real")
        # as the runner plans them: with memory off there is nothing to re-test against
        fields.setdefault("passes", ["initial"] if mode == "off" else ["initial", "retest", "baseline"])
        event = RunStarted(
            version=version,
            benchmark=benchmark,
            dataset_hash=dataset_hash or hashlib.sha256(repr(sorted(tasks)).encode()).hexdigest(),
            sequences=list(sequences if sequences is not None else tasks),
            stage=stage,
            memory_mode=mode,
            agent=agent,
            tasks=tasks,
            **fields,
        )
        out = self._append(version, f"run/{version}", [(event, ("run.started",))], expected_version=-1)
        return out[0] if out else None

    def seed(
        self, version: str, source: str, *, source_seq: int | None = None, item_count: int = 3, chosen: str = "explicit",
    ) -> Recorded | None:
        """`memory.seeded` from run `source` as of `source_seq` (default: the ledger's head)."""
        if source_seq is None and self.ledger is not None:
            source_seq = self.ledger.head()
        event = MemorySeeded(item_count=item_count, source_run=source, source_seq=source_seq, chosen=chosen)
        out = self._append(version, f"run/{version}", [(event, ("memory.seeded",))])
        return out[0] if out else None

    def finish_run(self, version: str, status: str = "finished") -> None:
        self._append(version, f"run/{version}", [(RunFinished(status=status), ("run.finished",))])

    def pass_mark(self, version: str, sequence: str, pass_: str, what: Literal["started", "finished"]) -> None:
        cls = PassStarted if what == "started" else PassFinished
        event = cls(sequence_id=sequence, pass_=pass_)
        self._append(version, f"run/{version}/{sequence}", [(event, (sequence, pass_, "pass", what))])

    def run_pass(
        self,
        version: str,
        sequence: str,
        pass_: str,
        outcomes: Sequence[bool | int | None | str],
        *,
        recalls: Mapping[int, Sequence[Hit]] | None = None,
        **task_fields: Any,
    ) -> None:
        """A whole pass over orders 1..len(outcomes) (see `status_of`), bracketed by
        pass.started/finished; `recalls` maps an order to the one recall it made."""
        self.pass_mark(version, sequence, pass_, "started")
        for order, outcome in enumerate(outcomes, start=1):
            hits = (recalls or {}).get(order)
            self.task(version, sequence, order, pass_=pass_, status=status_of(outcome),
                      recalls=[hits] if hits is not None else (), **task_fields)
        self.pass_mark(version, sequence, pass_, "finished")

    def dream(
        self, version: str, dream_id: str, decisions: Sequence[Event], *, reason: str = "manual",
        params: dict[str, Any] | None = None,
    ) -> None:
        """A dream in the run's header stream: started, its decisions, finished, at once."""
        events: list[tuple[Event, tuple[object, ...]]] = [
            (DreamStarted(dream_id=dream_id, reason=reason, params=params or {}), (dream_id, "dream.started"))
        ]
        events += [(d, (dream_id, n, d.__class__.__name__)) for n, d in enumerate(decisions, start=1)]
        events.append((DreamFinished(dream_id=dream_id, decisions=len(decisions)), (dream_id, "dream.finished")))
        self._append(version, f"run/{version}", events)

    # -- one task ----------------------------------------------------------------------

    def task_started(self, version: str, sequence: str, order: int, *, pass_: str = "initial", attempt: int = 1,
                     repo: str | None = None) -> list[Recorded]:
        t = self.task_of(version, sequence, order)
        event = TaskStarted(sequence_id=sequence, instance_id=t.instance_id, order=order, pass_=pass_, attempt=attempt,
                            repo=repo or t.repo, difficulty=t.difficulty)
        return self._append(version, f"run/{version}/{sequence}", [(event, (sequence, pass_, order, attempt, "task.started"))])

    def task(
        self,
        version: str,
        sequence: str,
        order: int,
        *,
        pass_: str = "initial",
        attempt: int = 1,
        status: str = "resolved",
        resolved: bool | None | Literal["auto"] = "auto",
        patch: str | bytes | None = None,
        recalls: Sequence[Sequence[Hit]] = (),
        query: str | None = None,
        abandon: bool = False,
        agent: Mapping[str, Any] | None = None,
        grade: Mapping[str, Any] | None = None,
        log: str | bytes | None = None,
        write: MemoryWritten | Item | None = None,
    ) -> list[Recorded]:
        """One attempt (see the module doc). `recalls` is one hit list per recall call;
        `agent` and `grade` are extra agent.finished / grade.finished fields; `write` is the
        daydream's item, written after an initial-pass attempt."""
        t = self.task_of(version, sequence, order)
        stream = f"run/{version}/{sequence}"
        key = (sequence, pass_, order, attempt)
        common: dict[str, Any] = dict(sequence_id=sequence, instance_id=t.instance_id, order=order, pass_=pass_,
                                      attempt=attempt)
        out = self._append(version, stream, [(TaskStarted(repo=t.repo, difficulty=t.difficulty, **common),
                                               (*key, "task.started"))])
        for n, hits in enumerate(recalls, start=1):
            out += self.recall(version, sequence, order, hits, pass_=pass_, attempt=attempt, query=query, call=n)
        blobs: list[bytes] = []
        agent_fields = {"agent": "demo", **(agent or {})}
        if patch is not None:
            agent_fields["patch"], raw = _blob(patch)
            blobs.append(raw)
        out += self._append(version, stream, [(AgentFinished(**agent_fields, **common), (*key, "agent.finished"))],
                            blobs=blobs)
        if abandon:
            out += self._append(version, stream, [(TaskAbandoned(reason="interrupted", **common), (*key, "task.abandoned"))])
            return out
        verdict = GradeStatus(status).resolved if resolved == "auto" else resolved
        grade_fields = {"grader": "swebench", **(grade or {})}
        blobs = []
        if log is not None:
            grade_fields["log"], raw = _blob(log)
            blobs.append(raw)
        events: list[tuple[Event, tuple[object, ...]]] = [
            (GradeFinished(status=status, resolved=verdict, **grade_fields, **common), (*key, "grade.finished")),
            (TaskFinished(resolved=verdict, status=status, **common), (*key, "task.finished")),
        ]
        if isinstance(write, Item):
            write = self.item(version, sequence, order, write.item_id, patch=write.patch, outcome=write.outcome,
                              **{k: v for k, v in (("body", write.body), ("title", write.title)) if v})
        if write is not None and pass_ == "initial":
            events.append((write, ("memory.written", write.item_id)))
        out += self._append(version, stream, events, blobs=blobs, durable=True)
        return out

    def recall(
        self,
        version: str,
        sequence: str,
        order: int,
        hits: Sequence[Hit],
        *,
        pass_: str = "initial",
        attempt: int = 1,
        query: str | None = None,
        via: str = "mcp",
        call: int = 1,
    ) -> list[Recorded]:
        t = self.task_of(version, sequence, order)
        text = query if query is not None else f"issue of {t.instance_id}"
        results = []
        for rank, hit in enumerate(hits, start=1):
            if isinstance(hit, RecallHit):
                results.append(hit)
            elif isinstance(hit, str):
                results.append(RecallHit(item_id=hit, score=round(10.0 / rank, 3), rank=rank))
            else:
                results.append(RecallHit(item_id=hit[0], score=hit[1], rank=rank))
        event = MemoryRecalled(
            sequence_id=sequence, instance_id=t.instance_id, order=order, pass_=pass_, attempt=attempt,
            query_hash=hashlib.sha256(text.encode()).hexdigest()[:16], query=text, repo=t.repo, results=results, via=via,
        )
        return self._append(version, f"run/{version}/{sequence}",
                            [(event, (sequence, pass_, order, attempt, "memory.recalled", call))])

    # -- memory ------------------------------------------------------------------------

    def item(
        self, version: str, sequence: str, order: int, item_id: str, *, patch: str | bytes | None = None, **fields: Any,
    ) -> MemoryWritten:
        """The daydream's item of task `order` (its instance and repo from the plan); its
        `patch` text is stored as a blob when the item is written."""
        t = self.task_of(version, sequence, order)
        if patch is not None:
            digest, raw = _blob(patch)
            self._item_blobs[digest] = raw
            fields["patch"] = digest
        fields.setdefault("title", f"{t.instance_id}: what was learned")
        fields.setdefault("body", f"Issue {t.instance_id}; fixed in {t.repo}.")
        return memory_item(item_id, version, order, sequence=sequence, instance_id=t.instance_id, repo=t.repo, **fields)

    def write(self, version: str, sequence: str | None, *events: Event, blobs: Sequence[bytes] = ()) -> list[Recorded]:
        """Memory events in `run/{version}/{sequence}` (a daydream), or with `sequence=None`
        in the run's header stream (where a seed import and a dream record theirs)."""
        stream = f"run/{version}/{sequence}" if sequence else f"run/{version}"
        keyed = [(e, ("memory", getattr(e, "item_id", None) or n)) for n, e in enumerate(events)]
        return self._append(version, stream, keyed, blobs=blobs)
