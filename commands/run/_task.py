"""One attempt at one task of one pass: the events, in the order docs/design.md section 1 gives.

task.started -> (the agent recalls: memory.recalled) -> agent.finished -> grade.finished
-> task.finished together with what the daydream decided to remember, in one durable
batch: a task is either finished with its memories or not finished at all, so a crash
never leaves a finished task whose lessons are lost, nor lessons of an abandoned attempt.
"""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
import tempfile
import threading
import time
import traceback
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

import agents
from agents import Agent, AgentInput, AgentResult, Budget, RecallService
from agents import Egress, Scrubber
from commands.inputs import Sequence, Task
from commands.memory import GradingSecrets, TaskView, patch_facts, plan_daydream
from graders import EnvSpec, Grader, GradeRequest, RepoCache, Sandbox, apply_check
from ledger import Event, Ledger, NewEvent, SweclError, event_id_for
from ledger.patches import patch_paths
from ledger.events import (
    AgentEgress, GradeFinished, GradeStatus, MemorySuperseded, MemoryWritten, TaskAbandoned, TaskFinished, TaskStarted,
)
from projections import INVALID_STATUSES, retest_row

from .._failpoints import failpoint
from ._halt import Halt
from ._progress import Reporter, TaskProgress
from ._provider_memory import ProviderRecall, write_arguments
from ._stages import Stage

# Agent exits that say the agent could not work at all (no key): the run stops so the
# user can fix it, and the attempt is abandoned, to be redone on resume. Every other exit
# (max turns, timeout, a crash of the agent) is graded on whatever patch it left: that
# is the agent's result, good or bad.
STOPPING_EXITS = frozenset({"auth_failed"})
# Attempts in a row whose agent could not run (agent_error: its process never started or
# died before any model call, or the adapter raised) after which the run stops: the
# agent's installation is broken, and the rest of the sequence would fail the same way.
AGENT_ERRORS_TO_STOP = 3


class AgentUnavailable(SweclError):
    """The agent cannot run here (e.g. not logged in); the run stops, resumable."""


class BlobCollector:
    """Collects blobs for the batch that refers to them: one transaction for both."""

    def __init__(self) -> None:
        self.blobs: list[bytes] = []

    def __call__(self, data: bytes | str) -> str:
        # surrogateescape: a patch or transcript with bytes that are not UTF-8 is kept exactly.
        raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
        self.blobs.append(raw)
        return hashlib.sha256(raw).hexdigest()


@dataclass
class SequenceContext:
    """What every task of one sequence in one run shares."""

    ledger: Ledger
    version: str
    stage: Stage
    sequence: Sequence
    agent: Agent
    agent_name: str
    grader: Grader
    grader_name: str
    repos: RepoCache
    reporter: Reporter
    model: str | None
    code_mode: str
    budget: Budget
    builtin_dir: Path | None = None
    sandbox: Sandbox | None = None  # where the agent runs (the grader has its own)
    allow_hosts: tuple[str, ...] = ()  # --allow-host: reachable by a sandboxed agent beside its API
    allow_web: bool = False  # --allow-web: the agents' own web tools stay on
    progress: dict[str, tuple[int, int]] = field(default_factory=dict)  # pass -> (done, resolved)
    unscored: dict[str, int] = field(default_factory=dict)  # pass -> done with no valid verdict
    task_jobs: int = 1  # workers for the tasks that may run at once (see _schedule)
    # With several workers: one environment's tasks in turn on one worker (grading only,
    # where the test run is the whole task), rather than task by task (an agent's run dominates).
    group_by_environment: bool = False
    # guards `progress` when tasks run in threads (each thread has its own ledger connection)
    lock: threading.Lock = field(default_factory=threading.Lock)
    builtin_seen: dict[str, tuple[str, str]] = field(default_factory=dict)  # path -> (item id, sha256)
    # Set when the run is interrupted while tasks run in worker threads: Ctrl-C reaches the
    # agents and test runs too, and what they return then is no result. An attempt that
    # sees it records nothing more; the resume abandons and redoes it, as in a serial run.
    halt: Halt | None = None
    # instance -> PASS_TO_PASS tests `swecl validate` found failing here with and without the fix
    p2p_excluded: dict[str, list[str]] = field(default_factory=dict)
    agent_errors_in_a_row: int = 0  # guarded by `lock`; see AGENT_ERRORS_TO_STOP
    # --memory-server: the sequence's provider hosts (a `SequenceProviders`), in place of
    # swecl's substrate; None otherwise.
    providers: Any = None
    # `swecl counterfactual`: memory items the recall of this context's tasks leaves out.
    hidden: frozenset[str] = frozenset()
    budget_usd: float | None = None  # the run's --budget-usd (as a resume last raised it); see _budget

    @property
    def stream(self) -> str:
        return f"run/{self.version}/{self.sequence.id}"

    def append(self, events: list[Event | NewEvent], *, blobs: list[bytes] = (), durable: bool = False) -> None:  # type: ignore[assignment]
        self.ledger.append(self.stream, events, blobs=blobs, durable=durable)

    def ids(self, task: Task, pass_: str, attempt: int, kind: str) -> str:
        """Deterministic event ids: a retried append of the same decision is a no-op."""
        return event_id_for(self.version, self.sequence.id, pass_, task.order, attempt, kind)


