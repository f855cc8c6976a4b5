"""The memory funnel of a run: per task of its initial pass, whether what its dependencies
learned was stored, retrieved and used, and whether it resolved (the design's "The memory
funnel", section 7).

A pure function of the ledger's events up to a cursor: the run's plan (`run.started.tasks`,
with each task's `dependencies`), the attempts in force (`OutcomeProjection`, a fork's
forked-from tasks spliced in), one fold of the run's memory projection (the substrate at
each task's `task.started`, and what its recalls returned), a memory server's recorded
calls attributed as the audit attributes them (`projections.audit._provider`), a
full-history prompt's `memory.history` events, the agents' patches, and the verdicts of
`swecl counterfactual` re-runs of the task.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ledger import Ledger, Recorded, StreamRange
from ledger.events import RunStarted
from projections._counterfactuals import HARMFUL, NECESSARY, NO_EFFECT, counterfactual_verdicts
from projections._fork import ForkLink, Splice, fork_links, read_run
from projections._outcomes import Cell, outcome_projection
from projections._provider_calls import blob_text, memory_server_named
from projections._runner import Projector
from projections._runs import run_started_record
from projections.audit import iter_provider_recalls, seeded_server_writes, server_calls, server_tools
from projections.memory import MemoryItem, memory_projection

from ._counts import macro_of, sequence_counts
from ._model import (
    HISTORY,
    ITEM,
    NO_DEPENDENCY,
    RETRIEVAL_GAP,
    SERVER,
    STORAGE_GAP,
    USE_GAP,
    RunFunnel,
    SequenceFunnel,
    Source,
    TaskFunnel,
)
from ._patch import Touched, named_in, shared, touched

HISTORY_TYPE = "memory.history"  # the full-history arm's event (its class may be unknown here)
NO_MEMORY = "a run without memory (memory mode off): nothing is stored or recalled"
NO_DEPENDENCIES = ("recorded before the plan held dependencies (run.started.tasks[].dependencies): "
                   "the funnel needs them")


@dataclass
class _Task:
    """A task of the plan being worked out: what it needs and what the reads found."""

    sequence_id: str
    order: int
    instance_id: str
    deps: frozenset[str]
    cell: Cell | None
    stored: list[Source] = field(default_factory=list)
    retrieved: list[Source] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)  # a retrieved server/history source's ref -> its text

    @property
    def key(self) -> tuple[str, int, int]:
        assert self.cell is not None
        return (self.sequence_id, self.order, self.cell.attempt)


def field_of(event: Any, name: str) -> Any:
    """A field of an event, decoded or not (a type this swecl does not know decodes as
    `UnknownEvent`, its payload kept raw; `pass_` is `pass` on the wire)."""
    raw = getattr(event, "raw", None)
    if isinstance(raw, dict):
        return raw.get("pass" if name == "pass_" else name)
    return getattr(event, name, None)


class _Upto:
    """A cut at a seq, in the shape `iter_provider_recalls` takes (`OrderCut.keeps`)."""

    def __init__(self, upto: int) -> None:
        self.upto = upto

    def keeps(self, seq: int, _type: str, _event: Any) -> bool:
        return seq <= self.upto


def _memory_kind(ledger: Ledger, started: RunStarted, version: str, splice: Splice, cursor: int) -> tuple[str, list[Recorded]]:
    """How the run remembers ("substrate", "server NAME", "history", "none") and its
    memory.history events (none before the full-history arm exists)."""
    history = [rec for rec in ledger.read(types=[HISTORY_TYPE], ranges=splice.ranges(), upto=cursor)
               if splice.keeps(rec)]
    if history or started.memory_mode == "history":  # a full-history run records it so (before any task, too)
        return "history", history
    server = memory_server_named(ledger, version, started.config, started.sequences)
    if server is not None:
        return f"server {server}", history
    return ("none" if started.memory_mode == "off" else "substrate"), history


def funnel(ledger: Ledger, version: str, *, upto: int | None = None) -> RunFunnel:
    """The memory funnel of run `version`'s initial pass as of seq `upto` (default: the head);
    `na` says why a run has none (no memory, or no dependencies recorded)."""
    head = ledger.head()
    cursor = head if upto is None else max(0, min(upto, head))
    started = run_started_record(ledger, version, doing="show a memory funnel of").event
    links = fork_links(ledger, version, cursor)
    splice = Splice(version, links)
    memory, history = _memory_kind(ledger, started, version, splice, cursor)
    out = RunFunnel(version=version, stage=started.stage, memory=memory, upto=cursor)
    if memory == "none":
        return _na(out, NO_MEMORY)
    if any(t.dependencies is None for plan in started.tasks.values() for t in plan):
        return _na(out, NO_DEPENDENCIES)
    outcomes = Projector(ledger, memo=0).run(outcome_projection(ledger, version), upto=cursor).state
    tasks: list[_Task] = []
    for sequence_id in started.sequences:
        cells = outcomes.sequences[sequence_id].passes.get("initial", {}) if sequence_id in outcomes.sequences else {}
        tasks += [_Task(sequence_id, t.order, t.instance_id, frozenset(t.dependencies or ()), cells.get(t.order))
                  for t in started.tasks.get(sequence_id, [])]
    ran = [t for t in tasks if t.cell is not None and t.deps]
    if memory == "substrate":
        _substrate(ledger, version, cursor, splice, ran)
    elif memory == "history":
        _history(ledger, history, ran, tasks)
    else:
        _server(ledger, version, started, cursor, ran)
    patches = _patches(ledger, version, cursor, ran)
    verdicts = _counterfactual_instances(ledger, version, cursor)
    done = [_task_funnel(ledger, version, t, patches.get(t.key) if t.cell else None,
                         t.instance_id in verdicts, cursor) for t in tasks]
    if links and memory.startswith("server "):
        done = _source_tasks(ledger, links[0], done)  # links[0]: the run's own fork
    for sequence_id in started.sequences:
        mine = [t for t in done if t.sequence_id == sequence_id]
        out.sequences.append(SequenceFunnel(sequence_id=sequence_id, counts=sequence_counts(mine), tasks=mine))
    out.macro = macro_of([s.counts for s in out.sequences])
    return out


def _source_tasks(ledger: Ledger, link: ForkLink, done: list[TaskFunnel]) -> list[TaskFunnel]:
    """A fork of a memory server run: its tasks before K are its source's (their events are
    spliced in), and so are their server calls, which only the source's streams hold. Those
    tasks' funnel is the source's as of the fork (a fork of a fork follows the chain)."""
    source = funnel(ledger, link.source, upto=link.upto)
    theirs = {(t.sequence_id, t.instance_id): t for s in source.sequences for t in s.tasks} if source.na is None else {}
    return [theirs.get((t.sequence_id, t.instance_id), t) if t.order < link.before_order else t for t in done]


def _na(out: RunFunnel, reason: str) -> RunFunnel:
    out.na = reason
    return out


# -- stored and retrieved ------------------------------------------------------------------


def _item_source(item: MemoryItem) -> Source:
    return Source(kind=ITEM, ref=item.item_id, instance_id=item.source_instance or "", files=list(item.files),
                  symbols=list(item.symbols))


def _substrate(ledger: Ledger, version: str, cursor: int, splice: Splice, tasks: list[_Task]) -> None:
    """One fold of the run's substrate: the live items of each task's dependencies as its
    `task.started` found them, and the dependencies' items its recalls returned."""
    at: dict[int, list[_Task]] = {}
    for t in tasks:
        assert t.cell is not None
        at.setdefault(t.cell.started_seq, []).append(t)
    pending = sorted(at)
    by_key = {t.key: t for t in tasks}
    projection = memory_projection(ledger, version, cursor)
    sel = projection.selection()
    state = projection.initial()

    def snapshot(seq: int) -> None:
        for t in at[seq]:
            t.stored = [_item_source(i) for i in sorted(state.items.values(), key=lambda i: i.item_id)
                        if i.live and i.source_instance in t.deps]

    for rec in ledger.read(types=sel.types, ranges=list(sel.ranges or ()), upto=cursor):
        while pending and pending[0] <= rec.seq:  # the state before this event: as the task started
            snapshot(pending.pop(0))
        if rec.type == "memory.recalled" and splice.keeps(rec):
            ev = rec.event
            task = by_key.get((ev.sequence_id, ev.order, ev.attempt)) if ev.pass_ == "initial" else None
            if task is not None:
                for hit in sorted(ev.results, key=lambda h: h.rank):
                    item = state.items.get(hit.item_id)
                    if item is not None and item.source_instance in task.deps and \
                            all(s.ref != hit.item_id for s in task.retrieved):
                        task.retrieved.append(_with_patch(ledger, _item_source(item), item.patch))
        state = projection.apply(state, rec)
    for seq in pending:
        snapshot(seq)


