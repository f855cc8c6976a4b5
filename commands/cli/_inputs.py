"""`swecl sequences`, `swecl show`, `swecl agents`: what there is to run, and with what.

None of them reads the results folder. `sequences` and `agents` print what the packages
that own them list (`commands.inputs`, `agents.AGENTS`); `show TASK` is the core's
`Experiment.show_task`, the other form of `swecl show VERSION TASK`."""

from __future__ import annotations

import click

from ._common import echo_json, experiment_of
from ._tables import prose_width


dataset_option = click.option(
    "--dataset", default=None, metavar="X", help="Curriculum/manifest JSON, rows file, or hf:NAME (default: the built-in demo)."
)
rows_option = click.option("--rows", default=None, metavar="FILE", help="SWE-bench rows that complete a manifest.")


@click.command("sequences")
@dataset_option
@rows_option
@click.option("--json", "as_json", is_flag=True, help="A JSON list of {id, repo, num_tasks, difficulty}.")
def sequences_cmd(dataset: str | None, rows: str | None, as_json: bool) -> None:
    """The sequences of a benchmark, in curriculum order."""
    # lazy: the benchmark loaders bring pydantic (about 0.15 s), paid only by the commands that load one
    from commands.inputs import benchmark_to_list, list_sequences

    benchmark = benchmark_to_list(dataset, rows)
    listed = list_sequences(benchmark)
    if as_json:
        echo_json(listed)
        return
    for seq in listed:
        strata = " ".join(f"d{level}={n}" for level, n in seq["difficulty"].items())
        click.echo(f"{seq['id']:<40} {seq['repo']:<28} {seq['num_tasks']:>4} tasks  {strata}")
    click.echo(f"{sum(s['num_tasks'] for s in listed)} tasks in {len(listed)} sequences ({benchmark.name}, {benchmark.content_hash[:12]})")


@click.command("show")
@click.argument("task_id")
@dataset_option
@rows_option
@click.option("--json", "as_json", is_flag=True, help="Every field of the task as JSON (gold patch and tests included).")
@click.pass_context
def show_cmd(ctx: click.Context, task_id: str, dataset: str | None, rows: str | None, as_json: bool) -> None:
    """One task: where it sits, what is missing to run it, and its issue text."""
    shown = experiment_of(ctx).show_task(task_id, dataset=dataset, rows=rows)
    if as_json:
        echo_json(shown.document())
        return
    sequence, task = shown.sequence, shown.task
    from projections import task_heading

    click.echo(f"{task_heading(sequence.id, task.order, task.instance_id)}  ({task.repo}, sequence {sequence.id}, "
               f"order {task.order}, difficulty {task.difficulty})")
    click.echo(f"base commit: {task.base_commit}   version: {task.version or '-'}")
    click.echo(f"tests: {len(task.fail_to_pass or ())} FAIL_TO_PASS, {len(task.pass_to_pass or ())} PASS_TO_PASS")
    if task.missing():
        click.echo(f"cannot run yet: missing {', '.join(task.missing())} (supply --rows FILE with SWE-bench rows)")
    if task.problem_statement:
        click.echo("")
        click.echo(task.problem_statement.rstrip())


@click.command("agents")
@click.option("--json", "as_json", is_flag=True, help="A JSON list of {name, description}; with --check, what it sees.")
@click.option("--check", "check", default=None, metavar="AGENT",
              help="Start AGENT's process once in the sandbox a task runs it in (its --version, or an exec "
                   "check of a command) and print every path it would see there.")
@click.option("--command", "command", default=None, metavar="TEMPLATE", help="With --check command: its template.")
@click.option("--sandbox", type=click.Choice(["bwrap", "none"]), default="bwrap", envvar="SWECL_SANDBOX",
              show_default=True, help="With --check: the sandbox to check in.")
@click.option("--expose", "expose", multiple=True, metavar="PATH",
              help="With --check: a path to show the agent besides, read-only, as `swecl run --expose`.")
def agents_cmd(as_json: bool, check: str | None, command: str | None, sandbox: str, expose: tuple[str, ...]) -> None:
    """The agents swecl can drive; with --check AGENT, whether it starts and what it sees."""
    # lazy: the agent registry costs about 45 ms, paid only by `swecl agents`
    from agents import AGENTS

    if check is not None:
        _check_agent(check, command, sandbox, expose, as_json)
        return
    if command is not None or expose:
        raise click.UsageError("--command and --expose go with --check AGENT")
    if as_json:
        echo_json([{"name": name, "description": text} for name, text in AGENTS])
        return
    import textwrap

    width = max(len(name) for name, _ in AGENTS)
    for name, text in AGENTS:
        # the description wraps under itself, within min(terminal, 100) columns
        click.echo(textwrap.fill(f"{name:<{width}}  {text}", width=prose_width(), subsequent_indent=" " * (width + 2)))


def _check_agent(name: str, command: str | None, mode: str, expose: tuple[str, ...], as_json: bool) -> None:
    """`swecl agents --check AGENT`: the run's preflight, then the agent's view as
    `run.started` would record it (the default cache hidden, as a run hides it)."""
    import os

    from agents import RunSupplies, build_agent, preflight, sandbox_view
    from graders.host import default_cache_dir, sandbox_for
    from ledger import SweclError
    from projections.show import visible_lines

    for path in expose:
        if not os.path.exists(path):
            raise SweclError(f"--expose {path}: no such file or folder")
    agent = build_agent(name, RunSupplies(gold=dict, command=command, demo_attempts={}))
    sandbox = sandbox_for(mode, hide=[default_cache_dir()], expose=[os.path.abspath(p) for p in expose])
    version = preflight(agent, sandbox)
    view = sandbox_view(agent, sandbox)
    if as_json:
        echo_json({"agent": name, "starts": True, "version": version, "sandbox": mode,
                   "visible": None if view is None else view["agent"]})
        return
    said = "runs inside swecl (no process of its own)" if version is None else (
        f"starts{' inside the sandbox' if sandbox.confined else ' (unconfined)'}" + (f": {version}" if version else ""))
    click.echo(f"{name} {said}")
    click.echo("it sees:" if sandbox.confined else "it sees the whole host (--sandbox none)")
    if sandbox.confined:
        for line in visible_lines(view, "agent"):
            click.echo(f"  {line}")
