"""The grading jobs of `Experiment`: `grade` (predictions graded and recorded as a run),
`regrade`, `validate`, `verdict` (recorded logs decided, no test run), and the cache of
test environments (`env_list`, `env_build`, `env_prune`).

Grading runs the run machinery (`commands.run`), the graders and the benchmark loaders:
all are imported inside the jobs that use them, since every CLI command imports
`Experiment` and only these jobs need them. What a grading job says while it works (the
unconfined-sandbox warning, one progress reporter per run) goes through a `GradeProgress`
the caller passes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ledger import SweclError
from ledger.events import EnvVerified, GradeStatus
from ledger.errors import NothingGraded
from projections import grade_reasons, pass_statuses, runs

from ._folder import ExperimentFolder

if TYPE_CHECKING:
    from graders import EnvInfo

    from ._env_system import SystemDeps
    from ._regrade import RegradeReport
    from ._validate import RepoCounts, Validation
    from .inputs import Task
    from .run import Reporter, RunOptions

__all__ = [
    "EnvBuilt",
    "EnvListing",
    "EnvPruned",
    "GradeJobs",
    "GradeProgress",
    "GradeReport",
    "NothingGraded",
    "ValidateReport",
    "VerdictReport",
    "swebench_report",
]


class GradeProgress(Protocol):
    """What a grading job says while it works; the CLI writes it to stderr."""

    def starting(self, sandbox: str) -> None:
        """The arguments are checked and tests are about to run under `sandbox`."""

    def run(self, version: str | None, kind: str | None, tasks: int) -> Reporter:
        """One grading run of `tasks` tasks starts (`kind`: the patch a validation grades,
        None for `grade`): the reporter for its progress. The job closes it when the run
        ends, before it reads the grades back."""
        ...


class _Silent:
    def starting(self, sandbox: str) -> None:
        pass

    def run(self, version: str | None, kind: str | None, tasks: int) -> Reporter:
        from .run import QuietReporter  # lazy: the run package loads only when a grade starts

        return QuietReporter()


# Ends that are the set-up's, not the patch's: said on stderr; all of them is exit 1.
_NOT_THE_PATCH = frozenset(s.value for s in GradeStatus if s.not_the_patch)

_ERROR_STATUSES = frozenset(s.value for s in GradeStatus if s.report_error)


def swebench_report(statuses: dict[str, str], *, submitted: list[str]) -> dict[str, object]:
    """SWE-bench's run report keys (swebench 5.x `make_run_report`) plus per-instance statuses."""
    resolved = sorted(i for i, s in statuses.items() if s == GradeStatus.RESOLVED)
    unresolved = sorted(i for i, s in statuses.items() if s == GradeStatus.UNRESOLVED)
    empty = sorted(i for i, s in statuses.items() if s == GradeStatus.EMPTY_PATCH)
    errors = sorted(i for i, s in statuses.items() if s in _ERROR_STATUSES)
    completed = sorted(resolved + unresolved)
    return {
        "total_instances": len(submitted),
        "submitted_instances": len(submitted),
        "completed_instances": len(completed),
        "resolved_instances": len(resolved),
        "unresolved_instances": len(unresolved),
        "empty_patch_instances": len(empty),
        "error_instances": len(errors),
        "completed_ids": completed,
        "incomplete_ids": sorted(set(submitted) - set(statuses)),
        "empty_patch_ids": empty,
        "submitted_ids": sorted(submitted),
        "resolved_ids": resolved,
        "unresolved_ids": unresolved,
        "error_ids": errors,
        "schema_version": 2,
        "statuses": dict(sorted(statuses.items())),
    }


@dataclass(frozen=True)
class GradeReport:
    """`swecl grade`'s outcome: the run it recorded and each instance's status."""

    version: str
    submitted: list[str]
    statuses: dict[str, str]
    reasons: dict[str, str]  # why, for each instance that did not resolve and has a reason recorded

    def document(self) -> dict[str, object]:
        """The `--json` document: SWE-bench's report keys, the version, the reasons."""
        doc = swebench_report(self.statuses, submitted=self.submitted)
        doc["version"] = self.version
        doc["reasons"] = self.reasons
        return doc

    @property
    def not_the_patch(self) -> list[tuple[str, str, str | None]]:
        """(instance, status, reason) of each end that is the set-up's, not the patch's."""
        return [(iid, self.statuses[iid], self.reasons.get(iid))
                for iid in sorted(i for i, s in self.statuses.items() if s in _NOT_THE_PATCH)]

    def check(self) -> None:
        """Raise `NothingGraded` (exit 1) when no instance could be graded at all: said
        after the report, which still names every instance's end."""
        if self.submitted and len(self.not_the_patch) == len(self.submitted):
            raise NothingGraded(f"nothing could be graded: all {len(self.submitted)} instance(s) ended in errors (see above)")


