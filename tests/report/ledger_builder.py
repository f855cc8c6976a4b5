"""Build realistic ledgers through the real `Ledger` API, for report tests and any other reader.

Small API:

    led = LedgerBuilder.create(tmp_path / "results" / "ledger.db")
    led.start_run("v1", stage="plugin-blank", plan={"seq": [Task("repo__repo-1", "org/repo", 2)]})
    led.run_pass("v1", "seq", "initial", [1])             # 1 resolved, 0 unresolved, None infra_error
    led.task("v1", "seq", 1, pass_="retest", status="patch_failed", recalls=[Hit.of("item-1", 0.8)])
    led.write_memory("v1", "seq", "item-1", "a title", source_order=1)
    led.finish_run("v1")

Every task is the event sequence a real run appends: task.started, the recalls the agent
made, agent.finished, grade.finished, task.finished, then (initial pass) the daydream's
memory.written. `build_realistic(root)` makes the two-version, two-sequence ledger the
report tests use and says what is in it (`Realistic`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ledger import Ledger
from ledger.events import (
    AgentFinished,
    GradeFinished,
    MemoryRecalled,
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
    ToolCall,
)
from projections import INVALID_STATUSES

Outcome = int | None
"""Shorthand for a task's verdict: 1 resolved, 0 unresolved, None no valid verdict (infra_error)."""

INVALID = INVALID_STATUSES


def status_of(outcome: Outcome) -> str:
    return {1: "resolved", 0: "unresolved", None: "infra_error"}[outcome]


def resolved_of(status: str) -> bool | None:
    if status in INVALID:
        return None
    return status == "resolved"


@dataclass(frozen=True)
class Task:
    instance_id: str
    repo: str
    difficulty: int | None = None


@dataclass(frozen=True)
class Hit:
    item_id: str
    score: float
    rank: int = 0  # 0: by position in the list

    @classmethod
    def of(cls, item_id: str, score: float) -> Hit:
        return cls(item_id, score)


def _hits(hits: Sequence[Hit]) -> list[RecallHit]:
    return [RecallHit(item_id=h.item_id, score=h.score, rank=h.rank or n) for n, h in enumerate(hits, start=1)]


