"""`swecl init`, `swecl log`, `swecl verify`: the ledger itself."""

from __future__ import annotations

import difflib

import click
import msgspec

from ledger import IntegrityError, Recorded, StreamRange, SweclError
from ledger import check_references
from ledger import LedgerDamaged, sqlite
from ledger.events import BY_TYPE
from projections import ChainCheckpoints

from ._common import echo_json_line, results_of, results_option
from projections import event_record


@click.command("init")
@results_option
@click.pass_context
def init_cmd(ctx: click.Context) -> None:
    """Create the experiment root and its ledger (a no-op if they exist)."""
    results = results_of(ctx)
    path = results.ledger_path
    # An empty file is initialised (asked for by name, here only), and reported as created.
    existed = path.exists() and (path.is_dir() or path.stat().st_size > 0)
    with results.open_ledger(create=True, init_empty=True) as ledger:
        state = "exists" if existed else "created"
        click.echo(f"ledger {state}: {ledger.path} ({ledger.count()} events)")


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
    unknown = [t for t in types if t not in BY_TYPE]
    if unknown:
        raise SweclError(f"--type {unknown[0]!r}: no such event type{_did_you_mean(unknown[0], sorted(BY_TYPE))} "
                         f"(types: {', '.join(sorted(BY_TYPE))})")
    results = results_of(ctx)
    with results.open_ledger(readonly=True) as ledger:
        for stream in streams:
            if not ledger.streams(stream):
                found = ledger.streams()
                tops = sorted({s.split("/")[0] for s in found})
                raise SweclError(f"--stream {stream!r}: no such stream in {ledger.path}{_did_you_mean(stream, found)} "
                                 f"(stream families: {', '.join(tops) or 'none yet'})")
        events = ledger.read(
            after=after,
            upto=upto,
            types=list(types) if types else None,
            ranges=[StreamRange(s) for s in streams] if streams else None,
        )
        for rec in events:
            if as_json:
                echo_json_line(event_record(rec))
            else:
                click.echo(_as_line(rec))


def _did_you_mean(given: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(given, choices, n=3)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


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
    results = results_of(ctx)
    try:
        ledger = results.open_ledger(readonly=True, check=False)
    except LedgerDamaged as exc:
        raise click.exceptions.Exit(_fail(str(exc))) from None
    with ledger:
        try:
            report = ledger.verify()
            problem = check_references(ledger)
        except (IntegrityError, LedgerDamaged) as exc:
            raise click.exceptions.Exit(_fail(str(exc))) from None
        except sqlite.CorruptError as exc:
            raise click.exceptions.Exit(_fail(f"{ledger.path} is corrupt: SQLite reports {exc}")) from None
        if problem is not None:
            raise click.exceptions.Exit(_fail(str(problem)))
        if report.events:
            # The read commands check the chain from here on, not from the start.
            ChainCheckpoints(results.projections_path).save(
                ledger.ledger_id, report.events, bytes.fromhex(report.head_hash)
            )
        click.echo(f"ledger OK: {report.events} events, {report.blobs} blobs, head hash {report.head_hash}")


def _fail(message: str) -> int:
    click.echo(f"swecl: verify failed: {' '.join(message.split())}", err=True)
    return 1
