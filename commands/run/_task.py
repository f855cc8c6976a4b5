"""One attempt at one task of one pass: the events, in the order docs/design.md section 1 gives.

task.started -> (the agent recalls: memory.recalled) -> agent.finished -> grade.finished
-> task.finished together with what the daydream decided to remember, in one durable
batch: a task is either finished with its memories or not finished at all, so a crash
never leaves a finished task whose lessons are lost, nor lessons of an abandoned attempt.
"""

from __future__ import annotations

import dataclasses
import hashlib
import tempfile
import time
import traceback
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from agents import Agent, AgentInput, AgentResult, Budget, Egress, Scrubber
from commands.inputs import Sequence, Task
from graders import EnvSpec, Grader, GradeRequest, apply_check
from graders.host import RepoCache, Sandbox
from ledger import Event, Ledger, NewEvent, SweclError, event_id_for
from ledger.errors import AgentUnavailable
from ledger.events import (
    AgentEgress, GradeFinished, GradeStatus, TaskAbandoned, TaskFinished, TaskStarted,
)
from projections import retest_row

from .._failpoints import failpoint
from ._halt import Halt
from ._progress import Reporter, TaskProgress
from ._stages import Stage
from ._tally import SequenceTally
from .memory import SequenceMemory, TaskMemory

# Agent exits that say the agent could not work at all (no key): the run stops so the
# user can fix it, and the attempt is abandoned, to be redone on resume. Every other exit
# (max turns, timeout, a crash of the agent) is graded on whatever patch it left: that
# is the agent's result, good or bad.
STOPPING_EXITS = frozenset({"auth_failed"})
# Attempts in a row whose agent could not run (agent_error: its process never started or
# died before any model call, or the adapter raised) after which the run stops: the
# agent's installation is broken, and the rest of the sequence would fail the same way.
AGENT_ERRORS_TO_STOP = 3


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
    sandbox: Sandbox | None = None  # where the agent runs (the grader has its own)
    allow_hosts: tuple[str, ...] = ()  # --allow-host: reachable by a sandboxed agent beside its API
    allow_web: bool = False  # --allow-web: the agents' own web tools stay on
    task_jobs: int = 1  # workers for the tasks that may run at once (see _schedule)
    # With several workers: one environment's tasks in turn on one worker (grading only,
    # where the test run is the whole task), rather than task by task (an agent's run dominates).
    group_by_environment: bool = False
    # What the sequence's tasks have done so far here (counts under a lock: tasks may run in
    # threads, each with its own ledger connection).
    tally: SequenceTally = field(default_factory=SequenceTally)
    # Set when the run is interrupted while tasks run in worker threads: Ctrl-C reaches the
    # agents and test runs too, and what they return then is no result. An attempt that
    # sees it records nothing more; the resume abandons and redoes it, as in a serial run.
    halt: Halt | None = None
    # instance -> PASS_TO_PASS tests `swecl validate` found failing here with and without the fix
    p2p_excluded: dict[str, list[str]] = field(default_factory=dict)
    # The sequence's memory (`memory.SequenceMemory`): what each task's agent gets of it and
    # what the task leaves in it. The base: none.
    memory: SequenceMemory = field(default_factory=lambda: SequenceMemory(None))  # type: ignore[arg-type]
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
    # Started before the task is: a memory that cannot start fails the run, not a task.
    with ctx.memory.task(task, pass_, attempt) as memory:
        return _attempt(ctx, task, pass_, attempt, memory, cost_cap)


def _attempt(ctx: SequenceContext, task: Task, pass_: str, attempt: int, memory: TaskMemory,
             cost_cap: float | None) -> TaskFinished:
    _start(ctx, task, pass_, attempt)
    egress = Egress(allow_hosts=ctx.allow_hosts, allow_web=ctx.allow_web)
    result, failure = _run_agent(ctx, task, pass_, attempt, memory, egress, _budget_of(ctx.budget, cost_cap))
    _unless_halted(ctx)
    _append_agent(ctx, task, pass_, attempt, result, egress)
    _stop_if_unavailable(ctx, task, pass_, attempt, result, failure)
    if failure is not None:
        # Our adapter broke (agent_error) or the task's checkout could not be made
        # (infra_error), not the agent: no verdict, reported as missing, never a failure.
        grade, grade_blobs = unscored_grade(ctx, task, pass_, attempt, failure, result.error), []
    else:
        grade, grade_blobs = _grade(ctx, task, pass_, attempt, result.patch)
    memory_failed = memory.after_grade(task, result, grade, failure)
    if memory_failed is not None:
        # The memory under test failed during the task (a crash, a hang, garbage): what
        # the agent did is no measure of it, and never its 0.
        ctx.reporter.note(f"{task.instance_id} ({pass_}): infra_error, not scored: {memory_failed}")
        grade = unscored_grade(ctx, task, pass_, attempt, GradeStatus.INFRA_ERROR.value, _scrubbed(memory_failed))
        grade_blobs = []
    _unless_halted(ctx)
    ctx.append([NewEvent(grade, ctx.ids(task, pass_, attempt, "grade.finished"))], blobs=grade_blobs)
    failpoint("grade.finished")

    finished = TaskFinished(
        sequence_id=ctx.sequence.id, instance_id=task.instance_id, order=task.order, pass_=pass_, attempt=attempt,
        resolved=grade.resolved, status=grade.status,
    )
    lessons, memory_blobs = memory.finish(task, result, grade, lambda kind: ctx.ids(task, pass_, attempt, kind))
    batch: list[Event | NewEvent] = [NewEvent(finished, ctx.ids(task, pass_, attempt, "task.finished")), *lessons]
    ctx.append(batch, blobs=memory_blobs, durable=True)
    failpoint("task.finished")
    _report_finished(ctx, task, pass_, grade)
    return finished


