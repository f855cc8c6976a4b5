"""`swecl dream`, `swecl memory export|import|materialise|snapshots`: the memory substrate by hand;
`swecl memory servers`: the memory servers swecl knows by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ._common import echo_json, experiment_of, results_option, run_version
from ._tables import prose_width


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
    dreamed = experiment_of(ctx).dream(version=version)
    if as_json:
        echo_json(dreamed.document())
        return
    for line in dreamed.lines():
        click.echo(line)


@click.group("memory")
def memory_group() -> None:
    """Export a run's memory, import one as a seed, materialise it to files, list a
    --memory-server run's snapshots of its server's data, or the servers known by name."""


@memory_group.command("export")
@results_option
@click.argument("version", callback=run_version)
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path), metavar="DIR",
              help="Folder to write the portable _memory/ export into.")
@click.pass_context
def memory_export_cmd(ctx: click.Context, version: str, out_dir: Path) -> None:
    """Write VERSION's live memory as a portable `_memory/` folder (Markdown, memory.db,
    graph.db, items.json) that another machine can use as --source-memory or import."""
    report = experiment_of(ctx).memory_export(version=version, out_dir=out_dir)
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
    result = experiment_of(ctx).memory_import(path=path, version=version)
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
    reports = experiment_of(ctx).materialise(version=version, every=every, upto=upto)
    for report in reports:
        for line in report.lines():
            click.echo(line)


@memory_group.command("snapshots")
@results_option
@click.argument("version", callback=run_version)
@click.option("--sequence", default=None, metavar="SEQ", help="Only this sequence's snapshots.")
@click.option("--json", "as_json", is_flag=True, help="The snapshots as JSON.")
@click.pass_context
def memory_snapshots_cmd(ctx: click.Context, version: str, sequence: str | None, as_json: bool) -> None:
    """List a --memory-server run's snapshots of its server's data directory: one line
    each (sequence, pass, order, instance, files, total bytes, and the new bytes it stored;
    a file that did not change is stored once)."""
    snapshots = experiment_of(ctx).memory_snapshots(version=version, sequence=sequence)
    if as_json:
        echo_json(snapshots.document())
        return
    for line in snapshots.lines():
        click.echo(line)


@memory_group.command("servers")
@click.option("--json", "as_json", is_flag=True, help="Every preset as JSON, all its fields.")
def memory_servers_cmd(as_json: bool) -> None:
    """The memory servers swecl knows by name (`swecl run --memory-server NAME`): what each
    is, its package and the version swecl tested, what it needs from you (--memory-env),
    and the recall and write tools swecl calls."""
    from commands.run.memory import presets_document  # lazy: the run's memory package

    presets = presets_document()
    if as_json:
        echo_json(presets)
        return
    for line in preset_lines(presets, prose_width()):
        click.echo(line)


def preset_lines(presets: list[dict[str, Any]], width: int) -> list[str]:
    """One row per preset (name, version, whether tested, needs, recall and write tools),
    and under it, indented, what it is and how to install it, wrapped at `width`."""
    import textwrap

    row = "{:<13}  {:<10}  {:<6}  {:<14}  {:<15}  {}"
    lines = [row.format("name", "version", "tested", "needs", "recall", "write")]
    for p in presets:
        needs = ", ".join(p["needs"]) or "-"
        lines.append(row.format(p["name"], p["version"], "yes" if p["tested"] else "no", needs,
                                p["recall_tool"] or "-", p["write_tool"] or "-"))
        about = f"{p['about']}; {p['source']} {p['package']}; install: {p['install']}"
        if p["python"]:
            about += f"; Python {p['python']} or newer"
        if p["notes"]:
            about += f"; {p['notes']}"
        if p["model_endpoint"]:
            about += f"; model API {p['model_endpoint']}"
        lines += textwrap.wrap(about, width=width, initial_indent="  ", subsequent_indent="    ")
    return lines
