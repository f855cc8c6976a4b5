"""Synthetic ledgers for the benchmarks: realistic runs over the 273 tasks, built fast with the real API.

The events come from `bench.ledgers.LedgerBuilder`, the builder the tests use too; this
module only chooses them (randomly, reproducibly) and buffers them in big transactions.
What a run looks like (as `commands/run` appends it):

- `run/{V}`: `run.started` with a plan of the 8 SWE-Bench-CL sequences (django 50, sympy 50,
  sphinx 44, matplotlib 34, scikit-learn 32, astropy 22, xarray 22, pytest 19 = 273 tasks),
  provenance and config; for seeded stages `memory.seeded` (from the campaign's blank
  run, as of the ledger's head then); for plugin-dreamed one dream (prunes, merges,
  supersedes); `run.finished` at the end.
- `run/{V}/{sequence}`: per pass (`initial`, then `retest`, then `baseline` for plugin
  stages; `initial` only for base) `pass.started`, then per task `task.started`,
  `memory.recalled` (plugin stages, memory on), `agent.finished` (tool calls, tokens,
  a patch blob), `grade.finished` (f2p/p2p/tests maps of realistic test ids, a log
  blob), `task.finished`, and in the initial pass of plugin stages the daydream's
  `memory.written` (about 2% refused as `memory.rejected`); then `pass.finished`.
  The 8 sequences run in parallel, so their tasks interleave.

Runs come in campaigns of four stages: base, plugin-blank, plugin-accum (seeded from the
blank run) and plugin-dreamed (seeded from it too, then a dream). `attempts > 1` makes
every task fail over `attempts - 1` times (`task.started`, recall, `agent.finished`
crashed, `task.abandoned`) before its last attempt: many more events, the same final
state, which is what the memory benchmark needs.

Generation appends several thousand events per transaction through
`Ledger.append_batches`, with the runner's own deterministic event ids. Ledgers are
cached under the bench cache dir, keyed by the generator version, the spec and the store
schema (an index added to the schema regenerates them); a ledger is written to a temp
file and renamed when complete, so an interrupted generation is never reused.
"""

from __future__ import annotations

import hashlib
import os
import random
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ledger import STORE_DDL, STORE_SCHEMA, Ledger, NewEvent, Recorded, StreamBatch, event_id_for
from ledger.events import (
    Event,
    MemoryMerged,
    MemoryPruned,
    MemoryRejected,
    MemorySuperseded,
    MemoryWritten,
    RecallHit,
    TaskRef,
    ToolCall,
)

from .ledgers import LedgerBuilder

GENERATOR_VERSION = 2
"""Bumped whenever what the generator writes changes: cached ledgers of other versions are not reused."""

# (sequence id, repo, tasks): the SWE-Bench-CL curriculum's 8 sequences, 273 tasks.
SEQUENCES: tuple[tuple[str, str, int], ...] = (
    ("django_django_sequence", "django/django", 50),
    ("sympy_sympy_sequence", "sympy/sympy", 50),
    ("sphinx-doc_sphinx_sequence", "sphinx-doc/sphinx", 44),
    ("matplotlib_matplotlib_sequence", "matplotlib/matplotlib", 34),
    ("scikit-learn_scikit-learn_sequence", "scikit-learn/scikit-learn", 32),
    ("astropy_astropy_sequence", "astropy/astropy", 22),
    ("pydata_xarray_sequence", "pydata/xarray", 22),
    ("pytest-dev_pytest_sequence", "pytest-dev/pytest", 19),
)
STAGES = ("base", "plugin-blank", "plugin-accum", "plugin-dreamed")
PLUGIN_PASSES = ["initial", "retest", "baseline"]
_FLUSH_EVENTS = 4000  # events per append transaction while generating

# status -> weight; the statuses a real grade.finished carries.
_STATUSES = (
    ("resolved", 36), ("unresolved", 44), ("patch_failed", 7), ("empty_patch", 5),
    ("timeout", 2), ("env_failed", 3), ("infra_error", 3),
)
_TOOLS = ("Read", "Edit", "Bash", "Grep", "Glob", "Write", "mcp__memory__recall", "TodoWrite")
_WORDS = (
    "queryset annotate aggregate migration serializer field model form widget template "
    "parser lexer printer matrix symbol expression simplify integrate solve domain "
    "autodoc directive role builder napoleon toctree figure axes artist colorbar legend "
    "estimator pipeline transformer cluster sparse fits table units wcs coordinate "
    "dataset dataarray coords indexing groupby fixture assertion rewrite collection marker"
).split()


