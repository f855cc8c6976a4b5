"""One attempt of one task, whole: why it passed or failed.

`show_attempt(ledger, version, task_id, pass_=...)` gathers, for the attempt of the task
that counts in pass `pass_` (the latest, as the a(i,j) cell takes it), its grade with each
FAIL_TO_PASS and PASS_TO_PASS test (failing ones first), the memory items it recalled,
the agent's numbers and final message, the integrity flags of its patch
(`projections.audit.integrity_flags`), the calls it made to a `--memory-server` run's
memory server (the agent's, and swecl's recall and write), and the full texts behind the
blobs: the agent's patch, the test log, the transcript and the prompt. `attempt_files(shown)` renders the
files `swecl show --files DIR` writes. Pure reads of the ledger; nothing is written.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import msgspec

from ledger import Ledger, StreamRange, SweclError
from ledger.events import EgressConnection, RunStarted, TaskRef, f2p_passes, p2p_passes
from projections import read_run, run_started_record
from projections._provider_calls import blob_text, excerpt, memory_server_named, provider_calls
from projections.audit import Flag, fold_with_snapshots, integrity_flags, pass_rank, resolve_task

__all__ = [
    "AttemptShow", "ShownHistory", "ShownModelCall", "ShownProviderCall", "ShownRecall", "ShownTest", "agent_numbers", "attempt_files", "agent_commands", "egress_lines", "final_message", "grade_report", "is_json_lines",
    "model_call_line", "provider_call_line", "show_attempt", "tail_lines", "visible_lines",
]

PASS = msgspec.field(name="pass")

_SHORT = 160  # characters of a recalled item's body shown as its short text


class ShownTest(msgspec.Struct, kw_only=True):
    name: str
    kind: str  # FAIL_TO_PASS | PASS_TO_PASS
    result: str  # as the grader recorded it (PASSED, FAILED, ERROR, SKIPPED, ... or missing)
    passed: bool
    excluded: bool = False  # a PASS_TO_PASS test `swecl validate` left out of the verdict


class ShownRecall(msgspec.Struct, kw_only=True):
    seq: int
    rank: int
    score: float
    item_id: str
    known: bool  # the item is in the run's substrate
    title: str | None = None
    kind: str | None = None
    outcome: str | None = None
    source_instance: str | None = None
    source_run: str | None = None
    short: str | None = None  # the body's start, one line
    body: str | None = None


class ShownProviderCall(msgspec.Struct, kw_only=True):
    """One call of the attempt to the run's memory server (`memory.provider.called`)."""

    seq: int
    call: int  # 1, 2, ... per host (the sequence's pass)
    tool: str
    via: str  # agent | recall | write (swecl's own calls)
    is_error: bool = False  # the tool's own error answer
    failure: str | None = None  # crashed | timeout | garbage | unavailable: the infrastructure's
    error: str | None = None
    duration_s: float = 0.0
    arguments_blob: str | None = None
    result_blob: str | None = None
    arguments: str | None = None  # an excerpt, one line
    result: str | None = None  # an excerpt, one line


class ShownModelCall(msgspec.Struct, frozen=True, kw_only=True):
    """One call of the memory server to its own model, through swecl's gateway (`memory.model.called`)."""

    seq: int
    call: int
    via: str
    kind: str
    model: str | None
    host: str
    status: int | None
    tokens_in: int | None
    tokens_out: int | None
    cost_usd: float | None
    duration_s: float
    error: str | None


class ShownHistory(msgspec.Struct, frozen=True, kw_only=True):
    """What a full-history prompt carried: the earlier tasks given, most recent first."""

    entries: list[str]
    tokens: int
    budget: int
    dropped: int


