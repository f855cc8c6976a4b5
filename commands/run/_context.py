"""What a sequence runs with, wherever it runs (this process, a --jobs worker, a Ray job or
task): the benchmark, the agent, its sandbox, and the `SequenceContext` that ties them to
the ledger. Below the orchestration, so the Ray jobs can build a sequence's context
without importing the driver that dispatches them."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import agents
from agents import Agent, Budget, RunSupplies
from commands.inputs import Benchmark, find_sequence, load_benchmark, load_predictions
from commands.inputs.demo import DEMO_ATTEMPTS, demo_benchmark, repos_dir_in
from graders import get_grader
from graders.host import RepoCache, Sandbox, default_cache_dir, sandbox_for
from ledger import Ledger, SweclError
from projections import p2p_excluded

from ._options import RunOptions
from ._order import follow_plan, planned_order
from ._progress import Reporter
from ._schedule import Elsewhere
from ._sequence import run_sequence
from ._stages import get_stage
from ._task import SequenceContext
from .memory import SequencePlace, memory_backend


def cache_dir_of(opts: RunOptions) -> Path:
    return Path(opts.cache_dir) if opts.cache_dir else default_cache_dir()


def open_benchmark(opts: RunOptions) -> Benchmark:
    if opts.dataset is None:
        if opts.rows is not None:
            raise SweclError("--rows completes a manifest given with --dataset; the built-in demo needs no rows")
        benchmark = demo_benchmark(repos_dir_in(cache_dir_of(opts)) if opts.cache_dir else None)
    else:
        benchmark = load_benchmark(opts.dataset, opts.rows)
    if opts.repo_sources:
        benchmark = _with_sources(benchmark, opts.repo_sources)
    return benchmark


def _with_sources(benchmark: Benchmark, sources: dict[str, str]) -> Benchmark:
    return replace(benchmark, repo_sources={**benchmark.repo_sources, **sources})


def build_agent(opts: RunOptions, benchmark: Benchmark, *, runs_here: bool = True) -> Agent:
    """The agent `opts` asks for, built by its registry entry from what this run offers.
    `runs_here=False` (a driver that fans out to Ray) checks the options but not the
    agent's CLI, which only the nodes that run tasks need."""
    demo_attempts = None
    if opts.dataset is None:
        demo_attempts = dict(DEMO_ATTEMPTS)
    return agents.build_agent(opts.agent, RunSupplies(
        gold=lambda: {t.instance_id: t.patch or "" for t in benchmark.tasks()},
        predictions=(lambda: _predictions(opts.predictions)) if opts.predictions else None,
        command=opts.command,
        demo_attempts=demo_attempts,
        runs_here=runs_here,
    ))


def _predictions(specs: list[str]) -> dict[str, dict[str, str]] | dict[str, str]:
    by_label: dict[str, dict[str, str]] = {}
    for spec in specs:
        label, sep, path = spec.partition("=")
        if not sep or not re.fullmatch(r"[a-z][a-z0-9-]*", label):
            label, path = "*", spec
        loaded = load_predictions(path)
        by_label[label] = {iid: p.model_patch for iid, p in loaded.items()}
    if set(by_label) == {"*"}:
        return by_label["*"]
    return by_label


def agent_sandbox(opts: RunOptions, ledger_dir: Path, also_hide: tuple[Path, ...] = ()) -> Sandbox:
    """The sandbox of a run's agents and tests. It shows only the system, the program's
    own install and the paths a task names (`graders.host`: `_visible`); the mirror (later commits
    hold its fix), the ledger, the files that hold the grading rows and the user's own
    clones given with --repo-source stay hidden even inside a folder the user exposes
    (--expose). `also_hide`: more of the same (a counterfactual's results folder, whose
    private ledger copy lives elsewhere)."""
    hide = [cache_dir_of(opts), ledger_dir, *also_hide, *_input_files(opts),
            *(Path(p) for p in opts.repo_sources.values() if Path(p).exists())]
    return sandbox_for(opts.sandbox.mode, hide=hide, expose=opts.sandbox.expose)


