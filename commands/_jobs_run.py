"""`RunJobs`: the run jobs of the core (`swecl run`): start runs, resume them, and the
summary a run command ends with.

A job here decides everything `swecl run` decides after parsing its options: the demo
suite or one stage, `--repeat K`, one Ray connection for every run of the invocation, the
option combinations it refuses. The runs themselves go through `commands.run`
(`start_run`, `resume_run`), which take this folder: both executors, local and Ray, hold
its run lock, open its ledger and record a run's end (`finish_run`) through it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from ledger import SweclError

from ._folder import ExperimentFolder
from ._jobs_read import assessments_for, costs_for, gains_for, grouped_of, integrity_for, leakage_for
from ._read_documents import grouped_document, metrics_document

if TYPE_CHECKING:
    from projections import RunCost, VersionMetrics
    from projections.compare import Assessment, Gain, GroupedMetrics

    from .run import Reporter, ResumeOverrides, RunOptions, RunReport

__all__ = ["RunJobs", "Runs", "RunsSummary"]


@dataclass(frozen=True)
class Runs:
    """The runs one `swecl run` made or continued, in the order they ran."""

    reports: tuple[RunReport, ...]
    grouped: bool = False  # a stage's repeats among them: the summary shows them as groups too

    @property
    def versions(self) -> list[str]:
        return [r.version for r in self.reports]


@dataclass(frozen=True)
class RunsSummary:
    """What `swecl run` shows at the end: the runs' metrics (the table of `swecl metrics`,
    its leakage and integrity notes), their groups with `--repeat`, and where each run is."""

    versions: list[str]
    found: list[VersionMetrics]
    leakage: dict[str, dict[str, Any] | None]
    integrity: dict[str, dict[str, Any] | None]
    groups: list[GroupedMetrics]
    ledger: str
    results: str
    version_dirs: dict[str, str]
    on_disk: dict[str, str]  # version -> what its folder holds, in a line
    gains: dict[str, Gain] = field(default_factory=dict)  # version -> its normalized gain over its base
    # version -> its verdict against its base, efficiency and cost, as `swecl metrics` prints them
    assessments: dict[str, Assessment] = field(default_factory=dict)
    costs: dict[str, RunCost] = field(default_factory=dict)

    @property
    def stages(self) -> dict[str, str]:
        return {vm.run.version: vm.run.stage for vm in self.found}

    def where(self) -> dict[str, Any]:
        """The places in the `--json` summary line."""
        return {"ledger": self.ledger, "results": self.results, "version_dirs": dict(self.version_dirs)}

    def document(self) -> dict[str, Any]:
        """The `--json` summary line: `swecl metrics --json` of these runs, their groups
        (with `--repeat`) and where they are."""
        extra = {"grouped": grouped_document(self.groups)} if self.groups else {}
        return {"event": "summary", **metrics_document(self.found, self.leakage, self.integrity, self.gains,
                                                       self.assessments, self.costs), **extra,
                **self.where()}


class RunJobs(ExperimentFolder):
    """`swecl run` over this folder (see the module doc)."""

    def check_run(self, opts: RunOptions, *, repeat: int = 1, demo_suite: bool = False) -> RunOptions:
        """The options of a new run (or invocation) as `run` takes them, or the one-line
        refusal: what no single option says wrong but their combination does. The CLI
        calls it before its `--sandbox none` warning; `run` calls it again."""
        from .run import DEMO_SUITE  # lazy: the run package loads when a run is asked for

        if repeat < 1:
            raise SweclError(f"--repeat {repeat}: give at least 1")
        if demo_suite:
            # The suite's stages are its own; its options are validated as its first stage's.
            opts = msgspec.structs.replace(opts, stage=DEMO_SUITE[0])
            if opts.memory.server is not None:
                raise SweclError("--memory-server is for one memory stage: add --stage plugin-blank (or plugin-primed)")
            if opts.version is not None:
                raise SweclError("--version names one run; the demo suite makes four: add --stage")
        if opts.orders is not None:
            if opts.orders < 1:
                raise SweclError(f"--orders {opts.orders}: give at least 1")
            if repeat != 1:
                raise SweclError(f"--orders {opts.orders} runs each order once; --repeat {repeat} repeats one order: "
                                 "give one of them")
            if opts.order is not None:
                raise SweclError("--orders N runs the permutations permute:1..N; --order gives one order: give one of them")
            if opts.version is not None:
                raise SweclError(f"--version names one run; --orders {opts.orders} makes a group: drop --version "
                                 "(the orders take the next numbers)")
        if repeat != 1 and opts.version is not None:
            raise SweclError(f"--version names one run; --repeat {repeat} makes {repeat}: drop --version "
                             "(the repeats take the next numbers)")
        opts.validate()
        return opts

    def run(self, opts: RunOptions, reporter: Reporter, *, repeat: int = 1, demo_suite: bool = False,
            workers_given: bool = True) -> Runs:
        """Start `opts.stage` (`demo_suite`: the four stages of the demo suite, in order)
        `repeat` times, each run its own version; progress goes to `reporter`.
        `workers_given` False (the CLI, when neither --jobs nor --task-jobs was typed): the
        demo suite runs on the machine's cores."""
        # lazy: the run machinery (agents, graders, multiprocessing) costs about 0.25 s at start-up
        from .run import run_demo_suite, run_repeats

        opts = self.check_run(opts, repeat=repeat, demo_suite=demo_suite)
        repeat = opts.orders or repeat  # --orders N: N runs of one group, one per permutation
        with _executor_session(opts):
            if demo_suite:
                reports = run_demo_suite(self, opts, reporter, repeat, workers_given=workers_given)
            else:
                reports = run_repeats(self, opts, reporter, repeat)
        return Runs(tuple(reports), grouped=repeat > 1)

    def check_fork(self, spec: str, given: dict[str, Any], *, repeat: int = 1) -> RunOptions:
        """The options of `swecl run --fork V@K`: V's as recorded, with `given` (RunOptions
        fields set on the command line) instead; or the one-line refusal."""
        from .run import fork_options  # lazy: as in `run`

        if repeat != 1:
            raise SweclError(f"--fork makes one run; --repeat {repeat} makes {repeat}: drop --repeat")
        if not self.ledger_path.exists():
            raise SweclError(f"--fork {spec}: no ledger in {self.root}, so no run to fork")
        with self.reading() as reading:
            opts = fork_options(reading.ledger, spec, given)
        opts.validate()
        return opts

    def fork(self, spec: str, reporter: Reporter, *, repeat: int = 1, **given: Any) -> Runs:
        """`swecl run --fork V@K`: one new run whose initial pass takes V's tasks before K as
        they were and runs from K on; `given` are RunOptions fields that differ from V's."""
        from .run import start_run  # lazy: as in `run`

        opts = self.check_fork(spec, given, repeat=repeat)
        with _executor_session(opts):
            report = start_run(self, opts, reporter)
        return Runs((report,))

    def resume(self, version: str, reporter: Reporter, overrides: ResumeOverrides | None = None, *,
               repeat: int = 1) -> Runs:
        """Continue run `version` where it stopped and, when it is part of an invocation that
        started several (the demo suite, `--repeat K`), the rest of that invocation, with
        what the resuming command line gives instead (`commands.run.ResumeOverrides`: the
        workers and executor, the cost budget from here on, a memory server's values that
        were never recorded). `repeat`, an option of a new run, is refused."""
        from .run import ResumeOverrides, continue_invocation  # lazy: as in `run`

        if repeat != 1:
            raise SweclError("--resume continues one run; --repeat starts new ones: drop --repeat")
        reports = continue_invocation(self, version, reporter, overrides or ResumeOverrides())
        return Runs(tuple(reports), grouped=len(reports) > len({r.stage for r in reports}))

    def run_summary(self, versions: list[str], *, grouped: bool = False) -> RunsSummary:
        """The summary of runs `versions`: their metrics as `swecl metrics` computes them and,
        with `grouped`, their groups (a stage's repeats: mean and interval)."""
        # lazy: the metrics load when a summary is shown, not at `swecl --help`
        from projections import metrics_for

        with self.reading() as reading:
            found = metrics_for(reading.ledger, reading.projector, versions)
            leakage = leakage_for(reading.ledger, found)  # as `swecl metrics` has them, with no cut
            integrity = integrity_for(reading.ledger, found)
            gains = gains_for(reading.ledger, reading.projector, found)
            assessments = assessments_for(reading.ledger, reading.projector, found, gains, leakage) if found else {}
            costs = costs_for(reading.ledger, found)
        groups = grouped_of(found) if grouped else []
        dirs = {v: str(self.version_dir(v)) for v in versions}
        modes = {m.run.version: m.run.memory_mode for m in found}
        return RunsSummary(
            versions=list(versions), found=found, leakage=leakage, integrity=integrity, groups=groups,
            ledger=str(self.ledger_path), results=str(self.root), version_dirs=dirs,
            on_disk={v: _on_disk(Path(path), modes.get(v)) for v, path in dirs.items()}, gains=gains,
            assessments=assessments, costs=costs,
        )


@contextmanager
def _executor_session(opts: RunOptions) -> Iterator[None]:
    """One Ray connection for every run an invocation makes (the demo suite makes four)."""
    if opts.execution.executor != "ray":
        yield
        return
    from .run import ray_session  # lazy: the Ray session module loads only for --executor ray

    with ray_session(opts):
        yield


def _on_disk(folder: Path, memory_mode: str | None = None) -> str:
    """What a run's folder holds for a reader: its memory, or that the ledger is all there is."""
    if memory_mode == "history":
        return ("no memory files: the earlier tasks each prompt carried are memory.history events in the ledger "
                "(swecl show, swecl log)")
    shown = sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")) if folder.is_dir() else []
    if "_provider" in shown:
        return (f"memory server data in {folder / '_provider'} (per sequence; a snapshot per task in the ledger: "
                "memory.provider.snapshot)")
    if "_memory" in shown:
        return f"memory in {folder / '_memory'} (one Markdown file per item in _memory/.cookbook-memory/)"
    if shown:
        return f"{folder} ({', '.join(shown)})"
    return "no memory, nothing on disk: its events are in the ledger (swecl audit, swecl log)"
