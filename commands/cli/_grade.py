"""`swecl verdict`, `grade`, `regrade` and `validate`: verdicts from logs, and grading on this host."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from commands.run import make_reporter
from graders import SANDBOX_MODES, verdict_lines
from ledger import SweclError
from ledger.events import GradeStatus
from projections import grade_reasons, pass_statuses, runs

from ._common import (echo_json_line, experiment_of, parse_python_paths, parse_repo_sources, results_of, results_option,
                      run_version)
from ._run import warn_if_unconfined

if TYPE_CHECKING:  # the run package loads when a grade starts, not at `swecl --help`
    from commands.run import Reporter


@click.command("verdict")
@click.option("--input", "input_path", required=True, type=click.Path(path_type=Path), metavar="FILE.jsonl",
              help="One line per log: {instance_id, repo, log_path, FAIL_TO_PASS, PASS_TO_PASS[, log_parser, test_exit_code]}.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line (the default prints a table).")
def verdict_cmd(input_path: Path, as_json: bool) -> None:
    """Verdicts from recorded test logs, with swebench 5.x's rules and no test run.

    Each output line: {instance_id, resolved, status, tests: {name: status}}.
    """
    rows = list(verdict_lines(input_path))  # validate every line before printing any
    if as_json:
        for row in rows:
            echo_json_line(row)
        return
    resolved = 0
    for row in rows:
        resolved += bool(row["resolved"])
        click.echo(f"{row['instance_id']}\t{row['status']}\t{len(row['tests'])} tests")
    click.echo(f"{resolved} of {len(rows)} resolved")


def _where_tests_run(f: Callable[..., Any]) -> Callable[..., Any]:
    """The options grade and validate share: where repositories, interpreters and the
    cache are, and how long a test run may take."""
    for option in reversed((
        click.option("--repo-source", "repo_sources", multiple=True, metavar="OWNER/NAME=PATH_OR_URL",
                     help="Where to clone a repo from."),
        click.option("--python", "pythons", multiple=True, metavar="VERSION=PATH", help="Interpreter for a Python version."),
        click.option("--cache-dir", default=None, metavar="DIR", help="Repository and environment cache."),
        click.option("--test-timeout", type=float, default=1800.0, show_default=True, metavar="S",
                     help="Seconds per test run; the whole process group is killed after it."),
    )):
        f = option(f)
    return f


_jobs_option = click.option("--jobs", type=int, default=1, show_default=True, metavar="N",
                            help="Tasks graded at once (a worktree slot each; one environment's tasks in turn).")


@click.command("grade")
@results_option
@click.option("--dataset", default=None, metavar="FILE", help="The tasks (curriculum/manifest JSON, rows, hf:NAME; default: the demo).")
@click.option("--rows", default=None, metavar="FILE", help="SWE-bench rows that complete a manifest.")
@click.option("--predictions", "predictions", required=True, type=click.Path(path_type=Path),
              metavar="FILE", help="SWE-bench predictions JSONL ({instance_id, model_name_or_path, model_patch}).")
@click.option("--instance", "instances", multiple=True, metavar="ID", help="Grade only this instance (repeatable).")
@_where_tests_run
@click.option("--grader", default="swebench", show_default=True, metavar="NAME", help="swebench, local, auto, overlap or none.")
@click.option("--version", default=None, metavar="SLUG", help="Run version to record the grades under.")
@click.option("--sandbox", type=click.Choice(SANDBOX_MODES), default="bwrap", envvar="SWECL_SANDBOX", show_default=True,
              help="Where tests run: bwrap or none (unconfined, recorded on the run). Default from $SWECL_SANDBOX.")
@_jobs_option
@click.option("--json", "as_json", is_flag=True, help="SWE-bench's run report keys plus statuses, as JSON.")
@click.pass_context
def grade_cmd(ctx: click.Context, dataset: str | None, rows: str | None, predictions: Path, instances: tuple[str, ...],
              repo_sources: tuple[str, ...], grader: str, pythons: tuple[str, ...], cache_dir: str | None,
              test_timeout: float, version: str | None, sandbox: str, jobs: int, as_json: bool) -> None:
    """Grade SWE-bench-style predictions and record every grade as events.

    The grades form a run version (stage base, agent predictions, initial pass only), so
    they can be listed, exported, audited and regraded like any run.
    """
    # lazy: the benchmark loaders (pydantic) and the run machinery cost about 0.4 s at start-up
    from commands.inputs import load_predictions
    from commands.run import RunOptions, start_run

    results = results_of(ctx)
    wanted = list(instances) or sorted(load_predictions(predictions))
    opts = RunOptions(
        stage="base", dataset=dataset, rows=rows, instances=wanted, agent="predictions", grader=grader,
        version=version, passes=["initial"], predictions=[str(predictions)], repo_sources=parse_repo_sources(repo_sources),
        cache_dir=str(Path(cache_dir).resolve()) if cache_dir else None, python_paths=parse_python_paths(pythons),
        test_timeout_s=test_timeout, sandbox=sandbox, task_jobs=jobs,
    )
    warn_if_unconfined(opts.sandbox)
    reporter = _progress(as_json)
    try:
        report = start_run(experiment_of(ctx), opts, reporter)
    finally:
        reporter.close()
    with results.open_ledger(readonly=True) as ledger:
        statuses = pass_statuses(ledger, results.projector(ledger), report.version)
        reasons = grade_reasons(ledger, report.version)
    doc = swebench_report(statuses, submitted=wanted)
    doc["version"] = report.version
    doc["reasons"] = {iid: reasons[iid] for iid, s in sorted(statuses.items()) if s != "resolved" and iid in reasons}
    # What is not the patch's doing is said, not only recorded: one line per task.
    not_the_patch = sorted(iid for iid, status in statuses.items() if status in _NOT_THE_PATCH)
    for iid in not_the_patch:
        click.echo(f"swecl: {iid}: {statuses[iid]}: {doc['reasons'].get(iid) or 'no detail recorded'}", err=True)  # type: ignore[union-attr]
    if as_json:
        echo_json_line(doc)
    else:
        click.echo(
            f"run {report.version}: {doc['resolved_instances']} of {doc['submitted_instances']} resolved, "
            f"{doc['unresolved_instances']} unresolved, {doc['empty_patch_instances']} empty, {doc['error_instances']} errors"
        )
    if wanted and len(not_the_patch) == len(wanted):
        raise NothingGraded(f"nothing could be graded: all {len(wanted)} instance(s) ended in errors (see above)")


def _progress(as_json: bool) -> Reporter:
    """Progress goes to stderr, so stdout keeps the one document: bars at a terminal; else
    one line per task, as JSON lines with --json, so a pipeline can follow the run."""
    return make_reporter(quiet=False, as_json=as_json and not sys.stderr.isatty(), json_to_stderr=True)


class NothingGraded(SweclError):
    """Every instance ended without a verdict: a broken set-up, not a score of zero."""

    exit_code = 1


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


@click.command("regrade")
@results_option
@click.argument("version", callback=run_version)
@click.pass_context
def regrade_cmd(ctx: click.Context, version: str) -> None:
    """Re-decide a run's grades from the test logs in the ledger with today's parsers.

    Changed decisions are appended as grade.corrected events (the old ones stay); no
    test is re-run.
    """
    from commands import regrade  # lazy: the regrade loads only for `swecl regrade`

    results = results_of(ctx)
    with results.open_ledger() as ledger:
        report = regrade(ledger, version)
    for line in report.lines():
        click.echo(line)


@click.command("validate")
@results_option
@click.option("--dataset", default=None, metavar="FILE", help="The tasks (curriculum/manifest JSON, rows, hf:NAME; default: the demo).")
@click.option("--rows", default=None, metavar="FILE", help="SWE-bench rows that complete a manifest.")
@click.option("--instance", "instances", multiple=True, metavar="ID", help="Validate only this instance (repeatable).")
@_where_tests_run
@click.option("--version", "slug", default=None, metavar="NAME",
              help="Name of this validation; its runs are NAME-gold, NAME-noop, NAME-empty (default: validate-N).")
@click.option("--sandbox", type=click.Choice(SANDBOX_MODES), default="bwrap", envvar="SWECL_SANDBOX", show_default=True,
              help="Where tests run: bwrap or none (unconfined, recorded on the runs).")
@_jobs_option
@click.option("--json", "as_json", is_flag=True, help="One JSON document: per task and per repository.")
@click.pass_context
def validate_cmd(ctx: click.Context, dataset: str | None, rows: str | None, instances: tuple[str, ...], repo_sources: tuple[str, ...],
                 pythons: tuple[str, ...], cache_dir: str | None, test_timeout: float, slug: str | None, sandbox: str,
                 jobs: int, as_json: bool) -> None:
    """Which tasks this host can grade: SWE-bench's validation step, recorded.

    Per task it grades the gold patch, the empty patch and a no-op patch (one that
    changes no code, so the tests run without the fix). A task is gradeable when the
    gold patch resolves and the no-op patch does not pass its FAIL_TO_PASS tests. A
    PASS_TO_PASS test that fails here with the gold patch and with the no-op patch alike
    (it needs the network, say) is left out of this host's grades, as SWE-bench's own
    validation would. The result is one tasks.validated event; `swecl run` and `swecl
    grade` then grade without those tests, and `swecl metrics` reports the tasks that are
    not gradeable as missing, with the reason, never as the agent's 0.
    """
    # lazy: validation loads the benchmark loaders and the run machinery (about 0.2 s)
    from commands import check_slug, validate
    from commands.run import RunOptions, open_benchmark, start_run

    results = results_of(ctx)
    cache = str(Path(cache_dir).resolve()) if cache_dir else None
    benchmark = open_benchmark(RunOptions(stage="base", dataset=dataset, rows=rows, cache_dir=cache))
    tasks = [t for t in benchmark.tasks() if not instances or t.instance_id in instances]
    if unknown := sorted(set(instances) - {t.instance_id for t in tasks}):
        raise SweclError(f"--instance {unknown[0]}: no such task in {dataset or 'the demo'}")
    if not tasks:
        raise SweclError(f"{dataset or 'the demo'}: no tasks to validate")
    incomplete = {t.instance_id: f"cannot be graded: no {', '.join(t.missing(grading_only=True))} in the data"
                  for t in tasks if t.missing(grading_only=True)}
    complete = [t for t in tasks if t.instance_id not in incomplete]
    if slug is None:
        taken: set[str] = set()
        if results.ledger_path.exists():
            with results.open_ledger(readonly=True) as ledger:
                taken = set(runs(ledger, results.projector(ledger)))
        n = 1
        while any(f"validate-{n}-{kind}" in taken for kind in ("gold", "noop", "empty")):
            n += 1
        slug = f"validate-{n}"
    check_slug(slug)
    warn_if_unconfined(sandbox)

    def grade(kind: str, predictions: Path, version: str) -> str:
        click.echo(f"validate: grading the {kind} patch of {len(complete)} task(s) as run {version}", err=True)
        opts = RunOptions(
            stage="base", dataset=dataset, rows=rows, instances=[t.instance_id for t in complete], agent="predictions",
            grader="swebench", version=version, passes=["initial"], predictions=[str(predictions)],
            repo_sources=parse_repo_sources(repo_sources), cache_dir=cache,
            python_paths=parse_python_paths(pythons), test_timeout_s=test_timeout, sandbox=sandbox, task_jobs=jobs,
        )
        reporter = _progress(as_json)
        try:
            return start_run(experiment_of(ctx), opts, reporter).version
        finally:
            reporter.close()

    outcome = validate(results, complete, grade, slug=slug, incomplete=incomplete)
    repo_of = {t.instance_id: t.repo for t in tasks}
    table = outcome.by_repo(repo_of)
    if as_json:
        echo_json_line({
            "validation": slug, "runs": outcome.runs,
            "tasks": [{"instance_id": r.instance_id, "repo": repo_of[r.instance_id], "gradeable": r.gradeable,
                       "gold": r.gold, "noop": r.noop, "empty": r.empty, "reason": r.reason,
                       "p2p_excluded": r.p2p_excluded} for r in outcome.rows],
            "repositories": {repo: asdict(counts) for repo, counts in table.items()},
        })
        return
    click.echo(f"{'repository':<24} {'tasks':>5} {'gold':>5} {'no-op':>5} {'gradeable':>9} {'p2p-excl':>8}  "
               "not gradeable, by cause")
    for repo, counts in table.items():
        causes = ", ".join(f"{n} {cause}" for cause, n in sorted(counts.causes.items())) or "-"
        click.echo(f"{repo:<24} {counts.tasks:>5} {counts.gold_resolved:>5} {counts.noop_resolved:>5} "
                   f"{counts.gradeable:>9} {counts.p2p_excluded:>8}  {causes}")
    for row in outcome.rows:
        if not row.gradeable:
            click.echo(f"not gradeable: {row.instance_id}: {row.reason}")
        elif row.p2p_excluded:
            click.echo(f"graded without {len(row.p2p_excluded)} PASS_TO_PASS test(s) that fail here with and without "
                       f"the fix: {row.instance_id}: {', '.join(row.p2p_excluded)}")
    gradeable = sum(r.gradeable for r in outcome.rows)
    click.echo(f"validation {slug}: {gradeable} of {len(outcome.rows)} task(s) gradeable on this host "
               f"(runs {', '.join(outcome.runs.values()) or 'none'})")