def environment_spec(task: Task) -> EnvSpec | None:
    if task.environment is None:
        return None
    try:
        return msgspec.convert(task.environment, EnvSpec)
    except msgspec.ValidationError as exc:
        raise SweclError(f"task {task.instance_id!r}: environment: {exc}") from None


def abandon(ctx: SequenceContext, task: Task, pass_: str, attempt: int, reason: str) -> None:
    ctx.append(
        [
            NewEvent(
                TaskAbandoned(
                    sequence_id=ctx.sequence.id, instance_id=task.instance_id, order=task.order, pass_=pass_,
                    attempt=attempt, reason=reason,
                ),
                ctx.ids(task, pass_, attempt, "task.abandoned"),
            )
        ],
        durable=True,
    )


def run_attempt(ctx: SequenceContext, task: Task, pass_: str, attempt: int,
                cost_cap: float | None = None) -> TaskFinished:
    """`cost_cap`: what is left of the run's --budget-usd, the most this attempt may
    spend where its agent takes a cost limit (claude, mini-swe-agent)."""
    seq = ctx.sequence
    memory_on = ctx.stage.plugin and pass_ != "baseline"
    # Started before the task is: a server that cannot start fails the run, not a task.
    host = ctx.providers.host_for(ctx.ledger, pass_) if ctx.providers is not None and memory_on else None
    failures_before = len(host.failures) if host is not None else 0
    head = ctx.ledger.head()
    started = ctx.ledger.append(
        ctx.stream,
        [
            NewEvent(
                TaskStarted(
                    sequence_id=seq.id, instance_id=task.instance_id, repo=task.repo, order=task.order,
                    pass_=pass_, attempt=attempt, difficulty=task.difficulty,
                ),
                ctx.ids(task, pass_, attempt, "task.started"),
            )
        ],
    )
    if started[0].seq <= head:
        # The ids of this attempt are taken: running it would file its events under an
        # earlier attempt's (each a silent no-op). Never expected; refuse rather than lose.
        raise SweclError(
            f"task {task.instance_id!r} ({pass_}): attempt {attempt} is recorded already; "
            "nothing was run (run `swecl verify` and report this)"
        )
    with ctx.lock:
        done, resolved_so_far = ctx.progress.get(pass_, (0, 0))
        unscored = ctx.unscored.get(pass_, 0)
    total = task_count(ctx, pass_)
    ctx.reporter.task_started(
        TaskProgress(ctx.version, seq.id, pass_, task.order, total, task.instance_id,
                     resolved_so_far=resolved_so_far, done_so_far=done, unscored_so_far=unscored)
    )

    egress = Egress(allow_hosts=ctx.allow_hosts, allow_web=ctx.allow_web)
    budget = ctx.budget
    if cost_cap is not None:
        cap = cost_cap if budget.max_cost_usd is None else min(budget.max_cost_usd, cost_cap)
        budget = dataclasses.replace(budget, max_cost_usd=cap)
    result, failure = _run_agent(ctx, task, pass_, attempt, memory_on, egress, host, budget)
    _unless_halted(ctx)
    collect = BlobCollector()
    agent_event = result.to_event(
        collect, agent=ctx.agent_name, sequence_id=seq.id, instance_id=task.instance_id, order=task.order,
        pass_=pass_, attempt=attempt,
    )
    if over_token_limit(result, ctx.budget.max_tokens):
        # Seen after the attempt (an agent ended at the limit, exit max_tokens, passed it too):
        # recorded as the agent's attempt at the limit, graded on the patch it left, like a timeout.
        agent_event = msgspec.structs.replace(agent_event, over_limit="tokens")
        ctx.reporter.note(f"{task.instance_id} ({pass_}): over --max-tokens-per-task {ctx.budget.max_tokens} "
                          f"({token_total(result.tokens)} tokens)")
    elif over_turn_limit(result, ctx.budget.max_turns):
        # An agent held to no turn limit of its own (codex, a command) that made more model
        # calls than --max-turns: said and recorded, graded as it is.
        agent_event = msgspec.structs.replace(agent_event, over_limit="turns")
        ctx.reporter.note(f"{task.instance_id} ({pass_}): over --max-turns {ctx.budget.max_turns} "
                          f"({result.turns} model calls)")
    agent_events = [NewEvent(agent_event, ctx.ids(task, pass_, attempt, "agent.finished"))]
    if egress.proxied:  # the agent ran in its own network namespace: what it reached, and what not
        agent_events.append(NewEvent(AgentEgress(
            sequence_id=seq.id, instance_id=task.instance_id, order=task.order, pass_=pass_, attempt=attempt,
            allowed_hosts=egress.allowed, connections=list(egress.connections),
        ), ctx.ids(task, pass_, attempt, "agent.egress")))
    ctx.append(agent_events, blobs=collect.blobs)
    failpoint("agent.finished")

    if result.exit in STOPPING_EXITS:
        abandon(ctx, task, pass_, attempt, f"agent {result.exit}")
        raise AgentUnavailable(
            f"the {ctx.agent_name} agent could not run ({result.exit}: {result.error or 'no detail'}); "
            f"fix it and continue with `swecl run --resume {ctx.version}`"
        )

    if failure == GradeStatus.AGENT_ERROR.value:
        # Said as it happens: not scored, so the resolve rate alone would not show it.
        ctx.reporter.note(f"{task.instance_id} ({pass_}): agent_error, not scored: {result.error or 'no detail'}")
    with ctx.lock:
        if failure == GradeStatus.AGENT_ERROR.value:
            ctx.agent_errors_in_a_row += 1
        elif failure is None:
            ctx.agent_errors_in_a_row = 0
        stop = ctx.agent_errors_in_a_row >= AGENT_ERRORS_TO_STOP
    if stop:
        # This attempt is redone on resume, as an interrupted one; the ones before it stay
        # recorded as agent_error (not scored).
        abandon(ctx, task, pass_, attempt, "agent could not run")
        raise AgentUnavailable(
            f"the {ctx.agent_name} agent could not run in {AGENT_ERRORS_TO_STOP} attempts in a row "
            f"(last: {result.error or 'no detail'}); fix it and continue with `swecl run --resume {ctx.version}`"
        )

    if failure is not None:
        # Our adapter broke (agent_error) or the task's checkout could not be made
        # (infra_error), not the agent: no verdict, reported as missing, never a failure.
        grade = GradeFinished(
            sequence_id=seq.id, instance_id=task.instance_id, order=task.order, pass_=pass_, attempt=attempt,
            grader=ctx.grader_name, status=failure, resolved=None, error=result.error,
        )
        grade_blobs: list[bytes] = []
    else:
        grade, grade_blobs = _grade(ctx, task, pass_, attempt, result.patch)
    server_failed = False
    if host is not None:
        if pass_ == "initial" and failure is None and len(host.failures) == failures_before:
            provider_write(ctx, host, task, attempt, result.patch, grade.status)
        server_failed = len(host.failures) > failures_before
        if server_failed:
            # The memory under test failed during the task (a crash, a hang, garbage): what
            # the agent did is no measure of it, and never its 0.
            why = host.failures[-1].message
            ctx.reporter.note(f"{task.instance_id} ({pass_}): infra_error, not scored: {why}")
            grade = GradeFinished(
                sequence_id=seq.id, instance_id=task.instance_id, order=task.order, pass_=pass_, attempt=attempt,
                grader=ctx.grader_name, status=GradeStatus.INFRA_ERROR.value, resolved=None,
                error=_scrubbed(f"memory server: {why}"),
            )
            grade_blobs = []
    _unless_halted(ctx)
    ctx.append([NewEvent(grade, ctx.ids(task, pass_, attempt, "grade.finished"))], blobs=grade_blobs)
    failpoint("grade.finished")

    finished = TaskFinished(
        sequence_id=seq.id, instance_id=task.instance_id, order=task.order, pass_=pass_, attempt=attempt,
        resolved=grade.resolved, status=grade.status,
    )
    batch: list[Event | NewEvent] = [NewEvent(finished, ctx.ids(task, pass_, attempt, "task.finished"))]
    memory_blobs: list[bytes] = []
    if server_failed:
        # What a failing server left is no state of the memory: no snapshot, and the next
        # task starts a fresh server on the last one (the memory as the last task that
        # finished with a working server left it).
        ctx.providers.discard()
    elif host is not None and pass_ == "initial":
        # The provider is the memory: no lessons of swecl's own; its data directory as the
        # task left it (no call runs meanwhile), atomic with the task's finish.
        with host.idle():
            manifest = agents.snapshot_provider_data(ctx.ledger, host.data_dir)
        batch.append(NewEvent(agents.provider_snapshot_event(
            manifest, sequence_id=seq.id, instance_id=task.instance_id, order=task.order, pass_=pass_,
            attempt=attempt), ctx.ids(task, pass_, attempt, "provider.snapshot")))
    elif memory_on and pass_ == "initial":
        lessons, memory_blobs = plan_daydream(
            ctx.version,
            TaskView(
                instance_id=task.instance_id, repo=task.repo, order=task.order, sequence_id=seq.id,
                issue=task.problem_statement or "", pass_=pass_, attempt=attempt,
            ),
            patch=result.patch or None,
            status=grade.status,
            resolved=grade.resolved,
            transcript=result.transcript,
            secrets=GradingSecrets(
                test_patch=task.test_patch or "", fail_to_pass=tuple(task.fail_to_pass or ()),
                pass_to_pass=tuple(task.pass_to_pass or ()),
            ),
        )
        batch.extend(lessons)
    if ctx.stage.memory_mode == "builtin" and pass_ == "initial" and result.memory_files:
        batch.extend(builtin_memory_events(ctx, task, attempt, result.memory_files))
    ctx.append(batch, blobs=memory_blobs, durable=True)
    failpoint("task.finished")

    with ctx.lock:  # tasks finish in any order when they run at once
        done, resolved_so_far = ctx.progress.get(pass_, (0, 0))
        ok = 1 if grade.resolved else 0
        ctx.progress[pass_] = (done + 1, resolved_so_far + ok)
        ctx.unscored[pass_] = unscored = ctx.unscored.get(pass_, 0) + (grade.status in INVALID_STATUSES)
    ctx.reporter.task_finished(
        TaskProgress(ctx.version, seq.id, pass_, task.order, total, task.instance_id, status=grade.status,
                     resolved=grade.resolved, resolved_so_far=resolved_so_far + ok, done_so_far=done + 1,
                     unscored_so_far=unscored)
    )
    return finished


