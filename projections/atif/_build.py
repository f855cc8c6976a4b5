"""A run's attempts as ATIF trajectories (Harbor's Agent Trajectory Interchange Format).

One trajectory per task attempt the run recorded (task.started), across passes: the
agent's transcript as steps (`_transcripts`), the memory calls swecl recorded for that
attempt (memory.recalled, memory.provider.called) as system steps marked
`extra.swecl_memory`, final metrics from agent.finished (tokens, cost) and the outcome
from its grade (the latest grade.finished or grade.corrected; else task.finished). What
ATIF has no field for is under `extra` (the root's `extra.swecl`: run, task, pass,
attempt, exit, outcome).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ledger import Ledger, Recorded

from .._fork import read_run
from .._runs import run_started_record
from ._steps import StepLog, parse_time, text_of
from ._transcripts import read_transcript

__all__ = ["ATIF_SCHEMA_VERSION", "INDEX_FILE", "atif_trajectories", "write_atif"]

# The ATIF version written: 1.7 brought the `extra` of tool calls and observation results
# we use; nothing of 1.8 (audio) is needed, and older readers accept 1.7.
ATIF_SCHEMA_VERSION = "ATIF-v1.7"
INDEX_FILE = "index.json"
UNRECORDED = "unrecorded"  # agent.version when neither the transcript nor the run says

Key = tuple[str, int, str, int]  # sequence, order, pass, attempt

_TYPES = ("task.started", "task.finished", "task.abandoned", "agent.finished", "grade.finished", "grade.corrected",
          "memory.recalled", "memory.provider.called")


@dataclass
class _Attempt:
    started: Recorded
    finished: Recorded | None = None  # task.finished or task.abandoned
    agent: Recorded | None = None
    grade: Recorded | None = None
    memory: list[Recorded] = field(default_factory=list)


def _key(event: Any) -> Key:
    return (event.sequence_id, event.order, event.pass_, event.attempt)


def _attempts(ledger: Ledger, version: str) -> dict[Key, _Attempt]:
    attempts: dict[Key, _Attempt] = {}
    memory: dict[Key, list[Recorded]] = {}
    for rec in read_run(ledger, version, _TYPES):  # a fork's tasks before K: its source's
        key = _key(rec.event)
        if rec.type.startswith("memory."):
            # by key, whenever recorded: an attempt's own key names it, whatever came first
            memory.setdefault(key, []).append(rec)
            continue
        if rec.type == "task.started":
            attempts[key] = _Attempt(rec)
            continue
        attempt = attempts.get(key)
        if attempt is None:
            continue
        if rec.type in ("task.finished", "task.abandoned"):
            attempt.finished = rec
        elif rec.type == "agent.finished":
            attempt.agent = rec
        else:
            attempt.grade = rec  # a correction comes after what it corrects: the last is in force
    for key, attempt in attempts.items():
        attempt.memory = memory.get(key, [])
    return attempts


def file_name(key: Key, instance_id: str) -> str:
    """`SEQUENCE/ORDER-INSTANCE-PASS-aATTEMPT.json`: sorted by name, a sequence's files are
    in plan order (orders zero-padded); instance ids and passes are safe in file names."""
    sequence_id, order, pass_, attempt = key
    return f"{sequence_id}/{order:04d}-{instance_id}-{pass_}-a{attempt}.json"


def atif_trajectories(ledger: Ledger, version: str) -> list[tuple[str, dict[str, Any]]]:
    """(relative file name, ATIF trajectory) of every attempt of run `version`, in plan
    order per sequence, passes and attempts in the order they started."""
    started = run_started_record(ledger, version, doing="export").event
    out = [(file_name(key, a.started.event.instance_id), _trajectory(ledger, version, started, a))
           for key, a in _attempts(ledger, version).items()]
    return sorted(out, key=lambda pair: pair[0].split("/")[0])  # stable: within a sequence, as they started


def write_atif(ledger: Ledger, version: str, out_dir: str | Path) -> list[Path]:
    """Each trajectory of `atif_trajectories` under `out_dir`, and `index.json` listing
    them with their task, pass, attempt and outcome. Returns the trajectory files written."""
    out = Path(out_dir)
    written: list[Path] = []
    index: list[dict[str, Any]] = []
    for name, trajectory in atif_trajectories(ledger, version):
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(trajectory, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        written.append(path)
        swecl = trajectory["extra"]["swecl"]
        index.append({"file": name, **{k: swecl[k] for k in ("sequence_id", "instance_id", "order", "pass",
                                                             "attempt", "status", "resolved")}})
    out.mkdir(parents=True, exist_ok=True)
    document = {"format": ATIF_SCHEMA_VERSION, "run": version, "trajectories": index}
    (out / INDEX_FILE).write_text(json.dumps(document, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return written


def _blob_text(ledger: Ledger, digest: str | None) -> str:
    if not digest or not ledger.has_blob(digest):
        return ""
    return ledger.get_blob(digest).decode("utf-8", errors="replace")


def _trajectory(ledger: Ledger, version: str, started: Any, attempt: _Attempt) -> dict[str, Any]:
    agent = attempt.agent.event if attempt.agent is not None else None
    log = StepLog()
    if agent is not None and agent.transcript and ledger.has_blob(agent.transcript):
        log = read_transcript(ledger.get_blob(agent.transcript))
    if agent is not None:
        _counted_calls(log, agent)
        if not any(s["source"] == "user" for s in log.steps) and agent.prompt:
            # the transcript does not hold the task's prompt (opencode's events, the demo's log)
            log.steps.insert(0, {"source": "user", "message": _blob_text(ledger, agent.prompt)})
            log.times.insert(0, None)
    steps = merge_memory(log, [_memory_step(ledger, rec) for rec in attempt.memory])
    if not steps:
        steps = [{"source": "system", "message": _no_steps_note(attempt)}]
    for number, step in enumerate(steps, 1):
        step["step_id"] = number
    model = (agent.model if agent is not None else None) or log.facts.model or started.model
    trajectory: dict[str, Any] = {
        "schema_version": ATIF_SCHEMA_VERSION,
        "session_id": (agent.session_id if agent is not None else None) or log.facts.session_id
        or f"swecl-{version}-{'-'.join(str(p) for p in _key(attempt.started.event))}",
        "agent": {"name": agent.agent if agent is not None else started.agent,
                  "version": log.facts.version or UNRECORDED,
                  **({"model_name": model} if model else {}),
                  "extra": _without_none({"transcript_format": log.facts.format if agent and agent.transcript else None,
                                          "swecl_version": started.provenance.get("swecl")})},
        "steps": steps,
        "final_metrics": _final_metrics(agent, steps),
        "extra": {"swecl": _swecl_extra(version, started, attempt)},
    }
    return trajectory


def _without_none(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def _counted_calls(log: StepLog, agent: Any) -> None:
    """A transcript read as text has no tool calls; agent.finished counted them (name and
    whether it failed), so they become calls of the agent's step, in that order."""
    if log.facts.format != "text" or not agent.tool_calls:
        return
    ids = [f"call-{number}" for number in range(1, len(agent.tool_calls) + 1)]
    # every call first, then the results: a result closes its step to further calls
    for call_id, call in zip(ids, agent.tool_calls, strict=True):
        log.call(call_id, call.name, {}, extra={"recorded_by": "agent.finished.tool_calls"})
    for call_id, call in zip(ids, agent.tool_calls, strict=True):
        log.result(call_id, "failed" if call.error else "ok", extra={"error": call.error})


