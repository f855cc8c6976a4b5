"""What a run will cost before it starts (`swecl run --estimate`): a pure fold of the
recorded attempts of one agent and model into means per attempt, and the estimate of a
plan (stages, passes, tasks per repository) from them.

Per attempt, from the ledger:
  * seconds: task.started to task.finished (the agent, its worktree, grading and the
    memory's steps); an attempt with no task.finished yet (abandoned) counts its
    agent.finished `duration_s` plus its grade.finished `duration_s`. Building a test
    environment (grade.finished `timings` env and install, and the prepare step with
    them) is left out: it happens once per environment and cache, and a later run reuses
    it (the builds are counted beside, with their mean);
  * dollars and tokens: agent.finished `cost_usd` and `tokens` (input + output) as
    reported (`_spend.reported_cost`: a $0 with no tokens is "not reported", never $0).
Means are taken per repository (run.started's tasks say each task's repository) and over
every attempt, the fallback of a repository never run; with no recorded attempt the
caller's table (`commands.run._estimate_table`) stands in. Wall time is the attempts'
seconds over the workers the options give (never less than the longest sequence's ordered
initial pass), the runs of an invocation one after another, plus each run's mean
overhead (run.started to run.finished less its attempts' seconds over its workers).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

import msgspec

from ledger import Recorded

from ._spend import reported_cost

__all__ = ["Basis", "Estimate", "PlannedPass", "PlannedRun", "Rate", "RecordedRates", "estimate_plan",
           "recorded_rates"]

_TYPES = ("run.started", "run.finished", "task.started", "task.finished", "agent.finished", "grade.finished")


class Rate(msgspec.Struct, kw_only=True):
    """Means per attempt over `attempts` attempts; usd/tokens None: none of them reported any."""

    attempts: int = 0
    seconds: float = 0.0
    usd: float | None = None
    tokens: float | None = None
    usd_attempts: int = 0  # of them, those that reported a cost
    tokens_attempts: int = 0


class RecordedRates(msgspec.Struct, kw_only=True):
    runs: list[str] = msgspec.field(default_factory=list)  # the runs of this agent and model
    by_repo: dict[str, Rate] = msgspec.field(default_factory=dict)
    overall: Rate = msgspec.field(default_factory=Rate)
    overhead_s: float = 0.0  # mean seconds of a finished run beyond its attempts (start, seeding, dreaming)
    # Test environments built while grading (left out of the seconds per attempt: a cache
    # that has them builds none again): how many, and their mean seconds.
    env_builds: int = 0
    env_build_s: float = 0.0


class _Attempt(msgspec.Struct):
    repo: str = "?"
    started: str | None = None
    finished: str | None = None
    agent_s: float = 0.0
    grade_s: float = 0.0
    env_s: float = 0.0  # building a test environment (grade.finished timings): once per environment, not per attempt
    usd: float | None = None
    tokens: int | None = None
    seen: bool = False  # agent.finished recorded: the attempt was made


def _seconds(start: str, end: str) -> float:
    return max(0.0, (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds())


def recorded_rates(records: Iterable[Recorded], agent: str, model: str | None) -> RecordedRates:
    """Means per attempt of every recorded run of `agent` with `model` (see the module doc)."""
    runs: dict[str, dict[str, Any]] = {}  # version -> repos by (sequence, instance), times
    attempts: dict[tuple[str, ...], _Attempt] = {}
    for rec in records:
        if rec.type not in _TYPES:
            continue
        parts = rec.stream.split("/")
        if len(parts) < 2 or parts[0] != "run":
            continue
        version, ev = parts[1], rec.event
        if rec.type == "run.started":
            if len(parts) == 2 and ev.agent == agent and ev.model == model:
                repos = {(s, t.instance_id): t.repo for s, refs in ev.tasks.items() for t in refs}
                runs[version] = {"repos": repos, "started": rec.time, "finished": None, "workers": _workers_of(ev)}
            continue
        run = runs.get(version)
        if run is None:
            continue
        if rec.type == "run.finished":
            run["finished"] = rec.time if ev.status == "finished" else None
            continue
        key = (version, ev.sequence_id, ev.instance_id, ev.pass_, str(ev.attempt))
        one = attempts.setdefault(key, _Attempt(repo=run["repos"].get((ev.sequence_id, ev.instance_id), "?")))
        if rec.type == "task.started":
            one.started, one.repo = rec.time, ev.repo
        elif rec.type == "task.finished":
            one.finished = rec.time
        elif rec.type == "agent.finished":
            one.seen = True
            one.agent_s += ev.duration_s
            cost = reported_cost(ev.cost_usd, ev.tokens)
            if cost is not None:
                one.usd = (one.usd or 0.0) + cost
            if ev.tokens:
                one.tokens = (one.tokens or 0) + int(ev.tokens.get("input", 0)) + int(ev.tokens.get("output", 0))
        else:
            one.grade_s += ev.duration_s
            built = ev.timings.get("env", 0.0) + ev.timings.get("install", 0.0)
            if built:
                one.env_s += built + ev.timings.get("prepare", 0.0)
    sums: dict[str, list[Any]] = {}
    builds: list[float] = []
    per_run_s: dict[str, float] = {}
    for key, one in attempts.items():
        if not one.seen:
            continue
        secs = _seconds(one.started, one.finished) if one.started and one.finished else one.agent_s + one.grade_s
        per_run_s[key[0]] = per_run_s.get(key[0], 0.0) + secs  # environments included: the run's own time
        secs = max(0.0, secs - one.env_s)
        if one.env_s:
            builds.append(one.env_s)
        for name in (one.repo, "*"):
            acc = sums.setdefault(name, [0, 0.0, 0.0, 0, 0.0, 0])
            acc[0] += 1
            acc[1] += secs
            if one.usd is not None:
                acc[2] += one.usd
                acc[3] += 1
            if one.tokens is not None:
                acc[4] += one.tokens
                acc[5] += 1
    rates = {name: Rate(attempts=n, seconds=s / n, usd=usd / nu if nu else None, tokens=tok / nt if nt else None,
                        usd_attempts=nu, tokens_attempts=nt)
             for name, (n, s, usd, nu, tok, nt) in sums.items()}
    overheads = [max(0.0, _seconds(run["started"], run["finished"]) - per_run_s.get(v, 0.0) / run["workers"])
                 for v, run in runs.items() if run["finished"] is not None and v in per_run_s]
    return RecordedRates(runs=list(runs), by_repo={k: v for k, v in sorted(rates.items()) if k != "*"},
                         overall=rates.get("*", Rate()),
                         overhead_s=sum(overheads) / len(overheads) if overheads else 0.0,
                         env_builds=len(builds), env_build_s=sum(builds) / len(builds) if builds else 0.0)


def _workers_of(ev: Any) -> int:
    config = ev.config or {}
    jobs = int(config.get("jobs") or 1)
    task_jobs = int(config.get("task_jobs") or 1)
    return max(1, min(jobs, len(ev.sequences)) * task_jobs)


# -- the estimate of a plan ----------------------------------------------------------------


class PlannedPass(msgspec.Struct, kw_only=True):
    """One pass of a planned run (or its --retest-every rows, as one line): tasks by repository."""

    name: str  # initial | retest | baseline | retest-every K
    attempts: int
    repos: dict[str, int]  # repository -> attempts
    ordered: bool = False  # the initial pass: its tasks one after another in each sequence
    longest_sequence: int = 0  # the most attempts of one sequence in it


class PlannedRun(msgspec.Struct, kw_only=True):
    stage: str
    passes: list[PlannedPass]
    sequences: int
    tasks: int


class Basis(msgspec.Struct, kw_only=True):
    """The table's figures for this agent and model, used where nothing is recorded."""

    source: str
    seconds: float
    tokens: float | None
    usd: float | None