@dataclass(frozen=True)
class LedgerSpec:
    """What to generate: stop at exactly `events` (the last run cut where it is, like a run
    still going), or `runs` whole runs; `attempts` per task; sequence lengths x `task_scale`."""

    name: str
    events: int | None = None
    runs: int | None = None
    attempts: int = 1
    task_scale: float = 1.0
    seed: int = 11

    def key(self) -> str:
        schema = hashlib.sha256(f"{STORE_SCHEMA}\n{STORE_DDL}".encode()).hexdigest()[:10]
        what = f"e{self.events}" if self.events is not None else f"r{self.runs}"
        return f"g{GENERATOR_VERSION}-{self.name}-{what}-a{self.attempts}-s{self.task_scale:g}-seed{self.seed}-{schema}"


@dataclass
class RunInfo:
    version: str
    stage: str
    started_seq: int
    sequences: list[str]
    plan_sizes: dict[str, int]
    complete: bool = False
    source: str | None = None


@dataclass
class Generated:
    path: Path
    spec: LedgerSpec
    events: int
    runs: list[RunInfo]
    seconds: float  # generation time (0 when it came from the cache)
    cached: bool

    def complete_runs(self, stage: str | None = None) -> list[RunInfo]:
        return [r for r in self.runs if r.complete and (stage is None or r.stage == stage)]


def sequences_for(scale: float) -> list[tuple[str, str, int]]:
    return [(s, repo, max(2, round(n * scale))) for s, repo, n in SEQUENCES]


class _Done(Exception):
    """The requested number of events is reached."""


@dataclass
class _Writer:
    """The builder's sink: buffers events as interleaved stream batches and appends them in
    big transactions (the runner's own transaction boundaries would make generation slow)."""

    ledger: Ledger
    limit: int | None
    count: int = 0
    pending: list[tuple[str, list[NewEvent]]] = field(default_factory=list)
    pending_events: int = 0
    blobs: dict[str, bytes] = field(default_factory=dict)
    stored_blobs: set[str] = field(default_factory=set)

    def append(self, stream: str, events: Sequence[Event | NewEvent], *, blobs: Sequence[bytes], durable: bool,
               expected_version: int | None) -> list[Recorded]:
        for raw in blobs:
            digest = hashlib.sha256(raw).hexdigest()
            if digest not in self.stored_blobs:
                self.blobs[digest] = raw
        for event in events:
            assert isinstance(event, NewEvent), "the generator's builder gives every event its id"
            self.emit(stream, event)
        return []  # nothing is recorded until a flush

    def emit(self, stream: str, event: NewEvent) -> None:
        if self.limit is not None and self.count >= self.limit:
            raise _Done
        if self.pending and self.pending[-1][0] == stream:
            self.pending[-1][1].append(event)
        else:
            self.pending.append((stream, [event]))
        self.count += 1
        self.pending_events += 1
        if self.pending_events >= _FLUSH_EVENTS:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        self.ledger.append_batches(
            [StreamBatch(stream, events) for stream, events in self.pending], blobs=list(self.blobs.values())
        )
        self.stored_blobs.update(self.blobs)
        self.blobs.clear()
        self.pending.clear()
        self.pending_events = 0


@dataclass(frozen=True)
class _Task:
    sequence_id: str
    repo: str
    order: int
    instance_id: str
    difficulty: int
    test_file: str
    module: str
    f2p: tuple[str, ...]
    p2p: tuple[str, ...]


