"""Fault injection for swecl runs: real `swecl` processes, SIGKILLed at chosen points,
and the invariants a crash-resumed run must satisfy.

Shared by the reliability tests and `python -m bench.soak`. The runs are real
subprocesses, and the ledger is only ever *read*, through a read-only connection
(`bench.processes`), the way an outside observer would; only `live_memory` asks swecl
itself (its memory projection). Kill points are planned from a seed, so a failing
schedule can be replayed.

How a kill point fires, in the order a run writes:

- `type`: the first new event of a given type appears (task.started: the agent is
  running; agent.finished: grading is running; task.finished: a task boundary), then
  an extra random delay lands the kill a little later (mid-agent, mid-grade, mid-append);
- `events`: the run has appended N more events since this launch;
- `time`: a wall-clock delay after launch (start-up, claiming, resuming, materialising).

The whole process group is killed (the CLI, its `--jobs` workers and the multiprocessing
manager), like a power cut or an OOM kill of the session. Test and agent subprocesses
that swecl started in sessions of their own are found through /proc and killed too, so
nothing of a killed run keeps writing.
"""

from __future__ import annotations

import json
import random
import subprocess
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .processes import LedgerWatch, kill_all, read_events, run_exists, spawn, swecl, swecl_argv

# Types a `type` kill point waits for: one per phase of a task, plus the launch's own mark.
WATCHED_TYPES = (
    "run.started",
    "run.resumed",
    "task.started",
    "memory.recalled",
    "agent.finished",
    "grade.finished",
    "task.finished",
    "memory.written",
)
# A launch lets at most this many tasks finish before the kill fires anyway, so a short
# run survives many kills and they spread over all its tasks.
SLACK_TASKS = 1


# -- kill points -------------------------------------------------------------------------


@dataclass(frozen=True)
class KillPoint:
    """`type`/`events`: wait for the launch's first event of `type` (or its `n`-th new
    event), then `delay` seconds more. `time`: `delay` seconds after launch. Either way
    the kill fires once the launch has finished more than its slack of tasks."""

    kind: str  # type | events | time
    type: str = ""
    n: int = 0
    delay: float = 0.0

    def describe(self) -> str:
        if self.kind == "type":
            return f"{self.type} +{self.delay * 1000:.0f}ms"
        if self.kind == "events":
            return f"{self.n} events +{self.delay * 1000:.0f}ms"
        return f"{self.delay:.2f}s after launch"


def kill_plan(seed: int, count: int, *, max_time: float = 3.0) -> list[KillPoint]:
    """`count` kill points drawn from `seed` (the same seed gives the same plan)."""
    rng = random.Random(seed)
    plan: list[KillPoint] = []
    for _ in range(count):
        roll = rng.random()
        delay = rng.choice([0.0, 0.0, rng.uniform(0, 0.3)])
        if roll < 0.55:
            plan.append(KillPoint("type", type=rng.choice(WATCHED_TYPES), delay=delay))
        elif roll < 0.8:
            plan.append(KillPoint("events", n=rng.randint(1, 6), delay=delay))
        else:
            plan.append(KillPoint("time", delay=rng.uniform(0.05, max_time)))
    return plan


@dataclass
class Landing:
    """Where a kill landed: the point, and the run's last event when it fired."""

    point: KillPoint
    fired: bool  # False: the process exited before the point was reached
    last_type: str | None
    returncode: int  # of the launch: -SIGKILL when the kill ended it


@dataclass
class CrashReport:
    version: str
    landings: list[Landing] = field(default_factory=list)
    launches: int = 0
    final: subprocess.CompletedProcess[str] | None = None

    @property
    def kills(self) -> int:
        return sum(1 for landing in self.landings if landing.fired)

    def where(self) -> dict[str, int]:
        """How many kills landed after each event type ("start-up": before the run's first event)."""
        counts: dict[str, int] = {}
        for landing in self.landings:
            if landing.fired:
                key = landing.last_type or "start-up"
                counts[key] = counts.get(key, 0) + 1
        return dict(sorted(counts.items()))


