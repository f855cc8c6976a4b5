"""The full-history reference arm (stage `full-history`, kind `history`): no retrieval and no
recall tool; each task's prompt carries the earlier tasks of its sequence.

For each earlier task: its issue title (the first non-empty line of the problem
statement), the agent's own final patch from that task's latest initial-pass attempt (the
`agent.finished` patch blob) and its outcome (the verdict in force), most recent first,
cut to `--history-tokens` (tokens estimated as characters / 4; an entry that does not fit
is left out and counted, older ones that fit are still given).

Which tasks: those of the initial pass with an order below the asking task's, in every
pass, so no task ever sees its own patch; read as the pass's memory is cut (the head in the
initial pass, the initial pass's end for `retest`, the row's start for `retest-{i}`),
from the ledger through `read_run` (a fork's forked-from tasks spliced in), never from
the process, so a resumed, `--jobs` or Ray run gives the same prompt. What a task was
given is a `memory.history` event, appended when the agent is given its memory (as a
recall is, after `task.started`), its section as a blob.
"""

from __future__ import annotations

import hashlib
from contextlib import ExitStack
from pathlib import Path
from agents import HistoryEntry, TaskHistory
from commands.inputs import Task
from ledger import Ledger, NewEvent, StreamRange, SweclError, event_id_for
from ledger.events import MemoryHistory
from projections import OutcomeProjection, read_run

from ._interface import AgentMemory, MemoryBackend, SequenceMemory, SequencePlace, TaskMemory

__all__ = ["DEFAULT_HISTORY_TOKENS", "HistoryMemory", "estimate_tokens", "issue_title", "render_history",
           "task_history"]

DEFAULT_HISTORY_TOKENS = 8000
TITLE_CHARS = 200
_HEADER = ("<earlier_tasks>\nThe earlier tasks of this sequence, in this repository, most recent first: each "
           "one's issue title, the patch you submitted for it, and its outcome (resolved: its tests passed).\n")
_FOOTER = "</earlier_tasks>\n"
_READ = ["task.started", "task.abandoned", "agent.finished", "grade.finished", "grade.corrected", "task.finished"]


def estimate_tokens(text: str) -> int:
    """Tokens of `text`, estimated as characters / 4 (rounded up)."""
    return (len(text) + 3) // 4


def issue_title(statement: str | None) -> str:
    """The first non-empty line of a problem statement (at most 200 characters)."""
    for line in (statement or "").splitlines():
        if line.strip():
            return line.strip()[:TITLE_CHARS]
    return ""


def _entry_text(entry: HistoryEntry) -> str:
    patch = entry.patch.rstrip("\n") if entry.patch else "(no patch)"
    return (f'<task order="{entry.order}" instance="{entry.instance_id}" outcome="{entry.outcome}">\n'
            f"Title: {entry.title}\n<patch>\n{patch}\n</patch>\n</task>\n")


def render_history(entries: list[HistoryEntry], budget: int) -> tuple[list[HistoryEntry], str, int]:
    """The entries (most recent first) that fit in `budget` tokens with the section's frame,
    the section's text ("" when none fits or there is none) and how many were left out."""
    used = estimate_tokens(_HEADER + _FOOTER)
    kept: list[HistoryEntry] = []
    parts: list[str] = []
    for entry in entries:
        text = _entry_text(entry)
        cost = estimate_tokens(text)
        if used + cost > budget:
            continue  # left out; an older, smaller entry may still fit
        kept.append(entry)
        parts.append(text)
        used += cost
    return kept, (_HEADER + "".join(parts) + _FOOTER) if kept else "", len(entries) - len(kept)


def _cut(ledger: Ledger, stream: str, pass_: str) -> int | None:
    """Where the pass's memory froze, as recall's (`RecallService._cutoff`): None (the head)
    for the initial pass, the initial pass's end for `retest`, the row's start for `retest-{i}`."""
    if pass_ == "initial":
        return None
    want = ("pass.started", pass_) if pass_.startswith("retest-") else ("pass.finished", "initial")
    for rec in ledger.read(types=[want[0]], ranges=[StreamRange(stream)]):
        if rec.event.pass_ == want[1]:
            return rec.seq
    return None


