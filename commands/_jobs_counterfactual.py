"""`CounterfactualJobs`: leave-one-memory-out (`swecl counterfactual`).

A counterfactual re-runs one task of run V exactly as V ran it (the options V recorded
in `run.started`: agent, model, prompt style, code mode, sandbox...) with some memory
items hidden from every recall of the attempt, and records how it ended beside V's
attempt, in events of its own (`counterfactual.started` / `counterfactual.finished` on
`counterfactual/{V}/{id}`), never in V's streams: V's outcomes, metrics and memory stay
as they were.

The re-run works on a private copy of the ledger holding every event before V's
attempt started (`task.started` of the attempt in force), so the memory its recall
folds is the memory V's attempt had, and whatever the re-run appends there (its recall
records, the daydream's lessons) dies with the copy. The copy lives in a temporary
folder; the agent's sandbox hides both it and the results folder, as a run's hides its
ledger.

What can be hidden, and what an attempt recalled, is the run's memory's to say
(`MemoryBackend.hideable_items`, `recalled_items`): swecl's memory items, or a memory
server's writing tasks (`provider:ID`), whose server the re-run rebuilds without them.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ledger import Ledger, NewEvent, StreamRange, SweclError, blob_refs_of, event_id_for
from ledger.events import CounterfactualFinished, CounterfactualStarted

from ._folder import ExperimentFolder

if TYPE_CHECKING:
    from projections import Cell

__all__ = ["CounterfactualJobs", "CounterfactualRun", "Counterfactuals"]


@dataclass(frozen=True)
class CounterfactualRun:
    """One re-run: the hidden items, its repeat number and how it ended."""

    hidden: list[str]
    repeat: int
    status: str
    resolved: bool | None
    recalled: list[str]
    cost_usd: float | None
    stream: str

    def document(self) -> dict:
        return {"hidden": self.hidden, "repeat": self.repeat, "status": self.status, "resolved": self.resolved,
                "recalled": self.recalled, "cost_usd": self.cost_usd, "stream": self.stream}


@dataclass(frozen=True)
class Counterfactuals:
    """What `swecl counterfactual` did: V's attempt and the re-runs beside it."""

    version: str
    instance_id: str
    pass_: str
    attempt: int
    original_status: str | None
    original_resolved: bool | None
    runs: list[CounterfactualRun] = field(default_factory=list)

    def document(self) -> dict:
        return {"version": self.version, "instance_id": self.instance_id, "pass": self.pass_, "attempt": self.attempt,
                "original": {"status": self.original_status, "resolved": self.original_resolved},
                "runs": [r.document() for r in self.runs]}


@dataclass(frozen=True)
class _Target:
    """V's attempt at the task: where it sits and what it recalled."""

    sequence_id: str
    order: int
    cell: Cell
    recalled: list[str]


