"""The read jobs of the application core: `runs`, `metrics`, `compare`, `show`, `audit`,
and the ledger's own `init`, `log`, `verify`.

Each opens the ledger (read-only but for `init`), folds what it needs through the
projections, and returns a document: what the CLI prints, as a table or as `--json`
(`document()`). Nothing here prints; a user's mistake is a `SweclError` with the line the
CLI shows.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from ledger import IntegrityError, LedgerDamaged, Recorded, StreamRange, SweclError, check_references, sqlite
from ledger.events import BY_TYPE
from projections import (
    ChainCheckpoints,
    VersionMetrics,
    metrics_for,
    not_gradeable,
    order_cut,
    outcomes,
    run_not_gradeable,
    run_row,
    runs,
    spend_of,
)
from projections.compare import DEFAULT_RESAMPLES, DEFAULT_SEED, group_members, group_runs, grouped_metrics
from projections.metrics import metrics_from_vectors_document

from ._files import write_output
from ._folder import ExperimentFolder
from ._read_documents import compare_document, grouped_document, metrics_document, resolved_of, version_label

if TYPE_CHECKING:  # the folds below load when a job runs, not at `swecl --help`
    from ledger import Ledger
    from projections import RunCost, RunSpend, RunSummary
    from projections.audit import RunAuditSummary, TaskAudit
    from projections.compare import Assessment, Comparison, Gain, GroupedMetrics
    from projections.funnel import FunnelDifference, RunFunnel
    from projections.metrics import Lambdas
    from projections.show import AttemptShow

__all__ = [
    "AttemptShown",
    "AuditResult",
    "CompareResult",
    "InitResult",
    "MetricsResult",
    "ReadJobs",
    "RunsListing",
    "TaskShown",
    "VerifyResult",
    "expand_to_groups",
    "grouped_of",
    "integrity_for",
    "leakage_for",
]

Audits = dict[str, dict[str, Any] | None]


# -- the documents -----------------------------------------------------------------------


@dataclass(frozen=True)
class RunsListing:
    """`swecl runs`: one row per run version (`document()` is the --json list)."""

    ledger_path: Path
    rows: list[dict[str, Any]]

    def document(self) -> list[dict[str, Any]]:
        return self.rows


@dataclass(frozen=True)
class MetricsResult:
    """`swecl metrics`: each run's scores, and (when asked for) its leakage and integrity
    flags; `document()` is the --json document, `grouped_document()` that of --group."""

    found: list[VersionMetrics]
    leakage: Audits = field(default_factory=dict)
    integrity: Audits = field(default_factory=dict)
    gains: dict[str, Gain] = field(default_factory=dict)
    spend: dict[str, RunSpend] = field(default_factory=dict)  # version -> what its agents spent
    assessments: dict[str, Assessment] = field(default_factory=dict)  # version -> against its base
    costs: dict[str, RunCost] = field(default_factory=dict)  # version -> its cost per solved task

    def document(self) -> dict[str, Any]:
        doc = metrics_document(self.found, self.leakage, self.integrity, self.gains, self.assessments, self.costs)
        if self.spend:
            doc["spend"] = {v: s.document() for v, s in self.spend.items()}
        return doc

    @cached_property
    def groups(self) -> list[GroupedMetrics]:
        return grouped_of(self.found)

    def grouped_document(self) -> dict[str, Any]:
        return grouped_document(self.groups)

    @cached_property
    def table(self) -> Any:
        """One row per run and sequence (and macro), as --csv and --parquet write it (a polars frame)."""
        # lazy: polars costs about 0.5 s, paid only by --csv and --parquet
        import polars as pl

        from projections.metrics import to_frame

        frames = [
            to_frame(vm.result).with_columns(pl.lit(vm.run.version).alias("version"), pl.lit(vm.run.stage).alias("stage"))
            for vm in self.found
        ]
        return pl.concat(frames).select(
            ["version", "stage", *[c for c in frames[0].columns if c not in ("version", "stage")]])

    def csv(self) -> str:
        return str(self.table.write_csv())


@dataclass(frozen=True)
class CompareResult:
    """`swecl compare A B`: B minus A (`document()` is the --json document)."""

    comparison: Comparison
    assessment: Assessment | None = None
    """B against A as its base: the gain's interval, the memory efficiency, the verdict (None with --group)."""
    costs: dict[str, RunCost] = field(default_factory=dict)
    """version -> its cost per solved task (A and B)."""
    funnel: FunnelDifference | None = None
    """The two runs' memory funnels side by side (None with --group)."""

    def document(self) -> dict[str, Any]:
        doc = compare_document(self.comparison)
        if self.assessment is not None:
            doc["verdict"] = self.assessment.verdict
            doc["memory_efficiency"] = self.assessment.efficiency.document()
            doc["normalized_gain_ci"] = {**{k: None if v is None else list(v)
                                            for k, v in self.assessment.gain_ci.items()},
                                         "macro": None if self.assessment.gain_macro_ci is None
                                         else list(self.assessment.gain_macro_ci)}
        if self.costs:
            doc["cost_per_solved"] = {v: c.document() for v, c in self.costs.items()}
            pair = list(self.costs.values())
            doc["cost_per_solved_diff"] = pair[0].difference(pair[1]) if len(pair) == 2 else None
        if self.funnel is not None:
            from projections.funnel import funnel_difference_document  # lazy: as the job's imports

            doc["funnel"] = funnel_difference_document(self.funnel)
        return doc