@dataclass(frozen=True)
class ValidateReport:
    """`swecl validate`'s outcome: one row per task, the runs, and the table by repository."""

    slug: str
    outcome: Validation
    repo_of: dict[str, str]

    @property
    def table(self) -> dict[str, RepoCounts]:
        return self.outcome.by_repo(self.repo_of)

    @property
    def gradeable(self) -> int:
        return sum(r.gradeable for r in self.outcome.rows)

    def document(self) -> dict[str, object]:
        return {
            "validation": self.slug, "runs": self.outcome.runs,
            "tasks": [{"instance_id": r.instance_id, "repo": self.repo_of[r.instance_id], "gradeable": r.gradeable,
                       "gold": r.gold, "noop": r.noop, "empty": r.empty, "reason": r.reason,
                       "p2p_excluded": r.p2p_excluded, "p2p_excluded_why": r.p2p_excluded_why}
                      for r in self.outcome.rows],
            "repositories": {repo: asdict(counts) for repo, counts in self.table.items()},
            "installs": self.outcome.installs,
            "costs": {kind: cost.document() for kind, cost in self.outcome.costs.items()},
        }


@dataclass(frozen=True)
class VerdictReport:
    """`swecl verdict`'s lines: {instance_id, resolved, status, tests} per log."""

    rows: list[dict[str, Any]]

    @property
    def resolved(self) -> int:
        return sum(bool(row["resolved"]) for row in self.rows)

    def document(self) -> list[dict[str, Any]]:
        return self.rows


@dataclass(frozen=True)
class EnvListing:
    """The environments in one cache."""

    cache: Path
    envs: list[EnvInfo]

    def document(self) -> list[dict[str, object]]:
        return [
            {
                "key": e.key, "repo": e.repo, "version": e.version, "python": e.python_version,
                "spec_hash": e.spec_hash, "complete": e.complete, "built_at": e.built_at,
                "last_used": e.last_used, "size_bytes": e.size_bytes, "path": str(e.path),
                "warnings": list(e.warnings),
            }
            for e in self.envs
        ]


@dataclass(frozen=True)
class EnvBuilt:
    key: str
    built: bool  # False: a complete environment was there already
    path: Path
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class EnvPruned:
    removed: list[Path]
    dry_run: bool


def _cache(cache_dir: str | None) -> Path:
    from graders.host import default_cache_dir  # lazy: see the module doc

    return Path(cache_dir) if cache_dir else default_cache_dir()


def _resolved(cache_dir: str | None) -> str | None:
    # recorded with the run's options: a relative path would mean another folder on resume
    return str(Path(cache_dir).resolve()) if cache_dir else None