def _tasks(scale: float, seed: int) -> dict[str, list[_Task]]:
    rng = random.Random(seed)
    plan: dict[str, list[_Task]] = {}
    for sequence_id, repo, n in sequences_for(scale):
        owner, name = repo.split("/")
        number = rng.randrange(9000, 12000)
        tasks = []
        for order in range(1, n + 1):
            number += rng.randrange(3, 400)
            area = rng.choice(_WORDS)
            test_file = f"tests/{area}/test_{rng.choice(_WORDS)}.py"
            module = f"{name.replace('-', '_')}/{area}/{rng.choice(_WORDS)}.py"
            klass = f"Test{rng.choice(_WORDS).title()}"
            f2p = tuple(f"{test_file}::{klass}::test_{rng.choice(_WORDS)}_{i}" for i in range(rng.randint(1, 3)))
            p2p_count = min(int(rng.expovariate(1 / 12)), 150)
            p2p = tuple(f"{test_file}::{klass}::test_{rng.choice(_WORDS)}_{rng.choice(_WORDS)}_{i}" for i in range(p2p_count))
            tasks.append(
                _Task(sequence_id, repo, order, f"{owner}__{name}-{number}", rng.randint(1, 4), test_file, module, f2p, p2p)
            )
        plan[sequence_id] = tasks
    return plan


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words))


@dataclass(frozen=True)
class _Pools:
    """Texts and tool-call lists drawn once per ledger: random words per event would make
    generation, not the ledger, the slow part."""

    queries: list[str]
    titles: list[str]
    issues: list[str]
    lessons: list[str]
    tool_calls: list[list[ToolCall]]


_POOLS: dict[int, _Pools] = {}


def _pools(seed: int) -> _Pools:
    if seed not in _POOLS:
        rng = random.Random(seed * 7919)
        _POOLS[seed] = _Pools(
            queries=[_text(rng, 18) for _ in range(256)],
            titles=[_text(rng, 6) for _ in range(256)],
            issues=[_text(rng, 40) for _ in range(256)],
            lessons=[_text(rng, 50) for _ in range(256)],
            tool_calls=[
                [ToolCall(name=rng.choice(_TOOLS), error=rng.random() < 0.05) for _ in range(rng.randint(2, 30))]
                for _ in range(256)
            ],
        )
    return _POOLS[seed]


def _patch_text(task: _Task) -> bytes:
    body = "".join(f"+    # {task.instance_id} line {i}\n" for i in range(12))
    return (
        f"diff --git a/{task.module} b/{task.module}\n--- a/{task.module}\n+++ b/{task.module}\n"
        f"@@ -10,6 +10,18 @@ def handler(value):\n     if value is None:\n         return None\n{body}"
        "     return value\n"
    ).encode()


def _log_text(task: _Task, status: str) -> bytes:
    lines = [f"{t} PASSED" for t in task.p2p] + [f"{t} {'PASSED' if status == 'resolved' else 'FAILED'}" for t in task.f2p]
    return (f"[swecl] grader=swebench instance={task.instance_id}\n" + "\n".join(lines) + "\n").encode()


