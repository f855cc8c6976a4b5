"""`swecl init`, `swecl log`, `swecl verify`: the ledger itself."""

from __future__ import annotations

import click
import msgspec

from ledger import Recorded
from projections import event_record

from ._common import echo_json_line, experiment_of, results_option


@click.command("init")
@results_option
@click.pass_context
def init_cmd(ctx: click.Context) -> None:
    """Create the experiment root and its ledger (a no-op if they exist)."""
    made = experiment_of(ctx).init()
    click.echo(f"ledger {'created' if made.created else 'exists'}: {made.path} ({made.events} events)")


@click.command("log")
@results_option
@click.option("--type", "types", multiple=True, metavar="T", help="Only events of this type (repeatable).")
@click.option("--stream", "streams", multiple=True, metavar="S", help="Only this stream and the streams under it (repeatable).")
@click.option("--after", type=int, default=0, show_default=True, help="Only events with seq greater than this.")
@click.option("--upto", type=int, default=None, help="Only events with seq up to this.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
@click.pass_context
def log_cmd(
    ctx: click.Context, types: tuple[str, ...], streams: tuple[str, ...], after: int, upto: int | None, as_json: bool
) -> None:
    """Print the events of the ledger in order."""
    for rec in experiment_of(ctx).log(types=types, streams=streams, after=after, upto=upto):
        if as_json:
            echo_json_line(event_record(rec))
        else:
            click.echo(_as_line(rec))


def _as_line(rec: Recorded) -> str:
    payload = msgspec.to_builtins(rec.event)
    summary = ""
    if isinstance(payload, dict):
        payload.pop("type", None)
        parts = []
        for key, value in payload.items():
            if isinstance(value, dict | list) or value is None or value == "":
                continue
            text = str(value)
            parts.append(f"{key}={text if len(text) <= 40 else text[:37] + '...'}")
        summary = " ".join(parts[:6])
    return f"{rec.seq:>7}  {rec.time[:19]}  {rec.stream}@{rec.stream_version}  {rec.type}  {summary}"


@click.command("verify")
@results_option
@click.pass_context
def verify_cmd(ctx: click.Context) -> None:
    """Check the hash chain, every blob's hash, every blob reference and every seed reference
    (a memory.seeded names a run of this ledger, at a position it had reached).

    Also checks the schema (the append-only triggers, the indexes) and the metadata rows,
    and that the file is whole. Exit 0 when the ledger is intact; exit 1 naming the first
    bad seq or blob (or saying the file is damaged) otherwise.
    """
    checked = experiment_of(ctx).verify()
    if checked.problem is not None:
        raise click.exceptions.Exit(_fail(checked.problem))
    click.echo(f"ledger OK: {checked.events} events, {checked.blobs} blobs, head hash {checked.head_hash}")


def _fail(message: str) -> int:
    click.echo(f"swecl: verify failed: {message}", err=True)  # one line: the core joined it
    return 1
