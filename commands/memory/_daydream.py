"""Daydream: after an initial-pass task, decide what to remember and record it.

The deterministic extractor remembers what the agent saw and did: the issue (title
and a summary), the files and functions its patch touched (via unidiff), the patch
itself (as a blob, without its test-file hunks), the graded outcome and, when the agent
recorded a structured transcript (a CLI agent's session or trajectory), its final
explanation, capped (`TrajectoryView`). An optional
extractor callable (an LLM, say) may propose other items; it sees the same view and
never the grading secrets. Every proposed item passes governance first: a refused one
is a `memory.rejected` event with the rule and field, never the offending text.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import msgspec
import unidiff

from ledger import Ledger, NewEvent, Recorded, SweclError, event_id_for
from ledger.events import MemoryRejected, MemoryWritten
from ledger.patches import hunk_functions, is_test_path, patch_paths, patched_path
from projections.show import agent_commands, final_message, is_json_lines

from ._governance import DEFAULT_POLICY, Checker, GovernancePolicy, GradingSecrets, Violation

SUMMARY_CHARS = 800
TITLE_CHARS = 120
ACCOUNT_CHARS = 400  # the agent's final explanation, in the view and in a lesson's body
COMMANDS_KEPT = 20  # the last commands the agent ran, in the view
COMMAND_CHARS = 200

# A fenced block in the agent's last words (a blind answer's diff): the patch is kept apart.
_FENCED = re.compile(r"```.*?(?:```|$)", re.DOTALL)


@dataclass(frozen=True)
class TaskView:
    """What the agent saw of a task (no grading secrets here)."""

    instance_id: str
    repo: str
    order: int
    sequence_id: str
    issue: str
    pass_: str = "initial"
    attempt: int = 1


@dataclass(frozen=True)
class PatchFacts:
    files: tuple[str, ...]
    symbols: tuple[str, ...]
    added: int
    removed: int
    kept_patch: str | None  # the patch without test-file hunks (None if nothing is left)
    dropped_files: tuple[str, ...]


@dataclass(frozen=True)
class TrajectoryView:
    """A bounded view of the agent's recorded transcript: its final explanation (fenced
    code left out, whitespace collapsed, `ACCOUNT_CHARS` at most) and its last
    `COMMANDS_KEPT` shell commands (each `COMMAND_CHARS` at most)."""

    final_message: str | None = None
    commands: tuple[str, ...] = ()


@dataclass(frozen=True)
class DaydreamInput:
    """An extractor's whole view: the task, the agent's patch (test hunks dropped), the
    outcome, and what its transcript says (None: it recorded none that can be read)."""

    version: str
    task: TaskView
    patch: PatchFacts
    status: str
    resolved: bool | None
    trajectory: TrajectoryView | None = None


@dataclass(frozen=True)
class MemoryDraft:
    """An item an extractor proposes; governance decides whether it is written."""

    title: str
    body: str
    files: tuple[str, ...] = ()
    symbols: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    patch: str | None = None  # patch text; stored as a blob
    kind: str = "episode"
    outcome: str | None = None
    ttl_tasks: int | None = None
    ttl_seconds: float | None = None


Extractor = Callable[[DaydreamInput], Sequence[MemoryDraft]]


# -- patch facts --------------------------------------------------------------------------


def patch_facts(patch: str | None, *, drop: Sequence[str] = ()) -> PatchFacts:
    """Files, symbols and size of `patch`, keeping only non-test files' hunks.

    `drop` adds paths to leave out besides test-like ones (the files the gold test
    patch touches: the agent's edits there are reverted before grading anyway). "Test-like"
    is the grader's own rule (`ledger.patches.is_test_path`): memory and grading never
    disagree on which file of a patch is a test.
    """
    if not patch or not patch.strip():
        return PatchFacts((), (), 0, 0, None, ())
    drop_set = set(drop)
    try:
        parsed = unidiff.PatchSet(patch)
    except unidiff.UnidiffParseError:
        # Unparseable (truncated, hand-edited): keep what can be known without hunks
        # (`patch_paths` reads headers only, so it still names the files).
        paths = sorted(patch_paths(patch))
        dropped = tuple(p for p in paths if is_test_path(p) or p in drop_set)
        kept = tuple(p for p in paths if p not in dropped)
        return PatchFacts(kept, (), 0, 0, patch if kept and not dropped else None, dropped)
    files: list[str] = []
    symbols: set[str] = set()
    kept_text: list[str] = []
    dropped: list[str] = []
    added = removed = 0
    for pf in parsed:
        path = patched_path(pf)
        if is_test_path(path) or path in drop_set:
            dropped.append(path)
            continue
        files.append(path)
        kept_text.append(str(pf))
        added += pf.added
        removed += pf.removed
        for hunk in pf:
            symbols |= hunk_functions(hunk)
    return PatchFacts(
        tuple(sorted(set(files))),
        tuple(sorted(symbols)),
        added,
        removed,
        "".join(kept_text) or None,
        tuple(sorted(dropped)),
    )


def trajectory_view(transcript: bytes | str | None) -> TrajectoryView | None:
    """What `transcript` (an `AgentResult.transcript`) says of the agent's work; None when it
    is empty or plain text (the demo's list of steps, a command agent's output: no account
    of the agent's own) or says nothing of the kind."""
    if not transcript:
        return None
    text = transcript.decode("utf-8", "replace") if isinstance(transcript, bytes) else transcript
    if not is_json_lines(text):
        return None
    said = final_message(text)
    account = _clip(" ".join(_FENCED.sub(" ", said).split()), ACCOUNT_CHARS) if said else ""
    commands = tuple(_clip(" ".join(c.split()), COMMAND_CHARS) for c in agent_commands(text) if c.strip())
    if not account and not commands:
        return None
    return TrajectoryView(account or None, commands[-COMMANDS_KEPT:])


# -- the deterministic extractor ----------------------------------------------------------


def issue_title(issue: str) -> str:
    for line in issue.splitlines():
        text = line.strip().lstrip("#").strip()
        if text:
            return _clip(" ".join(text.split()), TITLE_CHARS)
    return "(no issue text)"


def issue_summary(issue: str, limit: int = SUMMARY_CHARS) -> str:
    """The issue's opening, heading marks dropped, whitespace collapsed, cut at a word boundary."""
    text = "\n".join(line.strip().lstrip("#") for line in issue.splitlines())
    return _clip(" ".join(text.split()), limit)


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip() + "…"


def deterministic_extractor(view: DaydreamInput) -> list[MemoryDraft]:
    task, facts = view.task, view.patch
    outcome = view.status
    lines = [
        f"Issue ({task.instance_id}): {issue_summary(task.issue)}",
        "",
        f"Outcome: {outcome}" + ("" if view.resolved is None else f" (resolved: {'yes' if view.resolved else 'no'})"),
    ]
    if facts.files:
        lines.append(f"Files touched: {', '.join(facts.files)}")
    if facts.symbols:
        lines.append(f"Functions/classes touched: {', '.join(facts.symbols)}")
    if facts.kept_patch:
        lines.append(f"Patch: +{facts.added} -{facts.removed} lines in {len(facts.files)} file(s)")
    else:
        lines.append("Patch: none")
    if view.trajectory is not None and view.trajectory.final_message:
        lines.append(f"How it was found: {view.trajectory.final_message}")
    tags = [f"outcome:{outcome}", f"task:{task.instance_id}"]
    return [
        MemoryDraft(
            title=f"{task.instance_id}: {issue_title(task.issue)}",
            body="\n".join(lines),
            files=facts.files,
            symbols=facts.symbols,
            tags=tuple(tags),
            patch=facts.kept_patch,
            outcome=outcome,
        )
    ]


# -- the command --------------------------------------------------------------------------


def item_id_for(version: str, task: TaskView, index: int) -> str:
    key = "\x1f".join([version, task.sequence_id, task.instance_id, str(task.order), str(task.attempt), str(index)])
    return "mem-" + hashlib.sha256(key.encode()).hexdigest()[:20]


def daydream(ledger: Ledger, version: str, task: TaskView, **options: Any) -> list[Recorded]:
    """Remember what task `task` of run `version` taught; return the events appended
    (`memory.written` and `memory.rejected`, in draft order). `options` are
    `plan_daydream`'s.

    Writes to the sequence stream `run/{version}/{sequence_id}`, in one durable batch
    (with the patch blobs). Only the initial pass writes: the retest pass runs on a
    frozen substrate and the baseline has memory off, so for them this is a no-op.
    Idempotent: the same task (order, attempt) daydreamt again appends nothing new.
    The main job does not call this: it appends `plan_daydream`'s events in the same
    batch as `task.finished`, so a task is never finished without its lessons.
    """
    events, blobs = plan_daydream(version, task, **options)
    if not events:
        return []
    return ledger.append(f"run/{version}/{task.sequence_id}", events, blobs=blobs, durable=True)


def plan_daydream(
    version: str,
    task: TaskView,
    *,
    patch: str | None,
    status: str,
    resolved: bool | None,
    transcript: bytes | str | None = None,
    secrets: GradingSecrets | None = None,
    extractor: Extractor | None = None,
    extractor_name: str = "llm",
    policy: GovernancePolicy = DEFAULT_POLICY,
    ttl_tasks: int | None = None,
    ttl_seconds: float | None = None,
) -> tuple[list[NewEvent], list[bytes]]:
    """What the daydream would write for `task` (events with deterministic ids, and the
    patch blobs they refer to), without writing it. `transcript`: the agent's, as recorded
    (`trajectory_view` reads it)."""
    if task.pass_ != "initial":
        return [], []
    if not version or not task.sequence_id:
        raise SweclError("daydream needs a run version and a sequence id")
    checker = Checker(secrets, policy)
    view = _extraction_view(version, task, patch=patch, status=status, resolved=resolved, transcript=transcript,
                            secrets=secrets, checker=checker)
    drafts, extractor_label = _drafts(view, extractor, extractor_name)

    events: list[NewEvent] = []
    blobs: list[bytes] = []
    for index, draft in enumerate(drafts):
        item_id = item_id_for(version, task, index)
        violation = _check_draft(checker, draft)
        if violation is not None:
            events.append(_rejected_event(task, item_id, draft, violation, checker))
            continue
        patch_ref = None
        if draft.patch:
            data = draft.patch.encode("utf-8", "surrogateescape")
            blobs.append(data)
            patch_ref = hashlib.sha256(data).hexdigest()
        events.append(_written_event(view, item_id, draft, patch_ref, extractor=extractor_label,
                                     ttl_tasks=ttl_tasks, ttl_seconds=ttl_seconds))
    return events, blobs


# -- deciding: what the lessons are (pure functions of the task's recorded facts) ----------


def _extraction_view(version: str, task: TaskView, *, patch: str | None, status: str, resolved: bool | None,
                     transcript: bytes | str | None, secrets: GradingSecrets | None,
                     checker: Checker) -> DaydreamInput:
    """What an extractor sees of `task`: its patch without test files (the gold test
    patch's too) and its transcript's account, unless governance would refuse that."""
    test_files = patch_paths(secrets.test_patch) if secrets and secrets.test_patch else []
    facts = patch_facts(patch, drop=test_files)
    trajectory = trajectory_view(transcript)
    if trajectory is not None and trajectory.final_message and checker.check({"body": trajectory.final_message}):
        # Agents often name the tests they ran: their account is left out, not the lesson with it.
        trajectory = replace(trajectory, final_message=None)
    return DaydreamInput(version=version, task=task, patch=facts, status=status, resolved=resolved,
                         trajectory=trajectory)


def _drafts(view: DaydreamInput, extractor: Extractor | None,
            extractor_name: str) -> tuple[Sequence[MemoryDraft], str]:
    """The drafts proposed for `view`, and the label of the extractor that made them."""
    if extractor is None:
        return deterministic_extractor(view), "deterministic"
    try:
        return [d if isinstance(d, MemoryDraft) else draft_from_builtins(d) for d in extractor(view)], extractor_name
    except Exception:  # noqa: BLE001 - an extractor is a plug-in: its failure must not lose the task
        return [
            replace(d, tags=(*d.tags, f"extractor-failed:{extractor_name}")) for d in deterministic_extractor(view)
        ], "deterministic"


def draft_from_builtins(raw: object) -> MemoryDraft:
    """A draft from plain data (what an LLM extractor returns as JSON), validated."""
    try:
        return msgspec.convert(raw, MemoryDraft)
    except msgspec.ValidationError as exc:
        raise SweclError(f"extractor output: {exc}") from None


def _check_draft(checker: Checker, draft: MemoryDraft) -> Violation | None:
    """Governance's verdict on every field of `draft` that would be written."""
    return checker.check(
        {
            "title": draft.title,
            "body": draft.body,
            "tags": draft.tags,
            "files": draft.files,
            "symbols": draft.symbols,
            "patch": draft.patch,
        }
    )


# -- assembling the events ----------------------------------------------------------------


def _rejected_event(task: TaskView, item_id: str, draft: MemoryDraft, violation: Violation,
                    checker: Checker) -> NewEvent:
    """`memory.rejected`: the rule and the field, never the offending text (the title
    only if it passes on its own)."""
    title_ok = violation.field != "title" and checker.check({"title": draft.title}) is None
    return NewEvent(
        MemoryRejected(
            reason=violation.reason,
            rule=violation.rule,
            title=draft.title if title_ok else "[withheld]",
            repo=task.repo,
            source_instance=task.instance_id,
            item_id=item_id,
        ),
        event_id_for("memory.rejected", item_id),
    )


def _written_event(view: DaydreamInput, item_id: str, draft: MemoryDraft, patch_ref: str | None, *,
                   extractor: str, ttl_tasks: int | None, ttl_seconds: float | None) -> NewEvent:
    """`memory.written` for an accepted draft; what the draft leaves unset comes from the
    task (its graded outcome) and the run's options (the time to live)."""
    task = view.task
    return NewEvent(
        MemoryWritten(
            item_id=item_id,
            kind=draft.kind,
            title=draft.title,
            body=draft.body,
            repo=task.repo,
            source_run=view.version,
            sequence_id=task.sequence_id,
            source_instance=task.instance_id,
            source_order=task.order,
            source_pass=task.pass_,
            files=sorted(set(draft.files)),
            symbols=sorted(set(draft.symbols)),
            tags=list(dict.fromkeys(draft.tags)),
            outcome=draft.outcome if draft.outcome is not None else view.status,
            patch=patch_ref,
            ttl_tasks=draft.ttl_tasks if draft.ttl_tasks is not None else ttl_tasks,
            ttl_seconds=draft.ttl_seconds if draft.ttl_seconds is not None else ttl_seconds,
            extractor=extractor,
        ),
        event_id_for("memory.written", item_id),
    )