class Estimate(msgspec.Struct, kw_only=True):
    agent: str
    model: str | None
    rests_on: str  # "recorded" | "table"
    says: str  # what it rests on, in a sentence
    recorded: RecordedRates | None
    table: Basis | None
    workers: int
    runs: list[dict[str, Any]]
    total: dict[str, Any]
    budget: dict[str, Any] | None = None

    def document(self) -> dict[str, Any]:
        return msgspec.to_builtins(self)  # type: ignore[no-any-return]


def _rate_for(repo: str, rates: RecordedRates, table: Basis) -> tuple[float, float | None, float | None]:
    found = rates.by_repo.get(repo) or (rates.overall if rates.overall.attempts else None)
    if found is None:
        return table.seconds, table.tokens, table.usd
    # An agent that calls no model (the table's 0 tokens) reports none: it costs $0, not "not reported".
    free = table.tokens == 0
    return (found.seconds, 0.0 if found.tokens is None and free else found.tokens,
            0.0 if found.usd is None and free else found.usd)


def _add(total: float | None, value: float | None) -> float | None:
    return None if total is None or value is None else total + value


def estimate_plan(plan: list[PlannedRun], rates: RecordedRates, table: Basis, *, agent: str, model: str | None,
                  workers: int, budget_usd: float | None = None) -> Estimate:
    """The attempts, seconds, tokens and dollars of `plan` from `rates` (the table where
    nothing is recorded); `workers`: attempts at once (the options' parallelism, bounded)."""
    runs: list[dict[str, Any]] = []
    attempts, serial, wall = 0, 0.0, 0.0
    tokens: float | None = 0.0
    usd: float | None = 0.0
    recorded = rates.overall.attempts > 0
    for run in plan:
        rows = []
        run_serial, run_tokens, run_usd, chain = 0.0, 0.0, 0.0, 0.0
        for p in run.passes:
            secs, tok, cost = 0.0, 0.0, 0.0
            for repo, n in p.repos.items():
                s, t, c = _rate_for(repo, rates, table)
                secs += n * s
                tok = _add(tok, None if t is None else n * t)
                cost = _add(cost, None if c is None else n * c)
            if p.ordered and p.attempts:
                chain = secs * p.longest_sequence / p.attempts
            rows.append({"pass": p.name, "attempts": p.attempts, "seconds": round(secs, 1),
                         "tokens": None if tok is None else round(tok), "usd": None if cost is None else round(cost, 2)})
            run_serial += secs
            run_tokens = _add(run_tokens, tok)  # type: ignore[assignment]
            run_usd = _add(run_usd, cost)  # type: ignore[assignment]
        run_attempts = sum(p.attempts for p in run.passes)
        overhead = rates.overhead_s if recorded else 0.0
        run_wall = max(run_serial / workers, chain) + overhead
        runs.append({"stage": run.stage, "sequences": run.sequences, "tasks": run.tasks, "passes": rows,
                     "attempts": run_attempts, "wall_seconds": round(run_wall, 1),
                     "tokens": None if run_tokens is None else round(run_tokens),
                     "usd": None if run_usd is None else round(run_usd, 2)})
        attempts += run_attempts
        serial += run_serial
        wall += run_wall
        tokens = _add(tokens, run_tokens)
        usd = _add(usd, run_usd)
    total = {"attempts": attempts, "attempt_seconds": round(serial, 1), "wall_seconds": round(wall, 1),
             "workers": workers, "tokens": None if tokens is None else round(tokens),
             "usd": None if usd is None else round(usd, 2)}
    if recorded:
        says = (f"recorded runs of {agent}" + (f" with {model}" if model else "") + f" in this ledger: "
                f"{rates.overall.attempts} attempts over {len(rates.runs)} run(s), per repository where recorded "
                "(the mean over all of them elsewhere)")
    else:
        says = f"no recorded run of {agent}" + (f" with {model}" if model else "") + f" in this ledger: {table.source}"
    return Estimate(agent=agent, model=model, rests_on="recorded" if recorded else "table", says=says,
                    recorded=rates if recorded else None, table=None if recorded else table, workers=workers,
                    runs=runs, total=total, budget=_budget(budget_usd, total, plan))


