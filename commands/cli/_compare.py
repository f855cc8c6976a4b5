"""`swecl compare A B`: is the difference between two runs over the same tasks signal or
noise? The options, one call of the core (`Experiment.compare`), and the table; the
statistics and their method are `projections.compare`'s."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any

import click

from projections import cost_line
from projections.compare import DEFAULT_RESAMPLES, DEFAULT_SEED, RESOLVED, efficiency_line
from projections.metrics import FORMULAS, LEGEND, marked

from ._common import echo_json, experiment_of, parse_lambdas, results_option, run_version
from ._tables import make_console, short_sequence_names

if TYPE_CHECKING:
    from projections import RunCost
    from projections.compare import Assessment, Comparison

# Row labels of the table, in COMPARED's order.
_LABELS = {RESOLVED: "resolved", "ACC": "ACC", "F": "F", "FWT": "FWT", "CL-Score": "CL-Score"}
_FLAG = "*"


@click.command("compare")
@results_option
@click.argument("a", metavar="A", callback=run_version)
@click.argument("b", metavar="B", callback=run_version)
@click.option("--formula", type=click.Choice(sorted(FORMULAS)), default="native", show_default=True, help="Formula set.")
@click.option("--lambda", "lambdas", multiple=True, metavar="NAME=W", help="CL-Score weight (acc, f, fwt, bwt, aulc; default 1).")
@click.option("--seed", type=click.IntRange(min=0), default=DEFAULT_SEED, show_default=True, metavar="N",
              help="Bootstrap seed (fixed by default, so the same command prints the same intervals).")
@click.option("--resamples", type=click.IntRange(100, 100_000), default=DEFAULT_RESAMPLES, show_default=True,
              metavar="R", help="Bootstrap resamples.")
@click.option("--group", "grouped", is_flag=True,
              help="Compare the groups of repeats A and B belong to (`swecl run --repeat K`): each side the mean "
                   "of its runs, the bootstrap resampling tasks with each task's repeats kept together.")
@click.option("--oracle", default=None, metavar="V", callback=run_version,
              help="The oracle run of B's memory efficiency, (B - A) / (oracle - A) of the initial-pass resolve "
                   "rates (default: the newest oracle-stage run of B's agent, model and tasks in the folder).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def compare_cmd(ctx: click.Context, a: str, b: str, formula: str, lambdas: tuple[str, ...], seed: int,
                resamples: int, grouped: bool, oracle: str | None, as_json: bool) -> None:
    """B minus A for two runs over the same tasks: resolved rate, ACC, F, FWT and CL-Score per
    sequence and macro-averaged, each with a paired bootstrap 95% interval over tasks, and an
    exact McNemar test on which tasks each run resolved.

    Runs over different tasks (or one run twice) are refused; a metric one run's passes did
    not measure is n/a with the reason. With --group, A and B stand for their groups of
    repeats: means over the runs, intervals over tasks with repeats averaged, and an exact
    stratified test that is McNemar's when each group is one run.

    Two runs open with the verdict line (did B's memory help over A, and what weakens the
    answer), and end with B's memory efficiency against an oracle run (--oracle V, else the
    one found) and both runs' cost per solved task.
    """
    result = experiment_of(ctx).compare(a, b, formula=formula, lambdas=parse_lambdas(lambdas), seed=seed,
                                        resamples=resamples, grouped=grouped, oracle=oracle)
    if as_json:
        echo_json(result.document())
    else:
        print_comparison(result.comparison, assessment=result.assessment, costs=result.costs)
        if result.funnel is not None:
            from projections.funnel import format_funnel_difference  # lazy: as the job's imports

            click.echo("")
            for line in format_funnel_difference(result.funnel):
                click.echo(line)


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _signed(value: float) -> str:
    # 0.0 - x can be -0.0: never print a signed zero.
    return f"{value + 0.0:+.3f}" if abs(value) >= 5e-4 else "0.000"


def _p(value: float) -> str:
    # Three significant digits: 0.0625 stays 0.0625 (not 0.062), 2e-06 stays visible.
    return f"{value:.3g}"


def print_comparison(comparison: Comparison, console: Any = None, *, assessment: Assessment | None = None,
                     costs: dict[str, RunCost] | None = None) -> None:
    """The verdict line (one line, never wrapped), the table (fits 100 columns): one block
    of rows per sequence and the macro, then what makes a number n/a or only partly
    comparable, how to read the columns, the memory efficiency and the cost per solved task."""
    # lazy: rich costs about 45 ms, paid only by the commands that print a table
    from rich import box
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    console = console or make_console()
    if assessment is not None and assessment.verdict:
        console.print(assessment.verdict, markup=False, highlight=False, soft_wrap=True)
    a, b = comparison.a, comparison.b
    title = f"compare A = {a.label}, B = {b.label} ({comparison.formula} formulas)"
    # Below 100 columns one space between columns: every number whole, the words whole.
    table = Table(title=escape(title), box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False,
                  padding=(0, 1) if console.width >= 100 else (0, 0))
    rows: list[tuple[list[str], bool]] = []
    short = short_sequence_names(list(comparison.sequences))
    blocks = [(short[name], r) for name, r in comparison.sequences.items()] + [("macro", comparison.macro)]
    gaps: dict[tuple[str, str], list[str]] = {}  # (metric, reason) -> rows where n/a
    flags: dict[str, list[str]] = {}  # flag -> metrics it marks
    undefined: list[str] = []
    for label, r in blocks:
        bold = label == "macro"
        for k, (metric, m) in enumerate(r.metrics.items()):
            if metric == RESOLVED:
                va, vb = _count(r.resolved_a, r.tasks, m.a, bold), _count(r.resolved_b, r.tasks, m.b, bold)
                test = f"b={r.mcnemar.b} c={r.mcnemar.c} p={_p(r.mcnemar.p_value)}"
            else:
                # An unmeasured value is a convention (F = 0 without a re-test): n/a, as `swecl metrics` prints it.
                va = "n/a" if m.unmeasured_a else _num(m.a)
                vb = "n/a" if m.unmeasured_b else _num(m.b)
                test = ""
            if m.na and m.diff is None:
                diff, ci = "n/a", ""
                gaps.setdefault((metric, m.na), []).append(label)
            else:
                diff = _signed(m.diff) + (_FLAG if m.flags else "")
                ci = f"[{_signed(m.ci[0])}, {_signed(m.ci[1])}]" if m.ci else "n/a"
                if m.ci is None:
                    gaps.setdefault((metric, m.na or "no interval"), []).append(label)
            for flag in m.flags:
                flags.setdefault(flag, [])
                if metric not in flags[flag]:
                    flags[flag].append(metric)
            if m.undefined_resamples and m.ci is not None:
                undefined.append(f"{label} {metric}: interval over {comparison.resamples - m.undefined_resamples} "
                                 f"of {comparison.resamples} resamples (the others hold no term of {metric})")
            cells = [escape(label) if k == 0 else "", marked(_LABELS[metric]), va, vb, diff, ci, test]
            if bold:
                cells = [f"[bold]{c}[/bold]" if c else c for c in cells]
            rows.append((cells, k == len(r.metrics) - 1))
    headers = ["sequence", "metric", "A", "B", "B - A", f"{comparison.confidence:.0%} CI",
               "test" if comparison.grouped else "McNemar"]
    plain = [[Text.from_markup(c).plain for c in cells] for cells, _ in rows]
    for i, header in enumerate(headers):
        widest = max([len(header), *(len(r[i]) for r in plain)])
        if i == 0:  # fold, never ellipsis: a long sequence name wraps rather than losing characters
            table.add_column(header, overflow="fold", min_width=max(len(w) for r in plain for w in [header, *r[0].split()]))
        elif i == len(headers) - 1:  # the test's b=, c=, p= wrap at their spaces below 100 columns
            table.add_column(header, min_width=max(len(w) for r in plain for w in [header, *r[i].split()]))
        else:
            table.add_column(header, justify="right" if 2 <= i <= 5 else "left", no_wrap=True, width=widest)
    for cells, end in rows:
        table.add_row(*cells, end_section=end)
    console.print(table)
    for line in _notes(comparison, blocks, gaps, flags, undefined, assessment, short, costs or {}):
        # Wrapped to the table's own 100 columns even when piped (the console is then 200 wide).
        console.print(textwrap.fill(line, width=min(console.width, 100), subsequent_indent="  "), markup=False,
                      highlight=False)


def _notes(comparison: Comparison, blocks: list[Any], gaps: dict[Any, list[str]], flags: dict[str, list[str]],
           undefined: list[str], assessment: Assessment | None, short: Any, costs: dict[str, Any]) -> list[str]:
    """The lines under the table: the direction legend, the gain and efficiency, what is
    n/a and why, the flags, the method and both runs' cost per solved task."""
    every = len(blocks)
    gains = ", ".join(f"{label}={_num(r.gain)}" for label, r in blocks)
    lines = [f"{LEGEND} (of B - A too: F↓ means B forgetting less is a negative difference)",
             f"normalized gain of B over A, (B - A) / (1 - A) of the initial-pass resolve rates: {gains} "
             "(n/a where A resolved every task)" + ("" if assessment is None else
                                                    f"; macro 95% bootstrap CI {_interval(assessment.gain_macro_ci)}")]
    if assessment is not None:
        lines.append(efficiency_line("B, A as the base", assessment.efficiency, short))
    for (metric, reason), where in gaps.items():
        scope = "" if len(where) == every else f" in {', '.join(where)}"
        lines.append(f"{metric} n/a{scope}: {reason}")
    for flag, metrics in flags.items():
        lines.append(f"{_FLAG} {', '.join(metrics)}: {flag}")
    lines.extend(undefined)
    lines.extend(comparison.notes)
    lines.append(_method_line(comparison))
    lines.extend(cost_lines(comparison, costs))
    return lines