class CounterfactualJobs(ExperimentFolder):
    """`swecl counterfactual` over this folder (see the module doc)."""

    def counterfactual(self, version: str, task_id: str, *, without: tuple[str, ...] = (),
                       without_recalled: bool = False, repeat: int = 1, pass_: str = "initial",
                       memory_server: str | None = None, memory_env: tuple[str, ...] = ()) -> Counterfactuals:
        """Re-run task `task_id` of run `version` (its attempt in pass `pass_`) `repeat`
        times with `without` hidden, and, with `without_recalled`, `repeat` times with each
        item that attempt recalled hidden in turn. `memory_server`, `memory_env`: a
        --memory-server run's values that were never recorded, given again (as a resume's)."""
        # lazy: the run machinery loads when a re-run is asked for
        from commands.run import ResumeOverrides, RunOptions, get_stage
        from commands.run.memory import memory_backend, resume_memory_options
        from projections import OutcomeProjection, run_started_record
        from projections.audit import resolve_task

        if repeat < 1:
            raise SweclError(f"--repeat {repeat}: give at least 1")
        if pass_ == "baseline":
            raise SweclError("the baseline pass runs without memory: nothing to hide (give --pass initial or retest)")
        if not without and not without_recalled:
            raise SweclError("name what to hide: --without ITEM (repeatable) or --without-recalled")
        with self.reading() as reading:
            ledger = reading.ledger
            started = run_started_record(ledger, version, doing="re-run").event
            memory = memory_backend(get_stage(started.stage),
                                    RunOptions.from_config({**started.config, "stage": started.stage}))
            refusal = memory.cannot_hide_items(version)
            if refusal is not None:
                raise SweclError(refusal)
            # TASK may be any of a task's names (instance id, SEQ#ORDER, #ORDER): from here on, its instance id
            task_id = resolve_task(started, task_id)[1].instance_id
            outcomes = reading.projector.run(OutcomeProjection(version)).state
            target = _target(ledger, outcomes, version, task_id, pass_, started.tasks, memory)
            known = memory.hideable_items(ledger, version)
            unknown = [i for i in without if i not in known]
            if unknown:
                raise SweclError(f"--without {unknown[0]!r}: no memory item of that id in {ledger.path}")
            if without_recalled and not target.recalled:
                raise SweclError(f"{task_id} ({pass_}) recalled nothing in run {version}: --without-recalled has "
                                 "nothing to hide")
            sets = ([sorted(set(without))] if without else []) + ([[i] for i in target.recalled] if without_recalled else [])
            done = _repeats_so_far(ledger, version, task_id, pass_)
        opts = resume_memory_options(RunOptions.from_config({**started.config, "stage": started.stage}), started.config,
                                     version, ResumeOverrides(memory_server=memory_server, memory_env=tuple(memory_env)))
        result = Counterfactuals(version, task_id, pass_, target.cell.attempt, target.cell.status,
                                 None if target.cell.outcome is None else bool(target.cell.outcome))
        for hidden in sets:
            first = done.get(tuple(hidden), 0) + 1
            for number in range(first, first + repeat):
                result.runs.append(self._rerun(version, opts, target, task_id, pass_, hidden, number))
        return result

    def _rerun(self, version: str, opts: object, target: _Target, task_id: str, pass_: str, hidden: list[str],
               number: int) -> CounterfactualRun:
        from commands.run import QuietReporter, open_benchmark, run_attempt, sequence_context  # lazy: as above
        from commands.run.memory import memory_of

        cell = target.cell
        key = (version, target.sequence_id, target.order, pass_, cell.attempt, number, *hidden)
        stream = f"counterfactual/{version}/{event_id_for('counterfactual', *key).replace('-', '')[:16]}"
        facts = dict(version=version, sequence_id=target.sequence_id, instance_id=task_id, order=target.order,
                     pass_=pass_, attempt=cell.attempt, hidden=list(hidden), repeat=number)
        with self.open_ledger() as ledger:
            ledger.append(stream, [NewEvent(CounterfactualStarted(**facts, cut_seq=cell.started_seq),
                                            event_id_for("counterfactual.started", *key))], durable=True)
        with tempfile.TemporaryDirectory(prefix="swecl-counterfactual-") as scratch:
            private_path = Path(scratch) / "ledger.db"
            with self.open_ledger(readonly=True) as source, Ledger.open(private_path, create=True) as private:
                _copy_before(source, private, cell.started_seq)
                copied = private.head()
                benchmark = open_benchmark(opts)  # type: ignore[arg-type]
                ctx = sequence_context(private, version, opts, target.sequence_id, QuietReporter(),  # type: ignore[arg-type]
                                       benchmark=benchmark, also_hide=(self.root.resolve(),),
                                       hidden_items=frozenset(hidden), memory_folder=Path(scratch) / "memory")
                task = next((t for t in ctx.sequence.tasks if t.order == target.order), None)
                if task is None or task.instance_id != task_id:
                    raise SweclError(f"{task_id} is not task {target.order} of {target.sequence_id} in the benchmark "
                                     f"run {version} recorded: it changed, so the task cannot be re-run")
                try:
                    run_attempt(ctx, task, pass_, cell.attempt)
                finally:
                    ctx.memory.close()
                run_stream = f"run/{version}/{target.sequence_id}"
                recalled = memory_of(opts).recalled_items(private, run_stream, (pass_, target.order, cell.attempt),  # type: ignore[arg-type]
                                                          after=copied)
                ending = _ending(private, run_stream, copied, recalled)
                patch = ending.pop("patch_bytes")
        with self.open_ledger() as ledger:
            blobs = [patch] if patch is not None else []
            ledger.append(stream, [NewEvent(CounterfactualFinished(**facts, **ending),
                                            event_id_for("counterfactual.finished", *key))], blobs=blobs, durable=True)
        return CounterfactualRun(hidden=list(hidden), repeat=number, status=ending["status"],
                                 resolved=ending["resolved"], recalled=ending["recalled"],
                                 cost_usd=ending["cost_usd"], stream=stream)


