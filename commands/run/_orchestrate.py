"""Run a stage over sequences: claim a version, seed, dream, run the passes, finish.

The write side of the main job. Every decision is an event; the state of a run (what
is done, what memory holds) is always read back from the ledger, which is what makes
`--resume` exact and `--jobs` safe (each sequence has its own stream and one writer).
"""

from __future__ import annotations

import multiprocessing as mp
import os
from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait
from contextlib import ExitStack
from dataclasses import dataclass, replace

import msgspec

import agents
from agents import Agent
from commands.inputs import Benchmark, Sequence, find_sequence
from graders.host import reap_orphans
from ledger import ConcurrencyConflict, Ledger, NewEvent, SweclError, Terminated, event_id_for
from ledger.events import RunBudgetReached, RunResumed, RunStarted, TaskRef
from projections import get_run

from .. import _stops
from .._folder import ExperimentFolder
from .._failpoints import failpoint
from .._provenance import provenance
from ._budget import BudgetReached, budget_of, spent_usd
from ._context import agent_sandbox, build_agent, cache_dir_of, open_benchmark, sequence_context
from ._fork import ForkPlan, apply_fork_seed, forked_event, resolve_fork
from ._options import ResumeOverrides, RunOptions
from ._order import ordered, recorded_spec
from ._progress import QueueDrain, QueueReporter, Reporter
from ._ray import run_on_ray
from ._ray_session import check_ray
from ._sequence import run_sequence, run_sequences_at_once
from ._stages import get_stage
from ._task import AgentUnavailable, SequenceContext
from .memory import memory_of, resume_memory_options


@dataclass(frozen=True)
class Repeat:
    """Which repeat of a `swecl run --repeat K` group a run is: `index` of `count` (1-based);
    `group` is the version of the group's first repeat (None: this run is that first one)."""

    index: int
    count: int
    group: str | None = None


@dataclass(frozen=True)
class Invocation:
    """The `swecl run` a run is part of when it starts several: `stages` run in order in
    each repeat; `first` is the version of its first run (None: this run is that one)."""

    stages: tuple[str, ...]
    first: str | None = None


@dataclass(frozen=True)
class RunReport:
    version: str
    stage: str
    status: str
    error: str | None = None


# -- inputs ------------------------------------------------------------------------------


def select_sequences(benchmark: Benchmark, opts: RunOptions) -> list[Sequence]:
    chosen = [find_sequence(benchmark, key) for key in opts.sequences] if opts.sequences else list(benchmark.sequences)
    if opts.instances:
        wanted = set(opts.instances)
        found = {t.instance_id for s in chosen for t in s.tasks} & wanted
        if missing := sorted(wanted - found):
            raise SweclError(f"--instance {missing[0]}: no such task in the chosen sequences")
        chosen = [replace(s, tasks=tuple(t for t in s.tasks if t.instance_id in wanted)) for s in chosen]
        chosen = [s for s in chosen if s.tasks]
    # Agents that replay recorded patches are never briefed, so the issue text is optional.
    grading_only = not agents.agent_entry(opts.agent).briefed
    for seq in chosen:
        seq.require_runnable(grading_only=grading_only)
    if not chosen:
        raise SweclError("no sequences to run")
    return chosen


# -- claiming a version ------------------------------------------------------------------


def next_version(ledger: Ledger) -> str:
    numbers = [int(s.split("/")[1]) for s in ledger.streams("run") if s.count("/") == 1 and s.split("/")[1].isdigit()]
    return str(max(numbers, default=0) + 1)


