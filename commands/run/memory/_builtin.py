"""The agent's own memory files (the `builtin` stage): the agent reads and writes its native
memory folder (`CLAUDE.md`-style auto-memory), kept from task to task of a sequence; after
each initial-pass task the files it changed are recorded as memory events, so the stage is
audited like the others and the folder can be rebuilt from the ledger anywhere (a Ray
node, a resume on another machine)."""

from __future__ import annotations

import hashlib
import shutil
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from agents import AgentResult
from commands.inputs import Task
from ledger import Event, Ledger, NewEvent, StreamRange
from ledger.events import GradeFinished, MemorySuperseded, MemoryWritten
from projections import Results, RunOutcomes

from ._interface import AgentMemory, MemoryBackend, SequenceMemory, TaskMemory

__all__ = ["BuiltinMemory", "builtin_memory_for", "restore_builtin_files"]


class _BuiltinTask(TaskMemory):
    def __init__(self, sequence: _BuiltinSequence, pass_: str, attempt: int) -> None:
        self.sequence, self.pass_, self.attempt = sequence, pass_, attempt

    def for_agent(self, stack: ExitStack, scratch: Path) -> AgentMemory:
        return AgentMemory(memory_dir=builtin_memory_for(self.sequence.place.folder, self.pass_, scratch))

    def finish(self, task: Task, result: AgentResult, grade: GradeFinished,
               ids: Any) -> tuple[list[Event | NewEvent], list[bytes]]:
        if self.pass_ != "initial" or not result.memory_files:
            return [], []
        return list(self.sequence.file_events(task, result.memory_files, ids)), []


class _BuiltinSequence(SequenceMemory):
    ordered_initial = True
    # A `retest-{i}` row's tasks copy the folder the initial pass's task in flight writes.
    rows_wait_for_chain = True

    def __init__(self, place: Any) -> None:
        super().__init__(place)
        self.seen: dict[str, tuple[str, str]] = {}  # path -> (item id, sha256)

    def resume(self, state: RunOutcomes) -> None:
        """The native memory files recorded so far in this sequence."""
        self.seen = {}
        for rec in self.place.ledger.read(types=["memory.written"], ranges=[StreamRange(self.place.stream)]):
            ev = rec.event
            if ev.kind == "builtin-file":
                digest = next((t.split(":", 1)[1] for t in ev.tags if t.startswith("sha256:")), "")
                self.seen[ev.title] = (ev.item_id, digest)

    def task(self, task: Task, pass_: str, attempt: int) -> TaskMemory:
        return TaskMemory() if pass_ == "baseline" else _BuiltinTask(self, pass_, attempt)

    def file_events(self, task: Task, files: dict[str, str], ids: Any) -> list[NewEvent]:
        """The agent's native memory files after a task, as memory events: new or changed
        files are written; a changed file supersedes its previous version."""
        version, sequence_id = self.place.version, self.place.sequence.id
        events: list[NewEvent] = []
        for path, text in sorted(files.items()):
            digest = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()
            previous = self.seen.get(path)
            if previous is not None and previous[1] == digest:
                continue
            key = f"{version}\x1f{sequence_id}\x1f{path}\x1f{digest}".encode("utf-8", "surrogateescape")
            item_id = "builtin-" + hashlib.sha256(key).hexdigest()[:20]
            events.append(NewEvent(MemoryWritten(
                item_id=item_id, kind="builtin-file", title=path, body=text[:20000], repo=task.repo,
                source_run=version, sequence_id=sequence_id, source_instance=task.instance_id,
                source_order=task.order, source_pass="initial", extractor="builtin", tags=[f"sha256:{digest}"],
            ), ids(f"builtin:{path}")))
            if previous is not None:
                events.append(NewEvent(MemorySuperseded(item_id=previous[0], by=item_id, reason=f"{path} changed"),
                                       ids(f"builtin-superseded:{path}")))
            self.seen[path] = (item_id, digest)
        return events


class BuiltinMemory(MemoryBackend):
    kind = "builtin"
    recorded_mode = "builtin"
    forkable = False  # the agent's own files cannot be taken as of a task
    sequence_memory = _BuiltinSequence

    def sequence_folder(self, results: Results, version: str, sequence_id: str) -> Path | None:
        return results.builtin_dir(version, sequence_id)

    def restore_folder(self, ledger: Ledger, version: str, sequence_id: str, folder: Path) -> Path | None:
        restore_builtin_files(ledger, version, sequence_id, folder)
        return folder


def builtin_memory_for(builtin_dir: Path | None, pass_: str, scratch: Path) -> Path | None:
    """The native memory folder the builtin stage's agent gets for a task of `pass_`.

    The initial pass works in the sequence's own folder, kept from task to task. A re-test
    measures what the initial pass left: it gets a copy of the folder as it stands, in the
    task's scratch space, so what the agent writes during a re-test never reaches the
    initial pass's later tasks nor the next re-test. The baseline pass has no memory."""
    if builtin_dir is None or pass_ == "baseline":
        return None
    if pass_ == "initial":
        return builtin_dir
    frozen = scratch / "builtin-memory"
    if builtin_dir.is_dir():
        shutil.copytree(builtin_dir, frozen, symlinks=True)
    else:
        frozen.mkdir(parents=True)
    return frozen


def restore_builtin_files(ledger: Ledger, version: str, sequence_id: str, dest: Path) -> int:
    """The builtin stage's native memory files as the ledger recorded them (latest text
    per path), written under `dest/auto-memory`. A job may run on any node, so its
    memory directory is rebuilt from the ledger rather than found on disk."""
    latest: dict[str, str] = {}
    for rec in ledger.read(types=["memory.written"], ranges=[StreamRange(f"run/{version}/{sequence_id}")]):
        ev = rec.event
        if ev.kind == "builtin-file":
            latest[ev.title] = ev.body
    root = (dest / "auto-memory").resolve()
    for rel, text in latest.items():
        target = (root / rel).resolve()
        if root not in target.parents:
            continue  # a recorded path that would escape the folder is not written
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return len(latest)
