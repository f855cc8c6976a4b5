"""`swecl dream`, `swecl memory export|import|show`: the memory substrate by hand."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click

from ledger import SweclError
from projections import rebuild
from projections.memory import MEMORY_DIR, blob_patch_reader, materialise_version, write_memory_folder

from ._common import echo_json, results_of, results_option, run_version


@click.command("dream")
@results_option
@click.argument("version", callback=run_version)
@click.option("--json", "as_json", is_flag=True, help="The decisions as JSON.")
@click.pass_context
def dream_cmd(ctx: click.Context, version: str, as_json: bool) -> None:
    """One dream pass over a run's memory: prune expired items, merge near duplicates,
    let newer items supersede contradicted older ones, enforce caps.

    Each decision is an event with its reason; a second dream with nothing new decides nothing.
    """
    # lazy: the memory commands bring unidiff; `swecl --help` need not load them
    from commands.memory import dream

    results = results_of(ctx)
    with results.open_ledger() as ledger:
        report = dream(ledger, version, reason="manual")
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
@click.argument("version", callback=run_version)
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path), metavar="DIR",
              help="Folder to write the portable _memory/ export into.")
@click.pass_context
def memory_export_cmd(ctx: click.Context, version: str, out_dir: Path) -> None:
    """Write VERSION's live memory as a portable `_memory/` folder (Markdown, memory.db,
    graph.db, items.json) that another machine can use as --source-memory or import."""
    # lazy: the memory commands bring unidiff; `swecl --help` need not load them
    from commands.memory import export_memory

    results = results_of(ctx)
    with results.open_ledger(readonly=True) as ledger:
        report = export_memory(ledger, version, out_dir)
    for line in report.lines():
        click.echo(line)


@memory_group.command("import")
@results_option
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--into", "version", required=True, metavar="VERSION", callback=run_version,
              help="The run version the folder seeds.")
@click.pass_context
def memory_import_cmd(ctx: click.Context, path: Path, version: str) -> None:
    """Seed VERSION from an exported `_memory/` folder: one memory.seeded event plus the
    imported items, in one batch."""
    # lazy: the memory commands bring unidiff; `swecl --help` need not load them
    from commands.memory import import_seed

    results = results_of(ctx)
    with results.open_ledger() as ledger:
        result = import_seed(ledger, version, path)
    for line in result.lines():
        click.echo(line)


@memory_group.command("materialise")
@results_option
@click.argument("version", required=False, callback=run_version)
@click.option("--all", "every", is_flag=True, help="Every run's memory folder, from one pass over the ledger.")
@click.option("--upto", type=int, default=None, metavar="SEQ", help="The memory as of this seq (default: now).")
@click.pass_context
def memory_materialise_cmd(ctx: click.Context, version: str | None, every: bool, upto: int | None) -> None:
    """Rebuild results/v{VERSION}/_memory/ from the ledger (it is never the source of truth).

    With --all, every run's folder: the ledger is read once for all of them.
    """
    if every == (version is not None):
        raise SweclError("give a run VERSION or --all (not both)")
    results = results_of(ctx)
    with results.open_ledger(readonly=True) as ledger:
        if version is not None:
            if ledger.stream_version(f"run/{version}") < 0:
                raise SweclError(f"no run version {version!r} in {ledger.path}: nothing to materialise")
            reports = [materialise_version(ledger, version, results.version_dir(version), upto=upto)]
        else:
            rebuilt = rebuild(ledger, upto=upto)
            if not rebuilt.runs.runs:
                raise SweclError(f"no runs in {ledger.path} as of seq {rebuilt.seq}: nothing to materialise")
            read_patch = blob_patch_reader(ledger)
            reports = [
                write_memory_folder(
                    rebuilt.memory_of(v), results.version_dir(v) / MEMORY_DIR, read_patch, ledger_id=ledger.ledger_id
                )
                for v in rebuilt.runs.runs
            ]
    for report in reports:
        for line in report.lines():
            click.echo(line)