def _budget(budget_usd: float | None, total: dict[str, Any], plan: list[PlannedRun]) -> dict[str, Any] | None:
    """Roughly what `budget_usd` covers: attempts at the estimate's mean dollars per attempt."""
    if budget_usd is None:
        return None
    usd, attempts = total["usd"], total["attempts"]
    if usd is None or not attempts:
        return {"usd": budget_usd, "attempts": None, "tasks": None, "covers_run": None,
                "says": "unknown: no dollars per attempt recorded or in the table for this agent and model"}
    if usd == 0:
        return {"usd": budget_usd, "attempts": attempts, "tasks": sum(r.tasks for r in plan), "covers_run": True,
                "says": "the whole run: its attempts cost nothing"}
    per_attempt = usd / attempts
    covered = min(attempts, int(budget_usd / per_attempt))
    tasks = min(covered, plan[0].tasks)  # a run's initial pass comes first: its tasks are what the budget buys first
    fits = budget_usd >= usd
    says = (f"the whole run (about ${usd:,.2f})" if fits else
            f"about {covered} of {attempts} attempts at ${per_attempt:,.2f} an attempt (the initial pass first: "
            f"about {tasks} tasks of it); the run stops after the task that reaches it (exit 3)")
    return {"usd": budget_usd, "attempts": covered, "tasks": tasks, "covers_run": fits, "says": says}
