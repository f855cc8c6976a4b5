"""`swecl replay`: a run exactly as it stood before task K started, rebuilt from the ledger.

The cursor. In each sequence of the run, the state before initial-pass task K first
started is every event with a smaller seq: the sequence's cursor is that `task.started`
seq minus one (`_queries.sequence_cutoffs`). A sequence that never started task K (its
plan is shorter, or the run stopped before) has nothing after its cursor to hide: its
cursor is the ledger's head. The a(i,j) cells come from `OutcomeProjection(version,
before_order=K, cutoffs=...)` (tasks not yet run are missing cells, as in a ledger that
ends there), and the metrics of both formula sets are computed from those cells.

The memory cut of a run with several sequences. Memory is one substrate per run
version, but a task only ever recalls items of its own repository (recall filters by
repo), and each sequence is one repository's tasks. So the substrate a task of
sequence S could see is the run's substrate folded up to S's own cursor, restricted to
S's repository. The replayed substrate is assembled that way, repository by repository:
the items of repo R are those of the substrate as of R's cursor (the smallest cursor
among the sequences of R, if several share it); items of a repository no sequence of the
run works on (imported with a seed, say) are taken as of the smallest cursor of all,
the point every sequence had reached. With one sequence this is simply the substrate
as of that sequence's cursor (what `materialise_version(..., upto=cursor)` writes). The
substrate is folded once, in seq order, and each repository's items are copied as the
fold passes its cursor (`Projector.run_through`); only when a seed was recorded between
the cursors (so the folds at them select different events) is each cursor folded apart.

The output folder holds `_memory/` (the materialised layout: Markdown, memory.db,
graph.db, items.json; `ledger_id` left out of items.json, because the state, not the
file it was read from, is what is replayed), `outcomes.json` and `outcomes.csv` (the
cells and the a(i,j) vectors), `metrics.json` (native and eval-v1) and `replay.json`
(what was cut where, and the ledger's chain hash at the last cursor, which names the
exact history replayed). The same ledger and K always give the same bytes. A
`--memory-server` run's replay also holds `provider/{sequence}/data/`, the server's data
directory as it stood before task K (`_provider_snapshots.provider_cut`, restored by the
writer), and its manifest says so (`provider`).
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from ledger import Ledger, StreamRange
from projections.memory import (
    MemoryState,
    SeedRecord,
    load_memory,
    memory_projection,
)
from projections.metrics import FORMULAS, MetricsResult, compute, result_document

from ._cut import OrderCut, sequence_cutoffs
from ._fork import fork_links
from ._outcomes import OutcomeProjection, RunOutcomes
from ._passes import pass_rank, retest_row
from ._provider_snapshots import ProviderCut, provider_cut, provider_transport
from ._queries import check_order
from ._runner import Projector
from ._runs import run_started_record
from ._views import read_views

REPLAY_FORMAT = "swecl-replay"
REPLAY_FORMAT_VERSION = 1
MEMORY_SUBDIR = "_memory"
MANIFEST_FILE = "replay.json"
OUTCOMES_JSON = "outcomes.json"
OUTCOMES_CSV = "outcomes.csv"
METRICS_JSON = "metrics.json"
PROVIDER_SUBDIR = "provider"  # a --memory-server run's: provider/<sequence>/data/
CSV_COLUMNS = ("sequence_id", "pass", "order", "instance_id", "attempt", "done", "status", "resolved", "outcome")


@dataclass(frozen=True)
class Replay:
    """The state of a run before task K started: cursors, memory, cells and metrics."""

    version: str
    stage: str
    upto_order: int
    cursors: dict[str, int]  # sequence -> the last seq of its state
    repo_cursors: dict[str, int]  # repository -> the seq its memory items are taken as of
    other_cursor: int  # the seq items of any other repository are taken as of
    memory: MemoryState
    outcomes: RunOutcomes
    metrics: dict[str, MetricsResult]  # formula set -> result
    ledger_hash: str | None  # chain hash at the last cursor
    provider: ReplayProvider | None = None  # a --memory-server run's server data


@dataclass(frozen=True)
class ReplayProvider:
    """A `--memory-server` run's server data before task K: per sequence, what to restore
    into `provider/<sequence>/data/` (none for a server reached by URL: not restorable)."""

    transport: str  # stdio | http
    cuts: dict[str, ProviderCut]

    @property
    def restorable(self) -> bool:
        return self.transport == "stdio"

    def document(self) -> dict[str, Any]:
        if not self.restorable:
            return {"transport": self.transport, "restorable": False, "sequences": {}}
        return {
            "transport": self.transport,
            "restorable": True,
            "sequences": {
                s: {"dir": f"{PROVIDER_SUBDIR}/{s}/data/", "source": c.source, "seq": c.seq, "order": c.order,
                    "instance_id": c.instance_id, "files": len(c.files), "total_bytes": c.total_bytes}
                for s, c in self.cuts.items()
            },
        }

    def lines(self, out_dir: Path) -> list[str]:
        if not self.restorable:
            return ["memory server: reached by URL, its data lives with the server; nothing to restore "
                    "(not restorable)"]
        lines = []
        for s, c in self.cuts.items():
            where = out_dir / PROVIDER_SUBDIR / s / "data"
            if c.source == "snapshot" and c.instance_id is None:  # plugin-dreamed's, before task 1
                what = f"its snapshot after the dream pass (seq {c.seq})"
            elif c.source == "snapshot":
                what = f"its snapshot after task {c.order} ({c.instance_id}, seq {c.seq})"
            elif c.source == "seed":
                what = f"the snapshot it was seeded from (seq {c.seq})"
            else:
                what = "no snapshot before this task: the server started on an empty folder"
            lines.append(f"memory server data of {s}: {what}, {len(c.files)} file(s), {c.total_bytes} bytes, "
                         f"restored to {where}")
        return lines


@dataclass(frozen=True)
class ReplayReport:
    out_dir: Path
    replay: Replay
    files: tuple[str, ...]

    def lines(self) -> list[str]:
        r = self.replay
        cuts = ", ".join(f"{s.removesuffix('_sequence')}@{c}" for s, c in r.cursors.items()) or "none"
        live = len(r.memory.live_items())
        done = sum(1 for s in r.outcomes.sequences.values() for c in s.passes.get("initial", {}).values() if c.done)
        return [
            f"v{r.version} before task {r.upto_order} (cursors {cuts}): {live} live memory item(s), "
            f"{done} initial-pass task(s) finished; written to {self.out_dir}",
            *(r.provider.lines(self.out_dir) if r.provider is not None else []),
        ]


def replay_state(ledger: Ledger, version: str, upto_order: int, *, projector: Projector | None = None) -> Replay:
    """The run `version` as it stood before initial task `upto_order` started (pure: ledger in, state out)."""
    check_order("--upto-order", upto_order, version)
    started = run_started_record(ledger, version, doing="replay").event
    check_order("--upto-order", upto_order, version, max((t.order for ts in started.tasks.values() for t in ts), default=0))
    runner = projector if projector is not None else Projector(ledger)
    head = ledger.head()
    cutoffs = sequence_cutoffs(ledger, version, upto_order)
    cursors = {s: (cutoffs[s] - 1 if s in cutoffs else head) for s in started.sequences}

    outcomes = runner.run(OutcomeProjection(version, before_order=upto_order, cutoffs=cutoffs,
                                            forks=fork_links(ledger, version)), upto=head).state
    inputs = outcomes.to_metric_inputs()
    metrics = {name: compute(inputs, name) for name in sorted(FORMULAS)}

    repo_cursors: dict[str, int] = {}
    for sequence_id in started.sequences:
        for task in started.tasks.get(sequence_id, []):
            current = repo_cursors.get(task.repo)
            repo_cursors[task.repo] = cursors[sequence_id] if current is None else min(current, cursors[sequence_id])
    repo_cursors = dict(sorted(repo_cursors.items()))
    other_cursor = min(cursors.values(), default=head)
    memory = _memory_as_of(ledger, version, repo_cursors, other_cursor, runner)
    if any(retest_row(p) is not None for cells in outcomes.sequences.values() for p in cells.passes):
        memory = _count_late_row_recalls(ledger, version, OrderCut(upto_order, cutoffs), memory)
    last = max(cursors.values(), default=head)
    digest = ledger.hash_at(last)
    transport = provider_transport(ledger, version)
    provider = None
    if transport is not None:
        cuts = provider_cut(ledger, version, list(started.sequences), upto_order) if transport == "stdio" else {}
        provider = ReplayProvider(transport, cuts)
    return Replay(
        version=version,
        stage=started.stage,
        upto_order=upto_order,
        cursors=cursors,
        repo_cursors=repo_cursors,
        other_cursor=other_cursor,
        memory=memory,
        outcomes=outcomes,
        metrics=metrics,
        ledger_hash=digest.hex() if digest is not None else None,
        provider=provider,
    )


def _memory_as_of(
    ledger: Ledger, version: str, repo_cursors: dict[str, int], other_cursor: int, runner: Projector
) -> MemoryState:
    """One substrate whose items of each repo are as of that repo's cursor (see the module doc)."""
    cuts = sorted({other_cursor, *repo_cursors.values()})
    projection = memory_projection(ledger, version, cuts[-1])
    if len(cuts) == 1 or any(link.at > cuts[0] for link in projection.chain):
        # One cut; or a seed recorded between the cuts, so the folds at them select
        # different events (the source's history joins at the seed): fold each apart.
        return _memory_by_folds(ledger, version, repo_cursors, other_cursor, runner)
    # Every cut selects the same events: one fold, read once, with the part of the
    # state each cut needs copied as the fold passes it (the fold mutates items).
    repos_at: dict[int, set[str]] = {}
    for repo, cursor in repo_cursors.items():
        repos_at.setdefault(cursor, set()).add(repo)
    parts: dict[int, MemoryState] = {}

    def observe(cursor: int, state: MemoryState) -> None:
        keep = repos_at.get(cursor, set())
        if cursor == other_cursor:
            items = {i: item for i, item in state.items.items() if item.repo in keep or item.repo not in repo_cursors}
        else:
            items = {i: item for i, item in state.items.items() if item.repo in keep}
        parts[cursor] = _copy_state(msgspec.structs.replace(state, items=items))

    final = runner.run_through(projection, cuts, observe).state
    return _assemble(version, repo_cursors, parts[other_cursor], parts, final.seeds)