def _no_steps_note(attempt: _Attempt) -> str:
    finished = attempt.finished
    if finished is not None and finished.type == "task.abandoned":
        return f"attempt abandoned ({finished.event.reason}): no agent result"
    return "no agent result recorded for this attempt"


def _memory_step(ledger: Ledger, rec: Recorded) -> tuple[datetime | None, dict[str, Any], str]:
    """(time, system step, via) of one memory call swecl recorded."""
    ev = rec.event
    mark: dict[str, Any] = {"type": rec.type, "event_id": rec.event_id, "seq": rec.seq}
    if rec.type == "memory.recalled":
        mark.update(via=ev.via, query=ev.query, repo=ev.repo, k=ev.k, ranker=ev.ranker)
        results = [{"content": hit.item_id, "extra": {"item_id": hit.item_id, "rank": hit.rank, "score": hit.score}}
                   for hit in ev.results]
        message = f"swecl memory: recall ({ev.via}) returned {len(ev.results)} item(s) for: {ev.query}"
        via = ev.via
    else:
        arguments = _blob_text(ledger, ev.arguments)
        try:
            mark["arguments"] = json.loads(arguments) if arguments else {}
        except json.JSONDecodeError:
            mark["arguments"] = arguments
        mark.update(via=ev.via, tool=ev.tool, call=ev.call, is_error=ev.is_error, error=ev.error,
                    failure=ev.failure, duration_s=ev.duration_s)
        results = [{"content": _blob_text(ledger, ev.result) or text_of(ev.error)}]
        message = f"swecl memory: memory server call {ev.tool} ({ev.via})"
        via = ev.via
    step = {"source": "system", "message": message, "timestamp": rec.time,
            "observation": {"results": results} if results else None, "extra": {"swecl_memory": mark}}
    return parse_time(rec.time), {k: v for k, v in step.items() if v is not None}, via