class AttemptShow(msgspec.Struct, kw_only=True):
    version: str
    stage: str
    agent: str
    model: str | None
    sequence_id: str
    instance_id: str
    order: int
    repo: str
    pass_: str = PASS
    attempt: int
    attempts: list[int]  # every attempt of this task in this pass
    status: str  # finished | abandoned | unfinished
    abandon_reason: str | None = None
    grade_status: str | None = None
    resolved: bool | None = None
    grader: str | None = None
    grade_error: str | None = None
    corrected: bool = False  # a grade.corrected replaced the grade.finished
    test_exit_code: int | None = None
    test_cmd: list[str] = msgspec.field(default_factory=list)
    tests: list[ShownTest] = msgspec.field(default_factory=list)  # failing first
    failing: list[str] = msgspec.field(default_factory=list)
    recalls: list[ShownRecall] = msgspec.field(default_factory=list)
    # A full-history run: the earlier tasks this attempt's prompt carried (`memory.history`).
    history: ShownHistory | None = None
    integrity_flags: list[Flag] = msgspec.field(default_factory=list)  # of the patch; never change the verdict
    agent_exit: str | None = None
    agent_error: str | None = None
    turns: int | None = None
    tokens: dict[str, int] = msgspec.field(default_factory=dict)
    cost_usd: float | None = None
    duration_s: float | None = None
    over_limit: str | None = None  # agent.finished.over_limit: the per-task limit the attempt passed
    final_message: str | None = None
    patch_blob: str | None = None
    patch: str | None = None
    log_blob: str | None = None
    log: str | None = None
    transcript_blob: str | None = None
    transcript: str | None = None
    prompt_blob: str | None = None
    prompt: str | None = None
    # The agent's connections through its egress proxy (agent.egress); None when none was
    # recorded (an unconfined run, or a ledger from before egress was recorded).
    egress: list[EgressConnection] | None = None
    egress_allowed: list[str] = msgspec.field(default_factory=list)  # what its proxy allowed
    # A --memory-server run's provider ("memory-server 0.6.3") and the attempt's calls to
    # it, in order; None and empty for every other run.
    memory_server: str | None = None
    provider_calls: list[ShownProviderCall] = msgspec.field(default_factory=list)
    model_calls: list[ShownModelCall] = msgspec.field(default_factory=list)  # the memory server's own model
    # What the run's sandbox showed its agent and tests (run.started.visible); None:
    # unconfined, or a ledger from before it was recorded.
    visible: dict[str, list[dict[str, str]]] | None = None


def visible_lines(visible: dict[str, list[dict[str, str]]] | None, who: str) -> list[str]:
    """What the sandbox showed `who` ("agent" or "tests"): a line per kind of path (how it
    is shown and why), its paths after it, in the order the sandbox made them."""
    if visible is None:
        return ["not recorded: an unconfined run sees the whole host (or the ledger is older than this record)"]
    entries = visible.get(who) or []
    if not entries:
        return ["no process of its own (the agent runs inside swecl)"]
    hows = {"ro": "read-only", "rw": "writable", "empty": "empty", "link": "link", "devices": "devices",
            "procfs": "proc"}
    grouped: dict[tuple[str, str], list[str]] = {}
    for e in entries:
        mode = e.get("mode", "")
        path = e["path"] + (f" -> {e['target']}" if mode == "link" and e.get("target") else "")
        grouped.setdefault((hows.get(mode, mode), e.get("what", "")), []).append(path)
    return [f"{what} ({how}): {' '.join(paths)}" for (how, what), paths in grouped.items()]


def _tests(f2p: dict[str, str], p2p: dict[str, str], excluded: list[str]) -> list[ShownTest]:
    out = [ShownTest(name=n, kind="FAIL_TO_PASS", result=r, passed=f2p_passes(r)) for n, r in f2p.items()]
    out += [
        ShownTest(name=n, kind="PASS_TO_PASS", result=r, passed=p2p_passes(r), excluded=n in excluded)
        for n, r in p2p.items()
    ]
    # failing first (excluded ones after the counted failures), each kind in its recorded order
    return sorted(out, key=lambda t: (t.passed, t.excluded))


def final_message(transcript: str | None) -> str | None:
    """The agent's last word: a stream-json transcript's `result` (else its last assistant
    text; a mini-swe-agent trajectory's last assistant text); a plain-text transcript's
    last non-empty line."""
    if not transcript or not transcript.strip():
        return None
    result: str | None = None
    assistant: str | None = None
    pieces: list[str] = []
    parsed = False
    for obj in _json_objects(transcript):
        parsed = True
        if str(obj.get("trajectory_format", "")).startswith("mini-swe-agent"):
            # mini-swe-agent's trajectory, kept as one JSON line: its last assistant words
            texts = [m.get("content") for m in obj.get("messages") or [] if isinstance(m, dict)
                     and m.get("role") == "assistant" and isinstance(m.get("content"), str) and m["content"].strip()]
            assistant = texts[-1] if texts else assistant
        elif obj.get("type") == "result" and isinstance(obj.get("result"), str):
            result = obj["result"]
        elif obj.get("type") == "assistant" and not obj.get("parent_tool_use_id"):
            content = (obj.get("message") or {}).get("content")
            texts = [b.get("text") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]
            texts = [t for t in texts if isinstance(t, str) and t.strip()]
            if texts:
                assistant = "\n".join(texts)
        elif (codex := _codex_message(obj)) is not None:
            if codex[0]:
                result = codex[1]
            else:
                assistant = codex[1]
        elif obj.get("type") == "gemini":  # the Gemini CLI's session file: a line per model response
            if isinstance(obj.get("content"), str) and obj["content"].strip():
                assistant = obj["content"]
        elif obj.get("type") == "message" and obj.get("role") == "assistant" and isinstance(obj.get("content"), str):
            # its stream-json output: the answer in delta pieces, after the last tool call
            pieces.append(obj["content"])
            assistant = "".join(pieces)
        elif obj.get("type") == "text" and isinstance(obj.get("part"), dict):
            # opencode's `run --format json` output: each finished text part of the assistant
            if isinstance(obj["part"].get("text"), str) and obj["part"]["text"].strip():
                assistant = obj["part"]["text"]
        elif obj.get("type") == "tool_use":
            pieces = []
    if parsed:
        return result if result else assistant
    lines = [ln for ln in transcript.splitlines() if ln.strip()]
    return lines[-1].strip() if lines else None


