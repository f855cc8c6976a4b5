"""`EstimateJobs`: what a `swecl run` would cost before it starts (`swecl run --estimate`).

The options are checked as `swecl run` checks them (`RunJobs.check_run`, the dataset and
its sequences, the agent's options), with the same one-line refusals; then the plan (its
stages, passes and tasks per repository) is priced from this folder's recorded runs of
the same agent and model (`projections._estimate`), or from the table
(`commands.run._estimate_table`) when there are none. Nothing is written: no ledger is
made, no version claimed, no environment built, no agent started.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from ledger import Ledger, SweclError

from ._jobs_run import RunJobs

if TYPE_CHECKING:
    from projections import Estimate, PlannedRun

    from .run import RunOptions

__all__ = ["EstimateJobs"]


class EstimateJobs(RunJobs):
    """`swecl run --estimate` over this folder (see the module doc)."""

    def estimate(self, opts: RunOptions, *, repeat: int = 1, demo_suite: bool = False,
                 cores: int | None = None) -> Estimate:
        """The attempts, wall time, tokens and dollars of `swecl run` with `opts`, before it
        runs; `cores` bounds the workers (default: this machine's)."""
        # lazy: as `run` (the run machinery loads only when a run, or its estimate, is asked for)
        from projections import Basis, estimate_plan, recorded_rates

        from .run import DEMO_SUITE, build_agent, next_version, open_benchmark, ordered, select_sequences, table_rate
        from .run.memory import memory_of

        opts = self.check_run(opts, repeat=repeat, demo_suite=demo_suite)
        count = opts.orders or repeat
        stages = DEMO_SUITE if demo_suite else (opts.stage,)
        for stage in stages[1:]:
            msgspec.structs.replace(opts, stage=stage).validate()
        benchmark = open_benchmark(opts)
        sequences = select_sequences(benchmark, opts)
        if opts.order is not None:
            sequences = ordered(sequences, opts.order)
        build_agent(opts, benchmark, runs_here=False)  # the agent's options, not its CLI (a run's preflight)
        with ExitStack() as stack:
            if self.ledger_path.exists():
                ledger = stack.enter_context(self.open_ledger(readonly=True))
            else:  # what a run's new ledger would hold (nothing), made where the results are not
                scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="swecl-estimate-")))
                ledger = stack.enter_context(Ledger.open(scratch / "ledger.db", create=True))
            if opts.version is not None and ledger.stream_version(f"run/{opts.version}") >= 0:
                raise SweclError(  # as claiming it would say
                    f"run version {opts.version!r} already exists in {ledger.path}: pick another --version, "
                    f"or continue it with `swecl run --resume {opts.version}`")
            if not demo_suite:  # the suite's seeded stages seed from its own plugin-blank run
                memory_of(opts).check_seed(ledger, opts.version or next_version(ledger), benchmark, sequences)
            rates = recorded_rates(ledger.read(types=["run.started", "run.finished", "task.started", "task.finished",
                                                      "agent.finished", "grade.finished"]), opts.agent, opts.model)
        table = table_rate(opts.agent, opts.model)
        basis = Basis(source=table.source, seconds=table.seconds, tokens=table.tokens, usd=table.usd)
        tasks = [[t.repo for t in s.tasks] for s in sequences]
        plan = [_planned(stage, msgspec.structs.replace(opts, stage=stage).pass_list, tasks, opts.retest_every)
                for _ in range(count) for stage in stages]
        ex = opts.execution
        seq_workers = min(ex.jobs, len(sequences)) if ex.executor == "ray" or ex.jobs > 1 else 1
        workers = max(1, min(seq_workers * ex.task_jobs, cores or os.cpu_count() or 1))
        if ex.executor == "ray":  # a cluster's cores are not this machine's
            workers = max(1, seq_workers * ex.task_jobs)
        return estimate_plan(plan, rates, basis, agent=opts.agent, model=opts.model, workers=workers,
                             budget_usd=opts.budget.usd)


def _planned(stage: str, passes: tuple[str, ...], tasks: list[list[str]], retest_every: int | None) -> PlannedRun:
    """A run's passes with their attempts by repository (as `_sequence.plan_passes` plans them)."""
    from projections import PlannedPass, PlannedRun

    from .run import get_stage, plan_passes

    rows: dict[str, PlannedPass] = {}
    for repos in tasks:
        for pass_, upto in plan_passes(passes, len(repos), retest_every):
            if pass_ == "initial" and upto < len(repos):
                continue  # the initial pass in steps between retest-{i} rows: counted once, whole
            name = f"retest-every {retest_every}" if pass_.startswith("retest-") else pass_
            # Only a memory's initial pass is ordered (`_sequence.order_free`): the rest run on --task-jobs workers.
            row = rows.setdefault(name, PlannedPass(name=name, attempts=0, repos={},
                                                    ordered=name == "initial" and get_stage(stage).memory_on))
            row.attempts += upto
            if name == "initial":
                row.longest_sequence = max(row.longest_sequence, upto)
            for repo in repos[:upto]:
                row.repos[repo] = row.repos.get(repo, 0) + 1
    order = {"initial": 0, "retest": 2, "baseline": 3}
    return PlannedRun(stage=stage, passes=sorted(rows.values(), key=lambda p: order.get(p.name, 1)),
                      sequences=len(tasks), tasks=sum(len(r) for r in tasks))
