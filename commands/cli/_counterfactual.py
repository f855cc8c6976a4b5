"""`swecl counterfactual VERSION TASK_ID`: re-run a task with memory items hidden from its recall."""

from __future__ import annotations

import click

from ._common import PassParam, echo_json, experiment_of, results_option, run_version


@click.command("counterfactual")
@results_option
@click.argument("version", callback=run_version)
@click.argument("task_id", metavar="TASK")
@click.option("--without", "without", multiple=True, metavar="ITEM",
              help="A memory item id to hide from the task's recall (repeatable: one re-run hides them all).")
@click.option("--without-recalled", is_flag=True,
              help="Re-run once per item the run's attempt recalled, hiding that item alone.")
@click.option("--repeat", type=int, default=1, show_default=True, metavar="N", help="Re-runs per hidden set.")
@click.option("--pass", "pass_", type=PassParam(), default="initial", show_default=True, metavar="P",
              help="The pass whose attempt is re-run.")
@click.option("--memory-env", "memory_env", multiple=True, metavar="NAME=VALUE",
              help="A --memory-server run's mapped variables, given again (never recorded), as for --resume.")
@click.option("--memory-server", "memory_server", metavar="SPEC",
              help="A --memory-server run's URL whose credentials the ledger dropped, given again.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def counterfactual_cmd(ctx: click.Context, version: str, task_id: str, without: tuple[str, ...],
                       without_recalled: bool, repeat: int, pass_: str, memory_env: tuple[str, ...],
                       memory_server: str | None, as_json: bool) -> None:
    """Re-run task TASK_ID of run VERSION with memory items hidden from its recall.

    Everything else is as VERSION ran it: the memory as it stood before the task's
    attempt, the agent, model, prompt style, code mode and options the run recorded.
    Each re-run is recorded beside the run's attempt (counterfactual.* events), never
    as part of the run: its metrics, runs, show and replay are unchanged, and what the
    re-run would have remembered is dropped. `swecl audit VERSION TASK_ID` shows the
    verdicts. A --memory-server run's items are the tasks that wrote to the server
    (`provider:ID`): the server's data is rebuilt by its recorded calls, theirs left out.
    """
    done = experiment_of(ctx).counterfactual(version, task_id, without=without, without_recalled=without_recalled,
                                             repeat=repeat, pass_=pass_, memory_server=memory_server,
                                             memory_env=memory_env)
    if as_json:
        echo_json(done.document())
        return
    was = done.original_status or "no verdict"
    click.echo(f"{done.instance_id} in v{version} ({done.pass_}, attempt {done.attempt}): {was}")
    for run in done.runs:
        cost = f", ${run.cost_usd:.4f}" if run.cost_usd else ""
        click.echo(f"  without {', '.join(run.hidden)} (repeat {run.repeat}): {run.status}{cost}")
    click.echo(f"verdicts: swecl audit {version} {done.instance_id}")