def _input_files(opts: RunOptions) -> list[Path]:
    """The dataset, rows and predictions files of a run (what hold the answers)."""
    named = [opts.dataset, opts.rows, *(p.split("=", 1)[-1] for p in opts.predictions)]
    return [Path(n) for n in named if n and not n.startswith("hf:") and Path(n).exists()]


def sequence_context(ledger: Ledger, version: str, opts: RunOptions, sequence_id: str, reporter: Reporter, *,
                     memory_folder: Path | None = None, benchmark: Benchmark | None = None,
                     also_hide: tuple[Path, ...] = (), hidden_items: frozenset[str] = frozenset()) -> SequenceContext:
    """`memory_folder`: where the sequence's memory keeps its live state (the run's
    `MemoryBackend.sequence_folder`, or a copy a Ray node rebuilt); None: none kept.
    `also_hide`: more folders the agent's sandbox hides (see `agent_sandbox`).
    `hidden_items`: memory items the recall leaves out (`swecl counterfactual`)."""
    stage = get_stage(opts.stage)
    benchmark = benchmark if benchmark is not None else open_benchmark(opts)
    sequence = find_sequence(benchmark, sequence_id)
    if opts.instances:
        sequence = replace(sequence, tasks=tuple(t for t in sequence.tasks if t.instance_id in set(opts.instances)))
    if (plan := planned_order(ledger, version, sequence.id)) is not None:
        sequence = follow_plan(sequence, plan)  # an --order run: the recorded plan is its order
    cache = cache_dir_of(opts)
    sandbox = agent_sandbox(opts, ledger.path.parent, also_hide)
    memory = memory_backend(stage, opts).sequence(SequencePlace(
        ledger=ledger, version=version, sequence=sequence, reporter=reporter, folder=memory_folder, sandbox=sandbox,
        network=bool(opts.sandbox.allow_hosts), hidden=hidden_items))
    return SequenceContext(
        ledger=ledger,
        version=version,
        stage=stage,
        sequence=sequence,
        agent=build_agent(opts, benchmark),
        agent_name=opts.agent,
        grader=get_grader(
            opts.grader, cache_dir=cache, repo_sources=benchmark.repo_sources, timeout_s=opts.budget.test_timeout_s,
            python=opts.python_paths or None, sandbox=sandbox,
        ),
        sandbox=sandbox,
        allow_hosts=tuple(opts.sandbox.allow_hosts), allow_web=opts.sandbox.allow_web,
        grader_name=opts.grader,
        repos=RepoCache(cache, benchmark.repo_sources),
        reporter=reporter,
        model=opts.model,
        code_mode=opts.code_mode,
        budget=Budget(max_turns=opts.budget.max_turns, timeout_s=opts.budget.agent_timeout_s, max_tokens=opts.budget.max_tokens_per_task),
        memory=memory,
        task_jobs=opts.execution.task_jobs,
        group_by_environment=not agents.agent_entry(opts.agent).briefed,
        p2p_excluded=p2p_excluded(ledger),
        budget_usd=opts.budget.usd,
    )


def run_sequence_on(ledger: Ledger, version: str, opts: RunOptions, sequence_id: str, reporter: Reporter, *,
                    memory_folder: Path | None, benchmark: Benchmark | None = None,
                    elsewhere: Elsewhere | None = None) -> None:
    """One sequence's passes of run `version`, appending to `ledger` (the results dir's,
    or a Ray worker's shard). `memory_folder`: where the sequence's memory keeps its live
    state. `elsewhere`: where free tasks may also run (Ray tasks)."""
    ctx = sequence_context(ledger, version, opts, sequence_id, reporter, memory_folder=memory_folder,
                           benchmark=benchmark)
    run_sequence(ctx, opts.pass_list, opts.retest_every, elsewhere)