def _with_patch(ledger: Ledger, source: Source, patch: str | None) -> Source:
    """An item's files and functions, with those of the patch it holds."""
    held = touched(blob_text(ledger, patch))
    if not held.files and not held.functions:
        return source
    return Source(kind=source.kind, ref=source.ref, instance_id=source.instance_id,
                  files=sorted(set(source.files) | held.files), symbols=sorted(set(source.symbols) | held.functions))


def _server(ledger: Ledger, version: str, started: RunStarted, cursor: int, tasks: list[_Task]) -> None:
    """A memory server's writes of the dependencies before each task started (the run's own
    initial-pass writes of the sequence, and its copy-seed's), and its recall calls' lines
    attributed to them."""
    config = started.config
    for sequence_id in sorted({t.sequence_id for t in tasks}):
        mine = [t for t in tasks if t.sequence_id == sequence_id]
        seeded = seeded_server_writes(ledger, version, sequence_id, frozenset({version}), lambda run: server_tools(ledger, run))
        tools = server_tools(ledger, version)
        own = [(seq, ev) for seq, ev in server_calls(ledger, f"run/{version}/{sequence_id}", tools, upto=cursor)
               if ev.pass_ == "initial" and tools.writes(ev)]
        for t in mine:
            assert t.cell is not None
            writes = [(w.seq, w.event) for w in seeded] + [(s, ev) for s, ev in own if s < t.cell.started_seq]
            t.stored = [Source(kind=SERVER, ref=f"provider:write@{seq}", instance_id=ev.instance_id)
                        for seq, ev in writes if ev.instance_id in t.deps]
        by_key = {(t.order, t.cell.attempt): t for t in mine if t.cell is not None}
        recalls = iter_provider_recalls(
            ledger, version, sequence_id, recall_tool=config.get("memory_recall_tool"),
            write_tool=config.get("memory_write_tool"), cut=_Upto(cursor),  # type: ignore[arg-type]
            wanted=lambda ev: ev.pass_ == "initial" and (ev.order, ev.attempt) in by_key)
        for recall in recalls:
            task = by_key[(recall.order, recall.attempt)]
            for w in recall.writes:
                if w.instance_id not in task.deps:
                    continue
                ref = f"provider:write@{w.seq}"
                text = "\n".join(line.text for line in recall.lines if line.write_seq == w.seq)
                task.texts[ref] = task.texts.get(ref, "") + "\n" + text
                if all(s.ref != ref for s in task.retrieved):
                    task.retrieved.append(Source(kind=SERVER, ref=ref, instance_id=w.instance_id))