def _start(ctx: SequenceContext, task: Task, pass_: str, attempt: int) -> None:
    """task.started, and the task said to the reporter."""
    head = ctx.ledger.head()
    started = ctx.ledger.append(ctx.stream, [NewEvent(
        TaskStarted(sequence_id=ctx.sequence.id, instance_id=task.instance_id, repo=task.repo, order=task.order,
                    pass_=pass_, attempt=attempt, difficulty=task.difficulty),
        ctx.ids(task, pass_, attempt, "task.started"))])
    if started[0].seq <= head:
        # The ids of this attempt are taken: running it would file its events under an
        # earlier attempt's (each a silent no-op). Never expected; refuse rather than lose.
        raise SweclError(
            f"task {task.instance_id!r} ({pass_}): attempt {attempt} is recorded already; "
            "nothing was run (run `swecl verify` and report this)"
        )
    done, resolved_so_far, unscored = ctx.tally.so_far(pass_)
    ctx.reporter.task_started(
        TaskProgress(ctx.version, ctx.sequence.id, pass_, task.order, task_count(ctx, pass_), task.instance_id,
                     resolved_so_far=resolved_so_far, done_so_far=done, unscored_so_far=unscored)
    )


def _budget_of(budget: Budget, cost_cap: float | None) -> Budget:
    if cost_cap is None:
        return budget
    cap = cost_cap if budget.max_cost_usd is None else min(budget.max_cost_usd, cost_cap)
    return dataclasses.replace(budget, max_cost_usd=cap)


def agent_events(ctx: SequenceContext, task: Task, pass_: str, attempt: int, result: AgentResult,
                 egress: Egress) -> tuple[list[NewEvent], list[bytes], list[str]]:
    """What the attempt's agent did, as events (with their blobs), and the notes to say:
    decided from the result, appended by the caller."""
    collect = BlobCollector()
    event = result.to_event(collect, agent=ctx.agent_name, sequence_id=ctx.sequence.id, instance_id=task.instance_id,
                            order=task.order, pass_=pass_, attempt=attempt)
    notes: list[str] = []
    if over_token_limit(result, ctx.budget.max_tokens):
        # Seen after the attempt (an agent ended at the limit, exit max_tokens, passed it too):
        # recorded as the agent's attempt at the limit, graded on the patch it left, like a timeout.
        event = msgspec.structs.replace(event, over_limit="tokens")
        notes.append(f"{task.instance_id} ({pass_}): over --max-tokens-per-task {ctx.budget.max_tokens} "
                     f"({token_total(result.tokens)} tokens)")
    elif over_turn_limit(result, ctx.budget.max_turns):
        # An agent held to no turn limit of its own (codex, a command) that made more model
        # calls than --max-turns: said and recorded, graded as it is.
        event = msgspec.structs.replace(event, over_limit="turns")
        notes.append(f"{task.instance_id} ({pass_}): over --max-turns {ctx.budget.max_turns} "
                     f"({result.turns} model calls)")
    events = [NewEvent(event, ctx.ids(task, pass_, attempt, "agent.finished"))]
    if egress.proxied:  # the agent ran in its own network namespace: what it reached, and what not
        events.append(NewEvent(AgentEgress(
            sequence_id=ctx.sequence.id, instance_id=task.instance_id, order=task.order, pass_=pass_, attempt=attempt,
            allowed_hosts=egress.allowed, connections=list(egress.connections),
        ), ctx.ids(task, pass_, attempt, "agent.egress")))
    return events, collect.blobs, notes


def _append_agent(ctx: SequenceContext, task: Task, pass_: str, attempt: int, result: AgentResult,
                  egress: Egress) -> None:
    events, blobs, notes = agent_events(ctx, task, pass_, attempt, result, egress)
    for note in notes:
        ctx.reporter.note(note)
    ctx.append(events, blobs=blobs)
    failpoint("agent.finished")