def _count_late_row_recalls(ledger: Ledger, version: str, cut: OrderCut, memory: MemoryState) -> MemoryState:
    """Count the recalls of `retest-{i}` rows (i < K) that a run with `--task-jobs` made
    after task K started: a serial run made them before, and each recall counts towards
    its items' `recall_count` (`_cut` says why the cut is by position). Nothing else of the
    substrate depends on when a row ran: rows write no memory, and recall what the
    substrate held when the row started."""
    if not cut.starts:
        return memory
    rows = read_views(ledger, "memory.recalled", ("sequence_id", "pass_", "results.item_id"),
                      after=min(cut.starts.values()) - 1, ranges=[StreamRange(f"run/{version}")])
    late = [view for seq, view in rows if (start := cut.starts.get(view.sequence_id)) is not None
            and seq >= start and cut.keeps(seq, "memory.recalled", view)]
    if not late:
        return memory
    memory = _copy_state(memory)  # the fold's state may be a projector's cached one
    for view in late:
        memory.recalls += 1
        for hit in view.results:
            item = memory.items.get(hit.item_id)
            if item is not None:
                item.recall_count += 1
    return memory


def _copy_state(state: MemoryState) -> MemoryState:
    return _STATE_DECODER.decode(msgspec.msgpack.encode(state))