@dataclass(frozen=True)
class AttemptShown:
    """`swecl show VERSION TASK`: the attempt, and the files written of it (--files)."""

    shown: AttemptShow
    written: list[Path] = field(default_factory=list)
    funnel: RunFunnel | None = None
    """The run's memory funnel (an initial-pass attempt only: the funnel is of that pass)."""

    def document(self) -> dict[str, Any]:
        doc = {**msgspec.to_builtins(self.shown), "files": [str(p) for p in self.written]}
        if self.funnel is not None:  # the task's part: its label and the items behind each step
            task = self.funnel.task(self.shown.instance_id) if self.funnel.na is None else None
            doc["funnel"] = {"na": self.funnel.na} if task is None else msgspec.to_builtins(task)
        return doc


@dataclass(frozen=True)
class TaskShown:
    """`swecl show TASK`: one task of a benchmark (`document()` is the --json object)."""

    sequence: Any  # commands.inputs' Sequence and Task: loaded with the benchmark, not at import
    task: Any

    def document(self) -> dict[str, Any]:
        from commands.inputs import task_document  # lazy: the loaders (pydantic) load with a benchmark

        return task_document(self.sequence, self.task)


@dataclass(frozen=True)
class AuditResult:
    """`swecl audit`: one task's recalls, or the run's flagged tasks (--summary)."""

    audit: TaskAudit | RunAuditSummary

    def document(self) -> dict[str, Any]:
        return msgspec.to_builtins(self.audit)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class InitResult:
    """`swecl init`: the ledger, whether this call created it, and its length."""

    path: Path
    created: bool
    events: int


@dataclass(frozen=True)
class VerifyResult:
    """`swecl verify`: the counts and head of an intact ledger, or the first problem."""

    problem: str | None = None
    events: int = 0
    blobs: int = 0
    head_hash: str = ""

    @property
    def ok(self) -> bool:
        return self.problem is None


# -- the pieces the jobs share (and `swecl run`'s closing summary) ------------------------


def leakage_for(ledger: Ledger, found: list[VersionMetrics], as_of_order: int | None = None) -> Audits:
    """Each run's leakage counts. At a cut (--as-of-order) they are of the recalls made
    before it, as the outcomes are."""
    from projections.audit import leakage_of  # lazy: the audit's folds load when a job shows them

    return {vm.run.version: leakage_of(ledger, vm.run.version, as_of_order) for vm in found}