class Halted(Exception):
    """The run was interrupted while this attempt ran in a worker thread."""


def _unless_halted(ctx: SequenceContext) -> None:
    if ctx.halt is not None and ctx.halt.is_set():
        raise Halted("interrupted")


def builtin_memory_events(ctx: SequenceContext, task: Task, attempt: int, files: dict[str, str]) -> list[NewEvent]:
    """The agent's native memory files after a task, as memory events: new or changed
    files are written; a changed file supersedes its previous version. The agent reads
    these files itself; recording them makes the builtin stage auditable like the others."""
    events: list[NewEvent] = []
    for path, text in sorted(files.items()):
        digest = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()
        previous = ctx.builtin_seen.get(path)
        if previous is not None and previous[1] == digest:
            continue
        key = f"{ctx.version}\x1f{ctx.sequence.id}\x1f{path}\x1f{digest}".encode("utf-8", "surrogateescape")
        item_id = "builtin-" + hashlib.sha256(key).hexdigest()[:20]
        events.append(
            NewEvent(
                MemoryWritten(
                    item_id=item_id, kind="builtin-file", title=path, body=text[:20000], repo=task.repo,
                    source_run=ctx.version, sequence_id=ctx.sequence.id, source_instance=task.instance_id,
                    source_order=task.order, source_pass="initial", extractor="builtin", tags=[f"sha256:{digest}"],
                ),
                ctx.ids(task, "initial", attempt, f"builtin:{path}"),
            )
        )
        if previous is not None:
            events.append(
                NewEvent(
                    MemorySuperseded(item_id=previous[0], by=item_id, reason=f"{path} changed"),
                    ctx.ids(task, "initial", attempt, f"builtin-superseded:{path}"),
                )
            )
        ctx.builtin_seen[path] = (item_id, digest)
    return events