def _method_line(comparison: Comparison) -> str:
    """How the intervals and the test were made."""
    if comparison.grouped:
        return (f"A: {', '.join(comparison.runs_a)}; B: {', '.join(comparison.runs_b)}. Each side is the mean of "
                f"its runs. B - A with a paired bootstrap {comparison.confidence:.0%} interval over tasks "
                f"({comparison.resamples} resamples, seed {comparison.seed}), every run on the same draw and each "
                "group's runs averaged; macro: each sequence resampled. Test: exact stratified permutation test "
                "(McNemar's when one run per side), b = tasks A's runs resolved more often, c = B's; the macro "
                "row pools every task.")
    return (f"B - A with a paired bootstrap {comparison.confidence:.0%} interval over tasks "
            f"({comparison.resamples} resamples, seed {comparison.seed}; macro: each sequence resampled). "
            "McNemar: exact, b = tasks only A resolved, c = only B; the macro row pools every task.")


def _interval(ci: tuple[float, float] | None) -> str:
    return "n/a" if ci is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def cost_lines(comparison: Comparison, costs: dict[str, RunCost]) -> list[str]:
    """A's and B's cost per solved task side by side, and B - A where both are defined."""
    a, b = comparison.a, comparison.b
    if a.version not in costs or b.version not in costs:
        return []
    ca, cb = costs[a.version], costs[b.version]
    lines = [cost_line(f"A = {a.label}", ca), cost_line(f"B = {b.label}", cb)]
    rows = [("$", ca.run.usd_per_solved, cb.run.usd_per_solved, True),
            ("tokens", ca.run.tokens_per_solved, cb.run.tokens_per_solved, False)]
    if ca.total_run is not None or cb.total_run is not None:  # a memory server's model calls: with them too
        ta, tb = ca.total_run or ca.run, cb.total_run or cb.run
        rows += [("total $ (agents and memory)", ta.usd_per_solved, tb.usd_per_solved, True)]
    diffs = [f"{what} {_signed_any(y - x, money)}" for what, x, y, money in rows if x is not None and y is not None]
    lines.append("cost per solved task, B - A: " + (", ".join(diffs) if diffs else
                                                    "n/a (not reported, or nothing solved, in A or B)"))
    return lines


def _signed_any(value: float, money: bool) -> str:
    return f"{value + 0.0:+.4f}" if money else f"{value + 0.0:+,.0f}"


def _count(resolved: float, tasks: int, rate: float | None, macro: bool) -> str:
    """A sequence's resolved rate as X/N; the macro's as its rate (a mean of the sequences'
    rates, not X/N pooled) with the pooled count beside it."""
    count = f"{resolved:g}" if isinstance(resolved, float) else str(resolved)  # a group's is a mean
    return f"{_num(rate)} {count}/{tasks}" if macro else f"{count}/{tasks}"
