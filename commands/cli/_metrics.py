"""`swecl metrics` and `swecl runs`: scores and run listings, recomputed from the ledger."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import click
import msgspec

from ledger import SweclError
from projections.metrics import FORMULAS, METRIC_NAMES, Lambdas, metrics_from_vectors_document, to_frame

from ._common import echo_json, results_of, results_option, run_version
from projections import VersionMetrics, live_status, metrics_for, outcomes, runs

_LAMBDA_NAMES = {"acc": "acc", "f": "f", "fwt": "fwt", "bwt": "bwt", "aulc": "aulc"}


def _parse_lambdas(values: tuple[str, ...]) -> Lambdas | None:
    if not values:
        return None
    weights: dict[str, float] = {}
    for item in values:
        name, sep, number = item.partition("=")
        key = _LAMBDA_NAMES.get(name.strip().lower())
        if not sep or key is None:
            raise SweclError(f"--lambda {item!r}: expected NAME=VALUE with NAME one of {', '.join(_LAMBDA_NAMES)}")
        try:
            value = float(number)
        except ValueError:
            raise SweclError(f"--lambda {item!r}: {number!r} is not a number") from None
        if not math.isfinite(value):
            raise SweclError(f"--lambda {item!r}: the weight must be finite")
        weights[key] = value
    return Lambdas(**weights)


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


@click.command("metrics")
@results_option
@click.option("--version", "versions", multiple=True, metavar="V", callback=run_version,
              help="Run version (repeatable; default: every run).")
@click.option("--formula", type=click.Choice(sorted(FORMULAS)), default="native", show_default=True, help="Formula set.")
@click.option("--as-of-order", type=int, default=None, metavar="K", help="Metrics as they stood before task K started.")
@click.option("--lambda", "lambdas", multiple=True, metavar="NAME=W", help="CL-Score weight (acc, f, fwt, bwt, aulc; default 1).")
@click.option("--vectors", type=click.Path(path_type=Path), default=None, metavar="FILE",
              help="Score outcome vectors from a JSON file instead of the ledger.")
@click.option("--all", "include_failed", is_flag=True, help="Without --version: failed runs too (hidden by default).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
              help="Write one row per sequence (and macro) as CSV ('-' for stdout).")
@click.option("--parquet", "parquet_path", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
              help="Write the same table as Parquet.")
@click.pass_context
def metrics_cmd(
    ctx: click.Context,
    versions: tuple[str, ...],
    formula: str,
    as_of_order: int | None,
    lambdas: tuple[str, ...],
    vectors: Path | None,
    include_failed: bool,
    as_json: bool,
    csv_path: Path | None,
    parquet_path: Path | None,
) -> None:
    """CL metrics (ACC, F, BWT, FWT, AULC, CL-P, CL-S, CL-F1, CL-Score) per sequence, with the
    unweighted macro-average over sequences as the headline.

    Pure functions of the ledger: switching --formula or the weights recomputes everything
    without running an agent or a test.
    """
    weights = _parse_lambdas(lambdas)
    if vectors is not None:
        if versions or as_of_order is not None:
            raise SweclError("--vectors scores the given file; it does not combine with --version or --as-of-order")
        echo_json(metrics_from_vectors_document(_read_vectors(vectors), formula) if weights is None
                  else _vectors_with_lambdas(vectors, formula, weights))
        return
    results = results_of(ctx)
    with results.open_ledger(readonly=True) as ledger:
        found = metrics_for(ledger, results.projector(ledger), list(versions), formula=formula, lambdas=weights,
                            as_of_order=as_of_order, include_failed=include_failed)
        if not found and not versions and runs(ledger, results.projector(ledger)):
            raise SweclError(f"every run in {results.ledger_path} failed: `swecl metrics --all` includes failed runs")
    if not found:
        raise SweclError(f"no runs in {results.ledger_path} yet: start one with `swecl run`")
    if csv_path is not None or parquet_path is not None:
        _write_tables(found, csv_path, parquet_path)
    if as_json:
        echo_json(metrics_document(found))
    elif csv_path is None or str(csv_path) != "-":
        print_metrics_table(found)
        print_not_gradeable(found)


def print_not_gradeable(found: list[VersionMetrics]) -> None:
    """One line per task a validation found this host cannot grade (see `swecl validate`)."""
    for vm in found:
        for iid, why in sorted(vm.not_gradeable.items()):
            click.echo(f"{vm.run.version}: {iid} counted missing, not gradeable on this host ({why})")


def _read_vectors(path: Path) -> Any:
    from graders import loads_limited, read_limited

    # Regular files within the input caps only: /dev/zero or a FIFO must not hang here.
    return loads_limited(read_limited(path, str(path)), str(path))


def _vectors_with_lambdas(path: Path, formula: str, weights: Lambdas) -> dict[str, Any]:
    from projections.metrics import compute, sequences_from_vectors_document

    result = compute(sequences_from_vectors_document(_read_vectors(path)), formula, weights)
    return {
        "sequences": {name: dict(item.metrics) for name, item in result.sequences.items()},
        "macro": dict(result.macro),
    }


def metrics_document(found: list[VersionMetrics]) -> dict[str, Any]:
    first = found[0].result
    return {
        "formula": first.formula,
        "formula_version": first.formula_version,
        "lambdas": msgspec.to_builtins(first.lambdas),
        "versions": [
            {
                "version": vm.run.version,
                "stage": vm.run.stage,
                "agent": vm.run.agent,
                "sequences": {name: dict(item.metrics) for name, item in vm.result.sequences.items()},
                "macro": dict(vm.result.macro),
                "extras": {name: msgspec.to_builtins(item.extras) for name, item in vm.result.sequences.items()},
                "notes": {name: list(item.notes) for name, item in vm.result.sequences.items() if item.notes},
                "not_gradeable": dict(sorted(vm.not_gradeable.items())),
            }
            for vm in found
        ],
    }


def _write_tables(found: list[VersionMetrics], csv_path: Path | None, parquet_path: Path | None) -> None:
    import polars as pl

    from projections import write_output

    from projections import parquet_bytes

    frames = [
        to_frame(vm.result).with_columns(pl.lit(vm.run.version).alias("version"), pl.lit(vm.run.stage).alias("stage"))
        for vm in found
    ]
    table = pl.concat(frames).select(["version", "stage", *[c for c in frames[0].columns if c not in ("version", "stage")]])
    if csv_path is not None:
        if str(csv_path) == "-":
            click.echo(table.write_csv(), nl=False)
        else:
            write_output(csv_path, table.write_csv().encode())  # atomic: a full disk leaves no half-written file
    if parquet_path is not None:
        write_output(parquet_path, parquet_bytes(table))


def print_metrics_table(found: list[VersionMetrics], *, title: str | None = None) -> None:
    from rich.table import Table

    table = Table(title=title or f"CL metrics ({found[0].result.formula} formulas)", show_lines=False, pad_edge=False)
    table.add_column("version")
    table.add_column("stage")
    table.add_column("sequence")
    for name in METRIC_NAMES:
        table.add_column(name, justify="right")
    table.add_column("missing", justify="right")
    for vm in found:
        for name, item in vm.result.sequences.items():
            miss = item.extras.missing
            missing = sum(x or 0 for x in (miss.initial, miss.final, miss.baseline))
            table.add_row(
                vm.run.version, vm.run.stage, name.removesuffix("_sequence"),
                *[_fmt(item.metrics[m]) for m in METRIC_NAMES], str(missing),
            )
        table.add_row(
            vm.run.version, vm.run.stage, "[bold]macro[/bold]",
            *[f"[bold]{_fmt(vm.result.macro[m])}[/bold]" for m in METRIC_NAMES], "", end_section=True
        )
    _console().print(table)


def _console():  # type: ignore[no-untyped-def]
    from rich.console import Console

    console = Console()
    # Piped into a file or a CI log there is no terminal width to respect: print whole rows.
    return console if console.is_terminal else Console(width=200)


@click.command("runs")
@results_option
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@click.pass_context
def runs_cmd(ctx: click.Context, as_json: bool) -> None:
    """One row per run version: stage, sequences, agent, status, resolved tasks per pass."""
    results = results_of(ctx)
    with results.open_ledger(readonly=True) as ledger:
        projector = results.projector(ledger)
        rows = []
        for run in runs(ledger, projector).values():
            resolved = outcomes(ledger, projector, run.version).resolved_per_pass()
            rows.append(
                {
                    "version": run.version,
                    "stage": run.stage,
                    "sequences": run.sequences,
                    "agent": run.agent,
                    "status": live_status(results, run),
                    "resolved": {p: resolved.get(p, 0) for p in run.passes},
                    "model": run.model,
                    "grader": run.grader,
                    "sandbox": run.config.get("sandbox") or "none",
                    "benchmark": run.benchmark,
                    "seeded_from": run.seeded_from,
                    "started_at": run.started_at,
                }
            )
    if as_json:
        echo_json(rows)
        return
    from rich.table import Table

    table = Table(title=f"runs in {results.ledger_path}")
    for col in ("version", "stage", "agent", "status", "sequences", "resolved", "seeded from", "started"):
        table.add_column(col)
    for row in rows:
        table.add_row(
            row["version"], row["stage"], row["agent"], row["status"], ", ".join(row["sequences"]),
            " ".join(f"{p}={n}" for p, n in row["resolved"].items()), row["seeded_from"] or "",
            row["started_at"][:19],
        )
    _console().print(table)