def agent_commands(transcript: str | None) -> list[str]:
    """The shell commands the agent ran, in order, where its transcript says so plainly: a
    mini-swe-agent trajectory's actions, a Claude Code transcript's `Bash` tool calls; none
    for any other form."""
    commands: list[str] = []
    for obj in _json_objects(transcript or ""):
        if str(obj.get("trajectory_format", "")).startswith("mini-swe-agent"):
            for m in obj.get("messages") or []:
                extra = m.get("extra") if isinstance(m, dict) and m.get("role") == "assistant" else None
                actions = extra.get("actions") if isinstance(extra, dict) else None
                commands += [a["command"] for a in actions or [] if isinstance(a, dict) and isinstance(a.get("command"), str)]
        elif obj.get("type") == "assistant" and isinstance(obj.get("message"), dict):
            for block in obj["message"].get("content") or []:
                if (isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name") == "Bash"
                        and isinstance(block.get("input"), dict) and isinstance(block["input"].get("command"), str)):
                    commands.append(block["input"]["command"])
    return commands


def _codex_message(obj: dict[str, Any]) -> tuple[bool, str] | None:
    """(final?, text) of a codex transcript line: its session file's `task_complete` (the
    final word, like stream-json's `result`) or an assistant message in it, or an
    `agent_message` of its `exec --json` stream; None for any other line."""
    payload = obj.get("payload")
    if obj.get("type") == "event_msg" and isinstance(payload, dict) and payload.get("type") == "task_complete":
        last = payload.get("last_agent_message")
        return (True, last) if isinstance(last, str) and last.strip() else None
    if obj.get("type") == "response_item" and isinstance(payload, dict) and payload.get("role") == "assistant":
        parts = [c.get("text") for c in payload.get("content") or [] if isinstance(c, dict) and c.get("type") == "output_text"]
        texts = [t for t in parts if isinstance(t, str) and t.strip()]
        return (False, "\n".join(texts)) if texts else None
    item = obj.get("item")
    if obj.get("type") == "item.completed" and isinstance(item, dict) and item.get("type") == "agent_message":
        return (False, item["text"]) if isinstance(item.get("text"), str) and item["text"].strip() else None
    return None


def _json_objects(transcript: str) -> Iterator[dict[str, Any]]:
    """The JSON objects of a transcript's lines, in order; other lines are skipped."""
    for line in transcript.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            yield obj


def is_json_lines(text: str) -> bool:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return False
    try:
        return all(isinstance(json.loads(ln), dict) for ln in lines)
    except json.JSONDecodeError:
        return False


def tail_lines(text: str, n: int) -> tuple[list[str], int]:
    """The last `n` lines of `text`, and how many lines it has."""
    lines = text.splitlines()
    return lines[-n:] if n > 0 else [], len(lines)


def agent_numbers(shown: AttemptShow) -> list[str]:
    """What the agent's run cost, as `swecl show` and `swecl view` print it: exit, turns,
    tokens, dollars, seconds (each only when recorded)."""
    numbers = [f"exit {shown.agent_exit}" if shown.agent_exit else "no agent.finished recorded"]
    if shown.turns is not None:
        numbers.append(f"{shown.turns} turns")
    if shown.tokens:
        numbers.append("tokens " + ", ".join(f"{k} {v}" for k, v in shown.tokens.items()))
    if shown.cost_usd is not None:
        numbers.append(f"cost ${shown.cost_usd:.4f}")
    if shown.duration_s:
        numbers.append(f"{shown.duration_s:.1f}s")
    if shown.over_limit == "tokens":
        numbers.append("over --max-tokens-per-task")
    elif shown.over_limit == "turns":
        numbers.append("over --max-turns")
    elif shown.over_limit:
        numbers.append(f"over its {shown.over_limit} limit")
    return numbers


