"""`swecl report [VERSION]... --out DIR`: the offline HTML report of run versions."""

from __future__ import annotations

from pathlib import Path

import click

from projections.metrics import FORMULAS

from ._common import experiment_of, results_option, run_version


@click.command("report")
@results_option
@click.argument("versions", nargs=-1, metavar="[VERSION]...", callback=run_version)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    metavar="DIR",
    help="Directory to write index.html and plots/ into (created if missing).",
)
@click.option("--formula", type=click.Choice(sorted(FORMULAS)), default="native", show_default=True, help="Formula set.")
@click.option("--all", "include_failed", is_flag=True, help="With no VERSION: failed runs too (hidden by default).")
@click.option("--group", "grouped", is_flag=True,
              help="Treat repeats as groups (`swecl run --repeat K`): each VERSION's whole group is reported, "
                   "base vs memory stages compares groups, and a section gives each group's mean and 95% CI.")
@click.pass_context
def report_cmd(ctx: click.Context, versions: tuple[str, ...], out_dir: Path, formula: str, include_failed: bool,
               grouped: bool) -> None:
    """A static HTML report (works offline) that opens on the answer: the verdict lines and a
    chart of each memory run's resolved tasks beside its base's and its oracle's. Below, folded:
    metric tables, memory on vs memory off, base vs each memory stage with `swecl compare`'s
    intervals, the memory funnel, per sequence the learning curves, a(i,j) heatmaps and which
    memories each task recalled, the leakage counts, and the runs.

    No VERSION: every run in the ledger that did not fail (--all: failed ones too). Several
    versions are overlaid on the learning curves of each sequence they share.
    """
    summary = experiment_of(ctx).report(versions=list(versions), out_dir=out_dir, formula=formula,
                                        include_failed=include_failed, grouped=grouped)
    click.echo(
        f"wrote {len(summary.files)} files for {len(summary.versions)} version(s) and "
        f"{len(summary.sequences)} sequence(s) as of ledger seq {summary.head_seq}: open {summary.index}"
    )