def _launch_argv(results: Path, version: str, start_args: Sequence[str], jobs: int | None) -> list[str]:
    if run_exists(results, version):
        extra = ["--jobs", str(jobs)] if jobs else []
        return swecl_argv(results, "run", "--resume", version, "--quiet", *extra)
    return swecl_argv(results, "run", *start_args, "--version", version, "--quiet")


def _fire(proc: subprocess.Popen[bytes], watch: LedgerWatch, point: KillPoint, started: float,
          timeout: float, poll: float = 0.004, slack: int = SLACK_TASKS) -> Landing:
    """Wait for `point`, then kill; unfired when the process ends first."""
    base = watch.head()
    seen: list[tuple[int, str, str]] = []
    trigger_at: float | None = started + point.delay if point.kind == "time" else None
    cap = slack + 1
    deadline = started + timeout
    while True:
        now = time.monotonic()
        seen += watch.since(seen[-1][0] if seen else base)
        if proc.poll() is not None:
            seen += watch.since(seen[-1][0] if seen else base)
            return Landing(point, False, seen[-1][2] if seen else None, proc.returncode)
        if now > deadline:
            kill_all(proc)
            raise TimeoutError(f"swecl ran past {timeout}s waiting for kill point {point.describe()}")
        if trigger_at is None:
            if (point.kind == "type" and any(t == point.type for _, _, t in seen)) or (
                point.kind == "events" and len(seen) >= point.n
            ):
                trigger_at = now + point.delay
        finished = sum(1 for _, _, t in seen if t == "task.finished")
        if (trigger_at is not None and now >= trigger_at) or finished >= cap:
            kill_all(proc)
            seen += watch.since(seen[-1][0] if seen else base)
            return Landing(point, True, seen[-1][2] if seen else None, proc.returncode)
        time.sleep(poll)


def crash_loop(
    results: Path,
    cache: Path,
    version: str,
    start_args: Sequence[str],
    plan: Iterable[KillPoint],
    *,
    kills: int,
    jobs: int | None = None,
    log: Path | None = None,
    launch_timeout: float = 300,
    report: CrashReport | None = None,
    slack: int = SLACK_TASKS,
) -> CrashReport:
    """Start (or resume) the run, kill it at each point of `plan` until `kills` kills have
    landed, then resume it once more without interference and let it finish.

    The first launch is `swecl run START_ARGS --version VERSION`; every later one is
    `swecl run --resume VERSION` (a fresh start again if the kill came before the claim).
    `report`, when given, is filled as the loop goes (still readable if it raises).
    `slack`: tasks a launch may finish before the kill fires anyway.
    """
    report = report if report is not None else CrashReport(version)
    watch = LedgerWatch(results / "ledger.db", version)
    points = iter(plan)
    limit = kills * 4 + 10
    try:
        while report.kills < kills:
            if report.launches >= limit:
                raise AssertionError(f"{report.kills} kills landed in {report.launches} launches; wanted {kills}")
            if report.landings and not report.landings[-1].fired:
                raise AssertionError(
                    f"run {version} finished after only {report.kills} kills (wanted {kills}): the plan is too sparse"
                )
            point = next(points)
            argv = _launch_argv(results, version, start_args, jobs)
            started = time.monotonic()
            proc = spawn(argv, cache=cache, log=log)
            report.launches += 1
            watch.close()  # a fresh connection sees a ledger the run may have just created
            landing = _fire(proc, watch, point, started, launch_timeout, slack=slack)
            report.landings.append(landing)
            if not landing.fired and proc.returncode != 0:
                tail = log.read_text(errors="replace")[-2000:] if log is not None and log.exists() else ""
                raise AssertionError(f"swecl exited {proc.returncode} before kill point {point.describe()}:\n{tail}")
        report.launches += 1
        args = ["run", "--resume", version, "--quiet", *(["--jobs", str(jobs)] if jobs else [])]
        if not run_exists(results, version):
            args = ["run", *start_args, "--version", version, "--quiet"]
        report.final = swecl(results, *args, cache=cache, check=False, timeout=launch_timeout)
    finally:
        watch.close()
    return report


