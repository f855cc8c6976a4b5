"""The audit's reads of the ledger: the run's `run.started`, the attempts of its tasks,
one fold of the run's memory projection with a snapshot of the recalled items at each
`memory.recalled`, blobs, and the provenance of an item (`_Context`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from ledger import Ledger, LedgerError, Recorded, StreamRange, SweclError
from ledger.events import MemoryRecalled, RunStarted
from projections._cut import OrderCut
from projections._fork import read_run
from projections._passes import pass_rank
from projections._runs import run_started_record
from projections.memory import MemoryItem, MemoryState, SeedRecord, decode_export, memory_projection, run_of

from ._model import Attempt, CopyHop, Decision, Provenance, WrittenBy

# -- reading the ledger -------------------------------------------------------------------


@dataclass
class _AttemptEvents:
    started_seq: int | None = None
    abandoned: tuple[int, str] | None = None
    finished: tuple[int, str, bool | None] | None = None
    grade: tuple[str, bool | None] | None = None
    patch: str | None = None
    has_agent: bool = False


AttemptKey = tuple[str, str, int, int]  # (sequence_id, pass, order, attempt)


def run_started(ledger: Ledger, version: str) -> RunStarted:
    """The run.started of `version`; a SweclError when there is no such run."""
    return run_started_record(ledger, version, doing="audit").event


def before_cut(cut: OrderCut | None, rec: Recorded) -> bool:
    """Whether `rec` (an event of one sequence) precedes the cut: the run as a serial run's
    ledger stood before its initial task K started (`projections.order_cut`); no cut, all."""
    return cut is None or cut.keeps(rec.seq, rec.type, rec.event)


def _attempt_events(
    ledger: Ledger, version: str, keep: Callable[[Any], bool], cut: OrderCut | None = None
) -> dict[AttemptKey, _AttemptEvents]:
    types = ["task.started", "task.abandoned", "task.finished", "agent.finished", "grade.finished", "grade.corrected"]
    out: dict[AttemptKey, _AttemptEvents] = {}
    for rec in read_run(ledger, version, types):  # a fork's tasks before K: its source's events
        ev = rec.event
        if not (keep(ev) and before_cut(cut, rec)):
            continue
        a = out.setdefault((ev.sequence_id, ev.pass_, ev.order, ev.attempt), _AttemptEvents())
        if rec.type == "task.started":
            a.started_seq = rec.seq if a.started_seq is None else a.started_seq
        elif rec.type == "task.abandoned":
            a.abandoned = (rec.seq, ev.reason)
        elif rec.type == "task.finished":
            a.finished = (rec.seq, ev.status, ev.resolved)
        elif rec.type == "agent.finished":
            a.has_agent = True
            a.patch = ev.patch
        else:
            a.grade = (ev.status, ev.resolved)
    return out


def _attempts(events: dict[AttemptKey, _AttemptEvents]) -> dict[AttemptKey, Attempt]:
    latest: dict[tuple[str, str, int], int] = {}
    for seq_id, pass_, order, attempt in events:
        latest[(seq_id, pass_, order)] = max(latest.get((seq_id, pass_, order), 0), attempt)
    out: dict[AttemptKey, Attempt] = {}
    for key in sorted(events, key=lambda k: (k[0], pass_rank(k[1]), k[2], k[3])):
        a = events[key]
        seq_id, pass_, order, attempt = key
        if a.abandoned is not None:
            status, ended = "abandoned", a.abandoned[0]
        elif a.finished is not None:
            status, ended = "finished", a.finished[0]
        else:
            status, ended = "unfinished", None
        grade_status, resolved = a.grade if a.grade is not None else (
            (a.finished[1], a.finished[2]) if a.finished is not None else (None, None)
        )
        out[key] = Attempt(
            pass_=pass_,
            attempt=attempt,
            status=status,
            in_force=attempt == latest[(seq_id, pass_, order)] and status != "abandoned",
            started_seq=a.started_seq,
            ended_seq=ended,
            grade_status=grade_status,
            resolved=resolved,
            abandon_reason=a.abandoned[1] if a.abandoned is not None else None,
            agent_patch=a.patch,
        )
    return out


def fold_with_snapshots(
    ledger: Ledger, version: str, wanted: Callable[[MemoryRecalled], bool], cut: OrderCut | None = None
) -> tuple[MemoryState, list[tuple[Recorded, dict[str, MemoryItem]]]]:
    """The run's substrate at the head, and for each wanted recall of the run the
    recalled items as they stood when it was made; with `cut`, only the recalls made
    before the cut (`before_cut`)."""
    projection = memory_projection(ledger, version)
    sel = projection.selection()
    state = projection.initial()
    recalls: list[tuple[Recorded, dict[str, MemoryItem]]] = []
    for rec in ledger.read(types=sel.types, ranges=list(sel.ranges or ())):
        if rec.type == "memory.recalled" and run_of(rec.stream) == version and rec.stream != f"run/{version}":
            if wanted(rec.event) and before_cut(cut, rec):
                snap = {
                    hit.item_id: msgspec.structs.replace(state.items[hit.item_id])
                    for hit in rec.event.results
                    if hit.item_id in state.items
                }
                recalls.append((rec, snap))
        state = projection.apply(state, rec)
    return state, recalls


class _Blobs:
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.cache: dict[str, str | None] = {}

    def text(self, digest: str | None) -> str | None:
        if not digest:
            return None
        if digest not in self.cache:
            try:
                self.cache[digest] = self.ledger.get_blob(digest).decode("utf-8", errors="replace")
            except LedgerError:
                self.cache[digest] = None
        return self.cache[digest]

    def raw(self, digest: str) -> bytes | None:
        try:
            return self.ledger.get_blob(digest)
        except LedgerError:
            return None


# -- provenance ---------------------------------------------------------------------------


class _Context:
    """What every hit of one audit needs: the final state, attempts of written-by tasks, blobs."""

    def __init__(self, ledger: Ledger, version: str, state: MemoryState) -> None:
        self.ledger = ledger
        self.version = version
        self.state = state
        self.blobs = _Blobs(ledger)
        self.seeds = {s.seq: s for s in state.seeds}
        self.dreams = {d.dream_id: d for d in state.dreams}
        self.supersedes: dict[str, list[str]] = {}
        for other in sorted(state.items.values(), key=lambda i: i.item_id):
            if other.superseded_by:
                self.supersedes.setdefault(other.superseded_by, []).append(other.item_id)
        self._finished: dict[tuple[str, str, str, int], list[tuple[int, int]]] | None = None
        self._exports: dict[str, dict[str, Any]] = {}

    def finished_attempts(self) -> dict[tuple[str, str, str, int], list[tuple[int, int]]]:
        """(run, sequence, pass, order) -> [(seq, attempt)] of task.finished, for the
        runs whose items this substrate holds."""
        if self._finished is None:
            runs = sorted({i.written_in for i in self.state.items.values() if i.written_in})
            found: dict[tuple[str, str, str, int], list[tuple[int, int]]] = {}
            if runs:
                for rec in self.ledger.read(types=["task.finished"], ranges=[StreamRange(f"run/{r}") for r in runs]):
                    ev = rec.event
                    found.setdefault((run_of(rec.stream), ev.sequence_id, ev.pass_, ev.order), []).append(
                        (rec.seq, ev.attempt)
                    )
            self._finished = found
        return self._finished

    def written_attempt(self, item: MemoryItem) -> int | None:
        """The attempt whose task.finished the daydream's memory.written followed."""
        if item.sequence_id is None or item.source_order is None:
            return None
        runs = self.finished_attempts().get(
            (item.written_in, item.sequence_id, item.source_pass or "initial", item.source_order), []
        )
        before = [attempt for seq, attempt in runs if seq < item.written_seq]
        return before[-1] if before else None

    def export_record(self, seed: SeedRecord | None, item_id: str) -> dict[str, Any] | None:
        if seed is None or not seed.items_blob:
            return None
        if seed.items_blob not in self._exports:
            raw = self.blobs.raw(seed.items_blob)
            doc = None
            if raw is not None:
                try:
                    doc = decode_export(raw, seed.source_path or "items blob")
                except SweclError:
                    doc = None
            self._exports[seed.items_blob] = (
                {
                    "ledger_id": doc.ledger_id,
                    "version": doc.version,
                    "as_of_seq": doc.as_of_seq,
                    "items": {i.item_id: i for i in doc.items},
                }
                if doc is not None
                else {}
            )
        doc = self._exports[seed.items_blob]
        exported = doc.get("items", {}).get(item_id)
        if exported is None:
            return None
        return {
            "ledger_id": doc["ledger_id"],
            "version": doc["version"],
            "as_of_seq": doc["as_of_seq"],
            "written_in": exported.written_in,
            "written_seq": exported.written_seq,
            "written_at": exported.written_at,
            "origin": msgspec.to_builtins(exported.origin),
            "history": msgspec.to_builtins(exported.history),
        }

    def provenance(self, item: MemoryItem, recall_seq: int) -> Provenance:
        hops: list[CopyHop] = []
        upstream = None
        first = item.origin[0] if item.origin else None
        imported = any(h.via == "imported" for h in item.origin)
        for hop in item.origin[1:]:
            seed = self.seeds.get(hop.seq) if hop.seq is not None else None
            if hop.via == "imported" and seed is None:
                seed = next((s for s in self.state.seeds if s.target == hop.run and s.source_path == hop.path), None)
            hops.append(
                CopyHop(
                    via=hop.via,
                    into=hop.run,
                    seq=hop.seq,
                    source_run=seed.source_run if seed is not None else None,
                    source_seq=seed.source_seq if seed is not None else None,
                    path=hop.path if hop.path is not None else (seed.source_path if seed is not None else None),
                    chosen=seed.chosen if seed is not None else None,
                )
            )
            if hop.via == "imported" and upstream is None:
                upstream = self.export_record(seed, item.item_id)
        written = WrittenBy(
            run=first.run if first is not None else item.source_run,
            seq=None if imported else item.written_seq,
            time=None if imported else item.written_at,
            sequence_id=item.sequence_id,
            instance_id=item.source_instance,
            order=item.source_order,
            pass_=item.source_pass,
            attempt=None if imported else self.written_attempt(item),
            outcome=item.outcome,
            kind=item.kind,
            extractor=item.extractor,
        )
        decisions = []
        for change in item.history:
            dream = self.dreams.get(change.dream_id) if change.dream_id else None
            decisions.append(
                Decision(
                    status=change.status if change.reason not in ("written", "rewritten") else change.reason,
                    seq=change.seq,
                    reason=change.reason,
                    by=change.by,
                    dream_id=change.dream_id,
                    dream_run=dream.run if dream is not None else None,
                    dream_reason=dream.reason if dream is not None else None,
                )
            )
        at_recall = [c for c in item.history if c.seq < recall_seq]
        return Provenance(
            written=written,
            hops=hops,
            decisions=decisions,
            status_at_recall=at_recall[-1].status if at_recall else "unwritten",
            status_now=item.status,
            merged_into=item.merged_into,
            merged_from=list(item.merged_from),
            superseded_by=item.superseded_by,
            supersedes=self.supersedes.get(item.item_id, []),
            derived_from=list(item.derived_from),
            upstream=upstream,
        )