_STATE_DECODER = msgspec.msgpack.Decoder(MemoryState)


def _memory_by_folds(
    ledger: Ledger, version: str, repo_cursors: dict[str, int], other_cursor: int, runner: Projector
) -> MemoryState:
    folds: dict[int, MemoryState] = {}
    for cursor in sorted({other_cursor, *repo_cursors.values()}):
        folds[cursor] = load_memory(ledger, version, upto=cursor, projector=runner).state
    base = folds[other_cursor]
    if len(folds) == 1:
        return base  # one cut for everything: the plain substrate as of it
    seeds = {s.seq: s for state in folds.values() for s in state.seeds}
    return _assemble(version, repo_cursors, base, folds, [seeds[k] for k in sorted(seeds)])


def _assemble(
    version: str,
    repo_cursors: dict[str, int],
    base: MemoryState,
    at: dict[int, MemoryState],
    seeds: list[SeedRecord],
) -> MemoryState:
    """Items of each repo from the state at its cursor, the rest (and the substrate's
    own records) from `base`, the state at the smallest cursor."""
    items = {i: item for i, item in base.items.items() if item.repo not in repo_cursors}
    for repo, cursor in repo_cursors.items():
        items.update({i: item for i, item in at[cursor].items.items() if item.repo == repo})
    # as_of_seq of an assembled substrate: the last event that changed an item it holds
    # (or recorded a seed), since each repository's part stops at its own cursor.
    touched = [max([item.written_seq, *(c.seq for c in item.history)]) for item in items.values()]
    return MemoryState(
        version=version,
        items=dict(sorted(items.items())),
        seeds=list(seeds),
        rejected=base.rejected,
        dreams=base.dreams,
        clock=base.clock,
        recalls=base.recalls,
        last_seq=max([*touched, *(s.seq for s in seeds)], default=0),
    )


