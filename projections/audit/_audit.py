"""The audit: which memories each task recalled, where they came from, whether the
agent used them, and whether any of them should not have been there.

Everything here is a pure function of the ledger (plus, optionally, the grading
secrets of the benchmark's tasks): one fold of the run's memory projection, with a
snapshot of the recalled items at each `memory.recalled`, and one read of the run's
task events. Nothing is written.

The parts: the documents (`_model`), reuse of a recalled item's patch (`_reuse`), the
leakage flags of a recalled item (`_flags`), and the reads of the ledger with an item's
provenance (`_fold`); `audit_task` and `audit_summary`, here, put them together.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ledger import Ledger, Recorded
from ledger.events import RunStarted, TaskRef
from projections._cut import OrderCut
from projections._provider_calls import memory_server_named
from projections.memory import GradingSecrets, MemoryItem

from ._flags import TestContent, _leak_flags
from ._fold import _attempt_events, _attempts, _Context, fold_with_snapshots, pass_rank, run_started
from ._model import (
    FLAG_KINDS,
    REUSE_THRESHOLD,
    Attempt,
    AuditedHit,
    AuditedRecall,
    DatasetNote,
    Flag,
    FlaggedTask,
    ProviderRecall,
    Reuse,
    RunAuditSummary,
    TaskAudit,
)
from ._provider import iter_provider_recalls, provider_recalls, recall_sources
from ._reuse import patch_reuse


# -- the audit ----------------------------------------------------------------------------


def resolve_task(started: RunStarted, task_id: str) -> tuple[str, TaskRef]:
    """(sequence_id, task) of `task_id` in a run: an instance_id, `SEQ#ORDER`, or `#ORDER` /
    `ORDER` in a one-sequence run (`projections._task_names`, the one parser)."""
    from projections._task_names import resolve_task_name

    return resolve_task_name(started.tasks, task_id, where=f"the plan of v{started.version}")


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
    sequence_id, task = resolve_task(started, task_id)

    def mine(ev: Any) -> bool:
        return ev.sequence_id == sequence_id and ev.order == task.order and (pass_ is None or ev.pass_ == pass_)

    attempts = _attempts(_attempt_events(ledger, version, mine))
    state, recalls = fold_with_snapshots(ledger, version, mine)
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
    server = memory_server_named(ledger, version, started.config, started.sequences)
    provider = [] if server is None else provider_recalls(
        ledger, version, sequence_id, task.order, pass_=pass_, recall_tool=started.config.get("memory_recall_tool"),
        write_tool=started.config.get("memory_write_tool"), checker=checker)
    kinds = {f.kind for r in audited for h in r.hits for f in h.flags} | {k for r in provider for k in r.flags}
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
        memory_server=server,
        provider_recalls=provider,
    )


def audit_summary(
    ledger: Ledger,
    version: str,
    *,
    pass_: str | None = None,
    secrets: Mapping[str, GradingSecrets] | None = None,
    dataset: DatasetNote | None = None,
    counted_only: bool = False,
    cut: OrderCut | None = None,
) -> RunAuditSummary:
    """Every task of run `version` with a flagged recall: its pass, attempts, flag kinds and items.
    `counted_only`: only the recalls of attempts that count (the latest, not abandoned), so a
    run resumed after a kill sums the same as one that was never interrupted. `cut`:
    the run as it stood at a cut (`--as-of-order`, see `_fold.before_cut`): later recalls
    are not counted, and an attempt counts if it was in force then."""
    started = run_started(ledger, version)
    plan = {(s, t.order): t for s, tasks in started.tasks.items() for t in tasks}

    def wanted(ev: Any) -> bool:
        return pass_ is None or ev.pass_ == pass_

    attempts = _attempts(_attempt_events(ledger, version, wanted, cut))
    state, recalls = fold_with_snapshots(ledger, version, wanted, cut)
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
        if counted_only and (attempt is None or not attempt.in_force):
            continue
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
            _count_flagged(flagged, ev.sequence_id, task.instance_id, ev.order, ev.pass_, ev.attempt, hit.item_id,
                           hit.flags, reused=bool(hit.reuse.reused))
    provider = _provider_counts(ledger, version, started, attempts, wanted, secrets, checkers, counted_only, cut)
    for recall, sources in provider:
        hits_total += len(sources)
        for item, flags in sources:
            if not flags:
                continue
            flagged_hits += 1
            for kind in {f.kind for f in flags}:
                by_kind[kind] += 1
            task = plan.get((recall.sequence_id, recall.order))
            _count_flagged(flagged, recall.sequence_id, task.instance_id if task else recall.instance_id, recall.order,
                           recall.pass_, recall.attempt, item, flags, reused=False)
    ordered = sorted(flagged.values(), key=lambda f: (list(started.sequences).index(f.sequence_id)
                                                      if f.sequence_id in started.sequences else 0,
                                                      pass_rank(f.pass_), f.order))
    return RunAuditSummary(
        version=version,
        stage=started.stage,
        dataset=dataset if dataset is not None else _dataset_note(secrets),
        reuse_threshold=REUSE_THRESHOLD,
        recalls=len(recalls) + len(provider),
        provider_recalls=len(provider),
        provider_hits=sum(len(sources) for _, sources in provider),
        hits=hits_total,
        flagged_hits=flagged_hits,
        reused_hits=reused_hits,
        by_kind=by_kind,
        flagged=ordered,
    )


def _count_flagged(flagged: dict[tuple[str, str, int], FlaggedTask], sequence_id: str, instance_id: str, order: int,
                   pass_: str, attempt: int, item: str, flags: list[Flag], *, reused: bool) -> None:
    key = (sequence_id, pass_, order)
    entry = flagged.get(key)
    if entry is None:
        entry = flagged[key] = FlaggedTask(sequence_id=sequence_id, instance_id=instance_id, order=order, pass_=pass_,
                                           attempts=[], kinds=[], items=[], reused_items=[])
    if attempt not in entry.attempts:
        entry.attempts.append(attempt)
    # The run's counts, per task: they sum to the summary's flagged_hits and by_kind.
    entry.hits += 1
    hit_kinds = {f.kind for f in flags}
    entry.by_kind = {k: entry.by_kind.get(k, 0) + (k in hit_kinds) for k in FLAG_KINDS
                     if k in hit_kinds or k in entry.by_kind}
    entry.kinds = [k for k in FLAG_KINDS if k in set(entry.kinds) | hit_kinds]
    if item not in entry.items:
        entry.items.append(item)
    if reused and item not in entry.reused_items:
        entry.reused_items.append(item)


def _provider_counts(
    ledger: Ledger, version: str, started: RunStarted, attempts: dict[Any, Attempt], wanted: Callable[[Any], bool],
    secrets: Mapping[str, GradingSecrets] | None, checkers: dict[str, TestContent | None], counted_only: bool,
    cut: OrderCut | None,
) -> list[tuple[ProviderRecall, list[tuple[str, list[Flag]]]]]:
    """A --memory-server run's recall calls with the items they count as (`recall_sources`):
    the summary counts them beside swecl's own recalls, by the same rules."""
    if not started.config.get("memory_server"):
        return []

    def checker_of(instance_id: str) -> TestContent | None:
        if instance_id not in checkers:
            checkers[instance_id] = _secrets_for(secrets, instance_id)
        return checkers[instance_id]

    out = []
    for sequence_id in started.sequences:
        for recall in iter_provider_recalls(ledger, version, sequence_id, wanted=wanted, cut=cut,
                                            recall_tool=started.config.get("memory_recall_tool"),
                                            write_tool=started.config.get("memory_write_tool"), checker_of=checker_of):
            attempt = attempts.get((recall.sequence_id, recall.pass_, recall.order, recall.attempt))
            if counted_only and (attempt is None or not attempt.in_force):
                continue
            out.append((recall, recall_sources(recall)))
    return out


def _dataset_note(secrets: Mapping[str, GradingSecrets] | None) -> DatasetNote:
    if secrets is None:
        return DatasetNote(available=False, note="no dataset given: the test-content check was not run")
    return DatasetNote(available=True)
