"""`swecl run`: the main job."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import msgspec

from commands.run import (
    DEMO_SUITE, EXECUTORS, STAGES, BudgetOptions, ExecutionOptions, MemoryOptions, ResumeOverrides, RunOptions,
    SandboxOptions, make_reporter,
)
from graders.host import SANDBOX_MODES
from ledger import SweclError

from ._estimate import print_estimate
from ._common import experiment_of, parse_python_paths, parse_repo_sources, results_option, run_version
from ._grouped import print_grouped_table
from ._metrics import print_metrics_table, print_not_gradeable

if TYPE_CHECKING:
    from commands import RunsSummary


@click.command("run")
@results_option
@click.option("--stage", type=click.Choice(sorted(STAGES)), default=None,
              help=f"Stage of the matrix to run (default: the demo suite {', '.join(DEMO_SUITE)}).")
@click.option("--sequence", "sequences", multiple=True, metavar="ID", help="Sequence to run (repeatable; default: all).")
@click.option("--instance", "instances", multiple=True, metavar="ID", help="Only this task (repeatable).")
@click.option("--dataset", default=None, metavar="X", help="Curriculum/manifest JSON, rows file, or hf:NAME (default: the built-in demo).")
@click.option("--rows", default=None, metavar="FILE", help="SWE-bench rows that complete a manifest (JSON, JSONL, parquet, hf:NAME).")
@click.option("--agent", default="demo", show_default=True, metavar="NAME", help="Agent (see `swecl agents`).")
@click.option("--model", default=None, metavar="M", help="Model for the agent (claude: haiku-4-5, sonnet-4-6, opus-4-8, or a full name).")
@click.option("--grader", default="swebench", show_default=True, metavar="NAME", help="swebench, local, auto, overlap or none.")
@click.option("--version", default=None, metavar="SLUG", help="Run version to create (default: the next number).")
@click.option("--source-memory", default=None, metavar="PATH|VERSION[@SEQ]", help="Seed for plugin-accum / plugin-dreamed.")
@click.option("--passes", default=None, metavar="LIST", help="Comma-separated subset of initial,retest,baseline.")
@click.option("--retest-every", type=int, default=None, metavar="K", help="Also re-test tasks 1..i after every K-th task.")
@click.option("--jobs", type=int, default=1, show_default=True, metavar="N",
              help="Sequences run in parallel processes (with --executor ray: at most N sequence jobs at once).")
@click.option("--task-jobs", type=int, default=None, metavar="N",
              help="Tasks of one sequence at once (default 1): the re-test and baseline passes and --retest-every "
                   "rows run on N workers beside the ordered initial pass, each task in its own worktree slot.")
@click.option("--max-turns", type=int, default=50, show_default=True,
              help="Agent turns (model calls) per task: claude, gemini and mini-swe-agent take the limit, "
                   "opencode is ended at it, codex and a command are checked after the attempt.")
@click.option("--task-timeout", "--agent-timeout", "agent_timeout", type=float, default=1800.0, show_default=True,
              metavar="S", help="Seconds per agent attempt: the agent is ended there, and its patch graded.")
@click.option("--budget-usd", type=float, default=None, metavar="X",
              help="Cost budget of the run in USD, over its agents' reported costs: the run stops after the task "
                   "that reaches it (exit 3), resumable with --resume V --budget-usd LARGER.")
@click.option("--max-tokens-per-task", type=int, default=None, metavar="N",
              help="Input + output tokens per task: claude and opencode are ended once they report more "
                   "(exit max_tokens); any attempt over it is recorded as over the limit. Its patch is graded.")
@click.option("--test-timeout", type=float, default=1800.0, show_default=True, metavar="S", help="Seconds per test run.")
@click.option("--code-mode", type=click.Choice(["agentic", "blind"]), default="agentic", show_default=True,
              help="agentic: the agent works in the repository with its tools; "
                   "blind: no tools but recall, it answers with a unified diff.")
@click.option("--predictions", multiple=True, metavar="[PASS=]FILE", help="Predictions JSONL for --agent predictions.")
@click.option("--command", "command_template", default=None, metavar="TEMPLATE", help="Command for --agent command.")
@click.option("--repo-source", "repo_sources", multiple=True, metavar="OWNER/NAME=PATH_OR_URL", help="Where to clone a repo from.")
@click.option("--python", "pythons", multiple=True, metavar="VERSION=PATH", help="Interpreter to use for a Python version.")
@click.option("--cache-dir", default=None, metavar="DIR", help="Repository and environment cache (default: $SWECL_CACHE or ~/.cache/swecl).")
@click.option("--resume", default=None, metavar="VERSION", callback=run_version,
              help="Continue an interrupted run where it stopped; with the demo suite or --repeat, "
                   "the rest of that invocation too.")
@click.option("--executor", type=click.Choice(EXECUTORS), default=None,
              help="Where sequences run: local (this machine, default) or ray (one job per sequence on a Ray cluster).")
@click.option("--ray-address", default=None, metavar="ADDR",
              help="Ray cluster to use: HOST:PORT, auto, or local (default: $RAY_ADDRESS, else this node's cluster, else a new local one).")
@click.option("--shard-dir", default=None, metavar="DIR",
              help="With --executor ray: pass ledger snapshots and shards as files in DIR, a folder the driver and every node share (default: through Ray's object store).")
@click.option("--ray-cpus", type=float, default=None, metavar="N", help="With --executor ray: CPUs each sequence job asks for (default 1).")
@click.option("--max-retries", type=int, default=None, metavar="N",
              help="With --executor ray: times a failed sequence job is retried from what it delivered (default 2).")
@click.option("--sandbox", type=click.Choice(SANDBOX_MODES), default="bwrap", envvar="SWECL_SANDBOX", show_default=True,
              help="Where agents and tests run: bwrap (bubblewrap: only the system's directories, the program's "
                   "own install and the task's checkout, read-only but for the checkout; private /tmp and HOME; "
                   "own PID namespace) or none (unconfined, recorded on the run). "
                   "Default from $SWECL_SANDBOX.")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="HOST[:PORT]",
              help="Let sandboxed agents reach HOST (any port, or just PORT) beside their model API; repeatable. "
                   "Everything else is refused and recorded.")
@click.option("--expose", "expose", multiple=True, metavar="PATH",
              help="Let sandboxed agents see PATH too, read-only (a tool they call); repeatable and recorded. "
                   "They see the system, their own install and their checkout, nothing else of the host.")
@click.option("--allow-web", is_flag=True,
              help="Leave the agents' own web tools on (claude's WebFetch and WebSearch, codex's web search, "
                   "gemini's google_web_search and web_fetch): off by default, a search finds a task's fix upstream.")
@click.option("--memory-server", default=None, metavar="SPEC|NAME",
              help="A user's MCP memory server as the memory under test (memory stages): a command line (stdio), "
                   "an http(s) URL, or a preset's NAME (`swecl memory servers`). Started per sequence outside the "
                   "agent's sandbox; every call recorded. Without tool flags or preset, its tools are proposed "
                   "from its tool list.")
@click.option("--memory-env", multiple=True, metavar="NAME=VALUE",
              help="A variable for the --memory-server command ({data}: its data directory, snapshotted after "
                   "each task); repeatable. Only the names are recorded: --resume of such a run takes them again.")
@click.option("--memory-model-endpoint", default=None, metavar="URL",
              help="The memory server's own model API (OpenAI-compatible, e.g. https://api.openai.com/v1): "
                   "swecl's recording gateway forwards to it; the server gets the gateway's URL as "
                   "{model_gateway} in a --memory-env value. Every model call recorded, priced and counted.")
@click.option("--memory-allow-host", "memory_allow_hosts", multiple=True, metavar="HOST[:PORT]",
              help="Let a sandboxed memory server reach HOST (any port, or just PORT) beside the model gateway; "
                   "repeatable. Everything else is refused.")
@click.option("--memory-recall-tool", default=None, metavar="NAME",
              help="The server's tool swecl calls before each task for the agent's recall (the demo agent, "
                   "plugin-primed's notes).")
@click.option("--memory-recall-args", default=None, metavar="JSON",
              help='Its arguments: a JSON template with {query} (the issue text), {repo}, {instance_id} '
                   '(default {"query": "{query}"}).')
@click.option("--memory-write-tool", default=None, metavar="NAME",
              help="The server's tool swecl calls after each initial-pass task with what the task taught.")
@click.option("--memory-write-args", default=None, metavar="JSON",
              help="Its arguments: a JSON template with {instance_id}, {repo}, {order}, {outcome}, {files}, "
                   "{summary}, {patch}, {lesson} (default for create_entities: one entity per task).")
@click.option("--memory-agent-only", is_flag=True,
              help="With --memory-server: swecl calls none of its tools (no recall, no write, no discovery); "
                   "the agent alone uses them.")
@click.option("--memory-dream-tool", default=None, metavar="NAME",
              help="plugin-dreamed: the server's consolidation tool, called once per sequence on the seed before "
                   "the initial pass (its dream pass), then snapshotted.")
@click.option("--memory-dream-args", default=None, metavar="JSON",
              help="Its arguments: a JSON template with {sequence_id} (default {}).")
@click.option("--memory-call-timeout", type=float, default=60.0, show_default=True, metavar="S",
              help="Seconds a memory server call may take; a call over it makes the task infra_error.")
@click.option("--history-tokens", type=int, default=None, metavar="N",
              help="full-history: the most tokens (characters / 4) the earlier tasks may take in a prompt, most "
                   "recent first; an entry that does not fit is left out and counted (default 8000).")
@click.option("--repeat", type=click.IntRange(1, 100), default=1, show_default=True, metavar="K",
              help="Run each requested stage K times, each repeat its own run version, recorded as one group "
                   "(`swecl metrics --group`, `swecl compare --group`, `swecl report --group` show mean and 95% CI).")
@click.option("--order", "task_order", default=None, metavar="permute:SEED|reverse|FILE",
              help="Run each sequence in another order than the dataset's: a seeded shuffle, reversed, or the "
                   "order a FILE lists (a JSON list or whitespace-separated instance ids: every task run, each once). "
                   "Recorded with the run; its metrics follow it.")
@click.option("--orders", type=click.IntRange(1, 100), default=None, metavar="N",
              help="Run each requested stage in N seeded orders (permute:1 .. permute:N), each its own run "
                   "version, recorded as one group (`swecl metrics --group`: each metric's spread over the orders).")
@click.option("--fork", "fork", default=None, metavar="V@K",
              help="A new run whose initial pass takes run V's tasks before order K as they were (referenced, not "
                   "re-run) and runs from K on, its memory as V's stood before K; the options given here replace "
                   "V's, the others are V's. One K applies to each sequence.")
@click.option("--dream-at-fork", is_flag=True, help="With --fork: a dream pass over the forked memory before task K.")
@click.option("--estimate", is_flag=True,
              help="Run nothing: check the options as a run would, then print the attempts per stage and pass and "
                   "the wall time, tokens and dollars they would take, from this folder's recorded runs of the "
                   "agent and model (else a documented table). Writes nothing.")
@click.option("--quiet", is_flag=True, help="No progress display.")
@click.option("--json", "as_json", is_flag=True, help="Progress and the summary as JSON lines (with --estimate: the estimate as one document).")
@click.pass_context
def run_cmd(ctx: click.Context, stage: str | None, sequences: tuple[str, ...], instances: tuple[str, ...],
            dataset: str | None, rows: str | None, agent: str, model: str | None, grader: str, version: str | None,
            source_memory: str | None, passes: str | None, retest_every: int | None, jobs: int, task_jobs: int | None,
            max_turns: int,
            agent_timeout: float, budget_usd: float | None, max_tokens_per_task: int | None, test_timeout: float, code_mode: str, predictions: tuple[str, ...],
            command_template: str | None, repo_sources: tuple[str, ...], pythons: tuple[str, ...],
            cache_dir: str | None, resume: str | None, executor: str | None, ray_address: str | None,
            shard_dir: str | None, ray_cpus: float | None, max_retries: int | None, sandbox: str,
            allow_hosts: tuple[str, ...], expose: tuple[str, ...], allow_web: bool, memory_server: str | None,
            memory_env: tuple[str, ...], memory_model_endpoint: str | None, memory_allow_hosts: tuple[str, ...],
            memory_recall_tool: str | None, memory_recall_args: str | None, memory_write_tool: str | None,
            memory_write_args: str | None, memory_agent_only: bool, memory_dream_tool: str | None, memory_dream_args: str | None,
            memory_call_timeout: float, history_tokens: int | None, repeat: int, task_order: str | None, orders: int | None, fork: str | None,
            dream_at_fork: bool, estimate: bool, quiet: bool, as_json: bool) -> None:
    """Run a stage of the stage matrix over sequences, task by task, in three passes.

    With no arguments: the built-in demo benchmark end to end (stages base,
    plugin-blank, plugin-accum and plugin-dreamed, each its own run version), then the
    CL metrics table. Passes: initial (memory on, in order), retest (every task again
    with the end-of-sequence memory), baseline (memory off). Interrupted runs continue
    with --resume VERSION: no task lost or repeated. A run of the demo suite or of
    --repeat K continues with the rest of its invocation: the runs that never began start.
    """
    exp = experiment_of(ctx)
    placement = _executor_options(executor, ray_address, shard_dir, ray_cpus, max_retries, resuming=resume is not None)
    if estimate and (resume is not None or fork is not None):
        raise SweclError(f"--estimate prices a new run; {'--resume' if resume is not None else '--fork'} continues "
                         "or forks a recorded one: drop one of them")
    reporter = make_reporter(quiet=True, as_json=False) if estimate else make_reporter(quiet=quiet, as_json=as_json)
    try:
        _refuse_misplaced(resume=resume, fork=fork, dream_at_fork=dream_at_fork,
                          ordered=task_order is not None or orders is not None,
                          token_limit=max_tokens_per_task is not None)
        if resume is not None:
            done = exp.resume(resume, reporter, ResumeOverrides(
                jobs=jobs if jobs != 1 else None, task_jobs=task_jobs, executor=placement, budget_usd=budget_usd,
                memory_server=memory_server, memory_env=tuple(memory_env)), repeat=repeat)
        else:
            opts = RunOptions(
                stage=stage or DEMO_SUITE[0], dataset=dataset, rows=rows, sequences=list(sequences),
                instances=list(instances), agent=agent, model=model, grader=grader, version=version,
                source_memory=source_memory, passes=passes.split(",") if passes else [], retest_every=retest_every,
                code_mode=code_mode, predictions=list(predictions), command=command_template,
                repo_sources=parse_repo_sources(repo_sources), cache_dir=str(Path(cache_dir).resolve()) if cache_dir else None,
                python_paths=parse_python_paths(pythons), order=task_order, orders=orders,
                memory=_memory_options(MemoryOptions(
                    server=memory_server, env=list(memory_env), recall_tool=memory_recall_tool,
                    recall_args=memory_recall_args, write_tool=memory_write_tool, write_args=memory_write_args,
                    dream_tool=memory_dream_tool, dream_args=memory_dream_args, call_timeout_s=memory_call_timeout,
                    model_endpoint=memory_model_endpoint, allow_hosts=list(memory_allow_hosts),
                    history_tokens=history_tokens, tools_from="agent" if memory_agent_only else None), sandbox),
                budget=BudgetOptions(usd=budget_usd, max_tokens_per_task=max_tokens_per_task, max_turns=max_turns,
                                     agent_timeout_s=agent_timeout, test_timeout_s=test_timeout),
                sandbox=SandboxOptions(mode=sandbox, allow_hosts=list(allow_hosts), allow_web=allow_web,
                                       expose=[os.path.abspath(p) for p in expose]),
                execution=ExecutionOptions(jobs=jobs, task_jobs=1 if task_jobs is None else task_jobs, **placement),
            )
            if estimate:
                print_estimate(exp.estimate(opts, repeat=repeat, demo_suite=stage is None).document(), as_json=as_json)
                return
            if fork is not None:
                given = _given_options(ctx, opts)
                forked = exp.check_fork(fork, {**given, "dream_at_fork": dream_at_fork}, repeat=repeat)
                warn_if_unconfined(forked.sandbox.mode)
                done = exp.fork(fork, reporter, repeat=repeat, **given, dream_at_fork=dream_at_fork)
            else:
                exp.check_run(opts, repeat=repeat, demo_suite=stage is None)  # refused before the warning
                opts = _discovered_tools(opts)
                warn_if_unconfined(opts.sandbox.mode)
                # Typed or not: the CLI's default --jobs 1 reads the same as a typed one.
                typed = ctx.get_parameter_source("jobs") not in (None, click.core.ParameterSource.DEFAULT)
                done = exp.run(opts, reporter, repeat=repeat, demo_suite=stage is None,
                               workers_given=typed or task_jobs is not None)
    finally:
        reporter.close()
    _print_summary(exp.run_summary(done.versions, grouped=done.grouped), quiet=quiet, as_json=as_json)


def _refuse_misplaced(*, resume: str | None, fork: str | None, dream_at_fork: bool, ordered: bool,
                      token_limit: bool) -> None:
    """Options that do not go together, refused in one line (inside the reporter's
    `try`, as they always were, so its close still runs)."""
    if fork is not None and resume is not None:
        raise SweclError("--fork starts a new run; --resume continues one: give one of them")
    if dream_at_fork and fork is None:
        raise SweclError("--dream-at-fork dreams at the fork point: add --fork V@K")
    if resume is not None and ordered:
        raise SweclError("--resume continues a run in its recorded order: drop --order/--orders")
    if resume is not None and token_limit:
        raise SweclError("--resume continues a run with its own limits: drop --max-tokens-per-task")


def _memory_options(memory: MemoryOptions, sandbox: str) -> MemoryOptions:
    """--memory-server NAME (a preset) as the options it stands for, said on stderr."""
    from commands.run.memory import expand_preset  # lazy: a run without --memory-server never loads it

    expanded, said = expand_preset(memory, confined=sandbox != "none")
    if said:
        click.echo(said, err=True)
    return expanded


def _discovered_tools(opts: RunOptions) -> RunOptions:
    """A --memory-server given no tools (flags or preset): its recall and write tools from
    its own tool list (the server started once, before anything is written), said on stderr."""
    if opts.memory.server is None:
        return opts
    from commands.run.memory import discover_tools  # lazy: starts the MCP client only when needed

    found, said = discover_tools(opts)
    if said:
        click.echo(said, err=True)
    return found


# `swecl run` parameters whose RunOptions field has another name (a fork takes the given ones).
_FIELD_OF = {"agent_timeout": "agent_timeout_s", "test_timeout": "test_timeout_s", "command_template": "command",
             "pythons": "python_paths", "memory_call_timeout": "memory_call_timeout_s", "task_order": "order",
             "ray_cpus": "ray_num_cpus"}


def _given_options(ctx: click.Context, opts: RunOptions) -> dict[str, Any]:
    """The RunOptions fields this command line sets (a fork takes these, and V's others)."""
    given: dict[str, Any] = {}
    recorded = opts.flat()
    for name in ctx.params:
        field = _FIELD_OF.get(name, name)
        source = ctx.get_parameter_source(name)
        if field in ("fork", "dream_at_fork") or field not in RunOptions.field_names():
            continue
        if source is not None and source is not click.core.ParameterSource.DEFAULT:
            given[field] = recorded[field]
    return given


def warn_if_unconfined(sandbox: str) -> None:
    """`--sandbox none` is said on stderr before anything runs (and recorded with the options)."""
    if sandbox == "none":
        click.echo("swecl: warning: --sandbox none: agents and tests run unconfined (they can read the cache and "
                   "write outside their worktree, and agents have the host's network); the run records it", err=True)


def _executor_options(executor: str | None, ray_address: str | None, shard_dir: str | None,
                      ray_cpus: float | None, max_retries: int | None, *, resuming: bool) -> dict[str, Any]:
    """The executor options given on this command line (a resume keeps the others)."""
    given: dict[str, Any] = {}
    if executor is not None:
        given["executor"] = executor
    if ray_address is not None:
        given["ray_address"] = ray_address
    if shard_dir is not None:
        given["shard_dir"] = str(Path(shard_dir).resolve())
    if ray_cpus is not None:
        given["ray_num_cpus"] = ray_cpus
    if max_retries is not None:
        given["max_retries"] = max_retries
    local = executor == "local" or (executor is None and not resuming)
    ray_only = [flag for flag, key in (("--ray-cpus", "ray_num_cpus"), ("--max-retries", "max_retries")) if key in given]
    if local and ray_only:
        raise SweclError(f"{ray_only[0]} is for --executor ray; add --executor ray or drop {ray_only[0]}")
    return given


def _print_summary(summary: RunsSummary, *, quiet: bool, as_json: bool) -> None:
    if as_json:
        click.echo(msgspec.json.encode(summary.document()).decode())
        return
    print_metrics_table(summary.found, leakage=summary.leakage, integrity=summary.integrity, gains=summary.gains,
                        assessments=summary.assessments, costs=summary.costs)
    print_not_gradeable(summary.found)
    if summary.groups:
        print_grouped_table(summary.groups)
    if not quiet:
        click.echo(f"ledger:  {summary.ledger}")
        stages = summary.stages
        for v, said in summary.on_disk.items():
            click.echo(f"run {v} ({stages.get(v, '?')}): {said}")
        click.echo("next:    swecl runs · swecl metrics --formula eval-v1 · swecl report --out report/")