def task_count(ctx: SequenceContext, pass_: str) -> int:
    row = retest_row(pass_)
    return len(ctx.sequence.tasks) if row is None else row


def provider_write(ctx: SequenceContext, host: Any, task: Task, attempt: int, patch: str | None, status: str) -> None:
    """The write policy: what the task taught, to the provider's write tool (recorded
    with via write). The patch goes without its test-file hunks, as the daydream's."""
    policy = ctx.providers.policy
    if policy.write_tool is None:
        return
    test_files = patch_paths(task.test_patch) if task.test_patch else []
    facts = patch_facts(patch or None, drop=test_files)
    args = write_arguments(policy, instance_id=task.instance_id, repo=task.repo, order=task.order, outcome=status,
                           files=list(facts.files), patch=facts.kept_patch or "")
    context = agents.CallContext(sequence_id=ctx.sequence.id, instance_id=task.instance_id, order=task.order,
                                 pass_="initial", attempt=attempt, via="write")
    host.call(context, policy.write_tool, args)


def token_total(tokens: dict[str, int]) -> int:
    """The tokens an attempt is limited by: its reported input and output (cache reads,
    which a CLI may count by the million, are not)."""
    return int(tokens.get("input", 0)) + int(tokens.get("output", 0))


def over_token_limit(result: AgentResult, max_tokens: int | None) -> bool:
    return max_tokens is not None and token_total(result.tokens) > max_tokens