# -- documents ---------------------------------------------------------------------------


def _pass_key(name: str) -> tuple[int, int, str]:
    return (*pass_rank(name), name)


def outcomes_document(replay: Replay) -> dict[str, Any]:
    state = replay.outcomes
    sequences: dict[str, Any] = {}
    for sequence_id, seq in state.sequences.items():
        passes = {}
        for name in sorted(seq.passes, key=_pass_key):
            passes[name] = {
                str(order): {
                    "instance_id": cell.instance_id,
                    "attempt": cell.attempt,
                    "done": cell.done,
                    "status": cell.status,
                    "resolved": cell.resolved,
                    "outcome": cell.outcome,
                }
                for order, cell in sorted(seq.passes[name].items())
            }
        vectors = None
        if seq.plan:
            vectors = {
                "initial": state.vector(sequence_id, "initial"),
                "final": state.vector(sequence_id, "retest"),
                "baseline": state.vector(sequence_id, "baseline"),
                "rows": {str(i): row for i, row in state.rows(sequence_id).items()},
            }
        sequences[sequence_id] = {
            "plan": [msgspec.to_builtins(t) for t in seq.plan],
            "passes": passes,
            "vectors": vectors,
        }
    return {"version": replay.version, "upto_order": replay.upto_order, "sequences": sequences}


def outcomes_csv(replay: Replay) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for sequence_id, seq in replay.outcomes.sequences.items():
        for name in sorted(seq.passes, key=_pass_key):
            for order, cell in sorted(seq.passes[name].items()):
                writer.writerow(
                    [sequence_id, name, order, cell.instance_id, cell.attempt, cell.done, cell.status or "",
                     "" if cell.resolved is None else cell.resolved, "" if cell.outcome is None else cell.outcome]
                )
    return buf.getvalue()


def metrics_document(replay: Replay) -> dict[str, Any]:
    # One result per formula, as `swecl metrics --json` writes a run's (`result_document`).
    out = {name: result_document(result) for name, result in replay.metrics.items()}
    return {"version": replay.version, "upto_order": replay.upto_order, "formulas": out}


def manifest_document(replay: Replay) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "format": REPLAY_FORMAT,
        "format_version": REPLAY_FORMAT_VERSION,
        "version": replay.version,
        "stage": replay.stage,
        "upto_order": replay.upto_order,
        "cursors": dict(replay.cursors),
        "memory": {
            "repo_cursors": dict(replay.repo_cursors),
            "other_cursor": replay.other_cursor,
            "as_of_seq": replay.memory.last_seq,
            "live_items": len(replay.memory.live_items()),
            "items": len(replay.memory.items),
        },
        "ledger_hash": replay.ledger_hash,
        "files": [MEMORY_SUBDIR + "/", OUTCOMES_JSON, OUTCOMES_CSV, METRICS_JSON],
    }
    if replay.provider is not None:  # only a --memory-server run's manifest says it
        doc["provider"] = replay.provider.document()
        if replay.provider.restorable:
            doc["files"].append(PROVIDER_SUBDIR + "/")
    return doc


def _json_bytes(doc: Any) -> bytes:
    return (json.dumps(doc, ensure_ascii=False, indent=2) + "\n").encode()


def replay_files(replay: Replay) -> dict[str, bytes]:
    """The replay folder's files besides `_memory/` (written from `replay.memory` with
    `ledger_id` left out), by name, the manifest last: a folder whose manifest is there
    is a complete replay."""
    return {
        OUTCOMES_JSON: _json_bytes(outcomes_document(replay)),
        OUTCOMES_CSV: outcomes_csv(replay).encode(),
        METRICS_JSON: _json_bytes(metrics_document(replay)),
        MANIFEST_FILE: _json_bytes(manifest_document(replay)),
    }
