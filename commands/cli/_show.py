"""`swecl show [VERSION] TASK`: with a run version, one attempt of a task whole (grade
and per-test results, recalled memory, the agent's final message and numbers, the full
patch, the test log's tail), optionally written out as files; with a task alone, the
benchmark task itself (`_inputs.show_cmd`)."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

import click

from ._common import PassParam, echo_json, experiment_of, results_option, run_version
from ._funnel import print_task_funnel
from ._inputs import show_cmd as task_show_cmd
from ._tables import prose_width

if TYPE_CHECKING:  # imported when the command runs, not at `swecl --help`
    from projections.funnel import RunFunnel
    from projections.show import AttemptShow

LOG_TAIL = 60


@click.command("show")
@results_option
@click.argument("first", metavar="[VERSION]")
@click.argument("second", required=False, metavar="TASK")
@click.option("--pass", "pass_", type=PassParam(), default=None, metavar="P",
              help="With VERSION: the pass whose attempt to show (default: initial).")
@click.option("--files", "files_dir", default=None, metavar="DIR",
              help="With VERSION: also write patch.diff, test_output.txt, report.json, memory_recalled.json "
                   "and the transcript (transcript.jsonl, or .txt when not JSON lines) into DIR, and print their paths.")
@click.option("--tail", "tail", type=click.IntRange(min=0), default=LOG_TAIL, show_default=True, metavar="N",
              help="With VERSION: how many last lines of the test log to print (the whole log: --files or --json).")
@click.option("--dataset", default=None, metavar="X",
              help="Without VERSION: curriculum/manifest JSON, rows file, or hf:NAME (default: the built-in demo).")
@click.option("--rows", default=None, metavar="FILE", help="Without VERSION: SWE-bench rows that complete a manifest.")
@click.option("--json", "as_json", is_flag=True,
              help="One JSON object: with VERSION every field of the attempt, full texts included (patch, log, "
                   "transcript, prompt); without, every field of the benchmark task.")
@click.pass_context
def show_cmd(ctx: click.Context, first: str, second: str | None, pass_: str | None, files_dir: str | None, tail: int,
             dataset: str | None, rows: str | None, as_json: bool) -> None:
    """Why a task of a run passed or failed, or (TASK alone) a task of the benchmark.

    `swecl show VERSION TASK`: the attempt of TASK (an instance id, SEQ#ORDER such as
    spans#4, or #ORDER in a one-sequence run) that counts in the pass: its grade with every FAIL_TO_PASS and
    PASS_TO_PASS test and its result (failing ones first), the integrity flags of the patch
    (library code reaching into the test machinery: never a verdict, where to look), the
    memory items it recalled (in a --memory-server run: each call to the memory server, by
    the agent or swecl's recall and write, with what it asked and got), the agent's final
    message, turns, tokens and cost, the agent's
    full patch, and the last lines of the test log. --files DIR writes them all out in full.

    `swecl show TASK` (instance id or SEQ#ORDER): one task of a benchmark, what is missing to run it, and its issue text.
    """
    if second is None:
        used = [flag for flag, value in (("--pass", pass_), ("--files", files_dir)) if value is not None]
        if tail != LOG_TAIL:
            used.append("--tail")
        if used:
            raise click.UsageError(f"{', '.join(used)}: only for a run's attempt (swecl show VERSION TASK)")
        ctx.invoke(task_show_cmd, task_id=first, dataset=dataset, rows=rows, as_json=as_json)
        return
    if dataset is not None or rows is not None:
        raise click.UsageError("--dataset and --rows are for a benchmark task (swecl show TASK), not a run's attempt")
    version = run_version(ctx, None, first)  # type: ignore[arg-type]
    result = experiment_of(ctx).show(version, second, pass_=pass_ or "initial", files_dir=files_dir)
    if as_json:
        echo_json(result.document())
        return
    _print(result.shown, tail, files_dir is not None, result.funnel)
    if result.written:
        click.echo("")
        click.echo(f"written to {files_dir}:")
        for path in result.written:
            click.echo(f"  {path}")


def _section(title: str) -> None:
    click.echo("")
    click.echo(f"== {title} " + "=" * max(0, 70 - len(title)))


def _print(shown: AttemptShow, tail: int, wrote_files: bool, funnel: RunFunnel | None) -> None:
    """The attempt as `swecl show` prints it: a heading, then one section per part."""
    _print_heading(shown)
    _print_outcome(shown)
    _print_memory(shown)
    print_task_funnel(shown, funnel)
    _print_sandbox_and_agent(shown)
    _print_patch(shown)
    _print_test_output(shown, tail, wrote_files)


def _print_heading(shown: AttemptShow) -> None:
    from projections import task_heading

    click.echo(f"{task_heading(shown.sequence_id, shown.order, shown.instance_id)}  "
               f"(task {shown.order} of {shown.sequence_id}, {shown.repo})")
    attempts = f"attempt {shown.attempt}" + (f" of {len(shown.attempts)}" if len(shown.attempts) > 1 else "")
    click.echo(f"run v{shown.version} ({shown.stage}"
               + (f", memory server {shown.memory_server}" if shown.memory_server else "")
               + f", agent {shown.agent}{', model ' + shown.model if shown.model else ''}), "
               f"pass {shown.pass_}, {attempts}: {shown.status}"
               + (f" ({shown.abandon_reason})" if shown.abandon_reason else ""))


def _print_outcome(shown: AttemptShow) -> None:
    _section("outcome")
    verdict = {True: "RESOLVED", False: "NOT RESOLVED", None: "no verdict"}[shown.resolved]
    click.echo(f"{verdict}: status {shown.grade_status or '-'}"
               + (f", grader {shown.grader}" if shown.grader else "")
               + (" (corrected by a regrade)" if shown.corrected else "")
               + (f", test exit code {shown.test_exit_code}" if shown.test_exit_code is not None else ""))
    if shown.grade_error:
        click.echo(f"error: {shown.grade_error}")
    if shown.tests:
        counted = [t for t in shown.tests if not t.excluded]
        failed = [t for t in counted if not t.passed]
        click.echo(f"{len(counted) - len(failed)}/{len(counted)} listed tests pass; failing: {len(failed)}")
        for t in shown.tests:
            mark = "excluded" if t.excluded else ("ok" if t.passed else "FAIL")
            click.echo(f"  {mark:<8} {t.kind:<12} {t.result:<8} {t.name}")
    else:
        click.echo("no per-test results recorded")
    for flag in shown.integrity_flags:
        # Beside the verdict, never changing it: where a reader should look.
        click.echo(f"integrity flag {flag.kind}: {flag.detail}")


def _print_memory(shown: AttemptShow) -> None:
    """The items the attempt recalled and, in a --memory-server run, its calls to the server."""
    from projections.show import model_call_line, provider_call_line  # lazy: as above

    _section("recalled memory")
    if shown.history is not None:
        h = shown.history
        click.echo(f"the prompt carried {len(h.entries)} earlier task(s), about {h.tokens} of {h.budget} tokens"
                   + (f"; {h.dropped} left out by the budget" if h.dropped else "") + " (full-history)")
        for instance_id in h.entries:
            click.echo(f"  {instance_id}")
    elif not shown.recalls:
        click.echo("none")
    for r in shown.recalls:
        if not r.known:
            click.echo(f"  #{r.rank} {r.item_id} (score {r.score:.3f}): not in this run's substrate")
            continue
        origin = f"from {r.source_instance}" + (f" in v{r.source_run}" if r.source_run else "") if r.source_instance else ""
        # within min(terminal, 100) columns: the item's line wraps, its body's start is cut
        click.echo(textwrap.fill(f"#{r.rank} {r.item_id} (score {r.score:.3f}, {r.outcome or '?'}"
                                 f"{', ' + origin if origin else ''}): {r.title or ''}", width=prose_width(),
                                 initial_indent="  ", subsequent_indent="      "))
        if r.short:
            click.echo("      " + textwrap.shorten(r.short, width=prose_width() - 6, placeholder="..."))

    if shown.memory_server is not None:
        _section(f"memory server calls ({shown.memory_server})")
        if not shown.provider_calls:
            click.echo("none")
        for c in shown.provider_calls:
            click.echo(f"  {provider_call_line(c)}")
            click.echo(f"      asked: {c.arguments if c.arguments is not None else '(not recorded)'}")
            click.echo(f"      got:   {c.result if c.result is not None else '(not recorded)'}")
        if shown.model_calls:
            _section("the memory server's own model calls (through swecl's gateway)")
            for m in shown.model_calls:
                click.echo(f"  {model_call_line(m)}")


def _print_sandbox_and_agent(shown: AttemptShow) -> None:
    """What the sandbox showed, the agent's numbers and final message, and its network."""
    from projections.show import agent_numbers, egress_lines, visible_lines  # lazy: as above

    _section("what the sandbox showed")
    for who, title in (("agent", "the agent"), ("tests", "the tests")):
        click.echo(f"{title}:")
        for line in visible_lines(shown.visible, who):
            click.echo(f"  {line}")

    _section("agent")
    click.echo(", ".join(agent_numbers(shown)))
    if shown.agent_error:
        click.echo(f"error: {shown.agent_error}")
    click.echo("final message:" + (f"\n{shown.final_message.rstrip()}" if shown.final_message else " (none recorded)"))

    _section("network (the agent's egress)")
    for line in egress_lines(shown):
        click.echo(line)


def _print_patch(shown: AttemptShow) -> None:
    _section("patch (the agent's diff)")
    if shown.patch:
        click.echo(shown.patch.rstrip("\n"))
    else:
        click.echo("(no patch recorded)" if not shown.patch_blob else "(empty)" if shown.patch is not None
                   else f"(blob {shown.patch_blob[:12]} is missing from the ledger; run `swecl verify`)")


def _print_test_output(shown: AttemptShow, tail: int, wrote_files: bool) -> None:
    from projections.show import tail_lines  # lazy: as above

    _section("test output")
    if shown.log is None:
        click.echo("(no test log recorded)")
        return
    lines, total = tail_lines(shown.log, tail)
    if total > len(lines):
        click.echo(f"(last {len(lines)} of {total} lines)")
    for line in lines:
        click.echo(line)
    if total > len(lines) and not wrote_files:
        click.echo(f"(the whole log: swecl show {shown.version} {shown.instance_id} --pass {shown.pass_} --files DIR, "
                   "then DIR/test_output.txt; or --tail N)")