def over_turn_limit(result: AgentResult, max_turns: int | None) -> bool:
    """More model calls than `max_turns`, by an attempt not already ended at that limit."""
    return (max_turns is not None and result.exit != "max_turns" and result.turns is not None
            and result.turns > max_turns)


def _run_agent(
    ctx: SequenceContext, task: Task, pass_: str, attempt: int, memory_on: bool, egress: Egress | None = None,
    host: Any = None, budget: Budget | None = None,
) -> tuple[AgentResult, str | None]:
    """The agent's result, and the status when the harness (not the agent) failed:
    `infra_error` when the task's checkout could not be made (a clone or fetch that
    fails, a commit missing from the mirror), `agent_error` when the adapter broke or
    its process did not run (`AgentResult.not_started`)."""
    started = time.monotonic()
    recall = None
    try:
        with tempfile.TemporaryDirectory(prefix="swecl-task-") as scratch, ExitStack() as stack:
            try:
                # Not a worktree of the mirror: that holds every later commit, this task's fix
                # and tests among them. The agent's checkout holds the base commit's history only.
                # An agent that replays a known patch (oracle, predictions) needs only the
                # files it touches: a sparse checkout, not the whole tree of a large repository.
                replayed = getattr(ctx.agent, "replayed_paths", None)
                only = replayed(task.instance_id, pass_, ctx.stage.name) if replayed is not None else None
                workdir = stack.enter_context(ctx.repos.agent_checkout(task.repo, task.base_commit, only=only))
            except (SweclError, OSError) as exc:
                error = f"checkout of {task.repo}@{task.base_commit[:12]} failed: {exc}"
                return AgentResult(exit="error", error=_scrubbed(error), duration_s=time.monotonic() - started), "infra_error"
            if host is not None:
                context = agents.CallContext(sequence_id=ctx.sequence.id, instance_id=task.instance_id,
                                             order=task.order, pass_=pass_, attempt=attempt)
                door = stack.enter_context(host.door(Path(scratch) / "provider", context))
                provider = ProviderRecall(host, door, ctx.providers.policy, context, task.repo)
            elif memory_on:
                recall = RecallService(
                    ctx.ledger, ctx.version, ctx.sequence.id, pass_, task.order, task.instance_id, attempt, task.repo,
                    hidden=ctx.hidden,
                )
            inp = AgentInput(
                instance_id=task.instance_id,
                repo=task.repo,
                issue=task.problem_statement or "",
                hints=task.hints_text,
                worktree=workdir,
                scratch_dir=Path(scratch),
                base_commit=task.base_commit,
                recall=recall if host is None else provider,
                budget=budget or ctx.budget,
                model=ctx.model,
                code_mode=ctx.code_mode,  # type: ignore[arg-type]
                prompt_style=ctx.stage.prompt_style if memory_on else "plain",  # type: ignore[arg-type]
                stage=ctx.stage.name,
                memory_mode=ctx.stage.memory_mode if pass_ != "baseline" else "off",
                pass_=pass_,
                memory_dir=builtin_memory_for(ctx.builtin_dir, pass_, Path(scratch))
                if ctx.stage.memory_mode == "builtin" else None,
                apply_check=lambda patch, _wt=workdir: apply_check(_wt, patch),
                sandbox=ctx.sandbox,
                egress=egress,
            )
            result = ctx.agent.run(inp)
            # The adapter's evidence that its process never ran or reached no model.
            return result, GradeStatus.AGENT_ERROR.value if result.not_started else None
    except SweclError as exc:
        # The message and traceback may quote what the adapter read (its environment
        # among it): recorded scrubbed, like an adapter's own result.
        return AgentResult(exit="error", error=_scrubbed(str(exc)), duration_s=time.monotonic() - started), GradeStatus.AGENT_ERROR.value
    except Exception as exc:  # an adapter bug must not take the run down or pass as a result
        detail = traceback.format_exc(limit=5)
        return AgentResult(
            exit="error", error=_scrubbed(f"the agent adapter raised {exc!r}"),
            duration_s=time.monotonic() - started, transcript=_scrubbed(detail).encode(),
        ), GradeStatus.AGENT_ERROR.value
    finally:
        if recall is not None:
            recall.close()