def merge_memory(log: StepLog, memory: list[tuple[datetime | None, dict[str, Any], str]]) -> list[dict[str, Any]]:
    """The transcript's steps with the memory steps among them by time: each before the
    first timestamped step after it. Without timestamps, a recall swecl made before the
    agent started (`inproc`, primed into the prompt) goes first, the others last."""
    steps, times = list(log.steps), list(log.times)
    timed = any(t is not None for t in times)
    for when, step, via in memory:
        at = len(steps)
        if timed and when is not None:
            at = next((i for i, t in enumerate(times) if t is not None and t > when), len(steps))
        elif via == "inproc":
            at = next((i for i, s in enumerate(steps) if s.get("extra", {}).get("swecl_memory") is None), len(steps))
        steps.insert(at, step)
        times.insert(at, when)
    return steps


def _final_metrics(agent: Any, steps: list[dict[str, Any]]) -> dict[str, Any]:
    metrics: dict[str, Any] = {"total_steps": len(steps)}
    if agent is None:
        return metrics
    tokens = agent.tokens
    if tokens:
        cached = tokens.get("cache_read", 0)
        # ATIF's prompt tokens include the cached ones; swecl's `input` is the uncached rest
        metrics["total_prompt_tokens"] = tokens.get("input", 0) + cached + tokens.get("cache_creation", 0)
        metrics["total_completion_tokens"] = tokens.get("output", 0)
        metrics["total_cached_tokens"] = cached
    if agent.cost_usd is not None:
        metrics["total_cost_usd"] = agent.cost_usd
    metrics["extra"] = {"tokens": dict(tokens), "turns": agent.turns, "tool_calls": len(agent.tool_calls),
                        "duration_s": agent.duration_s}
    return metrics


def _swecl_extra(version: str, started: Any, attempt: _Attempt) -> dict[str, Any]:
    task = attempt.started.event
    agent = attempt.agent.event if attempt.agent is not None else None
    grade = attempt.grade.event if attempt.grade is not None else None
    finished = attempt.finished.event if attempt.finished is not None and attempt.finished.type == "task.finished" \
        else None
    verdict = grade or finished
    return {
        "run": version, "benchmark": started.benchmark, "stage": started.stage, "memory_mode": started.memory_mode,
        "sequence_id": task.sequence_id, "instance_id": task.instance_id, "repo": task.repo, "order": task.order,
        "pass": task.pass_, "attempt": task.attempt,
        "status": verdict.status if verdict is not None else
        ("abandoned" if attempt.finished is not None else "unfinished"),
        "resolved": verdict.resolved if verdict is not None else None,
        "grader": getattr(grade, "grader", None) if grade is not None else None,
        "exit": agent.exit if agent is not None else None,
        "exit_code": agent.exit_code if agent is not None else None,
        "error": agent.error if agent is not None else None,
        "over_limit": agent.over_limit if agent is not None else None,
        "patch": agent.patch if agent is not None else None,
    }