class GradeJobs(ExperimentFolder):
    """Grading on this host and verdicts from recorded logs (see the module doc)."""

    def grade(self, *, predictions: str | Path, dataset: str | None = None, rows: str | None = None,
              instances: tuple[str, ...] | list[str] = (), repo_sources: Mapping[str, str] | None = None,
              grader: str = "swebench", python_paths: Mapping[str, str] | None = None, cache_dir: str | None = None,
              test_timeout: float = 1800.0, version: str | None = None, sandbox: str = "bwrap", jobs: int = 1,
              progress: GradeProgress | None = None) -> GradeReport:
        """Grade SWE-bench-style predictions (all of them, or `instances`) and record the
        grades as a run version (stage base, agent predictions, initial pass)."""
        # lazy: the benchmark loaders (pydantic) and the run machinery cost about 0.4 s at start-up
        from .inputs import load_predictions
        from .run import BudgetOptions, ExecutionOptions, RunOptions, SandboxOptions

        wanted = list(instances) or sorted(load_predictions(predictions))
        opts = RunOptions(
            stage="base", dataset=dataset, rows=rows, instances=wanted, agent="predictions", grader=grader,
            version=version, passes=["initial"], predictions=[str(predictions)], repo_sources=dict(repo_sources or {}),
            cache_dir=_resolved(cache_dir), python_paths=dict(python_paths or {}),
            budget=BudgetOptions(test_timeout_s=test_timeout), sandbox=SandboxOptions(mode=sandbox),
            execution=ExecutionOptions(task_jobs=jobs),
        )
        progress = progress or _Silent()
        progress.starting(opts.sandbox.mode)
        recorded = self._grading_run(opts, progress, kind=None)
        with self.reading() as r:
            statuses = pass_statuses(r.ledger, r.projector, recorded)
            reasons = grade_reasons(r.ledger, recorded)
        return GradeReport(
            version=recorded, submitted=wanted, statuses=statuses,
            reasons={iid: reasons[iid] for iid, s in sorted(statuses.items()) if s != "resolved" and iid in reasons},
        )

    def _grading_run(self, opts: RunOptions, progress: GradeProgress, *, kind: str | None) -> str:
        """Start one grading run of `opts`; the version it recorded."""
        from .run import start_run  # lazy: the run machinery loads only when a grade starts

        reporter = progress.run(opts.version, kind, len(opts.instances or ()))
        try:
            return start_run(self, opts, reporter).version
        finally:
            reporter.close()

    def regrade(self, *, version: str) -> RegradeReport:
        """Re-decide run `version`'s grades from the test logs in the ledger with today's
        parsers; changed decisions are appended as grade.corrected (no test re-run)."""
        from ._regrade import regrade  # lazy: the regrade loads only for `swecl regrade`

        with self.open_ledger() as ledger:
            return regrade(ledger, version)

    def validate(self, *, dataset: str | None = None, rows: str | None = None,
                 instances: tuple[str, ...] | list[str] = (), repo_sources: Mapping[str, str] | None = None,
                 python_paths: Mapping[str, str] | None = None, cache_dir: str | None = None,
                 test_timeout: float = 1800.0, slug: str | None = None, sandbox: str = "bwrap", jobs: int = 1,
                 progress: GradeProgress | None = None) -> ValidateReport:
        """Which tasks this host can grade (SWE-bench's validation step), recorded as one
        tasks.validated event: gold, no-op and empty patch graded as runs `{slug}-{kind}`."""
        # lazy: validation loads the benchmark loaders and the run machinery (about 0.2 s)
        from ._envs_ahead import EnvsAhead
        from ._validate import check_slug, validate
        from .run import BudgetOptions, ExecutionOptions, RunOptions, SandboxOptions, open_benchmark

        cache = _resolved(cache_dir)
        benchmark = open_benchmark(RunOptions(stage="base", dataset=dataset, rows=rows, cache_dir=cache))
        tasks = [t for t in benchmark.tasks() if not instances or t.instance_id in instances]
        if unknown := sorted(set(instances) - {t.instance_id for t in tasks}):
            raise SweclError(f"--instance {unknown[0]}: no such task in {dataset or 'the demo'}")
        if not tasks:
            raise SweclError(f"{dataset or 'the demo'}: no tasks to validate")
        incomplete = {t.instance_id: f"cannot be graded: no {', '.join(t.missing(grading_only=True))} in the data"
                      for t in tasks if t.missing(grading_only=True)}
        complete: list[Task] = [t for t in tasks if t.instance_id not in incomplete]
        slug = check_slug(slug if slug is not None else self._next_validation())
        progress = progress or _Silent()
        progress.starting(sandbox)

        def grade(kind: str, predictions: Path, version: str) -> str:
            opts = RunOptions(
                stage="base", dataset=dataset, rows=rows, instances=[t.instance_id for t in complete],
                agent="predictions", grader="swebench", version=version, passes=["initial"],
                predictions=[str(predictions)], repo_sources=dict(repo_sources or {}), cache_dir=cache,
                python_paths=dict(python_paths or {}), budget=BudgetOptions(test_timeout_s=test_timeout),
                sandbox=SandboxOptions(mode=sandbox), execution=ExecutionOptions(task_jobs=jobs),
            )
            return self._grading_run(opts, progress, kind=kind)

        # the environments built on one more thread while the tasks are graded (commands._envs_ahead)
        with EnvsAhead(complete, cache_dir=cache, repo_sources=dict(repo_sources or {}),
                       python_paths=dict(python_paths or {})):
            outcome = validate(self.results, complete, grade, slug=slug, incomplete=incomplete)
        return ValidateReport(slug=slug, outcome=outcome, repo_of={t.instance_id: t.repo for t in tasks})

    def _next_validation(self) -> str:
        """validate-N, the first N whose runs are not taken."""
        taken: set[str] = set()
        if self.has_ledger():
            with self.reading() as r:
                taken = set(runs(r.ledger, r.projector))
        n = 1
        while any(f"validate-{n}-{kind}" in taken for kind in ("gold", "noop", "empty")):
            n += 1
        return f"validate-{n}"

    def verdict(self, *, input_path: str | Path) -> VerdictReport:
        """Verdicts from recorded test logs (one JSONL line per log), with swebench 5.x's
        rules and no test run; every line is checked before any verdict is returned."""
        from graders import verdict_lines  # lazy: see the module doc

        return VerdictReport(list(verdict_lines(input_path)))

    def env_list(self, *, cache_dir: str | None = None, sizes: bool = False) -> EnvListing:
        """The test environments in the cache (`sizes`: each one's size on disk, measured)."""
        from graders import list_envs  # lazy: see the module doc

        cache = _cache(cache_dir)
        return EnvListing(cache, list_envs(cache, sizes=sizes))

    def env_build(self, *, repo: str, version: str, cache_dir: str | None = None,
                  repo_sources: Mapping[str, str] | None = None, commit: str | None = None,
                  python_paths: Mapping[str, str] | None = None, force: bool = False,
                  warn: Callable[[str], None] | None = None) -> EnvBuilt:
        """Build (or reuse) the environment of `repo` at `version` from the shipped spec
        table; `commit` is the environment_setup_commit it is built as of. `warn` hears
        what the build cannot do as grading would, before it starts."""
        from graders import build_env, era_for, spec_for  # lazy: see the module doc
        from graders.host import RepoCache, git  # lazy: see the module doc

        cache = _cache(cache_dir)
        spec = spec_for(repo, version)
        paths = dict(python_paths or {})
        needs_tree = bool(spec.packages and spec.packages.endswith((".txt", ".yml")))
        repos = RepoCache(cache, dict(repo_sources or {}))
        cutoff = None
        if commit:
            cutoff = era_for(repos, repo, commit, commit).cutoff  # the environment grading builds for this commit
        elif warn is not None:
            warn("warning: no --commit: packages resolve as of today, not as of a task's era; grading builds "
                 "its own environment as of the task's environment_setup_commit")
        if needs_tree:
            mirror = repos.ensure_mirror(repo)
            target = commit or git(["rev-parse", "HEAD"], cwd=mirror).stdout.decode().strip()
            with repos.worktree(repo, target) as wt:
                build = build_env(repo, version, spec, cache_dir=cache, worktree=wt.path, python_paths=paths,
                                  force=force, exclude_newer=cutoff)
        else:
            build = build_env(repo, version, spec, cache_dir=cache, python_paths=paths, force=force,
                              exclude_newer=cutoff)
        return EnvBuilt(key=build.env.key, built=build.built, path=build.env.path, warnings=list(build.warnings))

    def env_system_deps(self, *, dataset: str | None = None, rows: str | None = None,
                        repo: str | None = None) -> SystemDeps:
        """The Debian packages the specs' set-up lines install, and which are missing here."""
        from ._env_system import system_deps

        return system_deps(dataset=dataset, rows=rows, repo=repo)

    def env_verify(self, *, dataset: str, rows: str | None = None, repo: str, versions: tuple[str, ...] | list[str] = (),
                   source: str = "sdist", cutoff: str | None = None, cache_dir: str | None = None,
                   repo_sources: Mapping[str, str] | None = None, python_paths: Mapping[str, str] | None = None,
                   sandbox: str = "bwrap", test_timeout: float = 1800.0, max_tests: int = 8,
                   tests: tuple[str, ...] | list[str] = (),
                   say: Callable[[str], None] | None = None) -> list[EnvVerified]:
        """Each version's environment recipe run here as its tasks would get it (see
        commands._env_verify), recorded as one env.verified event per version."""
        from ._env_verify import check_cutoff, verify_version, versions_of
        from .run import RunOptions, open_benchmark

        when = check_cutoff(cutoff)
        if source != "sdist" and not Path(source).is_dir():
            raise SweclError(f"--source {source}: not a directory (give a checkout, or `sdist`)")
        cache = _cache(cache_dir)
        tasks = list(open_benchmark(RunOptions(stage="base", dataset=dataset, rows=rows, cache_dir=str(cache))).tasks())
        known = versions_of(tasks, repo)
        if not known:
            raise SweclError(f"--repo {repo}: no task of {dataset} is of that repository")
        if unknown := [v for v in versions if v not in known]:
            raise SweclError(f"--version {unknown[0]}: {repo} has no task of that version in {dataset} "
                             f"(versions: {', '.join(known)})")
        out = []
        for version in versions or known:
            of_version = sorted((t for t in tasks if t.repo == repo and str(t.version) == version), key=lambda t: t.order)
            event = verify_version(repo, version, of_version, source=source, cache_dir=cache,
                                   repo_sources=dict(repo_sources or {}), python_paths=dict(python_paths or {}),
                                   cutoff=when, sandbox=sandbox, test_timeout=test_timeout, max_tests=max_tests,
                                   extra_tests=list(tests), say=say or (lambda _: None))
            with self.open_ledger(create=True) as ledger:
                ledger.append(f"env/{repo}@{version}", [event], durable=True)
            out.append(event)
        return out

    def env_prune(self, *, cache_dir: str | None = None, keep: tuple[str, ...] | list[str] = (), keep_recent: int = 0,
                  dry_run: bool = False) -> EnvPruned:
        """Remove environments (and leftovers of interrupted builds), all but `keep` and the
        `keep_recent` most recently used; `dry_run` only says which."""
        from graders import prune_envs  # lazy: see the module doc

        removed = prune_envs(_cache(cache_dir), keep=tuple(keep), keep_recent=keep_recent, dry_run=dry_run)
        return EnvPruned(removed=list(removed), dry_run=dry_run)