def earlier_tasks(ledger: Ledger, version: str, sequence_id: str, pass_: str, order: int,
                  titles: dict[str, str]) -> list[HistoryEntry]:
    """The finished initial-pass tasks of the sequence before `order`, most recent first,
    each as its latest attempt left it (as of the pass's cut)."""
    projection = OutcomeProjection(version)
    state = projection.initial()
    patches: dict[tuple[int, int], str | None] = {}
    cut = _cut(ledger, f"run/{version}/{sequence_id}", pass_)
    for rec in read_run(ledger, version, _READ, upto=cut):
        ev = rec.event
        if ev.sequence_id != sequence_id or ev.pass_ != "initial" or ev.order >= order:
            continue
        if rec.type == "agent.finished":
            patches[(ev.order, ev.attempt)] = ev.patch
        state = projection.apply(state, rec)
    cells = state.sequences.get(sequence_id)
    out: list[HistoryEntry] = []
    for k, cell in sorted((cells.passes.get("initial", {}) if cells else {}).items(), reverse=True):
        if not cell.done:
            continue
        ref = patches.get((k, cell.attempt))
        patch = ledger.get_blob(ref).decode("utf-8", "surrogateescape") if ref else ""
        out.append(HistoryEntry(instance_id=cell.instance_id, order=k, title=titles.get(cell.instance_id, ""),
                                patch=patch, outcome=cell.status or "unknown"))
    return out


def task_history(place: SequencePlace, task: Task, pass_: str, attempt: int,
                 budget: int) -> tuple[TaskHistory | None, NewEvent, list[bytes]]:
    """What `task`'s prompt carries of the earlier tasks, and its `memory.history` event."""
    titles = {t.instance_id: issue_title(t.problem_statement) or t.instance_id for t in place.sequence.tasks}
    entries = earlier_tasks(place.ledger, place.version, place.sequence.id, pass_, task.order, titles)
    kept, text, dropped = render_history(entries, budget)
    blob = text.encode("utf-8", "surrogateescape") if text else None
    event = MemoryHistory(
        sequence_id=place.sequence.id, instance_id=task.instance_id, order=task.order, pass_=pass_, attempt=attempt,
        entries=[e.instance_id for e in kept], tokens=estimate_tokens(text), budget=budget, dropped=dropped,
        text=hashlib.sha256(blob).hexdigest() if blob else None,
    )
    new = NewEvent(event, event_id_for(place.version, place.sequence.id, pass_, task.order, attempt, "memory.history"))
    return (TaskHistory(entries=tuple(kept), text=text) if text else None), new, [blob] if blob else []


class _HistoryTask(TaskMemory):
    def __init__(self, sequence: _HistorySequence, task: Task, pass_: str, attempt: int) -> None:
        self.sequence, self.task, self.pass_, self.attempt = sequence, task, pass_, attempt

    def for_agent(self, stack: ExitStack, scratch: Path) -> AgentMemory:
        place = self.sequence.place
        history, event, blobs = task_history(place, self.task, self.pass_, self.attempt, self.sequence.budget)
        place.ledger.append(place.stream, [event], blobs=blobs)
        return AgentMemory(history=history, prompt_style=self.sequence.prompt_style)


class _HistorySequence(SequenceMemory):
    ordered_initial = True  # each initial-pass task reads what the earlier ones did

    def __init__(self, place: SequencePlace, prompt_style: str, budget: int) -> None:
        super().__init__(place)
        self.prompt_style, self.budget = prompt_style, budget

    def task(self, task: Task, pass_: str, attempt: int) -> TaskMemory:
        return TaskMemory() if pass_ == "baseline" else _HistoryTask(self, task, pass_, attempt)


class HistoryMemory(MemoryBackend):
    """The earlier tasks of the sequence in each prompt (the full-history reference arm)."""

    kind = "history"
    recorded_mode = "history"
    state_label = "its earlier tasks"

    @property
    def budget(self) -> int:
        given = self.opts.memory.history_tokens
        return DEFAULT_HISTORY_TOKENS if given is None else int(given)

    def check(self) -> None:
        if self.budget < 1:
            raise SweclError(f"--history-tokens {self.budget}: give a positive number of tokens")

    def hideable_items(self, ledger: Ledger, version: str) -> set[str]:
        return set()

    def cannot_hide_items(self, version: str) -> str | None:
        return (f"run {version} is a full-history run: its earlier tasks are in the prompt, not recalled items, "
                "so nothing can be hidden (counterfactuals need a plugin-* or oracle stage)")

    def sequence(self, place: SequencePlace) -> SequenceMemory:
        return _HistorySequence(place, self.stage.prompt_style, self.budget)