@dataclass
class LedgerBuilder:
    ledger: Ledger
    plans: dict[str, dict[str, list[Task]]] = field(default_factory=dict)

    @classmethod
    def create(cls, path: Path) -> LedgerBuilder:
        return cls(Ledger.open(path, create=True))

    def close(self) -> None:
        self.ledger.close()

    # -- runs and passes -----------------------------------------------------------------

    def start_run(
        self,
        version: str,
        *,
        stage: str,
        plan: dict[str, list[Task]],
        memory_mode: str | None = None,
        passes: Sequence[str] | None = None,
        retest_every: int | None = None,
        agent: str = "demo",
        model: str | None = None,
        source_memory: str | None = None,
    ) -> None:
        mode = memory_mode or ("off" if stage == "base" else "builtin" if stage == "builtin" else "plugin-real")
        chosen = list(passes) if passes is not None else (["initial"] if mode == "off" else ["initial", "retest", "baseline"])
        self.plans[version] = {seq: list(tasks) for seq, tasks in plan.items()}
        self.ledger.append(
            f"run/{version}",
            [
                RunStarted(
                    version=version,
                    benchmark="swe-bench-cl",
                    dataset_hash=hashlib.sha256(repr(sorted(plan)).encode()).hexdigest(),
                    sequences=list(plan),
                    stage=stage,
                    memory_mode=mode,
                    agent=agent,
                    model=model,
                    passes=chosen,
                    retest_every=retest_every,
                    source_memory=source_memory,
                    tasks={
                        seq: [TaskRef(t.instance_id, n, t.repo, t.difficulty) for n, t in enumerate(tasks, start=1)]
                        for seq, tasks in plan.items()
                    },
                    provenance={"swecl": "test", "command": ["swecl", "run", stage]},
                )
            ],
            expected_version=-1,
        )

    def finish_run(self, version: str, status: str = "finished") -> None:
        self.ledger.append(f"run/{version}", [RunFinished(status=status)])

    def _stream(self, version: str, sequence: str) -> str:
        return f"run/{version}/{sequence}"

    def task_of(self, version: str, sequence: str, order: int) -> Task:
        return self.plans[version][sequence][order - 1]

    def run_pass(
        self,
        version: str,
        sequence: str,
        pass_: str,
        outcomes: Sequence[Outcome],
        *,
        turns: Sequence[int | None] | None = None,
        recalls: dict[int, Sequence[Hit]] | None = None,
    ) -> None:
        """One pass over orders 1..len(outcomes), bracketed by pass.started/finished."""
        stream = self._stream(version, sequence)
        self.ledger.append(stream, [PassStarted(sequence_id=sequence, pass_=pass_)])
        for order, outcome in enumerate(outcomes, start=1):
            hits = (recalls or {}).get(order)
            self.task(
                version, sequence, order,
                pass_=pass_,
                status=status_of(outcome),
                turns=(turns[order - 1] if turns is not None else 4 + order),
                recalls=[hits] if hits is not None else (),
            )
        self.ledger.append(stream, [PassFinished(sequence_id=sequence, pass_=pass_)])

    # -- one task ------------------------------------------------------------------------

    def task(
        self,
        version: str,
        sequence: str,
        order: int,
        *,
        pass_: str = "initial",
        status: str = "resolved",
        resolved: bool | None | str = "auto",
        attempt: int = 1,
        turns: int | None = 5,
        recalls: Sequence[Sequence[Hit]] = (),
        query: str = "",
        abandon: bool = False,
    ) -> None:
        """A task of a pass; `recalls` is one hit list per recall call. `abandon` stops
        after the recalls with task.abandoned (a crash: resume runs attempt + 1)."""
        t = self.task_of(version, sequence, order)
        stream = self._stream(version, sequence)
        common = dict(sequence_id=sequence, instance_id=t.instance_id, order=order, pass_=pass_, attempt=attempt)
        self.ledger.append(stream, [TaskStarted(repo=t.repo, difficulty=t.difficulty, **common)])
        for hits in recalls:
            self.recall(version, sequence, order, hits, pass_=pass_, attempt=attempt, query=query or f"{t.instance_id} issue")
        if abandon:
            self.ledger.append(stream, [TaskAbandoned(**common, reason="interrupted")])
            return
        verdict = resolved_of(status) if resolved == "auto" else resolved
        patch = self.ledger.put_blob(f"diff --git a/{t.instance_id}.py b/{t.instance_id}.py\n")
        self.ledger.append(
            stream,
            [
                AgentFinished(
                    **common, agent="demo", patch=patch, turns=turns, duration_s=1.5,
                    tool_calls=[ToolCall(name="Edit"), ToolCall(name="Bash")], cost_usd=0.01 * order,
                ),
                GradeFinished(
                    **common, grader="swebench", status=status, resolved=verdict,
                    error="worker lost" if status in INVALID else None,
                ),
                TaskFinished(**common, resolved=verdict, status=status),
            ],
            durable=True,
        )

    # -- memory --------------------------------------------------------------------------

    def recall(
        self,
        version: str,
        sequence: str,
        order: int,
        hits: Sequence[Hit],
        *,
        pass_: str = "initial",
        attempt: int = 1,
        query: str = "",
        via: str = "mcp",
    ) -> None:
        t = self.task_of(version, sequence, order)
        self.ledger.append(
            self._stream(version, sequence),
            [
                MemoryRecalled(
                    sequence_id=sequence,
                    instance_id=t.instance_id,
                    order=order,
                    pass_=pass_,
                    attempt=attempt,
                    query_hash=hashlib.sha256(query.encode()).hexdigest()[:16],
                    query=query,
                    repo=t.repo,
                    results=_hits(hits),
                    via=via,
                )
            ],
        )

    def write_memory(
        self,
        version: str,
        sequence: str | None,
        item_id: str,
        title: str,
        *,
        source_order: int | None = None,
        source_instance: str | None = None,
        source_run: str | None = None,
        repo: str | None = None,
        body: str = "",
    ) -> None:
        """A `memory.written`: in `run/{version}/{sequence}` (a daydream), or with
        `sequence=None` in the run's header stream (how a seed import records items)."""
        task = self.task_of(version, sequence, source_order) if sequence and source_order else None
        stream = self._stream(version, sequence) if sequence else f"run/{version}"
        self.ledger.append(
            stream,
            [
                MemoryWritten(
                    item_id=item_id,
                    kind="episode",
                    title=title,
                    body=body or f"body of {item_id}",
                    repo=repo or (task.repo if task else "org/repo"),
                    source_run=source_run or version,
                    sequence_id=sequence,
                    source_instance=source_instance or (task.instance_id if task else None),
                    source_order=source_order,
                    source_pass="initial",
                    outcome="resolved",
                )
            ],
        )