def claim_version(ledger: Ledger, opts: RunOptions, benchmark: Benchmark, sequences: list[Sequence],
                  repeat: Repeat | None = None, invocation: Invocation | None = None,
                  fork: ForkPlan | None = None, visible: dict[str, list[dict[str, str]]] | None = None) -> str:
    """Append run.started at version 0 of `run/{version}`: the claim. A taken explicit
    version is refused; an automatic one moves on to the next free number. A repeat records
    its group (the first repeat's version: its own, when it is the first)."""
    stage = get_stage(opts.stage)
    for _ in range(1000):
        version = opts.version or next_version(ledger)
        event = RunStarted(
            version=version,
            benchmark=opts.dataset or "demo",
            dataset_hash=benchmark.content_hash,
            sequences=[s.id for s in sequences],
            stage=stage.name,
            memory_mode=memory_of(opts).recorded_mode,
            agent=opts.agent,
            model=opts.model,
            code_mode=opts.code_mode,
            grader=opts.grader,
            passes=list(opts.pass_list),
            retest_every=opts.retest_every,
            source_memory=opts.source_memory,
            tasks={
                s.id: [TaskRef(t.instance_id, t.order, t.repo, t.difficulty, list(t.dependencies)) for t in s.tasks]
                for s in sequences
            },
            config=opts.to_config(),
            provenance=provenance(dataset=benchmark.source, dataset_hash=benchmark.content_hash),
            repeat_group=None if repeat is None else (repeat.group or version),
            repeat_index=None if repeat is None else repeat.index,
            repeat_count=None if repeat is None else repeat.count,
            suite=None if invocation is None else (invocation.first or version),
            suite_stages=None if invocation is None else list(invocation.stages),
            task_order=None if opts.order is None else recorded_spec(opts.order),
            visible=visible,
        )
        try:
            # A fork's run.forked in the same batch: never a fork recorded without its source.
            batch = [event] if fork is None else [event, forked_event(fork)]
            ledger.append(f"run/{version}", batch, expected_version=-1, durable=True)
            return version
        except ConcurrencyConflict:
            if opts.version:
                raise SweclError(
                    f"run version {version!r} already exists in {ledger.path}: pick another --version, "
                    f"or continue it with `swecl run --resume {version}`"
                ) from None
    raise SweclError("could not find a free run version")


def prepare_memory(ledger: Ledger, version: str, opts: RunOptions, benchmark: Benchmark,
                   sequences: list[Sequence], reporter: Reporter, fork: ForkPlan | None = None) -> None:
    """A fork's seed, then what the run's memory does before the first task (copy-seeding,
    the pre-eval dream), as events on the run's header stream."""
    memory = memory_of(opts)
    if fork is not None:
        reporter.note(fork.describe())
        if memory.memory_on("initial"):
            reporter.note(apply_fork_seed(ledger, version, fork, memory.state_label))
    memory.prepare(ledger, version, benchmark, sequences, reporter, fork)


# -- running -----------------------------------------------------------------------------


def start_run(folder: ExperimentFolder, opts: RunOptions, reporter: Reporter, repeat: Repeat | None = None,
              invocation: Invocation | None = None) -> RunReport:
    opts.validate()
    stage = get_stage(opts.stage)
    benchmark = open_benchmark(opts)
    sequences = select_sequences(benchmark, opts)
    if opts.order is not None:
        sequences = ordered(sequences, opts.order)
    agent = build_agent(opts, benchmark, runs_here=opts.execution.executor == "local")  # fail early, before claiming
    _require_executor(opts)
    folder.require_writable()
    check_agent_starts(agent, opts, folder)  # before claiming: a failed check leaves no run behind
    # what the agent and the tests will see; on Ray each node has its own installs
    visible = agents.sandbox_view(agent, agent_sandbox(opts, folder.root)) if opts.execution.executor == "local" else None
    del agent
    with folder.open_ledger(create=True) as ledger:
        taken = opts.version is not None and ledger.stream_version(f"run/{opts.version}") >= 0  # claim says so
        # A seed that cannot be found is refused before a version is claimed (a fork's seed is
        # its source's memory: resolve_fork below).
        if opts.fork is None and not taken:
            memory_of(opts).check_seed(ledger, opts.version or next_version(ledger), benchmark, sequences)
        fork = resolve_fork(ledger, opts, sequences, benchmark.content_hash) if opts.fork is not None else None
        version = claim_version(ledger, opts, benchmark, sequences, repeat, invocation, fork, visible)
    with ExitStack() as held:
        try:
            held.enter_context(folder.run_lock(version))
            failpoint("run.claimed")
            reporter.run_started(version, stage.name, {s.id: len(s.tasks) for s in sequences}, opts.pass_list)
            with folder.open_ledger() as ledger:
                prepare_memory(ledger, version, opts, benchmark, sequences, reporter, fork)
        except SweclError as exc:
            folder.finish_run(version, "failed", str(exc))  # claimed: say how it ended
            raise
        except KeyboardInterrupt as exc:  # claimed: a stop before the first task ends it too
            folder.finish_run(version, "interrupted", _stopped_why(exc))
            raise
        return _execute_locked(folder, version, opts, reporter)


