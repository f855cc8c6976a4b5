"""`swecl replay`: a run's memory, a(i,j) cells and metrics as they stood before task K."""

from __future__ import annotations

from pathlib import Path

import click

from ._common import echo_json, experiment_of, results_option, run_version


@click.command("replay")
@results_option
@click.argument("version", callback=run_version)
@click.option("--upto-order", "--as-of-order", "upto_order", type=int, required=True, metavar="K",
              help="Rebuild the state as it stood before initial-pass task K started (--as-of-order: the same, "
                   "spelled as in swecl metrics).")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path), metavar="DIR",
              help="Folder to write (new, empty, or an earlier replay's).")
@click.option("--json", "as_json", is_flag=True, help="Print the replay manifest as JSON.")
@click.pass_context
def replay_cmd(ctx: click.Context, version: str, upto_order: int, out_dir: Path, as_json: bool) -> None:
    """Rebuild run VERSION as it stood before task K started: the memory substrate
    (DIR/_memory/), the a(i,j) cells (outcomes.json, outcomes.csv) and the metrics of
    both formula sets (metrics.json), with replay.json saying where each sequence was cut.
    A --memory-server run's server data directory is restored too, as it stood before
    task K, byte for byte (DIR/provider/SEQUENCE/data/).

    Each sequence is cut just before its own initial-pass task K; memory items of a
    repository are as of the cut of that repository's sequence. The same ledger and K
    always give byte-identical files.
    """
    from projections import manifest_document  # lazy: loads only for `swecl replay`

    report = experiment_of(ctx).replay(version=version, upto_order=upto_order, out_dir=out_dir)
    if as_json:
        echo_json({**manifest_document(report.replay), "out": str(report.out_dir)})
        return
    for line in report.lines():
        click.echo(line)