def integrity_for(ledger: Ledger, found: list[VersionMetrics], as_of_order: int | None = None) -> Audits:
    """Each run's integrity flags (`projections.audit.integrity_of`), of the attempts that
    count: at a cut, those in force then, as the outcomes beside them."""
    # lazy: the audit's folds (about 15 ms) load when a command shows them, not at `swecl --help`
    from projections.audit import integrity_counts, integrity_of

    return {vm.run.version: integrity_counts(integrity_of(
        ledger, vm.run.version, cut=None if as_of_order is None else order_cut(ledger, vm.run.version, as_of_order)))
        for vm in found}


def gains_for(ledger: Ledger, projector: Any, found: list[VersionMetrics],
              as_of_order: int | None = None) -> dict[str, Gain]:
    """Each run's normalized gain over its base runs (`projections.compare.gain_of`), the
    base runs read at the same cut."""
    from projections.compare import base_candidates, gain_of

    known = runs(ledger, projector)
    wanted = {v for vm in found for v in base_candidates(vm.run, known)}
    gradeable = not_gradeable(ledger) if wanted else {}
    bases = {v: outcomes(ledger, projector, v, as_of_order=as_of_order) for v in known if v in wanted}
    excluded = {v: run_not_gradeable(state, gradeable) for v, state in bases.items()}
    return {vm.run.version: gain_of(vm.run, vm.outcomes, vm.not_gradeable, known, bases, excluded) for vm in found}


def _others(ledger: Ledger, projector: Any, known: dict[str, RunSummary], wanted: set[str],
            as_of_order: int | None) -> tuple[dict[str, Any], dict[str, dict[str, str]]]:
    """The outcomes (read at the cut) and not-gradeable tasks of the runs `wanted`."""
    gradeable = not_gradeable(ledger) if wanted else {}
    found = {v: outcomes(ledger, projector, v, as_of_order=as_of_order) for v in known if v in wanted}
    return found, {v: run_not_gradeable(state, gradeable) for v, state in found.items()}


def assessments_for(ledger: Ledger, projector: Any, found: list[VersionMetrics], gains: dict[str, Gain],
                    leakage: Audits, as_of_order: int | None = None) -> dict[str, Assessment]:
    """Each memory run against its base (`projections.compare.assess_run`): the gain's
    interval, the memory efficiency (the oracle runs read at the same cut) and the verdict line."""
    from projections.compare import assess_run, oracle_candidates

    known = runs(ledger, projector)
    wanted = {g.base_version for gain in gains.values() for g in gain.sequences.values() if g.base_version}
    wanted |= {v for vm in found for v in oracle_candidates(vm.run, known)}
    others, excluded = _others(ledger, projector, known, wanted, as_of_order)
    out = {}
    for vm in found:
        gain = gains.get(vm.run.version)
        if gain is None or not gain.sequences:
            continue
        leak = leakage.get(vm.run.version)
        out[vm.run.version] = assess_run(vm.run, vm.outcomes, vm.not_gradeable, gain, known, others, excluded,
                                         flagged=None if leak is None else leak["flagged"])
    return out


def costs_for(ledger: Ledger, found: list[VersionMetrics]) -> dict[str, RunCost]:
    """Each run's cost per solved task (`projections.run_cost`), solved as `swecl metrics` counts it."""
    from projections import run_cost

    return {vm.run.version: run_cost(ledger, vm.run.version, {name: resolved_of(vm, name)[0]
                                                              for name in vm.result.sequences}) for vm in found}