class _RunWriter:
    """Appends one run's events (see the module doc) through the shared `LedgerBuilder`
    into a shared `_Writer`."""

    def __init__(self, w: _Writer, plan: dict[str, list[_Task]], spec: LedgerSpec, index: int,
                 blank_of_campaign: dict[int, RunInfo], items_of: dict[str, list[tuple[str, str]]]) -> None:
        self.w = w
        self.b = LedgerBuilder(sink=w, event_ids=lambda version, key: event_id_for(version, *key))
        self.plan = plan
        self.spec = spec
        self.index = index
        self.rng = random.Random(spec.seed * 1_000_003 + index)
        self.stage = STAGES[index % len(STAGES)]
        self.campaign = index // len(STAGES)
        self.version = str(index + 1)
        self.plugin = self.stage.startswith("plugin")
        self.blank_of_campaign = blank_of_campaign
        self.items_of = items_of  # version -> [(item id, repo)] written in its initial pass
        self.items_by_repo: dict[str, list[str]] = {}  # what recall can hit in this run
        self.pools = _pools(spec.seed)

    def run(self, runs: list[RunInfo]) -> None:
        passes = PLUGIN_PASSES if self.plugin else ["initial"]
        source = self.blank_of_campaign.get(self.campaign) if self.stage in ("plugin-accum", "plugin-dreamed") else None
        info = RunInfo(self.version, self.stage, self.w.count + 1, list(self.plan),
                       {s: len(t) for s, t in self.plan.items()}, source=source.version if source else None)
        runs.append(info)
        self._run_started(passes, source)
        if self.stage == "plugin-blank":
            self.blank_of_campaign[self.campaign] = info
        if source is not None:
            self._seed(source)
            if self.stage == "plugin-dreamed":
                self._dream()
        for pass_ in passes:
            memory_on = self.plugin and pass_ != "baseline"
            for sequence_id in self.plan:
                self.b.pass_mark(self.version, sequence_id, pass_, "started")
            longest = max(len(t) for t in self.plan.values())
            for order in range(1, longest + 1):
                for tasks in self.plan.values():
                    if order <= len(tasks):
                        self._task(tasks[order - 1], pass_, memory_on)
            for sequence_id in self.plan:
                self.b.pass_mark(self.version, sequence_id, pass_, "finished")
        self.b.finish_run(self.version)
        info.complete = True

    def _run_started(self, passes: list[str], source: RunInfo | None) -> None:
        self.b.start_run(
            self.version,
            stage=self.stage,
            plan={s: [TaskRef(t.instance_id, t.order, t.repo, t.difficulty) for t in tasks] for s, tasks in self.plan.items()},
            benchmark="swe-bench-cl",
            dataset_hash=hashlib.sha256(b"swe-bench-cl-273").hexdigest(),
            memory_mode="plugin-real" if self.plugin else "off",
            agent="claude-code",
            model=self.rng.choice(["claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5"]),
            passes=list(passes),
            source_memory=source.version if source else None,
            config={"max_turns": 60, "budget_usd": 5.0, "timeout_s": 1800, "recall_k": 5, "ttl_tasks": None},
            provenance={
                "swecl": "0.1.0",
                "git_sha": hashlib.sha1(f"sha{self.campaign}".encode()).hexdigest(),
                "python": "3.11.7",
                "platform": "Linux-6.8-x86_64",
                "packages": {"apsw": "3.54.1", "msgspec": "0.19.0", "swebench": "5.0.2", "mcp": "1.20.0"},
                "command": ["swecl", "run", "--stage", self.stage, "--agent", "claude-code", "--version", self.version],
                "dataset": "SWE-Bench-CL.json",
            },
        )

    def _seed(self, source: RunInfo) -> None:
        items = self.items_of.get(source.version, [])
        for item_id, repo in items:
            self.items_by_repo.setdefault(repo, []).append(item_id)
        self.b.seed(self.version, source.version, source_seq=self.w.count, item_count=len(items), chosen="newest-prior")

    def _dream(self) -> None:
        rng = self.rng
        dream_id = f"dream-{self.version}-1"
        decisions: list[Event] = []
        for items in self.items_by_repo.values():
            pool = list(items)
            rng.shuffle(pool)
            for item_id in pool[: max(1, len(pool) // 20)]:
                decisions.append(MemoryPruned(item_id=item_id, reason="ttl_tasks exceeded", dream_id=dream_id))
            if len(pool) >= 6:
                into, a, b = pool[-1], pool[-2], pool[-3]
                decisions.append(MemoryMerged(into=into, from_=[a, b], reason="near-duplicate", similarity=0.94,
                                              dream_id=dream_id))
                decisions.append(MemorySuperseded(item_id=pool[-4], by=pool[-5], reason="newer on the same subject",
                                                  dream_id=dream_id))
        self.b.dream(self.version, dream_id, decisions, reason="pre-eval", params={"ttl": True, "dedup": 0.92})

    def _task(self, task: _Task, pass_: str, memory_on: bool) -> None:
        for attempt in range(1, self.spec.attempts):
            self._attempt(task, pass_, memory_on, attempt, final=False)
        self._attempt(task, pass_, memory_on, self.spec.attempts, final=True)

    def _attempt(self, task: _Task, pass_: str, memory_on: bool, attempt: int, *, final: bool) -> None:
        rng = self.rng
        recalls: list[list[RecallHit]] = []
        query = None
        if memory_on:
            pool = self.items_by_repo.get(task.repo, [])
            picked = rng.sample(pool, min(5, len(pool))) if pool else []
            query = rng.choice(self.pools.queries)
            recalls.append([RecallHit(item_id=i, score=round(9.0 - n * rng.random(), 4), rank=n + 1)
                            for n, i in enumerate(picked)])
        status = rng.choices([s for s, _ in _STATUSES], [wt for _, wt in _STATUSES])[0] if final else "crashed"
        tool_calls = rng.choice(self.pools.tool_calls)
        turns = 2 * len(tool_calls) + rng.randint(0, 1)
        agent = dict(
            agent="claude-code", model="claude-sonnet-4-5",
            exit="completed" if final else "crashed", exit_code=0 if final else 1, turns=turns,
            tool_calls=tool_calls,
            cost_usd=round(rng.uniform(0.05, 2.5), 4),
            tokens={"input": rng.randint(2_000, 90_000), "output": rng.randint(300, 9_000),
                    "cache_read": rng.randint(0, 400_000), "cache_creation": rng.randint(0, 40_000)},
            duration_s=round(rng.uniform(20, 900), 2), session_id=f"{rng.getrandbits(128):032x}",
        )
        patch = None if status == "empty_patch" else _patch_text(task)
        if not final:
            self.b.task(self.version, task.sequence_id, task.order, pass_=pass_, attempt=attempt, patch=patch,
                        recalls=recalls, query=query, agent=agent, abandon=True)
            return
        ran = status in ("resolved", "unresolved", "timeout")
        f2p_status = "PASSED" if status == "resolved" else "FAILED"
        f2p = {t: f2p_status for t in task.f2p} if ran else {}
        p2p = {t: ("PASSED" if status == "resolved" or rng.random() < 0.9 else "FAILED") for t in task.p2p} if ran else {}
        grade = dict(
            applied_with="git apply" if ran else None,
            f2p=f2p, p2p=p2p, tests={**p2p, **f2p},
            test_exit_code=(0 if status == "resolved" else 1) if ran else None,
            test_cmd=["pytest", "-rA", task.test_file] if ran else [], duration_s=round(rng.uniform(3, 240), 2),
            env_key=f"{task.repo.replace('/', '__')}/3.0/py3.9-{hashlib.sha1(task.repo.encode()).hexdigest()[:12]}",
            parser="pytest",
        )
        daydream = memory_on and pass_ == "initial"
        item_id = "mem-" + hashlib.sha256(f"{self.version}\x1f{task.instance_id}\x1f{attempt}".encode()).hexdigest()[:20]
        rejected = daydream and rng.random() < 0.02
        write = self._item(task, status, item_id) if daydream and not rejected else None
        self.b.task(self.version, task.sequence_id, task.order, pass_=pass_, attempt=attempt, status=status, patch=patch,
                    recalls=recalls, query=query, agent=agent, grade=grade, log=_log_text(task, status), write=write)
        if rejected:
            self.b.write(self.version, task.sequence_id, MemoryRejected(
                reason="mentions a FAIL_TO_PASS test id", rule="test-leak", title="[withheld]", repo=task.repo,
                source_instance=task.instance_id, item_id=item_id))
        elif write is not None:
            self.items_by_repo.setdefault(task.repo, []).append(item_id)
            self.items_of.setdefault(self.version, []).append((item_id, task.repo))

    def _item(self, task: _Task, status: str, item_id: str) -> MemoryWritten:
        """The daydream's item of `task`."""
        rng = self.rng
        symbol = f"{rng.choice(_WORDS)}_{rng.choice(_WORDS)}"
        return self.b.item(
            self.version, task.sequence_id, task.order, item_id, title=f"{task.instance_id}: {rng.choice(self.pools.titles)}",
            body=(f"Issue: {rng.choice(self.pools.issues)}\nTouched {task.module} ({symbol}).\nOutcome: {status}.\n"
                  f"Lesson: {rng.choice(self.pools.lessons)}"),
            files=[task.module], symbols=[symbol], tags=[task.repo.split("/")[1], status, f"difficulty-{task.difficulty}"],
            outcome=status, patch=_patch_text(task),
        )


@dataclass
class _Collector(_Writer):
    """A `_Writer` that keeps the events instead of appending them (the append benchmark
    replays the same stream into both stores)."""

    events: list[tuple[str, NewEvent]] = field(default_factory=list)

    def emit(self, stream: str, event: NewEvent) -> None:
        if self.limit is not None and self.count >= self.limit:
            raise _Done
        self.events.append((stream, event))
        self.count += 1

    def flush(self) -> None:
        pass


def event_stream(count: int, *, seed: int = 11, task_scale: float = 1.0) -> list[tuple[str, NewEvent]]:
    """The first `count` events a generated ledger would hold, as (stream, event) pairs."""
    spec = LedgerSpec("stream", events=count, task_scale=task_scale, seed=seed)
    plan = _tasks(spec.task_scale, spec.seed)
    c = _Collector(ledger=None, limit=count)  # type: ignore[arg-type]
    blank_of_campaign: dict[int, RunInfo] = {}
    items_of: dict[str, list[tuple[str, str]]] = {}
    runs: list[RunInfo] = []
    index = 0
    try:
        while True:
            _RunWriter(c, plan, spec, index, blank_of_campaign, items_of).run(runs)
            index += 1
    except _Done:
        pass
    return c.events


def generate(path: Path, spec: LedgerSpec) -> tuple[int, list[RunInfo]]:
    """Write the ledger of `spec` at `path` (which must not exist)."""
    plan = _tasks(spec.task_scale, spec.seed)
    runs: list[RunInfo] = []
    with Ledger.open(path, create=True) as ledger:
        w = _Writer(ledger, spec.events)
        blank_of_campaign: dict[int, RunInfo] = {}
        items_of: dict[str, list[tuple[str, str]]] = {}
        index = 0
        try:
            while spec.runs is None or index < spec.runs:
                _RunWriter(w, plan, spec, index, blank_of_campaign, items_of).run(runs)
                index += 1
        except _Done:
            pass
        w.flush()
        count = ledger.count()
    return count, runs


def cache_dir(explicit: Path | None = None) -> Path:
    """`--cache-dir`, else $SWECL_BENCH_CACHE, else bench/.cache (which ignores itself in git)."""
    if explicit is not None:
        root = explicit
    elif os.environ.get("SWECL_BENCH_CACHE"):
        root = Path(os.environ["SWECL_BENCH_CACHE"])
    else:
        root = Path(__file__).resolve().parent / ".cache"
    root.mkdir(parents=True, exist_ok=True)
    ignore = root / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# generated benchmark ledgers: never committed\n*\n", encoding="utf-8")
    return root


def is_cached(spec: LedgerSpec, root: Path) -> bool:
    path = root / "ledgers" / f"{spec.key()}.db"
    return path.exists() and path.with_suffix(".runs.msgpack").exists()


def cached_ledger(spec: LedgerSpec, root: Path) -> Generated:
    """The ledger of `spec` from the cache, generated first if it is not there."""
    folder = root / "ledgers"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{spec.key()}.db"
    meta = path.with_suffix(".runs.msgpack")
    if is_cached(spec, root):
        import msgspec

        count, runs = msgspec.msgpack.decode(meta.read_bytes(), type=tuple[int, list[RunInfo]])
        return Generated(path, spec, count, runs, 0.0, cached=True)
    tmp = folder / f".{spec.key()}.{os.getpid()}.tmp.db"
    for leftover in (tmp, tmp.with_name(tmp.name + "-wal"), tmp.with_name(tmp.name + "-shm")):
        leftover.unlink(missing_ok=True)
    start = time.perf_counter()
    count, runs = generate(tmp, spec)
    seconds = time.perf_counter() - start
    _checkpoint(tmp)
    os.replace(tmp, path)
    import msgspec

    meta.write_bytes(msgspec.msgpack.encode((count, runs)))
    _prune_stale(folder, spec)
    return Generated(path, spec, count, runs, seconds, cached=False)


def _prune_stale(folder: Path, spec: LedgerSpec) -> None:
    """Remove cached ledgers no current generator or schema could ask for again."""
    current = spec.key()
    prefix, schema = f"g{GENERATOR_VERSION}-", current.rsplit("-", 1)[1]
    for path in folder.iterdir():
        name = path.name
        for suffix in (".runs.msgpack", ".db"):
            name = name.removesuffix(suffix)
        if name.startswith("g") and (not name.startswith(prefix) or not name.endswith(schema)):
            path.unlink(missing_ok=True)


def _checkpoint(path: Path) -> None:
    """Fold the WAL into the file so the cached ledger is one self-contained file."""
    from ledger.sqlite import connect

    conn = connect(path)
    try:
        conn.pragma("wal_checkpoint", "TRUNCATE")
        conn.pragma("journal_mode", "delete")
    finally:
        conn.close()


def iter_versions(gen: Generated, stage: str) -> Iterator[RunInfo]:
    yield from (r for r in gen.runs if r.stage == stage and r.complete)