# --- the realistic ledger the report tests share ------------------------------------------

DJANGO = "django__django"
SYMPY = "sympy__sympy"
BASE = "base"
PLUGIN = "plugin-blank"

PLAN: dict[str, list[Task]] = {
    DJANGO: [
        Task("django__django-11099", "django/django", 1),
        Task("django__django-11133", "django/django", 2),
        Task("django__django-11179", "django/django", 1),
        Task("django__django-11211", "django/django", 3),
        Task("django__django-11276", "django/django", 2),
    ],
    SYMPY: [
        Task("sympy__sympy-12481", "sympy/sympy", 1),
        Task("sympy__sympy-13031", "sympy/sympy", 2),
        Task("sympy__sympy-13480", "sympy/sympy", 1),
        Task("sympy__sympy-13647", "sympy/sympy", 4),
    ],
}

SCRIPT_TITLE = 'Escape <script>window.__pwned = 1;</script> & "quotes" in admin <b>titles</b>'
HOSTILE_QUERY = '<img src="x-should-not-load.png" onerror="window.__pwned = 2">'
UNKNOWN_ITEM = "mem-ghost-404"

TITLES: dict[str, str] = {
    "mem-dj-1": "URLValidator accepts newlines: anchor the regex with \\A and \\Z",
    "mem-dj-2": SCRIPT_TITLE,
    "mem-dj-4": "Field.deconstruct must keep the callable storage (migrations)",
    "mem-sy-1": "Permutation constructor: non-disjoint cycles compose left to right",
    "mem-import-1": "Imported: Matrix.hstack of empty matrices keeps the column count",
}


@dataclass(frozen=True)
class Realistic:
    """What `build_realistic` put in the ledger."""

    root: Path
    ledger_path: Path
    versions: tuple[str, ...]
    sequences: tuple[str, ...]
    initial: dict[tuple[str, str], list[Outcome]]
    final: dict[tuple[str, str], list[Outcome]]
    baseline: dict[tuple[str, str], list[Outcome]]
    missing_cell: tuple[str, str, str, int]
    """(version, sequence, pass, order) of the infra_error task."""
    recalled_titles: tuple[str, ...]
    """Titles of items the initial passes recalled (known items only)."""
    unknown_item: str = UNKNOWN_ITEM
    script_title: str = SCRIPT_TITLE
    hostile_query: str = HOSTILE_QUERY


