"""`swecl dream`, `swecl memory export|import|show`: the memory substrate by hand."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click

from ._cli_common import echo_json, results_of, results_option


@click.command("dream")
@results_option
@click.argument("version")
@click.option("--json", "as_json", is_flag=True, help="The decisions as JSON.")
@click.pass_context
def dream_cmd(ctx: click.Context, version: str, as_json: bool) -> None:
    """One dream pass over a run's memory: prune expired items, merge near duplicates,
    let newer items supersede contradicted older ones, enforce caps.

    Each decision is an event with its reason; a second dream with nothing new decides nothing.
    """
    from commands.memory import dream

    results = results_of(ctx)
    with results.open_ledger() as ledger:
        report = dream(ledger, version, reason="manual")
        from projections.memory import materialise_version

        materialise_version(ledger, version, results.version_dir(version))
    if as_json:
        echo_json(
            {
                "version": version,
                "dream_id": report.dream_id,
                "decisions": [dataclasses.asdict(d) for d in report.decisions],
                "live_before": report.live_before,
                "live_after": report.live_after,
            }
        )
        return
    for line in report.lines():
        click.echo(line)


@click.group("memory")
def memory_group() -> None:
    """Export a run's memory, import one as a seed, or materialise it to files."""


@memory_group.command("export")
@results_option
@click.argument("version")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path), metavar="DIR")
@click.pass_context
def memory_export_cmd(ctx: click.Context, version: str, out_dir: Path) -> None:
    """Write VERSION's live memory as a portable `_memory/` folder (Markdown, memory.db,
    graph.db, items.json) that another machine can use as --source-memory or import."""
    from commands.memory import export_memory

    results = results_of(ctx)
    with results.open_ledger(readonly=True) as ledger:
        report = export_memory(ledger, version, out_dir)
    for line in report.lines():
        click.echo(line)


@memory_group.command("import")
@results_option
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--into", "version", required=True, metavar="VERSION", help="The run version the folder seeds.")
@click.pass_context
def memory_import_cmd(ctx: click.Context, path: Path, version: str) -> None:
    """Seed VERSION from an exported `_memory/` folder: one memory.seeded event plus the
    imported items, in one batch."""
    from commands.memory import import_seed

    results = results_of(ctx)
    with results.open_ledger() as ledger:
        result = import_seed(ledger, version, path)
    for line in result.lines():
        click.echo(line)


@memory_group.command("materialise")
@results_option
@click.argument("version")
@click.option("--upto", type=int, default=None, metavar="SEQ", help="The memory as of this seq (default: now).")
@click.pass_context
def memory_materialise_cmd(ctx: click.Context, version: str, upto: int | None) -> None:
    """Rebuild results/v{VERSION}/_memory/ from the ledger (it is never the source of truth)."""
    from projections.memory import materialise_version

    results = results_of(ctx)
    with results.open_ledger(readonly=True) as ledger:
        report = materialise_version(ledger, version, results.version_dir(version), upto=upto)
    for line in report.lines():
        click.echo(line)