# -- what a finished run must look like --------------------------------------------------


def _cell(p: dict[str, Any]) -> tuple[str, str, int]:
    return (p["sequence_id"], p["pass"], p["order"])


def run_invariants(results: Path, version: str) -> list[str]:
    """Everything a finished, crash-resumed run must satisfy; the list of violations.

    - every planned (sequence, pass, order) has exactly one task.finished, and nothing else has one;
    - every attempt that started and did not finish is recorded as task.abandoned, before
      the next attempt of the same cell starts, and attempts count up 1, 2, 3...;
    - an attempt's events (agent, grade, finished) all carry the attempt that started them;
    - every memory.written of the run came in the batch of a finished (never abandoned)
      attempt's task.finished (the events right before it in the stream), and each
      finished initial attempt wrote its lessons once;
    - the run ends with run.finished status finished, after its last task.

    Plans with `--retest-every` (extra `retest-{i}` passes) are not modelled here.
    """
    events = read_events(results, prefix=f"run/{version}")
    problems: list[str] = []
    header = [e for e in events if e["stream"] == f"run/{version}"]
    if not header or header[0]["type"] != "run.started":
        return [f"run {version}: no run.started"]
    started = header[0]["payload"]
    planned = {
        (seq_id, pass_, ref["order"])
        for seq_id, refs in started["tasks"].items()
        for pass_ in started["passes"]
        for ref in refs
    }
    finished: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    attempts: dict[tuple[str, str, int], list[int]] = {}
    abandoned: set[tuple[str, str, int, int]] = set()
    open_attempt: dict[tuple[str, str, int], int] = {}
    for e in events:
        p, t = e["payload"], e["type"]
        if t == "task.started":
            key = _cell(p)
            prev = open_attempt.get(key)
            if prev is not None:
                problems.append(
                    f"{key}: attempt {p['attempt']} started while attempt {prev} was neither finished nor abandoned"
                )
            attempts.setdefault(key, []).append(p["attempt"])
            open_attempt[key] = p["attempt"]
        elif t in ("memory.recalled", "memory.history", "agent.finished", "grade.finished"):
            key = _cell(p)
            if open_attempt.get(key) != p["attempt"]:
                problems.append(f"{key}: {t} of attempt {p['attempt']} outside that attempt (seq {e['seq']})")
        elif t == "task.abandoned":
            key = _cell(p)
            abandoned.add((*key, p["attempt"]))
            if open_attempt.get(key) != p["attempt"]:
                problems.append(f"{key}: task.abandoned of attempt {p['attempt']} that is not the open attempt")
            open_attempt.pop(key, None)
        elif t == "task.finished":
            key = _cell(p)
            finished.setdefault(key, []).append(p)
            if open_attempt.get(key) != p["attempt"]:
                problems.append(f"{key}: task.finished of attempt {p['attempt']} that is not the open attempt")
            open_attempt.pop(key, None)
    for key, tried in attempts.items():
        if tried != list(range(1, len(tried) + 1)):
            problems.append(f"{key}: attempts {tried}, expected 1..{len(tried)}")
    for key in sorted(planned):
        n = len(finished.get(key, []))
        if n != 1:
            problems.append(f"{key}: {n} task.finished events (want exactly 1)")
    for key in sorted(set(finished) - planned):
        problems.append(f"{key}: finished but not in the run's plan")
    for key, attempt in sorted(open_attempt.items()):
        problems.append(f"{key}: attempt {attempt} never finished nor abandoned")

    # memory: written only in the batch of a finished attempt, once per finished initial task
    by_stream: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        by_stream.setdefault(e["stream"], []).append(e)
    lesson_types = ("memory.written", "memory.rejected", "memory.superseded")
    for evs in by_stream.values():
        for i, e in enumerate(evs):
            if e["type"] == "task.finished":
                j = i + 1
                while j < len(evs) and evs[j]["type"] in lesson_types and evs[j]["seq"] == evs[j - 1]["seq"] + 1:
                    j += 1
                lessons = [x for x in evs[i + 1 : j] if x["type"] in ("memory.written", "memory.rejected")]
                p = e["payload"]
                if started["memory_mode"] == "plugin-real" and p["pass"] == "initial" and len(lessons) != 1:
                    problems.append(f"{_cell(p)}: attempt {p['attempt']} finished with {len(lessons)} lessons (want 1)")
                continue
            if e["type"] != "memory.written":
                continue
            j = i - 1
            while j >= 0 and evs[j]["type"] in lesson_types:
                j -= 1
            anchor = evs[j] if j >= 0 else None
            p = e["payload"]
            anchored = anchor is not None and anchor["type"] == "task.finished"
            if not anchored or anchor["payload"]["instance_id"] != p["source_instance"]:
                problems.append(f"memory.written {p['item_id']} (seq {e['seq']}) is not in a task.finished batch")
                continue
            if anchor["seq"] + (i - j) != e["seq"]:
                problems.append(f"memory.written {p['item_id']} (seq {e['seq']}) is not in one batch with its task.finished")
            fp = anchor["payload"]
            if (*_cell(fp), fp["attempt"]) in abandoned:
                problems.append(f"memory.written {p['item_id']} belongs to abandoned attempt {fp['attempt']}")

    finishes = [e for e in header if e["type"] == "run.finished"]
    if not finishes or finishes[-1]["payload"]["status"] != "finished":
        problems.append(f"run {version}: last run.finished is {finishes[-1]['payload'] if finishes else None}")
    elif events[-1]["seq"] > finishes[-1]["seq"]:
        problems.append(f"run {version}: events after the final run.finished")
    return problems