def _history(ledger: Ledger, history: list[Recorded], tasks: list[_Task], plan: list[_Task]) -> None:
    """A full-history prompt: a dependency is stored when its initial-pass attempt in force
    had finished before the task started (the history holds every finished task), retrieved
    when the task's `memory.history` lists it among the prompt's entries."""
    finished = {(t.sequence_id, t.instance_id): t.cell.finished_seq for t in plan if t.cell is not None}
    by_key = {t.key: t for t in tasks}
    for t in tasks:
        assert t.cell is not None
        t.stored = [Source(kind=HISTORY, ref=f"history:{dep}", instance_id=dep) for dep in sorted(t.deps)
                    if (done := finished.get((t.sequence_id, dep))) is not None and done < t.cell.started_seq]
    for rec in history:
        ev = rec.event
        if field_of(ev, "pass_") != "initial":
            continue
        task = by_key.get((field_of(ev, "sequence_id"), field_of(ev, "order"), field_of(ev, "attempt")))
        if task is None:
            continue
        text = blob_text(ledger, field_of(ev, "text")) or ""
        for dep in field_of(ev, "entries") or []:
            if dep in task.deps and all(s.instance_id != dep for s in task.retrieved):
                ref = f"history@{rec.seq}:{dep}"
                task.retrieved.append(Source(kind=HISTORY, ref=ref, instance_id=dep))
                task.texts[ref] = text
    for t in tasks:  # what was given had been kept: a dependency the prompt lists is stored
        for s in t.retrieved:
            if all(x.instance_id != s.instance_id for x in t.stored):
                t.stored.append(Source(kind=HISTORY, ref=f"history:{s.instance_id}", instance_id=s.instance_id))