def resume_run(folder: ExperimentFolder, version: str, reporter: Reporter,
               overrides: ResumeOverrides = ResumeOverrides()) -> RunReport:
    """Continue run `version`, with what the resuming command line gives instead
    (`overrides`): a run started on Ray can be finished locally, and the other way round;
    how many workers run tasks changes nothing that is recorded. Its budget is the run's
    cost budget from here on, recorded in run.resumed; a run already past its budget is
    refused, so a resume of a run stopped on its budget gives a larger one. A memory
    server's values are given again (`memory._server_resume`)."""
    budget_usd = overrides.budget_usd
    with folder.open_ledger() as ledger:
        run = get_run(ledger, folder.results.projector(ledger), version)
        started = next(ledger.read_stream(f"run/{version}"))
        opts = overrides.apply(RunOptions.from_config(started.event.config))
        opts = resume_memory_options(opts, started.event.config, version, overrides)
        opts = msgspec.structs.replace(opts, budget=msgspec.structs.replace(
            opts.budget, usd=budget_usd or budget_of(ledger, version, opts.budget.usd)))
        if opts.budget.usd is not None and (spent := spent_usd(ledger, version)) >= opts.budget.usd:
            raise SweclError(
                f"run {version} has spent ${spent:.2f} of its ${opts.budget.usd:.2f} budget: "
                f"give a larger --budget-usd (over {spent:.2f}) to continue it"
            )
        _require_executor(opts)  # before anything is appended
        benchmark = open_benchmark(opts)
        if benchmark.content_hash != started.event.dataset_hash:
            raise SweclError(
                f"run {version} was made on a dataset with hash {started.event.dataset_hash[:12]}; "
                f"{opts.dataset or 'the demo'} now hashes to {benchmark.content_hash[:12]}: it changed, so the run cannot continue"
            )
    # Before run.resumed: an agent that cannot start leaves the run as it was.
    check_agent_starts(build_agent(opts, benchmark, runs_here=opts.execution.executor == "local"), opts, folder)
    # The lock first: a resume refused because the run is running must write nothing.
    with folder.run_lock(version):
        with folder.open_ledger() as ledger:
            attempt = get_run(ledger, folder.results.projector(ledger), version).resumed + 2
            ledger.append(
                f"run/{version}",
                [NewEvent(RunResumed(attempt=attempt, provenance=provenance(), budget_usd=budget_usd),
                          event_id_for(version, "resumed", attempt))],
                durable=True,
            )
        try:
            reporter.run_started(version, opts.stage, {s: len(started.event.tasks.get(s, [])) for s in run.sequences},
                                 opts.pass_list)
        except KeyboardInterrupt as exc:  # resumed: a stop before the first task ends it too
            folder.finish_run(version, "interrupted", _stopped_why(exc))
            raise
        return _execute_locked(folder, version, opts, reporter, sequence_ids=run.sequences)


def check_agent_starts(agent: Agent, opts: RunOptions, folder: ExperimentFolder) -> None:
    """An agent with a process of its own: its probe (`CLI --version`, an exec check of a
    command) run once, before the first task, as a task will run it (the same sandbox,
    hidden paths, mounts and environment). It refuses in one line when the process does
    not start; otherwise every task would fail the same way. On Ray the nodes run tasks,
    each with its own installation: not checked here."""
    if opts.execution.executor != "local" or not hasattr(agent, "probe"):
        return
    agents.preflight(agent, agent_sandbox(opts, folder.root))


def _require_executor(opts: RunOptions) -> None:
    if opts.execution.executor == "ray":
        check_ray(opts)


def execute(folder: ExperimentFolder, version: str, opts: RunOptions, reporter: Reporter,
            sequence_ids: list[str] | None = None) -> RunReport:
    """Run (or continue) the sequences of a claimed run version, holding its lock."""
    with folder.run_lock(version):
        return _execute_locked(folder, version, opts, reporter, sequence_ids)