def metrics_doc(results: Path, version: str, cache: Path) -> dict[str, Any]:
    """`swecl metrics --json` for one version: its own scores. Without the fields that name
    the version, its spend and cost per solved task (the agents' wall seconds differ between
    any two runs, and a resumed run has paid for the attempts it abandoned), and what
    compares it with other runs of its folder (its normalized gain, memory efficiency and
    verdict line: ratios to whichever base and oracle runs share the folder, the verdict
    naming the versions; not scores of the run alone)."""
    doc = json.loads(swecl(results, "metrics", "--version", version, "--json", cache=cache).stdout)
    (entry,) = doc["versions"]
    entry = {k: v for k, v in entry.items()
             if k not in ("version", "normalized_gain", "memory_efficiency", "verdict", "cost_per_solved")}
    return {**{k: v for k, v in doc.items() if k not in ("versions", "spend")}, "version": entry}


def live_memory(results: Path, version: str) -> list[tuple[str, str, str | None]]:
    """(source_instance, title, outcome) of the run's live memory items, via the memory projection."""
    from ledger import Ledger
    from projections.memory import LIVE, load_memory

    with Ledger.open(results / "ledger.db", readonly=True) as ledger:
        state = load_memory(ledger, version).state
        return sorted(
            (item.source_instance or "", item.title, item.outcome)
            for item in state.items.values()
            if item.status == LIVE
        )


def differences_from(results: Path, version: str, reference: Path, ref_version: str, cache: Path) -> list[str]:
    """Why run `version` is not the uninterrupted run `ref_version` ([] when it is):
    the invariants above, `swecl metrics --json`, live memory, `swecl verify`."""
    problems = run_invariants(results, version)
    if problems:
        return problems
    if metrics_doc(results, version, cache) != metrics_doc(reference, ref_version, cache):
        problems.append(f"run {version}: metrics differ from the uninterrupted run")
    if live_memory(results, version) != live_memory(reference, ref_version):
        problems.append(f"run {version}: live memory differs from the uninterrupted run")
    verified = swecl(results, "verify", cache=cache, check=False)
    if verified.returncode != 0 or not verified.stdout.startswith("ledger OK"):
        problems.append(f"verify: {verified.stderr.strip() or verified.stdout.strip()}")
    return problems
