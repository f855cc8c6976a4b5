"""`swecl metrics` and `swecl runs`: scores and run listings, recomputed from the ledger."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import click
import msgspec

from graders import loads_limited, read_limited
from ledger import SweclError
from commands._files import write_output
from projections import VersionMetrics, metrics_for, order_cut, outcomes, parquet_bytes, run_row, runs
from projections.audit import integrity_line, leakage_of
from projections.metrics import (
    FORMULAS,
    METRIC_NAMES,
    metrics_from_vectors_document,
    result_document,
    to_frame,
)

from ._common import echo_json, parse_lambdas, results_of, results_option, run_version
from ._grouped import expand_to_groups, grouped_document, grouped_of, print_grouped_table
from ._tables import make_console, short_sequence_names, version_label


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
@click.option("--group", "grouped", is_flag=True,
              help="One row per group of repeats (`swecl run --repeat K`, or runs sharing stage, agent, model, "
                   "dataset, passes and tasks): mean and t-based 95% CI over the runs, n shown; "
                   "--version V shows V's whole group.")
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
    grouped: bool,
    as_json: bool,
    csv_path: Path | None,
    parquet_path: Path | None,
) -> None:
    """CL metrics (ACC, F, BWT, FWT, AULC, CL-P, CL-S, CL-F1, CL-Score) per sequence, with the
    unweighted macro-average over sequences as the headline.

    Pure functions of the ledger: switching --formula or the weights recomputes everything
    without running an agent or a test.
    """
    weights = parse_lambdas(lambdas)
    if vectors is not None:
        if versions or as_of_order is not None:
            raise SweclError("--vectors scores the given file; it does not combine with --version or --as-of-order")
        echo_json(metrics_from_vectors_document(_read_vectors(vectors), formula, weights))
        return
    if grouped and (csv_path is not None or parquet_path is not None):
        raise SweclError("--group prints a table or --json; --csv and --parquet write one row per run and sequence")
    results = results_of(ctx)
    with results.open_ledger(readonly=True) as ledger:
        if grouped and versions:
            versions = tuple(expand_to_groups(runs(ledger, results.projector(ledger)), list(versions), include_failed))
        found = metrics_for(ledger, results.projector(ledger), list(versions), formula=formula, lambdas=weights,
                            as_of_order=as_of_order, include_failed=include_failed)
        if not found and not versions and runs(ledger, results.projector(ledger)):
            raise SweclError(f"every run in {results.ledger_path} failed: `swecl metrics --all` includes failed runs")
        # Only the outputs that show it pay for the audit (CSV/Parquet rows have no place for it).
        shown = as_json or csv_path is None or str(csv_path) != "-"
        leakage = leakage_for(ledger, found, as_of_order) if shown else {}
        integrity = integrity_for(ledger, found, as_of_order) if shown else {}
    if not found:
        raise SweclError(f"no runs in {results.ledger_path} yet: start one with `swecl run`")
    if grouped:
        groups = grouped_of(found)
        if as_json:
            echo_json(grouped_document(groups))
        else:
            print_grouped_table(groups)
            print_not_gradeable(found)
        return
    if csv_path is not None or parquet_path is not None:
        _write_tables(found, csv_path, parquet_path)
    if as_json:
        echo_json(metrics_document(found, leakage, integrity))
    elif csv_path is None or str(csv_path) != "-":
        print_metrics_table(found, leakage=leakage, integrity=integrity)
        print_not_gradeable(found)


def print_not_gradeable(found: list[VersionMetrics]) -> None:
    """One line per task a validation found this host cannot grade (see `swecl validate`)."""
    for vm in found:
        for iid, why in sorted(vm.not_gradeable.items()):
            click.echo(f"{vm.run.version}: {iid} counted missing, not gradeable on this host ({why})")


def _read_vectors(path: Path) -> Any:
    # Regular files within the input caps only: /dev/zero or a FIFO must not hang here.
    return loads_limited(read_limited(path, str(path)), str(path))


def metrics_document(found: list[VersionMetrics], leakage: dict[str, dict[str, Any] | None] | None = None,
                     integrity: dict[str, dict[str, Any] | None] | None = None) -> dict[str, Any]:
    """The --json document. A metric the run's passes did not measure is null, and
    `unmeasured` (per version, of the macro values; per sequence in `unmeasured_by_sequence`;
    per stratum in its extras) says why; `leakage` and `integrity` (the patches' integrity
    flags) are None when not computed."""
    leakage = leakage or {}
    integrity = integrity or {}
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
                **result_document(vm.result, header=False),  # as a replay's metrics.json
                "not_gradeable": dict(sorted(vm.not_gradeable.items())),
                "passes": list(vm.run.passes),
                "resolved": {name: dict(zip(("resolved", "tasks"), _resolved(vm, name), strict=True))
                             for name in vm.result.sequences},
                "leakage": leakage.get(vm.run.version),
                "integrity": integrity.get(vm.run.version),
            }
            for vm in found
        ],
    }


def _write_tables(found: list[VersionMetrics], csv_path: Path | None, parquet_path: Path | None) -> None:
    # lazy: polars costs about 0.5 s, paid only by --parquet
    import polars as pl



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


# The terminal table's columns: BWT (= -F) and CL-S (= 1 - F) are redundant with F in every
# formula set, so they stay in --json/--csv/--parquet only; the table must fit 100 columns.
TABLE_METRICS: tuple[str, ...] = tuple(m for m in METRIC_NAMES if m not in ("BWT", "CL-S"))


def _resolved(vm: VersionMetrics, sequence: str) -> tuple[int, int]:
    """(initial-pass tasks resolved, tasks planned) of one sequence; a task not gradeable here is not resolved."""
    vector = vm.outcomes.vector(sequence, "initial", vm.not_gradeable) or []
    return sum(1 for v in vector if v == 1), len(vm.outcomes.sequences[sequence].plan)


def _missing(vm: VersionMetrics, sequence: str) -> int:
    miss = vm.result.sequences[sequence].extras.missing
    return sum(x or 0 for x in (miss.initial, miss.final, miss.baseline))


def _cells(metrics: dict[str, float | None], gaps: dict[str, str], bold: bool = False) -> list[str]:
    # A metric the passes did not measure holds a convention (F = 0, CL-S = 1): never print it as a number.
    texts = ["n/a" if m in gaps else _fmt(metrics[m]) for m in TABLE_METRICS]
    return [f"[bold]{t}[/bold]" for t in texts] if bold else texts


def print_metrics_table(found: list[VersionMetrics], *, title: str | None = None, console: Any = None,
                        leakage: dict[str, dict[str, Any] | None] | None = None,
                        integrity: dict[str, dict[str, Any] | None] | None = None) -> None:
    """The CL metrics table (fits 100 columns), then what a reader needs to read it right:
    which n/a are unmeasured, whether CL-Scores compare, leakage and integrity flags."""
    # lazy: rich costs about 45 ms, paid only by the commands that print a table
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    console = console or make_console()
    formula = found[0].result.formula
    single = len(found) == 1
    heading = title or (f"CL metrics of {version_label(found[0])} ({formula} formulas)" if single
                        else f"CL metrics ({formula} formulas)")
    table = Table(title=escape(heading), box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    # fold, never ellipsis: a long run or sequence name wraps rather than losing characters.
    table.add_column("sequence" if single else "run / sequence", overflow="fold")
    for name in TABLE_METRICS:
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("solved", justify="right", no_wrap=True)
    table.add_column("miss", justify="right", no_wrap=True)
    indent = "" if single else "  "
    for vm in found:
        short = short_sequence_names(list(vm.result.sequences))
        if not single:
            table.add_row(f"[bold]{escape(version_label(vm))}[/bold]", *[""] * (len(TABLE_METRICS) + 2))
        solved = total = 0
        for name, item in vm.result.sequences.items():
            x, n = _resolved(vm, name)
            solved, total = solved + x, total + n
            table.add_row(indent + escape(short[name]), *_cells(item.metrics, item.unmeasured), f"{x}/{n}",
                          str(_missing(vm, name)))
        table.add_row(f"{indent}[bold]macro[/bold]", *_cells(vm.result.macro, vm.result.unmeasured, bold=True),
                      f"[bold]{solved}/{total}[/bold]", "", end_section=True)
    console.print(table)
    # Wrapped to the table's own 100 columns even when piped (the console is then 200 wide).
    for line in table_notes(found, leakage or {}, integrity or {}):
        console.print(textwrap.fill(line, width=min(console.width, 100), subsequent_indent="  "),
                      markup=False, highlight=False)


def table_notes(found: list[VersionMetrics], leakage: dict[str, dict[str, Any] | None],
                integrity: dict[str, dict[str, Any] | None] | None = None) -> list[str]:
    """The lines under the table: unmeasured metrics, CL-Score comparability, leakage, integrity."""
    lines = []
    if any(vm.result.unmeasured for vm in found):
        lines.append("n/a: not measured (F, CL-F1 need a re-test pass, FWT a baseline; --json says why) "
                     "or not computable")
    elif _any_none(found):
        lines.append("n/a: not computable (no valid outcome to score)")
    groups: dict[tuple[str, ...], list[str]] = {}
    for vm in found:
        groups.setdefault(tuple(vm.run.passes), []).append(version_label(vm))
    if len(groups) > 1:
        said = "; ".join(f"{', '.join(labels)}: {'+'.join(passes)}" for passes, labels in groups.items())
        lines.append(f"CL-Scores not comparable, different passes ({said})")
    for vm in found:
        line = leakage_line(vm, leakage.get(vm.run.version))
        if line:
            lines.append(line)
        line = integrity_line(version_label(vm), vm.run.version, (integrity or {}).get(vm.run.version))
        if line:
            lines.append(line)
    return lines


def _any_none(found: list[VersionMetrics]) -> bool:
    rows = [vm.result.macro for vm in found] + [s.metrics for vm in found for s in vm.result.sequences.values()]
    return any(row[m] is None for row in rows for m in TABLE_METRICS)


def leakage_for(ledger: Any, found: list[VersionMetrics], as_of_order: int | None = None) -> dict[str, dict[str, Any] | None]:
    # At a cut (--as-of-order) the counts are of the recalls made before it, as the outcomes are.
    return {vm.run.version: leakage_of(ledger, vm.run.version, as_of_order) for vm in found}


def integrity_for(ledger: Any, found: list[VersionMetrics], as_of_order: int | None = None) -> dict[str, dict[str, Any] | None]:
    """Each run's integrity flags (`projections.audit.integrity_of`), of the attempts that
    count: at a cut, those in force then, as the outcomes beside them."""
    # lazy: the audit's folds (about 15 ms) load when a command shows them, not at `swecl --help`
    from projections.audit import integrity_counts, integrity_of

    return {vm.run.version: integrity_counts(integrity_of(
        ledger, vm.run.version, cut=None if as_of_order is None else order_cut(ledger, vm.run.version, as_of_order)))
        for vm in found}


def leakage_line(vm: VersionMetrics, leak: dict[str, Any] | None) -> str | None:
    if not leak or not leak["flagged"]:
        return None
    kinds = ", ".join(f"{k.replace('-', ' ')} {n}" for k, n in leak["by_kind"].items() if n)
    return (f"{version_label(vm)}: {leak['flagged']} recalled items flagged as leakage ({kinds}): "
            f"see `swecl audit {vm.run.version} --summary`")


@click.command("runs")
@results_option
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@click.pass_context
def runs_cmd(ctx: click.Context, as_json: bool) -> None:
    """One row per run version: stage, sequences, agent, status, resolved tasks per pass, and
    leaks: recalled items flagged as leakage (`swecl audit VERSION --summary` says which)."""
    results = results_of(ctx)
    with results.open_ledger(readonly=True) as ledger:
        projector = results.projector(ledger)
        rows = [run_row(results, ledger, run, outcomes(ledger, projector, run.version))
                for run in runs(ledger, projector).values()]
    if as_json:
        echo_json(rows)
        return
    # lazy: rich costs about 45 ms, paid only by the commands that print a table
    from rich.table import Table

    table = Table(title=f"runs in {results.ledger_path}")
    for col in ("version", "stage", "agent", "status", "sequences", "resolved", "leaks", "seeded from", "started"):
        table.add_column(col)
    for row in rows:
        # Short names (`django`): eight full sequence ids made every row four lines tall.
        short = short_sequence_names(row["sequences"])
        table.add_row(
            row["version"], row["stage"] + (f" ({row['memory_server']})" if row["memory_server"] else ""), row["agent"], row["status"], ", ".join(short[s] for s in row["sequences"]),
            " ".join(f"{p}={n}/{row['tasks']}" for p, n in row["resolved"].items()), str(row["leakage"]["flagged"]),
            row["seeded_from"] or "", row["started_at"][:19],
        )
    make_console().print(table)