def show_attempt(ledger: Ledger, version: str, task_id: str, *, pass_: str = "initial") -> AttemptShow:
    """The attempt of task `task_id` (instance_id, or order in a one-sequence run) of run
    `version` that counts in pass `pass_`: the latest (status "abandoned" when it was, and
    then the cell is missing)."""
    started = run_started_record(ledger, version, doing="show").event
    sequence_id, task = resolve_task(started, task_id)
    per = _task_events(ledger, version, sequence_id, task.order)
    passes = sorted({p for p, _ in per}, key=pass_rank)
    if pass_ not in passes:
        ran = ", ".join(passes) if passes else "none yet"
        raise SweclError(f"task {task.instance_id} (order {task.order} of {sequence_id}) has no attempt in pass "
                         f"{pass_!r} of v{version} (passes it ran: {ran})")
    attempts = sorted(a for p, a in per if p == pass_)
    # The a(i,j) cell's rule (projections._outcomes) and the audit's `in_force`: the latest
    # attempt is the one that counts; abandoned, it leaves the cell missing and shows as such.
    # A resume abandons every earlier attempt before starting the next, so none of them counts.
    attempt = attempts[-1]
    evs = per[(pass_, attempt)]
    shown = _attempt_show(ledger, version, started, sequence_id, task, pass_, attempts, evs)

    decided = evs.get("grade.corrected") or evs.get("grade.finished")
    if decided is not None:
        shown.tests = _tests(dict(decided.f2p), dict(decided.p2p), list(decided.p2p_excluded))
        shown.failing = [t.name for t in shown.tests if not t.passed and not t.excluded]
    shown.recalls = _recalls(ledger, version, sequence_id, task.order, pass_, attempt)
    if "memory.history" in evs:
        h = evs["memory.history"]
        shown.history = ShownHistory(entries=list(h.entries), tokens=h.tokens, budget=h.budget, dropped=h.dropped)
    # The task's FAIL_TO_PASS ids, as any of its grades recorded them (an errored grade has none).
    f2p = {name: None for evs_ in per.values() for t in ("grade.finished", "grade.corrected") if t in evs_
           for name in evs_[t].f2p}
    shown.integrity_flags = integrity_flags(shown.patch, task.repo, f2p)
    if "agent.egress" in evs:
        shown.egress = list(evs["agent.egress"].connections)
        shown.egress_allowed = list(evs["agent.egress"].allowed_hosts)
    shown.memory_server = memory_server_named(ledger, version, started.config, started.sequences)
    if shown.memory_server is not None:
        shown.provider_calls = _provider_calls(ledger, version, sequence_id, task.order, pass_, attempt)
        shown.model_calls = _model_calls(ledger, version, sequence_id, task.order, pass_, attempt)
    return shown


def _task_events(ledger: Ledger, version: str, sequence_id: str, order: int) -> dict[tuple[str, int], dict[str, Any]]:
    """The task's attempt events, by (pass, attempt) and then by type."""
    types = ["task.started", "task.abandoned", "task.finished", "agent.finished", "agent.egress", "grade.finished",
             "grade.corrected", "memory.history"]
    per: dict[tuple[str, int], dict[str, Any]] = {}
    for rec in read_run(ledger, version, types):  # a fork's tasks before K: its source's events
        ev = rec.event
        if ev.sequence_id == sequence_id and ev.order == order:
            per.setdefault((ev.pass_, ev.attempt), {})[rec.type] = ev
    return per


