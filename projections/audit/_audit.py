"""The audit: which memories each task recalled, where they came from, whether the
agent used them, and whether any of them should not have been there.

Everything here is a pure function of the ledger (plus, optionally, the grading
secrets of the benchmark's tasks): one fold of the run's memory projection, with a
snapshot of the recalled items at each `memory.recalled`, and one read of the run's
task events. Nothing is written.

Reuse. A recalled item "was reused" when the agent's patch of that attempt repeats
the item's patch: the score is the share of the item's added lines (per file,
whitespace-normalised, blank lines ignored) that the agent's patch adds too. Added lines
are the fix; removed lines only say where the bug was, and any fix of the same bug
removes them, so they count only for a patch that adds nothing (`basis` says which).
`reused` is that score at or above `REUSE_THRESHOLD` (0.5: at least half of the
remembered fix reappears). Shared files are reported too, as a weaker signal.

Leakage flags of a recalled item, relative to the asking task:
- `same-instance`: written for this very task (same instance_id). Expected only in the
  re-test passes of the run that wrote it (the re-test measures retention with the
  end-of-sequence memory), so those are not flagged; from a seed (plugin-accum,
  plugin-dreamed over the same sequence) or an import it is the answer to the exam.
- `later-task`: written by a task later in the same sequence's order than the asking
  one (again, except this run's own items in its re-test passes): knowledge of the
  future, possible only through a seed or an import.
- `test-content`: the item (title, body, tags, files, symbols or patch) holds lines of
  the task's gold test patch or names its FAIL_TO_PASS / PASS_TO_PASS tests, by the
  rules governance applies at write time. Checked only when the benchmark's tasks are
  available (`commands.inputs.load_task_secrets`); otherwise the audit says so.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from ledger import Ledger, LedgerError, Recorded, StreamRange, SweclError
from ledger.events import MemoryRecalled, RunStarted, TaskRef
from projections.memory import DEFAULT_POLICY, GradingSecrets, leak_lines, test_names_pattern
from projections.memory import (
    MemoryItem,
    MemoryState,
    SeedRecord,
    decode_export,
    memory_projection,
    run_of,
    written_by,
)

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


class FlaggedTask(msgspec.Struct, kw_only=True):
    sequence_id: str
    instance_id: str
    order: int
    pass_: str = PASS
    attempts: list[int]
    kinds: list[str]
    items: list[str]  # flagged item ids, by first recall
    reused_items: list[str]  # of those, the ones the agent's patch reused


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


# -- patch overlap ------------------------------------------------------------------------

_HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
_DIFF_GIT = re.compile(r"^diff --git a/(.+?) b/(.+)$")


def _path(raw: str) -> str:
    raw = raw.strip().split("\t", 1)[0]
    return raw[2:] if raw.startswith(("a/", "b/")) else raw


def changed_lines(patch: str) -> set[tuple[str, str, str]]:
    """(file, '+'|'-', whitespace-normalised text) of every non-blank changed line.

    Hunks are read by their line counts, so a changed line that itself starts with
    `+++` or `---` is still a line, not a header.
    """
    out: set[tuple[str, str, str]] = set()
    current = ""
    old_left = new_left = 0
    for line in patch.splitlines():
        if old_left > 0 or new_left > 0:
            tag, text = line[:1], line[1:]
            if tag == "\\":
                continue
            if tag == "+":
                new_left -= 1
            elif tag == "-":
                old_left -= 1
            else:
                old_left -= 1
                new_left -= 1
                continue
            norm = " ".join(text.split())
            if norm:
                out.add((current, tag, norm))
            continue
        m = _DIFF_GIT.match(line)
        if m:
            current = _path(m.group(2))
            continue
        if line.startswith("+++ "):
            target = _path(line[4:])
            if target != "/dev/null":
                current = target
            continue
        if line.startswith("--- "):
            source = _path(line[4:])
            if source != "/dev/null" and not current:
                current = source
            continue
        h = _HUNK.match(line)
        if h:
            old_left = int(h.group(1)) if h.group(1) is not None else 1
            new_left = int(h.group(2)) if h.group(2) is not None else 1
    return out


def patch_reuse(item_patch: str | None, agent_patch: str | None) -> Reuse:
    """How much of the item's patch reappears in the agent's (see the module doc)."""
    if item_patch is None:
        return Reuse(compared=False, reason="the item has no patch")
    if agent_patch is None:
        return Reuse(compared=False, reason="the attempt has no agent patch")
    mine = changed_lines(item_patch)
    theirs = changed_lines(agent_patch)
    item_files = sorted({f for f, _, _ in mine})
    basis = "+" if any(sign == "+" for _, sign, _ in mine) else "-"
    mine_basis = {line for line in mine if line[1] == basis}
    theirs_basis = {line for line in theirs if line[1] == basis}
    if not mine_basis:
        return Reuse(compared=False, reason="the item's patch changes no lines", item_files=item_files)
    shared = mine_basis & theirs_basis
    score = round(len(shared) / len(mine_basis), 6)
    return Reuse(
        compared=True,
        score=score,
        reused=score >= REUSE_THRESHOLD,
        basis="added" if basis == "+" else "removed",
        shared_lines=len(shared),
        item_lines=len(mine_basis),
        agent_lines=len(theirs_basis),
        shared_files=sorted(set(item_files) & {f for f, _, _ in theirs}),
        item_files=item_files,
    )


# -- test content -------------------------------------------------------------------------


class TestContent:
    """The grading secrets of one task, compiled as governance compiles them."""

    __test__ = False  # not a pytest class

    def __init__(self, secrets: GradingSecrets) -> None:
        self.lines = leak_lines(secrets.test_patch, DEFAULT_POLICY.min_leak_line_chars)
        self.pattern = test_names_pattern(secrets)

    def find(self, fields: Mapping[str, str]) -> list[str]:
        """One detail per field that holds test content (empty: none)."""
        details = []
        for name, text in fields.items():
            flat = " ".join(text.split())
            lines = sum(1 for line in self.lines if line in flat)
            tests = sorted({m.group(0) for m in self.pattern.finditer(text)}) if self.pattern else []
            parts = []
            if lines:
                parts.append(f"{lines} line(s) of the gold test patch")
            if tests:
                parts.append("test name(s) " + ", ".join(tests[:5]) + (" ..." if len(tests) > 5 else ""))
            if parts:
                details.append(f"{name} holds " + " and ".join(parts))
        return details


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
    for rec in ledger.read_stream(f"run/{version}"):
        if rec.type == "run.started":
            return rec.event
        break
    raise SweclError(f"no run version {version!r} in {ledger.path}: nothing to audit")


def _attempt_events(ledger: Ledger, version: str, keep: Callable[[Any], bool]) -> dict[AttemptKey, _AttemptEvents]:
    types = ["task.started", "task.abandoned", "task.finished", "agent.finished", "grade.finished", "grade.corrected"]
    out: dict[AttemptKey, _AttemptEvents] = {}
    for rec in ledger.read(types=types, ranges=[StreamRange(f"run/{version}")]):
        ev = rec.event
        if not keep(ev):
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
    for key in sorted(events, key=lambda k: (k[0], _pass_rank(k[1]), k[2], k[3])):
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


def _pass_rank(name: str) -> tuple[int, int]:
    if name == "initial":
        return (0, 0)
    if name.startswith("retest-"):
        tail = name.split("-", 1)[1]
        return (1, int(tail) if tail.isdigit() else 0)
    return ({"retest": 2, "baseline": 3}.get(name, 4), 0)


def _fold_with_snapshots(
    ledger: Ledger, version: str, wanted: Callable[[MemoryRecalled], bool]
) -> tuple[MemoryState, list[tuple[Recorded, dict[str, MemoryItem]]]]:
    """The run's substrate at the head, and for each wanted recall of the run the
    recalled items as they stood when it was made."""
    projection = memory_projection(ledger, version)
    sel = projection.selection()
    state = projection.initial()
    recalls: list[tuple[Recorded, dict[str, MemoryItem]]] = []
    for rec in ledger.read(types=sel.types, ranges=list(sel.ranges or ())):
        if rec.type == "memory.recalled" and run_of(rec.stream) == version and rec.stream != f"run/{version}":
            if wanted(rec.event):
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


def _leak_flags(
    item: MemoryItem, version: str, task: TaskRef, sequence_id: str, pass_: str, checker: TestContent | None,
    patch_text: str | None,
) -> list[Flag]:
    flags: list[Flag] = []
    # A run's own items in its re-test passes are the design (retention), not a leak.
    own_retest = written_by(item, version) and pass_ != "initial"
    where = _where(item)
    if not own_retest and item.source_instance == task.instance_id:
        flags.append(Flag(kind="same-instance", detail=f"written for this same task {task.instance_id} {where}"))
    if (
        not own_retest
        and item.sequence_id == sequence_id
        and item.source_order is not None
        and item.source_order > task.order
    ):
        flags.append(
            Flag(
                kind="later-task",
                detail=f"written after task {item.source_order} of {sequence_id} {where}; this is task {task.order}",
            )
        )
    if checker is not None:
        fields = {
            "title": item.title,
            "body": item.body,
            "tags": "\n".join(item.tags),
            "files": "\n".join(item.files),
            "symbols": "\n".join(item.symbols),
            "patch": patch_text or "",
        }
        for detail in checker.find(fields):
            flags.append(Flag(kind="test-content", detail=detail))
    return flags


def _where(item: MemoryItem) -> str:
    origin = item.origin
    if not origin:
        return f"by v{item.source_run}"
    text = f"by v{origin[0].run}"
    for hop in origin[1:]:
        text += f", {hop.via} into v{hop.run}" + (f" from {hop.path}" if hop.path else "")
    return f"({text})"


# -- the audit ----------------------------------------------------------------------------


def _resolve_task(started: RunStarted, task_id: str) -> tuple[str, TaskRef]:
    matches = [(s, t) for s, plan in started.tasks.items() for t in plan if t.instance_id == task_id]
    if not matches and task_id.isdigit():
        matches = [(s, t) for s, plan in started.tasks.items() for t in plan if t.order == int(task_id)]
        if len(matches) > 1:
            raise SweclError(
                f"task order {task_id} is in {len(matches)} sequences of v{started.version}; give the instance_id"
            )
    if not matches:
        ids = [t.instance_id for plan in started.tasks.values() for t in plan]
        shown = ", ".join(ids[:4]) + (" ..." if len(ids) > 4 else "")
        raise SweclError(f"task {task_id!r} is not in the plan of v{started.version} ({len(ids)} tasks: {shown})")
    return matches[0]


def _secrets_for(secrets: Mapping[str, GradingSecrets] | None, instance_id: str) -> TestContent | None:
    if secrets is None:
        return None
    found = secrets.get(instance_id)
    return TestContent(found) if found is not None else None


def _audit_hits(
    ctx: _Context, rec: Recorded, snap: dict[str, MemoryItem], task: TaskRef, sequence_id: str,
    agent_patch: str | None, checker: TestContent | None,
) -> list[AuditedHit]:
    ev = rec.event
    hits = []
    agent_text = ctx.blobs.text(agent_patch)
    for hit in sorted(ev.results, key=lambda h: h.rank):
        item = snap.get(hit.item_id)
        final = ctx.state.items.get(hit.item_id)
        if item is None and final is None:
            hits.append(
                AuditedHit(
                    item_id=hit.item_id, rank=hit.rank, score=hit.score, known=False,
                    reuse=Reuse(compared=False, reason="the item is not in this run's substrate"),
                )
            )
            continue
        shown = item if item is not None else final
        assert shown is not None
        history_of = final if final is not None else shown
        patch_text = ctx.blobs.text(shown.patch)
        hits.append(
            AuditedHit(
                item_id=hit.item_id,
                rank=hit.rank,
                score=hit.score,
                known=True,
                title=shown.title,
                kind=shown.kind,
                repo=shown.repo,
                outcome=shown.outcome,
                provenance=ctx.provenance(history_of, rec.seq),
                reuse=patch_reuse(patch_text, agent_text),
                flags=_leak_flags(shown, ctx.version, task, sequence_id, ev.pass_, checker, patch_text),
                test_content_checked=checker is not None,
            )
        )
    return hits


def _agent_patch(attempt: Attempt | None) -> str | None:
    return attempt.agent_patch if attempt is not None else None


def audit_task(
    ledger: Ledger,
    version: str,
    task_id: str,
    *,
    pass_: str | None = None,
    secrets: Mapping[str, GradingSecrets] | None = None,
    dataset: DatasetNote | None = None,
) -> TaskAudit:
    """Every recall of task `task_id` (instance_id, or order in a one-sequence run) in
    run `version` (of pass `pass_` only, when given), across all its attempts."""
    started = run_started(ledger, version)
    sequence_id, task = _resolve_task(started, task_id)

    def mine(ev: Any) -> bool:
        return ev.sequence_id == sequence_id and ev.order == task.order and (pass_ is None or ev.pass_ == pass_)

    attempts = _attempts(_attempt_events(ledger, version, mine))
    state, recalls = _fold_with_snapshots(ledger, version, mine)
    ctx = _Context(ledger, version, state)
    checker = _secrets_for(secrets, task.instance_id)
    audited = []
    for rec, snap in recalls:
        ev = rec.event
        attempt = attempts.get((ev.sequence_id, ev.pass_, ev.order, ev.attempt))
        agent_patch = _agent_patch(attempt)
        audited.append(
            AuditedRecall(
                seq=rec.seq,
                time=rec.time,
                sequence_id=ev.sequence_id,
                pass_=ev.pass_,
                attempt=ev.attempt,
                attempt_status=attempt.status if attempt is not None else "unfinished",
                in_force=attempt.in_force if attempt is not None else False,
                via=ev.via,
                ranker=ev.ranker,
                query_hash=ev.query_hash,
                query=ev.query,
                repo=ev.repo,
                k=ev.k,
                agent_patch=agent_patch,
                hits=_audit_hits(ctx, rec, snap, task, sequence_id, agent_patch, checker),
            )
        )
    kinds = {f.kind for r in audited for h in r.hits for f in h.flags}
    return TaskAudit(
        version=version,
        stage=started.stage,
        instance_id=task.instance_id,
        sequence_id=sequence_id,
        order=task.order,
        repo=task.repo,
        pass_filter=pass_,
        dataset=dataset if dataset is not None else _dataset_note(secrets),
        reuse_threshold=REUSE_THRESHOLD,
        attempts=list(attempts.values()),
        recalls=audited,
        flags=[k for k in FLAG_KINDS if k in kinds],
    )


def audit_summary(
    ledger: Ledger,
    version: str,
    *,
    pass_: str | None = None,
    secrets: Mapping[str, GradingSecrets] | None = None,
    dataset: DatasetNote | None = None,
) -> RunAuditSummary:
    """Every task of run `version` with a flagged recall: its pass, attempts, flag kinds and items."""
    started = run_started(ledger, version)
    plan = {(s, t.order): t for s, tasks in started.tasks.items() for t in tasks}

    def wanted(ev: Any) -> bool:
        return pass_ is None or ev.pass_ == pass_

    attempts = _attempts(_attempt_events(ledger, version, wanted))
    state, recalls = _fold_with_snapshots(ledger, version, wanted)
    ctx = _Context(ledger, version, state)
    checkers: dict[str, TestContent | None] = {}
    flagged: dict[tuple[str, str, int], FlaggedTask] = {}
    hits_total = flagged_hits = reused_hits = 0
    by_kind = {k: 0 for k in FLAG_KINDS}
    for rec, snap in recalls:
        ev = rec.event
        task = plan.get((ev.sequence_id, ev.order)) or TaskRef(ev.instance_id, ev.order, ev.repo or "")
        if task.instance_id not in checkers:
            checkers[task.instance_id] = _secrets_for(secrets, task.instance_id)
        attempt = attempts.get((ev.sequence_id, ev.pass_, ev.order, ev.attempt))
        hits = _audit_hits(ctx, rec, snap, task, ev.sequence_id, _agent_patch(attempt), checkers[task.instance_id])
        hits_total += len(hits)
        for hit in hits:
            if hit.reuse.reused:
                reused_hits += 1
            if not hit.flags:
                continue
            flagged_hits += 1
            for kind in {f.kind for f in hit.flags}:
                by_kind[kind] += 1
            key = (ev.sequence_id, ev.pass_, ev.order)
            entry = flagged.get(key)
            if entry is None:
                entry = flagged[key] = FlaggedTask(
                    sequence_id=ev.sequence_id, instance_id=task.instance_id, order=ev.order, pass_=ev.pass_,
                    attempts=[], kinds=[], items=[], reused_items=[],
                )
            if ev.attempt not in entry.attempts:
                entry.attempts.append(ev.attempt)
            entry.kinds = [k for k in FLAG_KINDS if k in set(entry.kinds) | {f.kind for f in hit.flags}]
            if hit.item_id not in entry.items:
                entry.items.append(hit.item_id)
            if hit.reuse.reused and hit.item_id not in entry.reused_items:
                entry.reused_items.append(hit.item_id)
    ordered = sorted(flagged.values(), key=lambda f: (list(started.sequences).index(f.sequence_id)
                                                      if f.sequence_id in started.sequences else 0,
                                                      _pass_rank(f.pass_), f.order))
    return RunAuditSummary(
        version=version,
        stage=started.stage,
        dataset=dataset if dataset is not None else _dataset_note(secrets),
        reuse_threshold=REUSE_THRESHOLD,
        recalls=len(recalls),
        hits=hits_total,
        flagged_hits=flagged_hits,
        reused_hits=reused_hits,
        by_kind=by_kind,
        flagged=ordered,
    )


def _dataset_note(secrets: Mapping[str, GradingSecrets] | None) -> DatasetNote:
    if secrets is None:
        return DatasetNote(available=False, note="no dataset given: the test-content check was not run")
    return DatasetNote(available=True)