def build_realistic(root: Path) -> Realistic:
    """`root/ledger.db`: v`base` (memory off, initial only) and v`plugin-blank` (initial,
    retest, baseline, retest every 2) over django (5 tasks) and sympy (4 tasks)."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / "ledger.db"
    b = LedgerBuilder.create(path)
    try:
        initial = {
            (BASE, DJANGO): [1, 0, 1, 0, 1],
            (BASE, SYMPY): [0, 1, 1, 0],
            (PLUGIN, DJANGO): [1, 1, None, 0, 1],
            (PLUGIN, SYMPY): [0, 1, 1, 1],
        }
        final = {(PLUGIN, DJANGO): [1, 0, 1, 0, 1], (PLUGIN, SYMPY): [1, 1, 0, 1]}
        baseline = {(PLUGIN, DJANGO): [1, 0, 1, 0, 0], (PLUGIN, SYMPY): [0, 0, 1, 0]}

        b.start_run(BASE, stage="base", plan=PLAN)
        for seq in (DJANGO, SYMPY):
            b.run_pass(BASE, seq, "initial", initial[(BASE, seq)])
        b.finish_run(BASE)

        b.start_run(PLUGIN, stage="plugin-blank", plan=PLAN, retest_every=2, model="claude-test")
        # A seed-style import into the header stream, from a run this ledger does not hold.
        b.write_memory(PLUGIN, None, "mem-import-1", TITLES["mem-import-1"], source_run="archive-2024",
                       source_instance="sympy__sympy-11618", repo="sympy/sympy")

        # django, initial pass: daydream writes after tasks 1, 2 and 4; task 3 hits an infra error.
        stream_dj = (PLUGIN, DJANGO)
        b.ledger.append(f"run/{PLUGIN}/{DJANGO}", [PassStarted(sequence_id=DJANGO, pass_="initial")])
        b.task(*stream_dj, 1, status="resolved", turns=7)
        b.write_memory(*stream_dj, "mem-dj-1", TITLES["mem-dj-1"], source_order=1)
        b.task(*stream_dj, 2, status="resolved", turns=5, recalls=[[Hit.of("mem-dj-1", 0.91)]])
        b.write_memory(*stream_dj, "mem-dj-2", TITLES["mem-dj-2"], source_order=2)
        b.task(*stream_dj, 3, status="infra_error", turns=3,
               recalls=[[Hit.of("mem-dj-1", 0.42), Hit.of("mem-dj-2", 0.40)]])
        b.task(*stream_dj, 4, status="patch_failed", turns=12, query=HOSTILE_QUERY,
               recalls=[[Hit.of("mem-dj-2", 0.88), Hit.of("mem-dj-1", 0.51), Hit.of(UNKNOWN_ITEM, 0.2)]])
        b.write_memory(*stream_dj, "mem-dj-4", TITLES["mem-dj-4"], source_order=4)
        b.task(*stream_dj, 5, status="resolved", turns=6, recalls=[[Hit.of("mem-dj-4", 0.77)], []])
        b.ledger.append(f"run/{PLUGIN}/{DJANGO}", [PassFinished(sequence_id=DJANGO, pass_="initial")])

        # sympy, initial pass: task 4 crashes once (its recall is history) and is redone.
        stream_sy = (PLUGIN, SYMPY)
        b.ledger.append(f"run/{PLUGIN}/{SYMPY}", [PassStarted(sequence_id=SYMPY, pass_="initial")])
        b.task(*stream_sy, 1, status="unresolved", recalls=[[Hit.of("mem-import-1", 0.65)]])
        b.write_memory(*stream_sy, "mem-sy-1", TITLES["mem-sy-1"], source_order=1)
        b.task(*stream_sy, 2, status="resolved", recalls=[[Hit.of("mem-sy-1", 0.93), Hit.of("mem-import-1", 0.31)]])
        b.task(*stream_sy, 3, status="resolved", recalls=[[]])
        b.task(*stream_sy, 4, abandon=True, recalls=[[Hit.of("mem-dj-4", 0.05)]])
        b.task(*stream_sy, 4, attempt=2, status="resolved", recalls=[[Hit.of("mem-sy-1", 0.7)]])
        b.ledger.append(f"run/{PLUGIN}/{SYMPY}", [PassFinished(sequence_id=SYMPY, pass_="initial")])

        # Extra rows a(i, j<=i), the final re-test and the memory-off baseline.
        b.run_pass(*stream_dj, "retest-2", [1, 0])
        b.run_pass(*stream_dj, "retest-4", [1, 1, 1, 0])
        b.run_pass(*stream_sy, "retest-2", [0, 1])
        b.run_pass(*stream_dj, "retest", final[stream_dj], recalls={1: [Hit.of("mem-dj-4", 0.6)]})
        b.run_pass(*stream_sy, "retest", final[stream_sy])
        b.run_pass(*stream_dj, "baseline", baseline[stream_dj])
        b.run_pass(*stream_sy, "baseline", baseline[stream_sy])
        b.finish_run(PLUGIN)
    finally:
        b.close()
    recalled = tuple(TITLES[k] for k in ("mem-dj-1", "mem-dj-2", "mem-dj-4", "mem-sy-1", "mem-import-1"))
    return Realistic(
        root=root,
        ledger_path=path,
        versions=(BASE, PLUGIN),
        sequences=(DJANGO, SYMPY),
        initial=initial,
        final=final,
        baseline=baseline,
        missing_cell=(PLUGIN, DJANGO, "initial", 3),
        recalled_titles=recalled,
    )