def _compare_extras(ledger: Ledger, projector: Any, found: list[VersionMetrics], oracle: str | None) -> tuple[Any, ...]:
    """What `compare` adds for two runs: the runs, the oracle runs' outcomes, B's flagged recalls, both costs."""
    from projections.audit import leakage_of
    from projections.compare import oracle_candidates

    known = runs(ledger, projector)
    vm_b = found[-1]
    if oracle is not None and oracle not in known:
        raise SweclError(f"no run version {oracle!r} for --oracle (versions: {', '.join(known)})")
    wanted = {oracle} if oracle is not None else set(oracle_candidates(vm_b.run, known))
    others, excluded = _others(ledger, projector, known, wanted, None)
    leak = leakage_of(ledger, vm_b.run.version, None)
    return known, others, excluded, None if leak is None else leak["flagged"], costs_for(ledger, found)


def expand_to_groups(known: dict[str, RunSummary], versions: list[str], include_failed: bool) -> list[str]:
    """Each given version with the rest of its group (ledger order, each version once)."""
    for version in versions:
        if version not in known:
            raise SweclError(f"no run version {version!r} (versions: {', '.join(known) or 'none yet'})")
    out: dict[str, None] = {}
    for version in versions:
        out.update(dict.fromkeys(group_members(known, version, include_failed=include_failed)))
    return list(out)


def grouped_of(found: list[VersionMetrics]) -> list[GroupedMetrics]:
    """The runs as groups of repeats, each metric's mean and t-based interval over a group."""
    known = {vm.run.version: vm.run for vm in found}
    return [grouped_metrics(group, found) for group in group_runs(known, list(known))]