def _execute_locked(folder: ExperimentFolder, version: str, opts: RunOptions, reporter: Reporter,
                    sequence_ids: list[str] | None = None) -> RunReport:
    stage = get_stage(opts.stage)
    error: str | None = None
    status = "finished"
    reached: BudgetReached | None = None
    try:
        # What an earlier swecl that was SIGKILLed left running (unconfined test runs, agents).
        killed = reap_orphans(cache_dir_of(opts))
        if killed:
            reporter.note(f"ended {len(killed)} process(es) left running by a swecl that was killed")
        if sequence_ids is None:
            with folder.open_ledger() as ledger:
                sequence_ids = list(next(ledger.read_stream(f"run/{version}")).event.sequences)
        if opts.execution.executor == "ray":
            run_on_ray(folder, version, opts, sequence_ids, reporter)
        elif opts.execution.jobs > 1 and len(sequence_ids) > 1:
            _run_parallel(folder, version, opts, sequence_ids, reporter)
        elif opts.execution.task_jobs > 1 and len(sequence_ids) > 1:
            run_sequences_together(folder, version, opts, sequence_ids, reporter)
        else:
            for sequence_id in sequence_ids:
                run_one_sequence(folder, version, opts, sequence_id, reporter)
        # Not recorded as finished after a stop whose KeyboardInterrupt a finalizer dropped.
        _stops.raise_if_requested()
    except AgentUnavailable as exc:
        status, error = "failed", str(exc)
    except BudgetReached as exc:
        reached = exc
        status, error = "budget_reached", str(exc)
        with folder.open_ledger() as ledger:
            ledger.append(f"run/{version}", [RunBudgetReached(spent_usd=exc.spent, budget_usd=exc.budget)])
    except KeyboardInterrupt as exc:
        folder.finish_run(version, "interrupted", _stopped_why(exc))
        raise
    except SweclError as exc:
        status, error = "failed", str(exc)
    folder.finish_run(version, status, error)
    try:
        failpoint("run.recorded")
        if memory_of(opts).writes_files:
            try:
                with folder.open_ledger() as ledger:
                    memory_of(opts).finish(ledger, version, folder.version_dir(version))
            except (SweclError, OSError) as exc:
                # The files are a view; the ledger holds everything. Never hide the run's own error.
                if error is None:
                    raise SweclError(f"run {version} finished, but its memory files could not be written: {exc}") from None
                reporter.note(f"memory files of run {version} not written: {exc}")
        reporter.run_finished(version, status)
    except KeyboardInterrupt as exc:
        # The run's record is complete: the stop ends this process, not the run.
        raise _stops.StoppedAfterFinish(version, status, terminated=isinstance(exc, Terminated)) from exc
    if reached is not None:
        raise reached  # its own line: what was spent, and how to go on
    if error is not None:
        raise SweclError(f"run {version} stopped: {error}")
    return RunReport(version=version, stage=stage.name, status=status, error=error)


def _stopped_why(exc: KeyboardInterrupt) -> str:
    return "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted by the user"


def run_one_sequence(folder: ExperimentFolder, version: str, opts: RunOptions, sequence_id: str,
                     reporter: Reporter) -> None:
    """One sequence's passes in this process, on the results dir's ledger (the unit of
    --jobs parallelism)."""
    run_sequences_together(folder, version, opts, [sequence_id], reporter)


def run_sequences_together(folder: ExperimentFolder, version: str, opts: RunOptions, sequence_ids: list[str],
                           reporter: Reporter) -> None:
    """These sequences' passes in this process, on the results dir's ledger: one after
    the other, or with --task-jobs N on N workers they all share."""
    with ExitStack() as held:
        for sequence_id in sequence_ids:
            held.enter_context(folder.sequence_lock(version, sequence_id))
        ledger = held.enter_context(folder.open_ledger())
        benchmark = open_benchmark(opts)

        memory = memory_of(opts)

        def context(sequence_id: str) -> SequenceContext:
            return sequence_context(ledger, version, opts, sequence_id, reporter, benchmark=benchmark,
                                    memory_folder=memory.sequence_folder(folder.results, version, sequence_id))

        if opts.execution.task_jobs > 1:
            run_sequences_at_once([context(s) for s in sequence_ids], opts.pass_list, opts.retest_every, opts.execution.task_jobs)
        else:
            for sequence_id in sequence_ids:
                run_sequence(context(sequence_id), opts.pass_list, opts.retest_every)


def _worker(results_root: str, version: str, opts_raw: dict, sequence_id: str, queue: object) -> None:
    # A process of its own: the folder travels as its root and is opened again here.
    run_one_sequence(ExperimentFolder(results_root), version, RunOptions.from_config(opts_raw), sequence_id,
                     QueueReporter(queue))


def _run_parallel(folder: ExperimentFolder, version: str, opts: RunOptions, sequence_ids: list[str], reporter: Reporter) -> None:
    ctx = mp.get_context("spawn")
    manager = ctx.Manager()
    queue = manager.Queue()
    drain = QueueDrain(queue, reporter)
    drain.start()
    raw = opts.to_wire()
    try:
        with ProcessPoolExecutor(max_workers=min(opts.execution.jobs, len(sequence_ids)), mp_context=ctx) as pool:
            futures = [pool.submit(_worker, str(folder.root), version, raw, sid, queue) for sid in sequence_ids]
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            for fut in futures:
                exc = fut.exception()
                if exc is not None:
                    for other in futures:
                        other.cancel()
                    raise exc
    finally:
        drain.stop()
        manager.shutdown()


def worker_count() -> int:
    return os.cpu_count() or 1