# -- used and resolved ---------------------------------------------------------------------


def _patches(ledger: Ledger, version: str, cursor: int, tasks: Iterable[_Task]) -> dict[tuple[str, int, int], Touched]:
    """What each attempt in force's patch (`agent.finished.patch`) touches."""
    keys = {t.key for t in tasks}
    out: dict[tuple[str, int, int], Touched] = {}
    for rec in read_run(ledger, version, ["agent.finished"], upto=cursor):
        ev = rec.event
        key = (ev.sequence_id, ev.order, ev.attempt)
        if ev.pass_ == "initial" and key in keys:
            out[key] = touched(blob_text(ledger, ev.patch))
    return out


def _counterfactual_instances(ledger: Ledger, version: str, cursor: int) -> set[str]:
    """The tasks with a `swecl counterfactual` re-run recorded by the cursor."""
    return {rec.event.instance_id for rec in ledger.read(
        types=["counterfactual.started"], ranges=[StreamRange(f"counterfactual/{version}")], upto=cursor)}


def _override(ledger: Ledger, version: str, t: _Task, cursor: int) -> str | None:
    """The counterfactual verdict on the task's retrieved dependency items, when one decided:
    necessary or harmful (the items mattered), else no effect; None: none decided."""
    assert t.cell is not None
    keys = [s.ref for s in t.retrieved if s.kind == ITEM] + \
        sorted({f"provider:{s.instance_id}" for s in t.retrieved if s.kind == SERVER})
    if not keys:
        return None
    found = [v.verdict for v in counterfactual_verdicts(ledger, version, t.instance_id, {"initial": t.cell},
                                                          {"initial": keys}, pass_="initial", upto=cursor)
             if v.attempt == t.cell.attempt and set(v.hidden) & set(keys)]
    for verdict in (NECESSARY, HARMFUL, NO_EFFECT):
        if verdict in found:
            return verdict
    return None


def _task_funnel(ledger: Ledger, version: str, t: _Task, patch: Touched | None, has_counterfactual: bool,
                 cursor: int) -> TaskFunnel:
    cell = t.cell
    out = TaskFunnel(sequence_id=t.sequence_id, order=t.order, instance_id=t.instance_id,
                     dependencies=sorted(t.deps), attempt=cell.attempt if cell else None)
    if cell is None:
        return out
    out.status = cell.status
    out.resolved = cell.outcome == 1
    task_touched = patch or Touched()
    out.touched = task_touched.listed()
    out.stored_from = t.stored
    out.retrieved_from = t.retrieved
    out.stored = bool(t.stored) or bool(t.retrieved)
    out.retrieved = bool(t.retrieved)
    for s in t.retrieved:
        hit = shared(task_touched, set(s.files), set(s.symbols)) if s.kind == ITEM else \
            named_in(task_touched, t.texts.get(s.ref, ""))
        if hit:
            out.used_from.append(s)
    out.used = bool(out.used_from)
    out.used_by = "patch" if out.used else None
    verdict = _override(ledger, version, t, cursor) if has_counterfactual and t.retrieved else None
    if verdict is not None:
        out.used = verdict != NO_EFFECT
        out.used_by = f"counterfactual: {verdict}"
    out.label = _label(out)
    return out


def _label(t: TaskFunnel) -> str | None:
    if t.resolved:
        return None
    if not t.dependencies:
        return NO_DEPENDENCY
    if not t.stored:
        return STORAGE_GAP
    return RETRIEVAL_GAP if not t.retrieved else USE_GAP
