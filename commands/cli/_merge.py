"""`swecl merge`: fold ledger shards (parallel or multi-machine runs) into one ledger."""

from __future__ import annotations

from pathlib import Path

import click

from ledger import IntegrityError

from ._common import echo_json, results_of, results_option


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
    from ledger import merge_ledgers  # lazy: the merge machinery loads only for `swecl merge`

    target = into if into is not None else results_of(ctx).ledger_path
    try:
        report = merge_ledgers(list(shards), target)
    except IntegrityError as exc:
        click.echo(f"swecl: merge refused: {' '.join(str(exc).split())}", err=True)
        raise click.exceptions.Exit(1) from None
    if as_json:
        echo_json(
            {
                "target": str(report.target),
                "created": report.created,
                "shards": [
                    {"path": str(s.path), "events": s.events, "added": s.added, "skipped": s.skipped,
                     "blobs_added": s.blobs_added}
                    for s in report.shards
                ],
                "events": report.events,
                "blobs": report.blobs,
                "head_hash": report.head_hash,
            }
        )
        return
    for line in report.lines():
        click.echo(line)
