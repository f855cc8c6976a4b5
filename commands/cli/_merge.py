"""`swecl merge`: fold ledger shards (parallel or multi-machine runs) into one ledger."""

from __future__ import annotations

from pathlib import Path

import click

from ledger import IntegrityError

from ._common import echo_json, experiment_of, results_option


@click.command("merge")
@results_option
@click.argument("shards", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path), metavar="SHARD_LEDGER...")
@click.option("--into", "into", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="LEDGER",
              help="The ledger to merge into, created if missing (default: the results dir's ledger.db).")
@click.option("--json", "as_json", is_flag=True, help="Print the merge report as JSON.")
@click.pass_context
def merge_cmd(ctx: click.Context, shards: tuple[Path, ...], into: Path | None, as_json: bool) -> None:
    """Merge shard ledgers into one, in the order given.

    Every shard's hash chain and blobs are verified first: a shard that fails refuses
    the merge with nothing written. Events keep their ids, streams and order; an event
    already in the target is skipped, so merging twice adds nothing. The target is
    verified again at the end.
    """
    try:
        merged = experiment_of(ctx).merge(shards=list(shards), into=into)
    except IntegrityError as exc:
        click.echo(f"swecl: merge refused: {' '.join(str(exc).split())}", err=True)
        raise click.exceptions.Exit(1) from None
    if as_json:
        echo_json(merged.document())
        return
    for line in merged.lines():
        click.echo(line)
