"""`swecl metrics` and `swecl runs`: scores and run listings, recomputed from the ledger."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ledger import SweclError
from projections import VersionMetrics
from projections import cost_line
from projections.audit import integrity_line
from projections.metrics import FORMULAS, LEGEND, METRIC_NAMES, ScoredRun, marked, score_drivers

from .._read_documents import headed_label, resolved_of
from ._common import echo_json, experiment_of, parse_lambdas, results_option, run_version
from ._grouped import print_grouped_table
from ._tables import add_fitted_columns, compact_table, make_console, short_sequence_names, version_label

if TYPE_CHECKING:
    from projections import RunCost
    from projections.compare import Assessment, Gain


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
    experiment = experiment_of(ctx)
    if vectors is not None:
        if versions or as_of_order is not None:
            raise SweclError("--vectors scores the given file; it does not combine with --version or --as-of-order")
        echo_json(experiment.metrics_of_vectors(vectors, formula=formula, lambdas=weights))
        return
    if grouped and (csv_path is not None or parquet_path is not None):
        raise SweclError("--group prints a table or --json; --csv and --parquet write one row per run and sequence")
    to_stdout = csv_path is not None and str(csv_path) == "-"
    # Only the outputs that show it pay for the audit (CSV/Parquet rows have no place for it).
    result = experiment.metrics(versions=versions, formula=formula, as_of_order=as_of_order, lambdas=weights,
                                include_failed=include_failed, grouped=grouped, audit=as_json or not to_stdout)
    if grouped:
        if as_json:
            echo_json(result.grouped_document())
        else:
            print_grouped_table(result.groups)
            print_not_gradeable(result.found)
        return
    if to_stdout:
        click.echo(result.csv(), nl=False)
    if csv_path is not None or parquet_path is not None:
        experiment.write_metrics_tables(result, csv=None if to_stdout else csv_path, parquet=parquet_path)
    if as_json:
        echo_json(result.document())
    elif not to_stdout:
        print_metrics_table(result.found, leakage=result.leakage, integrity=result.integrity, gains=result.gains,
                            assessments=result.assessments, costs=result.costs)
        print_not_gradeable(result.found)
        print_spend(result.spend)


def _spend_cell(spend: dict[str, Any]) -> str:
    """`$0.80/$1.30` (spent of budget), `$0.80`, or `-` when no agent reported a cost; then
    tokens where reported, then attempts and wall time, on lines below (`projections._spend.spend_cell`)."""
    from projections import spend_cell

    return spend_cell(spend)


def print_spend(spend: dict[str, Any]) -> None:
    """One line per run: what its agents spent (`swecl metrics`)."""
    for version, run_spend in spend.items():
        click.echo(f"spend of run {version}: {run_spend.line()}")


def print_not_gradeable(found: list[VersionMetrics]) -> None:
    """One line per task a validation found this host cannot grade (see `swecl validate`)."""
    for vm in found:
        for iid, why in sorted(vm.not_gradeable.items()):
            click.echo(f"{vm.run.version}: {iid} counted missing, not gradeable on this host ({why})")


# The terminal table's columns: BWT (= -F) and CL-S (= 1 - F) are redundant with F in every
# formula set, so they stay in --json/--csv/--parquet only; the table must fit 100 columns.
TABLE_METRICS: tuple[str, ...] = tuple(m for m in METRIC_NAMES if m not in ("BWT", "CL-S"))


def _missing(vm: VersionMetrics, sequence: str) -> int:
    miss = vm.result.sequences[sequence].extras.missing
    return sum(x or 0 for x in (miss.initial, miss.final, miss.baseline))


def _cells(metrics: dict[str, float | None], gaps: dict[str, str], bold: bool = False) -> list[str]:
    # A metric the passes did not measure holds a convention (F = 0, CL-S = 1): never print it as a number.
    texts = ["n/a" if m in gaps else _fmt(metrics[m]) for m in TABLE_METRICS]
    return [f"[bold]{t}[/bold]" for t in texts] if bold else texts


def print_metrics_table(found: list[VersionMetrics], *, title: str | None = None, console: Any = None,
                        leakage: dict[str, dict[str, Any] | None] | None = None,
                        integrity: dict[str, dict[str, Any] | None] | None = None,
                        gains: dict[str, Gain] | None = None, assessments: dict[str, Assessment] | None = None,
                        costs: dict[str, RunCost] | None = None) -> None:
    """The verdict of each memory run against its base (one line each, never wrapped), the
    CL metrics table (fits 100 columns; each column marks which direction is better), then
    what a reader needs to read it right: which n/a are unmeasured, whether CL-Scores
    compare and what drives them, leakage and integrity flags, gains, efficiency, cost."""
    # lazy: rich costs about 45 ms, paid only by the commands that print a table
    from rich import box
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    console = console or make_console()
    assessments = assessments or {}
    for vm in found:
        verdict = assessments[vm.run.version].verdict if vm.run.version in assessments else None
        if verdict:
            console.print(verdict, markup=False, highlight=False, soft_wrap=True)
    formula = found[0].result.formula
    single = len(found) == 1
    heading = title or (f"CL metrics of {headed_label(found[0])} ({formula} formulas)" if single
                        else f"CL metrics ({formula} formulas)")
    rows: list[list[str]] = []
    indent = "" if single else "  "
    for vm in found:
        short = short_sequence_names(list(vm.result.sequences))
        if not single:
            rows.append([f"[bold]{escape(headed_label(vm))}[/bold]", *[""] * (len(TABLE_METRICS) + 2)])
        solved = total = 0
        for name, item in vm.result.sequences.items():
            x, n = resolved_of(vm, name)
            solved, total = solved + x, total + n
            rows.append([indent + escape(short[name]), *_cells(item.metrics, item.unmeasured), f"{x}/{n}",
                         str(_missing(vm, name))])
        rows.append([f"{indent}[bold]macro[/bold]", *_cells(vm.result.macro, vm.result.unmeasured, bold=True),
                     f"[bold]{solved}/{total}[/bold]", "", "END"])
    # Below 100 columns one space between columns (the numbers are right-aligned): the
    # metrics need 64 columns, and a run's name keeps its words whole beside them.
    table = Table(title=escape(heading), box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False,
                  padding=(0, 1) if console.width >= 100 else (0, 0))
    plain = [[Text.from_markup(c).plain for c in r[:len(TABLE_METRICS) + 3]] for r in rows]
    first = "sequence" if single else "run / sequence"
    # fold, never ellipsis: a long run or sequence name wraps rather than losing characters.
    table.add_column(first, overflow="fold",
                     min_width=max([len(w) for r in plain for w in r[0].split()] + [len("sequence")]))
    for i, name in enumerate([*(marked(m) for m in TABLE_METRICS), marked("solved"), "miss"], start=1):
        table.add_column(name, justify="right", no_wrap=True, width=max([len(name), *(len(r[i]) for r in plain)]))
    for r in rows:
        table.add_row(*r[:len(TABLE_METRICS) + 3], end_section=r[-1] == "END")
    console.print(table)
    # Wrapped to the table's own 100 columns even when piped (the console is then 200 wide).
    lines = [f"{LEGEND}; solved: initial-pass tasks resolved", *table_notes(found, leakage or {}, integrity or {}),
             *driver_lines(found), *gain_lines(found, gains or {}, assessments),
             *cost_lines(found, costs or {})]
    for line in lines:
        console.print(textwrap.fill(line, width=min(console.width, 100), subsequent_indent="  "),
                      markup=False, highlight=False)


def gain_lines(found: list[VersionMetrics], gains: dict[str, Gain],
               assessments: dict[str, Assessment] | None = None) -> list[str]:
    """Two lines per run with a base: its normalized gain and its memory efficiency, per sequence and macro."""
    from projections.compare import ORACLE_STAGE, efficiency_line, gain_line

    from projections.compare import NO_ORACLE, ORACLE_HINT

    lines, no_oracle = [], []
    for vm in found:
        gain = gains.get(vm.run.version)
        if gain is None or gain.na is not None:
            continue
        short = short_sequence_names(list(gain.sequences))
        assessment = (assessments or {}).get(vm.run.version)
        lines.append(gain_line(version_label(vm), gain, assessment, short))
        if assessment is None or vm.run.stage == ORACLE_STAGE:  # the oracle is the efficiency's measure
            continue
        eff = assessment.efficiency
        if eff.na == NO_ORACLE and eff.macro is None and all(r.efficiency is None for r in eff.sequences.values()):
            no_oracle.append(version_label(vm))  # said once for them all, below
        else:
            lines.append(efficiency_line(version_label(vm), eff, short))
    if no_oracle:
        lines.append(f"memory efficiency of {', '.join(no_oracle)}: n/a ({NO_ORACLE}: {ORACLE_HINT})")
    return lines


def cost_lines(found: list[VersionMetrics], costs: dict[str, RunCost]) -> list[str]:
    """A line per run with its cost per solved task; the runs whose agents reported nothing
    (the demo agent) in one line between them."""
    silent, lines = [], []
    for vm in found:
        cost = costs.get(vm.run.version)
        if cost is None:
            continue
        if cost.whole_run.cost_usd is None and cost.whole_run.tokens is None and cost.memory_whole_run is None:
            silent.append(version_label(vm))
        else:
            lines.append(cost_line(version_label(vm), cost))
    if silent:
        lines.append(f"cost per solved task of {', '.join(silent)}: not reported (their agents reported no cost "
                     "or tokens)")
    return lines


def driver_lines(found: list[VersionMetrics]) -> list[str]:
    """Where CL-Score ranks a run above one that solved more tasks: the terms that make the difference."""
    scored = []
    for vm in found:
        solved = [resolved_of(vm, name) for name in vm.result.sequences]
        scored.append(ScoredRun(label=version_label(vm), metrics=vm.result.macro, solved=sum(x for x, _ in solved),
                                tasks=sum(n for _, n in solved)))
    return score_drivers(scored, found[0].result.lambdas) if found else []


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
    listing = experiment_of(ctx).runs()
    rows = listing.rows
    if as_json:
        echo_json(rows)
        return
    from rich.markup import escape  # lazy: rich costs about 45 ms, paid only by the commands that print a table

    console = make_console()
    headers = ["v", "stage", "agent", "status", "sequences", "resolved", "leaks", "cost", "from", "started"]
    cells = []
    for row in rows:
        # Short names (`django`): eight full sequence ids made every row four lines tall.
        short = short_sequence_names(row["sequences"])
        cells.append([
            row["version"], row["stage"] + (f" ({row['memory_server']})" if row["memory_server"] else ""), row["agent"],
            row["status"],
            ", ".join(short[s] for s in row["sequences"]) + (f" (order {row['order']})" if row["order"] else ""),
            # i=5/24: the pass's first letter (the legend under the table)
            " ".join(f"{p[:1]}={n}/{row['tasks']}" for p, n in row["resolved"].items()), str(row["leakage"]["flagged"]),
            _spend_cell(row["spend"]), row["seeded_from"] or "",
            # the year when the terminal has room for it
            row["started_at"][0 if console.width >= 160 else 5:16].replace("T", " "),
        ])
    if console.width < 100:  # the start is the one column left out below 100 columns (`--json` has it)
        headers, cells = headers[:-1], [c[:-1] for c in cells]
    table = compact_table(f"runs in {listing.ledger_path}")
    # words never break (a stage, a pass count); a long list of sequences wraps at its spaces
    add_fitted_columns(table, headers, cells, wrap=("sequences", "resolved", "started"), right=("leaks",))
    for row_cells in cells:
        table.add_row(*(escape(c) for c in row_cells))
    console.print(table)
    passes = sorted({p for row in rows for p in row["resolved"]}, key=["initial", "retest", "baseline"].index)
    legend = ("resolved: tasks resolved per pass (" + ", ".join(f"{p[:1]} {p}" for p in passes) + "); "
              if passes else "")
    console.print(textwrap.fill(f"{legend}leaks: recalled items flagged as leakage (swecl audit V --summary); "
                                "cost: spent (of the budget), tokens, attempts and wall time; from: the run its memory was seeded from", width=min(console.width, 100), subsequent_indent="  "),
                  markup=False, highlight=False)