def _attempt_show(ledger: Ledger, version: str, started: RunStarted, sequence_id: str, task: TaskRef, pass_: str,
                  attempts: list[int], evs: dict[str, Any]) -> AttemptShow:
    """What the attempt's own events say (`evs`: the latest attempt's, by type), with the
    texts behind their blobs; the tests, recalls and the rest are added by `show_attempt`."""
    status = "abandoned" if "task.abandoned" in evs else "finished" if "task.finished" in evs else "unfinished"
    grade = evs.get("grade.finished")
    corrected = evs.get("grade.corrected")
    decided = corrected or grade
    finished = evs.get("task.finished")
    agent = evs.get("agent.finished")
    transcript_blob = agent.transcript if agent is not None else None
    transcript = blob_text(ledger, transcript_blob)
    return AttemptShow(
        version=version,
        stage=started.stage,
        agent=started.agent,
        visible=started.visible,
        model=(agent.model if agent is not None and agent.model else started.model),
        sequence_id=sequence_id,
        instance_id=task.instance_id,
        order=task.order,
        repo=task.repo,
        pass_=pass_,
        attempt=attempts[-1],
        attempts=attempts,
        status=status,
        abandon_reason=evs["task.abandoned"].reason if "task.abandoned" in evs else None,
        grade_status=decided.status if decided is not None else (finished.status if finished is not None else None),
        resolved=decided.resolved if decided is not None else (finished.resolved if finished is not None else None),
        grader=grade.grader if grade is not None else None,
        grade_error=decided.error if decided is not None else None,
        corrected=corrected is not None,
        test_exit_code=grade.test_exit_code if grade is not None else None,
        test_cmd=list(grade.test_cmd) if grade is not None else [],
        agent_exit=agent.exit if agent is not None else None,
        agent_error=agent.error if agent is not None else None,
        turns=agent.turns if agent is not None else None,
        tokens=dict(agent.tokens) if agent is not None else {},
        cost_usd=agent.cost_usd if agent is not None else None,
        duration_s=agent.duration_s if agent is not None else None,
        over_limit=agent.over_limit if agent is not None else None,
        final_message=final_message(transcript),
        patch_blob=agent.patch if agent is not None else None,
        patch=blob_text(ledger, agent.patch if agent is not None else None),
        log_blob=grade.log if grade is not None else None,
        log=blob_text(ledger, grade.log if grade is not None else None),
        transcript_blob=transcript_blob,
        transcript=transcript,
        prompt_blob=agent.prompt if agent is not None else None,
        prompt=blob_text(ledger, agent.prompt if agent is not None else None),
    )


def _provider_calls(ledger: Ledger, version: str, sequence_id: str, order: int, pass_: str,
                    attempt: int) -> list[ShownProviderCall]:
    return [
        ShownProviderCall(
            seq=seq, call=ev.call, tool=ev.tool, via=ev.via, is_error=ev.is_error, failure=ev.failure,
            error=ev.error, duration_s=ev.duration_s, arguments_blob=ev.arguments, result_blob=ev.result,
            arguments=excerpt(blob_text(ledger, ev.arguments)), result=excerpt(blob_text(ledger, ev.result)),
        )
        for seq, ev in provider_calls(ledger, version, sequence_id)
        if ev.order == order and ev.pass_ == pass_ and ev.attempt == attempt
    ]


def _model_calls(ledger: Ledger, version: str, sequence_id: str, order: int, pass_: str,
                 attempt: int) -> list[ShownModelCall]:
    return [
        ShownModelCall(seq=rec.seq, call=ev.call, via=ev.via, kind=ev.kind, model=ev.model, host=ev.host,
                       status=ev.status, tokens_in=ev.tokens_in, tokens_out=ev.tokens_out, cost_usd=ev.cost_usd,
                       duration_s=ev.duration_s, error=ev.error)
        for rec in ledger.read(types=["memory.model.called"], streams=[f"run/{version}/{sequence_id}"])
        if (ev := rec.event).order == order and ev.pass_ == pass_ and ev.attempt == attempt
    ]


def model_call_line(c: ShownModelCall) -> str:
    """One model call as `swecl show` prints it: number, kind and model, for which call, tokens, cost."""
    tokens = "tokens not reported" if c.tokens_in is None and c.tokens_out is None else \
        f"{c.tokens_in or 0} in, {c.tokens_out or 0} out"
    cost = "cost unknown" if c.cost_usd is None else f"${c.cost_usd:.6f}"
    end = f"failed ({c.error})" if c.status is None else f"HTTP {c.status}"
    return f"#{c.call} {c.kind} {c.model or '?'} at {c.host} during swecl's {c.via}: {end}, {tokens}, {cost}, " \
           f"{c.duration_s:.2f}s"


def provider_call_line(c: ShownProviderCall) -> str:
    """One call as `swecl show` and `swecl view` head it: number, tool, who called, how it ended."""
    who = {"agent": "the agent", "recall": "swecl's recall", "write": "swecl's write"}.get(c.via, c.via)
    end = (f"FAILED ({c.failure}: {c.error})" if c.failure else "the tool's error answer" if c.is_error
           else "ok")
    return f"#{c.call} {c.tool} by {who}: {end}, {c.duration_s:.2f}s"