def _did_you_mean(given: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(given, choices, n=3)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def _one_line(message: str) -> str:
    return " ".join(message.split())


# -- the jobs ----------------------------------------------------------------------------


class ReadJobs(ExperimentFolder):
    """The jobs that read the ledger (and `init`, which only makes one)."""

    def runs(self) -> RunsListing:
        """`swecl runs`: stage, sequences, agent, status, resolved tasks per pass, leaks."""
        with self.reading() as r:
            rows = [run_row(self.results, r.ledger, run, outcomes(r.ledger, r.projector, run.version))
                    for run in runs(r.ledger, r.projector).values()]
        return RunsListing(self.ledger_path, rows)

    def metrics(self, *, versions: Sequence[str] = (), formula: str = "native", as_of_order: int | None = None,
                lambdas: Lambdas | None = None, include_failed: bool = False, grouped: bool = False,
                audit: bool = True) -> MetricsResult:
        """`swecl metrics`: every run's (or `versions`') CL metrics, recomputed from the
        ledger. `grouped` widens the given versions to their groups of repeats; `audit`
        (leakage and integrity flags) costs a fold of the recalls and patches, so an
        output with no place for them (CSV on stdout) skips it."""
        versions = list(versions)
        with self.reading() as r:
            if grouped and versions:
                versions = expand_to_groups(runs(r.ledger, r.projector), versions, include_failed)
            found = metrics_for(r.ledger, r.projector, versions, formula=formula, lambdas=lambdas,
                                as_of_order=as_of_order, include_failed=include_failed)
            if not found and not versions and runs(r.ledger, r.projector):
                raise SweclError(f"every run in {self.ledger_path} failed: `swecl metrics --all` includes failed runs")
            leakage = leakage_for(r.ledger, found, as_of_order) if audit else {}
            integrity = integrity_for(r.ledger, found, as_of_order) if audit else {}
            gains = gains_for(r.ledger, r.projector, found, as_of_order) if found else {}
            spend = {vm.run.version: spend_of(r.ledger, vm.run.version) for vm in found}
            assessments = assessments_for(r.ledger, r.projector, found, gains, leakage, as_of_order) if found else {}
            costs = costs_for(r.ledger, found)
        if not found:
            raise SweclError(f"no runs in {self.ledger_path} yet: start one with `swecl run`")
        return MetricsResult(found, leakage, integrity, gains, spend, assessments, costs)

    def metrics_of_vectors(self, path: Path, *, formula: str = "native",
                           lambdas: Lambdas | None = None) -> dict[str, Any]:
        """`swecl metrics --vectors FILE`: score outcome vectors from a JSON file, no ledger."""
        from graders import loads_limited, read_limited  # lazy: as the benchmark loaders

        # Regular files within the input caps only: /dev/zero or a FIFO must not hang here.
        vectors = loads_limited(read_limited(path, str(path)), str(path))
        return metrics_from_vectors_document(vectors, formula, lambdas)  # type: ignore[no-any-return]

    def write_metrics_tables(self, result: MetricsResult, *, csv: Path | None = None,
                             parquet: Path | None = None) -> None:
        """--csv FILE, --parquet FILE: the metrics table, each file written whole or not
        at all (a full disk leaves no half-written file)."""
        from projections import parquet_bytes

        if csv is not None:
            write_output(csv, result.csv().encode())
        if parquet is not None:
            write_output(parquet, parquet_bytes(result.table))

    def compare(self, a: str, b: str, *, formula: str = "native", lambdas: Lambdas | None = None,
                seed: int = DEFAULT_SEED, resamples: int = DEFAULT_RESAMPLES, grouped: bool = False,
                oracle: str | None = None) -> CompareResult:
        """`swecl compare A B`: B minus A over the same tasks, with paired bootstrap
        intervals and an exact test; `grouped` compares the groups of repeats A and B are in.
        Two runs (not groups) also get B's memory efficiency (the oracle run `oracle`, else
        the one found for B), the verdict line and both runs' cost per solved task."""
        if grouped and oracle is not None:
            raise SweclError("--oracle gives the memory efficiency of two runs; it does not combine with --group")
        from projections.compare import compare_groups, from_order, shared_before, side_of
        from projections.funnel import funnel, funnel_difference

        with self.reading() as r:
            members = [[a], [b]]
            if grouped:
                known = runs(r.ledger, r.projector)
                for version in (a, b):
                    if version not in known:
                        raise SweclError(f"no run version {version!r} in {r.ledger.path} "
                                         f"(versions: {', '.join(known) or 'none yet'})")
                members = [group_members(known, a), group_members(known, b)]
                if a != b and b in members[0]:
                    raise SweclError(f"{a} and {b} are repeats of one group ({', '.join(members[0])}): "
                                     "--group compares two groups")
            # The runs exactly as `swecl metrics --version A --version B` loads and scores them.
            found = metrics_for(r.ledger, r.projector, members[0] + members[1], formula=formula, lambdas=lambdas)
            # A fork and its source (or two forks of one run) share their tasks before K.
            shared = shared_before(r.ledger, a, b) if not grouped else None
            extra = None if grouped else _compare_extras(r.ledger, r.projector, found, oracle)
            funnels = None if grouped else funnel_difference(funnel(r.ledger, a), funnel(r.ledger, b))
        sides = [side_of(vm, version_label(vm)) for vm in found]
        if shared is not None:
            sides = [from_order(s, {n: [t.order for t in c.plan] for n, c in vm.outcomes.sequences.items()}, shared)
                     for s, vm in zip(sides, found, strict=True)]
        side_a, side_b = sides[:len(members[0])], sides[len(members[0]):]
        labels = None
        if grouped:
            known_found = {vm.run.version: vm.run for vm in found}
            labels = (group_runs(known_found, members[0])[0].label, group_runs(known_found, members[1])[0].label)
        comparison = compare_groups(side_a, side_b, formula=formula, lambdas=lambdas, seed=seed, resamples=resamples,
                                    labels=labels)
        if shared is not None:
            said = (f"paired over the tasks from order {shared} on: before it both runs hold the same task events "
                    f"(a fork and its source, or two forks of one run), equal by construction")
            comparison = msgspec.structs.replace(comparison, notes=(said, *comparison.notes), paired_from=shared)
        if extra is None:
            return CompareResult(comparison)
        from projections.compare import assess_comparison

        known, others, excluded, flagged, costs = extra
        vm_a, vm_b = found
        assessment = assess_comparison(comparison, vm_b.run, vm_b.outcomes, vm_b.not_gradeable, known,
                                       {**others, a: vm_a.outcomes}, {**excluded, a: vm_a.not_gradeable},
                                       oracle=oracle, flagged=flagged, order_a=vm_a.run.task_order)
        return CompareResult(comparison, assessment, costs, funnels)

    def show(self, version: str, task: str, *, pass_: str = "initial", files_dir: str | Path | None = None) -> AttemptShown:
        """`swecl show VERSION TASK`: the attempt of TASK that counts in the pass, whole;
        with `files_dir`, its patch, log, report, recalls and transcript written there."""
        from projections.show import attempt_files, show_attempt  # lazy: loads when the job runs

        if not self.has_ledger():
            raise SweclError(f"no ledger at {self.ledger_path}: nothing to show "
                             "(run `swecl run` first, or give --results DIR)")
        from projections.funnel import funnel  # lazy: as above

        with self.open_ledger(readonly=True) as ledger:
            shown = show_attempt(ledger, version, task, pass_=pass_)
            found = funnel(ledger, version) if pass_ == "initial" else None
        written: list[Path] = []
        if files_dir is not None:
            folder = Path(files_dir)
            if folder.exists() and not folder.is_dir():
                raise SweclError(f"--files {files_dir}: not a folder")
            for name, data in attempt_files(shown).items():
                write_output(folder / name, data)
                written.append(folder / name)
        return AttemptShown(shown, written, found)

    def funnel(self, version: str) -> RunFunnel:
        """`swecl funnel VERSION`: the memory funnel of the run's initial pass (its `na` says
        why a run has none); `swecl show` prints a task's part of it."""
        from projections.funnel import funnel  # lazy: loads when the job runs

        with self.open_ledger(readonly=True) as ledger:
            return funnel(ledger, version)

    def show_task(self, task_id: str, *, dataset: str | None = None, rows: str | None = None) -> TaskShown:
        """`swecl show TASK`: one task of a benchmark (the built-in demo by default); no ledger."""
        from commands.inputs import benchmark_to_list, find_task
        from projections import resolve_task_name

        benchmark = benchmark_to_list(dataset, rows)
        if "#" in task_id or task_id.isdigit():  # SEQ#ORDER, #ORDER, ORDER: the one parser
            plans = {s.id: s.tasks for s in benchmark.sequences}
            seq_id, task = resolve_task_name(plans, task_id, where=f"benchmark {benchmark.name!r}",
                                             repos={s.id: s.repo for s in benchmark.sequences})
            return TaskShown(next(s for s in benchmark.sequences if s.id == seq_id), task)
        return TaskShown(*find_task(benchmark, task_id))

    def audit(self, version: str, task_id: str | None = None, *, pass_: str | None = None, summary: bool = False,
              dataset: str | None = None, rows: str | None = None, no_dataset: bool = False) -> AuditResult:
        """`swecl audit VERSION TASK_ID` (or `summary`: every flagged task of the run): which
        memories a task recalled, where they came from, whether any leaked; in a
        --memory-server run also what the server returned to its recall calls and which
        earlier tasks' writes stored it (`TaskAudit.provider_recalls`). The test-content
        check reads the benchmark the run recorded (or `dataset`), unless `no_dataset`."""
        # lazy: the benchmark loaders (pydantic) and the audit's folds load when the job runs
        from commands.inputs import load_task_secrets
        from projections.audit import DatasetNote, audit_summary, audit_task

        if summary == (task_id is not None):
            raise SweclError("give a TASK_ID, or --summary for the whole run (not both)")
        with self.open_ledger(readonly=True) as ledger:
            if no_dataset:
                secrets, note = None, DatasetNote(available=False, note="--no-dataset: the test-content check was not run")
            else:
                secrets, note = load_task_secrets(ledger, version, dataset=dataset, rows=rows)
            if task_id is None:
                return AuditResult(audit_summary(ledger, version, pass_=pass_, secrets=secrets, dataset=note))
            audit = audit_task(ledger, version, task_id, pass_=pass_, secrets=secrets, dataset=note)
            audit.counterfactuals = _counterfactuals_of(ledger, self.results.projector(ledger), audit)
            return AuditResult(audit)

    def init(self) -> InitResult:
        """`swecl init`: the folder and its ledger (a no-op if they exist)."""
        path = self.ledger_path
        # An empty file is initialised (asked for by name, here only), and reported as created.
        existed = path.exists() and (path.is_dir() or path.stat().st_size > 0)
        with self.open_ledger(create=True, init_empty=True) as ledger:
            return InitResult(Path(ledger.path), not existed, ledger.count())

    def log(self, *, types: Sequence[str] = (), streams: Sequence[str] = (), after: int = 0,
            upto: int | None = None) -> Iterator[Recorded]:
        """`swecl log`: the ledger's events in order, of `types` and under `streams` when
        given. A generator: the ledger stays open while it is read, and a bad type or
        stream is refused at the first step, before any event."""
        unknown = [t for t in types if t not in BY_TYPE]
        if unknown:
            raise SweclError(f"--type {unknown[0]!r}: no such event type{_did_you_mean(unknown[0], sorted(BY_TYPE))} "
                             f"(types: {', '.join(sorted(BY_TYPE))})")
        with self.open_ledger(readonly=True) as ledger:
            for stream in streams:
                if not ledger.streams(stream):
                    found = ledger.streams()
                    tops = sorted({s.split("/")[0] for s in found})
                    raise SweclError(f"--stream {stream!r}: no such stream in {ledger.path}{_did_you_mean(stream, found)} "
                                     f"(stream families: {', '.join(tops) or 'none yet'})")
            yield from ledger.read(
                after=after,
                upto=upto,
                types=list(types) if types else None,
                ranges=[StreamRange(s) for s in streams] if streams else None,
            )

    def verify(self) -> VerifyResult:
        """`swecl verify`: the hash chain, every blob's hash and reference, the seed
        references, the schema and metadata rows, and that the file is whole. An intact
        ledger moves the read commands' chain checkpoint to its head."""
        try:
            ledger = self.open_ledger(readonly=True, check=False)
        except LedgerDamaged as exc:
            return VerifyResult(_one_line(str(exc)))
        with ledger:
            try:
                report = ledger.verify()
                problem = check_references(ledger)
            except (IntegrityError, LedgerDamaged) as exc:
                return VerifyResult(_one_line(str(exc)))
            except sqlite.CorruptError as exc:
                return VerifyResult(_one_line(f"{ledger.path} is corrupt: SQLite reports {exc}"))
            if problem is not None:
                return VerifyResult(_one_line(str(problem)))
            if report.events:
                # The read commands check the chain from here on, not from the start.
                ChainCheckpoints(self.results.projections_path).save(
                    ledger.ledger_id, report.events, bytes.fromhex(report.head_hash))
            return VerifyResult(None, report.events, report.blobs, report.head_hash)


def _counterfactuals_of(ledger: Any, projector: Any, audit: Any) -> list[Any]:
    """The verdicts of `swecl counterfactual`'s re-runs of the audited task, against the
    run's outcome of it in force and the items its attempts in force recalled."""
    from projections import OutcomeProjection, counterfactual_verdicts

    state = projector.run(OutcomeProjection(audit.version)).state
    seq = state.sequences.get(audit.sequence_id)
    cells = {p: c[audit.order] for p, c in seq.passes.items() if audit.order in c} if seq is not None else {}
    recalled: dict[str, list[str]] = {}
    for r in audit.recalls:
        if r.in_force:
            items = recalled.setdefault(r.pass_, [])
            items += [h.item_id for h in r.hits if h.item_id not in items]
    return counterfactual_verdicts(ledger, audit.version, audit.instance_id, cells, recalled, audit.pass_filter)