def _stop_if_unavailable(ctx: SequenceContext, task: Task, pass_: str, attempt: int, result: AgentResult,
                         failure: str | None) -> None:
    """The run stops, this attempt abandoned (redone on resume), when the agent cannot
    work at all (no key) or could not run in AGENT_ERRORS_TO_STOP attempts in a row."""
    if result.exit in STOPPING_EXITS:
        abandon(ctx, task, pass_, attempt, f"agent {result.exit}")
        raise AgentUnavailable(
            f"the {ctx.agent_name} agent could not run ({result.exit}: {result.error or 'no detail'}); "
            f"fix it and continue with `swecl run --resume {ctx.version}`"
        )
    if failure == GradeStatus.AGENT_ERROR.value:
        # Said as it happens: not scored, so the resolve rate alone would not show it.
        ctx.reporter.note(f"{task.instance_id} ({pass_}): agent_error, not scored: {result.error or 'no detail'}")
    stop = ctx.tally.agent_attempt(failure, GradeStatus.AGENT_ERROR.value) >= AGENT_ERRORS_TO_STOP
    if stop:
        # This attempt is redone on resume, as an interrupted one; the ones before it stay
        # recorded as agent_error (not scored).
        abandon(ctx, task, pass_, attempt, "agent could not run")
        raise AgentUnavailable(
            f"the {ctx.agent_name} agent could not run in {AGENT_ERRORS_TO_STOP} attempts in a row "
            f"(last: {result.error or 'no detail'}); fix it and continue with `swecl run --resume {ctx.version}`"
        )


def unscored_grade(ctx: SequenceContext, task: Task, pass_: str, attempt: int, status: str,
                   error: str | None) -> GradeFinished:
    """A grade with no verdict: the harness, not the agent, failed (`status` says how)."""
    return GradeFinished(
        sequence_id=ctx.sequence.id, instance_id=task.instance_id, order=task.order, pass_=pass_, attempt=attempt,
        grader=ctx.grader_name, status=status, resolved=None, error=error,
    )


def _report_finished(ctx: SequenceContext, task: Task, pass_: str, grade: GradeFinished) -> None:
    # Tasks finish in any order when they run at once: the counts come from the tally.
    done, resolved_so_far, unscored = ctx.tally.finished(pass_, grade.resolved, grade.status)
    ctx.reporter.task_finished(
        TaskProgress(ctx.version, ctx.sequence.id, pass_, task.order, task_count(ctx, pass_), task.instance_id,
                     status=grade.status, resolved=grade.resolved, resolved_so_far=resolved_so_far,
                     done_so_far=done, unscored_so_far=unscored)
    )


class Halted(Exception):
    """The run was interrupted while this attempt ran in a worker thread."""


def _unless_halted(ctx: SequenceContext) -> None:
    if ctx.halt is not None and ctx.halt.is_set():
        raise Halted("interrupted")


def task_count(ctx: SequenceContext, pass_: str) -> int:
    row = retest_row(pass_)
    return len(ctx.sequence.tasks) if row is None else row


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


def _run_agent(ctx: SequenceContext, task: Task, pass_: str, attempt: int, memory: TaskMemory, egress: Egress,
               budget: Budget) -> tuple[AgentResult, str | None]:
    """The agent's result, and the status when the harness (not the agent) failed:
    `infra_error` when the task's checkout could not be made (a clone or fetch that
    fails, a commit missing from the mirror), `agent_error` when the adapter broke or
    its process did not run (`AgentResult.not_started`)."""
    started = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix="swecl-task-") as scratch, ExitStack() as stack:
            try:
                workdir = stack.enter_context(_checkout(ctx, task, pass_))
            except (SweclError, OSError) as exc:
                error = f"checkout of {task.repo}@{task.base_commit[:12]} failed: {exc}"
                return AgentResult(exit="error", error=_scrubbed(error), duration_s=time.monotonic() - started), "infra_error"
            given = memory.for_agent(stack, Path(scratch))
            inp = AgentInput(
                instance_id=task.instance_id, repo=task.repo, issue=task.problem_statement or "", hints=task.hints_text,
                worktree=workdir, scratch_dir=Path(scratch), base_commit=task.base_commit,
                recall=given.recall, prompt_style=given.prompt_style,  # type: ignore[arg-type]
                memory_dir=given.memory_dir, history=given.history,
                budget=budget, model=ctx.model, code_mode=ctx.code_mode,  # type: ignore[arg-type]
                stage=ctx.stage.name, pass_=pass_,
                apply_check=lambda patch, _wt=workdir: apply_check(_wt, patch),
                sandbox=ctx.sandbox, egress=egress,
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


def _checkout(ctx: SequenceContext, task: Task, pass_: str) -> Any:
    """The agent's checkout. Not a worktree of the mirror: that holds every later commit,
    this task's fix and tests among them; the agent's holds the base commit's history
    only. An agent that replays a known patch (oracle, predictions) needs only the files
    it touches: a sparse checkout, not the whole tree of a large repository."""
    replayed = getattr(ctx.agent, "replayed_paths", None)
    only = replayed(task.instance_id, pass_, ctx.stage.name) if replayed is not None else None
    return ctx.repos.agent_checkout(task.repo, task.base_commit, only=only)


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
