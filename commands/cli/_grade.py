"""`swecl verdict`, `grade`, `regrade` and `validate`: verdicts from logs, and grading on this host.

The jobs are `Experiment`'s (commands._jobs_grade); here: options, one call, printing."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from commands.run import Reporter, make_reporter
from graders.host import SANDBOX_MODES

from ._common import echo_json_line, experiment_of, parse_python_paths, parse_repo_sources, results_option, run_version
from ._run import warn_if_unconfined

if TYPE_CHECKING:
    from projections import GradingCost


@click.command("verdict")
@click.option("--input", "input_path", required=True, type=click.Path(path_type=Path), metavar="FILE.jsonl",
              help="One line per log: {instance_id, repo, log_path, FAIL_TO_PASS, PASS_TO_PASS[, log_parser, test_exit_code]}.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line (the default prints a table).")
@click.pass_context
def verdict_cmd(ctx: click.Context, input_path: Path, as_json: bool) -> None:
    """Verdicts from recorded test logs, with swebench 5.x's rules and no test run.

    Each output line: {instance_id, resolved, status, tests: {name: status}}.
    """
    report = experiment_of(ctx).verdict(input_path=input_path)
    if as_json:
        for row in report.document():
            echo_json_line(row)
        return
    for row in report.rows:
        click.echo(f"{row['instance_id']}\t{row['status']}\t{len(row['tests'])} tests")
    click.echo(f"{report.resolved} of {len(report.rows)} resolved")


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
    report = experiment_of(ctx).grade(
        predictions=predictions, dataset=dataset, rows=rows, instances=instances,
        repo_sources=parse_repo_sources(repo_sources), grader=grader, python_paths=parse_python_paths(pythons),
        cache_dir=cache_dir, test_timeout=test_timeout, version=version, sandbox=sandbox, jobs=jobs,
        progress=_Progress(as_json),
    )
    doc = report.document()
    # What is not the patch's doing is said, not only recorded: one line per task.
    for iid, status, reason in report.not_the_patch:
        click.echo(f"swecl: {iid}: {status}: {reason or 'no detail recorded'}", err=True)
    if as_json:
        echo_json_line(doc)
    else:
        click.echo(
            f"run {report.version}: {doc['resolved_instances']} of {doc['submitted_instances']} resolved, "
            f"{doc['unresolved_instances']} unresolved, {doc['empty_patch_instances']} empty, {doc['error_instances']} errors"
        )
    report.check()


class _Progress:
    """Progress goes to stderr, so stdout keeps the one document: bars at a terminal; else
    one line per task, as JSON lines with --json, so a pipeline can follow the run."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json

    def starting(self, sandbox: str) -> None:
        warn_if_unconfined(sandbox)

    def run(self, version: str | None, kind: str | None, tasks: int) -> Reporter:
        if kind is not None:
            click.echo(f"validate: grading the {kind} patch of {tasks} task(s) as run {version}", err=True)
        return make_reporter(quiet=False, as_json=self.as_json and not sys.stderr.isatty(), json_to_stderr=True)


@click.command("regrade")
@results_option
@click.argument("version", callback=run_version)
@click.pass_context
def regrade_cmd(ctx: click.Context, version: str) -> None:
    """Re-decide a run's grades from the test logs in the ledger with today's parsers.

    Changed decisions are appended as grade.corrected events (the old ones stay); no
    test is re-run.
    """
    for line in experiment_of(ctx).regrade(version=version).lines():
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
    report = experiment_of(ctx).validate(
        dataset=dataset, rows=rows, instances=instances, repo_sources=parse_repo_sources(repo_sources),
        python_paths=parse_python_paths(pythons), cache_dir=cache_dir, test_timeout=test_timeout, slug=slug,
        sandbox=sandbox, jobs=jobs, progress=_Progress(as_json),
    )
    if as_json:
        echo_json_line(report.document())
        return
    click.echo(f"{'repository':<24} {'tasks':>5} {'gold':>5} {'no-op':>5} {'gradeable':>9} {'p2p-excl':>8}  "
               "not gradeable, by cause")
    for repo, counts in report.table.items():
        causes = ", ".join(f"{n} {cause}" for cause, n in sorted(counts.causes.items())) or "-"
        click.echo(f"{repo:<24} {counts.tasks:>5} {counts.gold_resolved:>5} {counts.noop_resolved:>5} "
                   f"{counts.gradeable:>9} {counts.p2p_excluded:>8}  {causes}")
    for row in report.outcome.rows:
        if not row.gradeable:
            click.echo(f"not gradeable: {row.instance_id}: {row.reason}")
        elif row.p2p_excluded:
            click.echo(f"graded without {len(row.p2p_excluded)} PASS_TO_PASS test(s) that fail here with and without "
                       f"the fix: {row.instance_id}: " + ", ".join(
                           f"{t} ({row.p2p_excluded_why[t]})" if t in row.p2p_excluded_why else t
                           for t in row.p2p_excluded))
    for kind, went in report.outcome.installs.items():
        counts = went["counts"]
        if counts:
            click.echo(f"{kind} pass installs: {counts.get('ran', 0)} ran, {counts.get('restored', 0)} put back from "
                       f"a record, {counts.get('reused', 0)} kept from the task before")
            for iid, why in sorted(went["why_ran"].items()):
                click.echo(f"  ran: {iid}: {why}")
    for kind, cost in report.outcome.costs.items():
        if cost.grades:
            click.echo(_cost_line(kind, cost))
    click.echo(f"validation {report.slug}: {report.gradeable} of {len(report.outcome.rows)} task(s) gradeable on "
               f"this host (runs {', '.join(report.outcome.runs.values()) or 'none'})")


def _cost_line(kind: str, cost: GradingCost) -> str:
    """One pass's time: the figure docs/validation.md compares (worker-seconds a task),
    then where the grades spent theirs."""
    mean = cost.phases.per_grade()
    return (f"{kind} pass: {cost.grades} grade(s) in {cost.wall_s / 60:.1f} min on {cost.workers} worker(s), "
            f"{cost.worker_s_per_grade:.1f} worker-s a task (a grade: environment build {mean['env_s']:.1f} s, "
            f"install {mean['install_s']:.1f}, test command {mean['tests_s']:.1f}, the rest {mean['other_s']:.1f})")
