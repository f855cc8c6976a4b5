"""`swecl report [VERSION]... --out DIR`: the offline HTML report of run versions."""

from __future__ import annotations

from pathlib import Path

import click

from projections.metrics import FORMULAS

from ._common import results_of, results_option
from projections.report import build_report


@click.command("report")
@results_option
@click.argument("versions", nargs=-1, metavar="[VERSION]...")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    metavar="DIR",
    help="Directory to write index.html and plots/ into (created if missing).",
)
@click.option("--formula", type=click.Choice(sorted(FORMULAS)), default="native", show_default=True, help="Formula set.")
@click.pass_context
def report_cmd(ctx: click.Context, versions: tuple[str, ...], out_dir: Path, formula: str) -> None:
    """A static HTML report (works offline): metric tables, a(i,j) heatmaps and learning
    curves per sequence, and which memories each task recalled.

    No VERSION: every run in the ledger. Several versions are overlaid on the learning
    curves of each sequence they share.
    """
    results = results_of(ctx)
    summary = build_report(results, list(versions), out_dir, formula=formula)
    click.echo(
        f"wrote {len(summary.files)} files for {len(summary.versions)} version(s) and "
        f"{len(summary.sequences)} sequence(s) as of ledger seq {summary.head_seq}: open {summary.index}"
    )
