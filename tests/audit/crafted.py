"""Crafted ledgers for the audit, replay, export and merge tests, built through the real API.

`Runs(ledger)` appends what a real run appends, with patches the test chooses:

    r = Runs(Ledger.open(path, create=True))
    r.start("1", stage="plugin-blank", plan={SEQ: TASKS})
    r.task("1", SEQ, 1, patch=P1, recalls=[["item-a", "item-b"]], write=Item("v1-1", patch=P1))
    r.finish("1")

Patches are real unified diffs (`diff_of`), so reuse is measured on real hunks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from ledger import Ledger, NewEvent, Recorded, event_id_for
from ledger.events import (
    AgentFinished,
    DreamFinished,
    DreamStarted,
    GradeFinished,
    MemoryRecalled,
    MemorySeeded,
    MemorySuperseded,
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

REPO = "acme/widgets"
SEQ = "acme_widgets_sequence"
TASKS = [TaskRef(f"acme__widgets-{n}", n, REPO, 1) for n in (1, 2, 3)]

OTHER_REPO = "acme/gadgets"
OTHER_SEQ = "acme_gadgets_sequence"
OTHER_TASKS = [TaskRef(f"acme__gadgets-{n}", n, OTHER_REPO, 2) for n in (1, 2, 3)]

LEAK_LINE = "assert widgets.frobnicate(3) == 'three frobs, counted twice'"
F2P = "tests/test_widgets.py::test_frobnicate_counts_twice"


def diff_of(path: str, *lines: str) -> str:
    """A one-hunk unified diff of `path`; each line starts with ' ', '-' or '+'."""
    old = sum(1 for line in lines if line[:1] in " -")
    new = sum(1 for line in lines if line[:1] in " +")
    head = f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1,{old} +1,{new} @@\n"
    return head + "".join(line + "\n" for line in lines)


P1 = diff_of("widgets/core.py", " def frobnicate(n):", "-    return n", "+    return n * 2")
P2 = diff_of("widgets/text.py", " def label(x):", "-    return str(x)", "+    return f'{x} frobs'")
P3 = diff_of(
    "widgets/core.py",
    " def frobnicate(n):", "-    return n", "+    return n * 3", " def twice(n):", "-    return n + 0", "+    return n + n",
)
OWN_WRONG = diff_of("widgets/core.py", " def frobnicate(n):", "-    return n", "+    return -n")
TEST_PATCH = diff_of(
    "tests/test_widgets.py", " import widgets", "+def test_frobnicate_counts_twice():", f"+    {LEAK_LINE}"
)


@dataclass(frozen=True)
class Item:
    item_id: str
    patch: str | None = None
    body: str = ""
    title: str = ""
    outcome: str = "resolved"


@dataclass
class Runs:
    ledger: Ledger
    plans: dict[str, dict[str, list[TaskRef]]] = field(default_factory=dict)

    def _id(self, *parts: object) -> str:
        return event_id_for("crafted", self.ledger.ledger_id, *parts)

    def start(self, version: str, *, stage: str, plan: dict[str, list[TaskRef]], model: str | None = None) -> Recorded:
        self.plans[version] = plan
        (rec,) = self.ledger.append(
            f"run/{version}",
            [
                RunStarted(
                    version=version, benchmark="crafted", dataset_hash="c" * 64, sequences=list(plan), stage=stage,
                    memory_mode="off" if stage == "base" else "plugin-real", agent="demo", model=model, tasks=plan,
                )
            ],
            expected_version=-1,
        )
        return rec

    def seed(self, version: str, source: str, *, source_seq: int | None = None, item_count: int = 3) -> Recorded:
        seq = self.ledger.head() if source_seq is None else source_seq
        (rec,) = self.ledger.append(
            f"run/{version}", [MemorySeeded(item_count=item_count, source_run=source, source_seq=seq)]
        )
        return rec

    def finish(self, version: str) -> None:
        self.ledger.append(f"run/{version}", [RunFinished(status="finished")])

    def pass_marks(self, version: str, sequence: str, pass_: str, what: str) -> None:
        cls = PassStarted if what == "started" else PassFinished
        self.ledger.append(f"run/{version}/{sequence}", [cls(sequence_id=sequence, pass_=pass_)])

    def task(
        self,
        version: str,
        sequence: str,
        order: int,
        *,
        pass_: str = "initial",
        attempt: int = 1,
        patch: str | None = None,
        recalls: Sequence[Sequence[str]] = (),
        resolved: bool = True,
        abandon: bool = False,
        write: Item | None = None,
    ) -> list[Recorded]:
        """One attempt: started, recalls (item ids best first), agent, grade, finished, and
        (initial pass) the daydream's memory.written of `write`. `abandon` stops after the
        agent with task.abandoned."""
        t = self.plans[version][sequence][order - 1]
        stream = f"run/{version}/{sequence}"
        common = dict(sequence_id=sequence, instance_id=t.instance_id, order=order, pass_=pass_, attempt=attempt)
        out = self.ledger.append(stream, [TaskStarted(repo=t.repo, difficulty=t.difficulty, **common)])
        for hits in recalls:
            out += self.recall(version, sequence, order, hits, pass_=pass_, attempt=attempt)
        blobs = [patch] if patch else []
        ref = hashlib.sha256(patch.encode()).hexdigest() if patch else None
        out += self.ledger.append(stream, [AgentFinished(agent="demo", patch=ref, turns=3, **common)], blobs=blobs)
        if abandon:
            out += self.ledger.append(stream, [TaskAbandoned(reason="killed", **common)])
            return out
        status = "resolved" if resolved else "unresolved"
        batch = [
            GradeFinished(grader="swebench", status=status, resolved=resolved, **common),
            TaskFinished(resolved=resolved, status=status, **common),
        ]
        item_blobs = []
        if write is not None and pass_ == "initial":
            batch.append(self.item_event(version, sequence, order, write))
            if write.patch:
                item_blobs.append(write.patch)
        out += self.ledger.append(stream, batch, blobs=item_blobs, durable=True)
        return out

    def item_event(self, version: str, sequence: str, order: int, item: Item) -> MemoryWritten:
        t = self.plans[version][sequence][order - 1]
        return MemoryWritten(
            item_id=item.item_id,
            kind="episode",
            title=item.title or f"{t.instance_id}: what was learned",
            body=item.body or f"Issue {t.instance_id}; fixed in {t.repo}.",
            repo=t.repo,
            source_run=version,
            sequence_id=sequence,
            source_instance=t.instance_id,
            source_order=order,
            source_pass="initial",
            outcome=item.outcome,
            patch=hashlib.sha256(item.patch.encode()).hexdigest() if item.patch else None,
        )

    def recall(
        self, version: str, sequence: str, order: int, hits: Sequence[str], *, pass_: str = "initial", attempt: int = 1
    ) -> list[Recorded]:
        t = self.plans[version][sequence][order - 1]
        return self.ledger.append(
            f"run/{version}/{sequence}",
            [
                MemoryRecalled(
                    sequence_id=sequence, instance_id=t.instance_id, order=order, pass_=pass_, attempt=attempt,
                    query_hash=hashlib.sha256(t.instance_id.encode()).hexdigest(), query=f"issue of {t.instance_id}",
                    repo=t.repo, results=[RecallHit(item_id=i, score=round(10.0 / n, 3), rank=n) for n, i in enumerate(hits, 1)],
                )
            ],
        )

    def supersede(self, version: str, item_id: str, by: str, reason: str, dream_id: str = "dream-1") -> None:
        self.ledger.append(
            f"run/{version}",
            [
                NewEvent(DreamStarted(dream_id=dream_id, reason="manual"), self._id(version, dream_id, "start")),
                NewEvent(MemorySuperseded(item_id=item_id, by=by, reason=reason, dream_id=dream_id),
                         self._id(version, dream_id, item_id)),
                NewEvent(DreamFinished(dream_id=dream_id, decisions=1), self._id(version, dream_id, "finish")),
            ],
        )


def blank_run(r: Runs, version: str = "1") -> None:
    """plugin-blank over SEQ: three tasks, each writing one item with its patch."""
    r.start(version, stage="plugin-blank", plan={SEQ: TASKS})
    r.pass_marks(version, SEQ, "initial", "started")
    r.task(version, SEQ, 1, patch=P1, write=Item(f"v{version}-1", patch=P1))
    r.task(version, SEQ, 2, patch=P2, recalls=[[f"v{version}-1"]],
           write=Item(f"v{version}-2", patch=P2, body=f"Remember: {LEAK_LINE}"))
    r.task(version, SEQ, 3, patch=P3, recalls=[[f"v{version}-1", f"v{version}-2"]],
           write=Item(f"v{version}-3", patch=P3, body="See test_frobnicate_counts_twice for the expected counts."))
    r.pass_marks(version, SEQ, "initial", "finished")
    r.finish(version)


def accum_run(r: Runs, version: str = "2", source: str = "1") -> dict[str, int]:
    """plugin-accum seeded from `source`: task 1 is killed once (its recall is history),
    redone reusing the seeded item of the same task; a dream supersedes the seeded item
    of task 3; the re-test of task 1 recalls the run's own item and the seeded one.
    Returns the seqs of the interesting events."""
    seqs: dict[str, int] = {}
    r.start(version, stage="plugin-accum", plan={SEQ: TASKS})
    seqs["seed"] = r.seed(version, source).seq
    r.pass_marks(version, SEQ, "initial", "started")
    first = r.task(version, SEQ, 1, patch=OWN_WRONG, recalls=[[f"v{source}-1", f"v{source}-3", "ghost-item"]],
                   abandon=True)
    seqs["recall_abandoned"] = first[1].seq
    second = r.task(version, SEQ, 1, attempt=2, patch=P1, recalls=[[f"v{source}-1", f"v{source}-3", f"v{source}-2"]],
                    write=Item(f"v{version}-1", patch=P1))
    seqs["recall_attempt2"] = second[1].seq
    r.supersede(version, f"v{source}-3", f"v{version}-1", "contradiction: newer fix of frobnicate")
    r.task(version, SEQ, 2, patch=P2, write=Item(f"v{version}-2", patch=P2))
    r.task(version, SEQ, 3, patch=P3, write=Item(f"v{version}-3", patch=P3))
    r.pass_marks(version, SEQ, "initial", "finished")
    r.pass_marks(version, SEQ, "retest", "started")
    retest = r.task(version, SEQ, 1, pass_="retest", patch=P1, recalls=[[f"v{version}-1", f"v{source}-1"]])
    seqs["recall_retest"] = retest[1].seq
    r.pass_marks(version, SEQ, "retest", "finished")
    r.finish(version)
    return seqs


def secrets_for_task_1() -> dict[str, object]:
    from commands.memory import GradingSecrets

    return {"acme__widgets-1": GradingSecrets(test_patch=TEST_PATCH, fail_to_pass=(F2P,), pass_to_pass=())}