def egress_lines(shown: AttemptShow) -> list[str]:
    """The agent's network, as `swecl show` and `swecl view` print it: what its proxy
    allowed, then each host:port it asked for (connections, bytes each way), refused first."""
    if shown.egress is None:
        return ["no egress recorded (unconfined: the agent had the host's network)"]
    lines = ["allowed: " + (", ".join(shown.egress_allowed) or "nothing")]
    seen: dict[tuple[bool, str, int], list[EgressConnection]] = {}
    for c in shown.egress:
        seen.setdefault((c.allowed, c.host, c.port), []).append(c)
    for (allowed, host, port), conns in sorted(seen.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
        what = "ok     " if allowed else "REFUSED"
        detail = (f"{sum(c.bytes_up for c in conns)} B up, {sum(c.bytes_down for c in conns)} B down" if allowed
                  else conns[0].reason)
        lines.append(f"{what} {host}:{port}  {len(conns)} connection{'s' if len(conns) != 1 else ''}, {detail}")
    if not shown.egress:
        lines.append("no connections")
    return lines


def _recalls(ledger: Ledger, version: str, sequence_id: str, order: int, pass_: str, attempt: int) -> list[ShownRecall]:
    def wanted(ev: Any) -> bool:
        return ev.sequence_id == sequence_id and ev.order == order and ev.pass_ == pass_ and ev.attempt == attempt

    _state, recalls = fold_with_snapshots(ledger, version, wanted)
    out = []
    for rec, snap in recalls:
        for hit in sorted(rec.event.results, key=lambda h: h.rank):
            item = snap.get(hit.item_id)
            if item is None:
                out.append(ShownRecall(seq=rec.seq, rank=hit.rank, score=hit.score, item_id=hit.item_id, known=False))
                continue
            body = item.body or ""
            first = " ".join(body.split())
            out.append(ShownRecall(
                seq=rec.seq, rank=hit.rank, score=hit.score, item_id=hit.item_id, known=True, title=item.title,
                kind=item.kind, outcome=item.outcome, source_instance=item.source_instance,
                source_run=item.source_run, short=first[:_SHORT] + ("..." if len(first) > _SHORT else ""), body=body,
            ))
    return out


def grade_report(shown: AttemptShow) -> dict[str, Any]:
    """The grade as report.json holds it: SWE-bench's shape (tests_status with success and
    failure lists per kind) plus swecl's status and per-test results."""
    def split(kind: str) -> dict[str, list[str]]:
        tests = [t for t in shown.tests if t.kind == kind and not t.excluded]
        return {"success": [t.name for t in tests if t.passed], "failure": [t.name for t in tests if not t.passed]}

    return {
        "instance_id": shown.instance_id,
        "version": shown.version,
        "sequence_id": shown.sequence_id,
        "order": shown.order,
        "pass": shown.pass_,
        "attempt": shown.attempt,
        "status": shown.grade_status,
        "resolved": shown.resolved,
        "grader": shown.grader,
        "corrected": shown.corrected,
        "error": shown.grade_error,
        "test_exit_code": shown.test_exit_code,
        "test_cmd": shown.test_cmd,
        "patch_is_None": shown.patch_blob is None,
        "tests_status": {"FAIL_TO_PASS": split("FAIL_TO_PASS"), "PASS_TO_PASS": split("PASS_TO_PASS")},
        "tests": [msgspec.to_builtins(t) for t in shown.tests],
        "failing": shown.failing,
    }


def attempt_files(shown: AttemptShow) -> dict[str, bytes]:
    """The files of `swecl show --files`: name -> content (the patch and the log even when
    empty, so a script can rely on them; the transcript and the prompt only when recorded)."""
    files = {
        "patch.diff": (shown.patch or "").encode(),
        "test_output.txt": (shown.log or "").encode(),
        "report.json": (json.dumps(grade_report(shown), indent=2, ensure_ascii=False) + "\n").encode(),
        "memory_recalled.json": (json.dumps(msgspec.to_builtins(shown.recalls), indent=2, ensure_ascii=False) + "\n").encode(),
    }
    if shown.transcript is not None:
        name = "transcript.jsonl" if is_json_lines(shown.transcript) else "transcript.txt"
        files[name] = shown.transcript.encode()
    if shown.prompt is not None:
        files["prompt.txt"] = shown.prompt.encode()
    return files
