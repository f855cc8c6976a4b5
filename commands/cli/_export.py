"""`swecl export`: predictions JSONL, events JSON lines, a parquet table, or ATIF trajectories of a run."""

from __future__ import annotations

import sys

import click

from ._common import PassParam, experiment_of, results_option, run_version


@click.command("export")
@results_option
@click.argument("version", callback=run_version)
@click.option("--format", "fmt", type=click.Choice(["predictions", "events", "parquet", "atif"]), required=True,
              help="predictions: SWE-bench JSONL; events: JSON lines as `swecl log --json`; parquet: one row per "
                   "event; atif: one ATIF trajectory JSON per attempt.")
@click.option("--out", "out", required=True, metavar="FILE",
              help="Output file ('-' for stdout, not for parquet); for atif a directory.")
@click.option("--pass", "pass_", type=PassParam(), default=None, metavar="P",
              help="predictions: the pass to export (default initial); events/parquet: only that pass's events.")
@click.option("--with-blobs", is_flag=True, help="events: inline the blobs each event refers to (patches, logs).")
@click.pass_context
def export_cmd(ctx: click.Context, version: str, fmt: str, out: str, pass_: str | None, with_blobs: bool) -> None:
    """Export run VERSION for other tools.

    predictions: one {instance_id, model_name_or_path, model_patch} line per task of
    the pass, the patch of the attempt in force (swebench's harness reads it).
    events: the run's events, exactly as `swecl log --json` prints them.
    parquet: the same events as a table (envelope columns, sequence_id, instance_id,
    order, pass, attempt promoted, payload as JSON text).
    atif: a directory of ATIF (Harbor's Agent Trajectory Interchange Format) trajectories,
    SEQUENCE/ORDER-INSTANCE-PASS-aATTEMPT.json for every attempt of every pass, and
    index.json: the agent's transcript as steps, swecl's memory calls as marked system
    steps, tokens, cost and the graded outcome.
    """
    report = experiment_of(ctx).export(version=version, fmt=fmt, out=out, pass_=pass_, with_blobs=with_blobs,
                                       stdout=sys.stdout)
    if out != "-":
        for line in report.lines():
            click.echo(line)
    elif report.missing:
        click.echo(report.lines()[0].split("; ", 1)[-1], err=True)
