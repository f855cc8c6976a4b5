"""`swecl funnel VERSION`: where a run's memory fails, per task of its initial pass (the
memory funnel, `projections.funnel`); and the funnel lines `swecl show` prints."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ._common import echo_json, experiment_of, results_option, run_version
from ._tables import prose_width

if TYPE_CHECKING:
    from projections.funnel import RunFunnel
    from projections.show import AttemptShow


@click.command("funnel")
@results_option
@click.argument("version", callback=run_version)
@click.option("--json", "as_json", is_flag=True, help="The whole funnel (every task, its sources) as JSON.")
@click.pass_context
def funnel_cmd(ctx: click.Context, version: str, as_json: bool) -> None:
    """Where a run's memory fails: per task of the initial pass with dependencies, whether
    what its dependencies learned was stored, retrieved and used, and whether it resolved.

    A table per sequence and the macro: counts and rates (stored of the tasks with
    dependencies, retrieved of stored, used of retrieved, resolved of the tasks with
    dependencies) and the unresolved tasks by label: storage gap, retrieval gap, use gap,
    no dependency. A run without memory, or recorded before the plan held dependencies,
    has no funnel and says why.
    """
    from projections.funnel import funnel_table_lines  # lazy: loads when the command runs

    found = experiment_of(ctx).funnel(version)
    if as_json:
        echo_json(found)
        return
    for line in funnel_table_lines(found, width=prose_width()):
        click.echo(line)


def print_task_funnel(shown: AttemptShow, found: RunFunnel | None) -> None:
    """`swecl show V TASK`'s funnel section: the task's label and what stands behind it
    (the initial pass's attempt in force; another pass says so)."""
    from projections.funnel import task_funnel_lines

    click.echo("")
    click.echo("== memory funnel " + "=" * 57)
    if shown.pass_ != "initial" or found is None:
        click.echo("(computed for the initial pass: swecl show without --pass)")
        return
    for line in task_funnel_lines(found, shown.instance_id):
        click.echo(line)