def builtin_memory_for(builtin_dir: Path | None, pass_: str, scratch: Path) -> Path | None:
    """The native memory folder the builtin stage's agent gets for a task of `pass_`.

    The initial pass works in the sequence's own folder, kept from task to task. A re-test
    measures what the initial pass left: it gets a copy of the folder as it stands, in the
    task's scratch space, so what the agent writes during a re-test never reaches the
    initial pass's later tasks nor the next re-test. The baseline pass has no memory."""
    if builtin_dir is None or pass_ == "baseline":
        return None
    if pass_ == "initial":
        return builtin_dir
    frozen = scratch / "builtin-memory"
    if builtin_dir.is_dir():
        shutil.copytree(builtin_dir, frozen, symlinks=True)
    else:
        frozen.mkdir(parents=True)
    return frozen


def _scrubbed(text: str) -> str:
    return Scrubber().text(text)


def _grade(ctx: SequenceContext, task: Task, pass_: str, attempt: int, patch: str) -> tuple[GradeFinished, list[bytes]]:
    request = GradeRequest(
        instance_id=task.instance_id,
        repo=task.repo,
        version=task.version,
        base_commit=task.base_commit,
        model_patch=patch,
        test_patch=task.test_patch or "",
        fail_to_pass=list(task.fail_to_pass or ()),
        pass_to_pass=list(task.pass_to_pass or ()),
        p2p_excluded=list(ctx.p2p_excluded.get(task.instance_id, ())),
        environment=environment_spec(task),
        gold_patch=task.patch,
        environment_setup_commit=task.environment_setup_commit,
    )
    outcome = ctx.grader.grade(request)
    # Set-up and test commands print what they like, environment values included.
    scrubber = Scrubber()
    collect = BlobCollector()
    log_ref = collect(scrubber.bytes(outcome.log)) if outcome.log else None
    event = GradeFinished(
        sequence_id=ctx.sequence.id,
        instance_id=task.instance_id,
        order=task.order,
        pass_=pass_,
        attempt=attempt,
        grader=outcome.grader or ctx.grader_name,
        status=outcome.status,
        resolved=outcome.resolved,
        applied_with=outcome.applied_with,
        test_files_reverted=list(outcome.test_files_reverted),
        f2p=dict(outcome.f2p),
        p2p=dict(outcome.p2p),
        tests=dict(outcome.tests),
        log=log_ref,
        test_exit_code=outcome.test_exit_code,
        test_cmd=list(outcome.test_cmd),
        duration_s=outcome.duration_s,
        env_key=outcome.env_key,
        error=scrubber.optional(outcome.error),
        similarity=outcome.similarity,
        parser=outcome.parser,
        p2p_excluded=list(outcome.p2p_excluded),
        channel_overrides=dict(outcome.channel_overrides),
        timings=dict(outcome.timings),
    )
    return event, collect.blobs


def describe(task: Task) -> dict[str, Any]:
    return {"instance_id": task.instance_id, "order": task.order, "repo": task.repo}