def _target(ledger: Ledger, outcomes: object, version: str, task_id: str, pass_: str,
            plans: dict, memory: Any) -> _Target:
    """V's finished attempt at `task_id` in `pass_`, or the one-line refusal."""
    where = [(s, ref.order) for s, plan in plans.items() for ref in plan if ref.instance_id == task_id]
    if not where:
        raise SweclError(f"task {task_id!r} is not in run {version}'s plan")
    sequence_id, order = where[0]
    cell = outcomes.cell(sequence_id, pass_, order)  # type: ignore[attr-defined]
    if cell is None or not cell.done:
        raise SweclError(f"{task_id} has no finished {pass_} attempt in run {version}: nothing to stand beside")
    recalled = memory.recalled_items(ledger, f"run/{version}/{sequence_id}", (pass_, order, cell.attempt))
    return _Target(sequence_id, order, cell, recalled)


def _repeats_so_far(ledger: Ledger, version: str, task_id: str, pass_: str) -> dict[tuple[str, ...], int]:
    """Hidden set -> the highest repeat number started for it (the next one follows)."""
    seen: dict[tuple[str, ...], int] = {}
    for rec in ledger.read(types=["counterfactual.started"], ranges=[StreamRange(f"counterfactual/{version}")]):
        ev = rec.event
        if ev.instance_id == task_id and ev.pass_ == pass_:
            seen[tuple(ev.hidden)] = max(seen.get(tuple(ev.hidden), 0), ev.repeat)
    return seen


def _copy_before(source: Ledger, private: Ledger, cut: int) -> None:
    """Every event of `source` before seq `cut` into the empty `private` (same seqs), with
    the blobs the memory needs (items' patches, an imported seed's items): a recall reads
    them by digest; nothing of the re-run reads the run's other blobs."""
    rows = list(source.read(upto=cut - 1))
    digests = sorted({d for r in rows if r.type.startswith("memory.") for d in blob_refs_of(r.event)})
    if digests:
        private.append_batches([], blobs=[source.get_blob(d) for d in digests])
    private.import_recorded(rows, durable=False)


def _ending(private: Ledger, stream: str, copied: int, recalled: list[str]) -> dict:
    """How the re-run ended, from what it appended to the private copy after seq `copied`
    (`recalled`: what its recall gave, as its memory reads it)."""
    agent = grade = None
    for rec in private.read(after=copied, ranges=[StreamRange(stream)]):
        if rec.type == "agent.finished":
            agent = rec.event
        elif rec.type == "task.finished":
            grade = rec.event
    if grade is None:
        raise SweclError("the re-run ended without finishing its task (report this)")
    patch = private.get_blob(agent.patch) if agent is not None and agent.patch else None
    return {"status": grade.status, "resolved": grade.resolved, "recalled": recalled,
            "patch": agent.patch if patch is not None else None, "patch_bytes": patch,
            "exit": agent.exit if agent else "error", "cost_usd": agent.cost_usd if agent else None,
            "tokens": dict(agent.tokens) if agent else {}, "duration_s": agent.duration_s if agent else 0.0,
            "error": agent.error if agent else None}
