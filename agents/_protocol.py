"""What an agent sees, what it gives back, and the shape every agent has.

`AgentInput` holds only what an agent may see: never the gold patch, the test patch or the
FAIL_TO_PASS / PASS_TO_PASS names (those are grading secrets; the harness keeps them).
`AgentResult` is what becomes the `agent.finished` event; `to_event` turns it into one,
storing the large texts as blobs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from graders.host import Sandbox
from ledger import SweclError
from ledger.events import AgentFinished, ToolCall

from ._egress import Egress

__all__ = [
    "CODE_MODES",
    "EXIT_KINDS",
    "PROMPT_STYLES",
    "Agent",
    "AgentInput",
    "AgentResult",
    "Budget",
    "CodeMode",
    "ExitKind",
    "HistoryEntry",
    "PromptStyle",
    "Recall",
    "RecalledLike",
    "RunSupplies",
    "TaskHistory",
    "ToolCall",
]

CodeMode = Literal["agentic", "blind"]
PromptStyle = Literal["plain", "recall", "natural"]
ExitKind = Literal["completed", "max_turns", "budget", "max_tokens", "auth_failed", "crashed", "timeout", "error"]

CODE_MODES: tuple[str, ...] = ("agentic", "blind")
PROMPT_STYLES: tuple[str, ...] = ("plain", "recall", "natural")
EXIT_KINDS: tuple[str, ...] = (
    "completed", "max_turns", "budget", "max_tokens", "auth_failed", "crashed", "timeout", "error",
)


class RecalledLike(Protocol):
    """One recalled memory item, as the recall service returns it (read-only view)."""

    @property
    def item_id(self) -> str: ...
    @property
    def rank(self) -> int: ...
    @property
    def score(self) -> float: ...
    @property
    def title(self) -> str: ...
    @property
    def body(self) -> str: ...
    @property
    def outcome(self) -> str | None: ...
    @property
    def patch(self) -> str | None: ...  # the patch text, not a blob hash


@runtime_checkable
class Recall(Protocol):
    """The memory handle of plugin stages, bound to one task (run, sequence, pass, order).

    `recall` appends a `memory.recalled` event (via inproc); the MCP server that
    `mcp_server_argv` starts appends them with via mcp. A handle may also offer
    `mcp_server_env() -> dict[str, str]` (extra environment for that server),
    `mcp_server_in_sandbox = True` (the server may run inside a confined agent's sandbox:
    no relay), `mcp_tools() -> list[str]` (the server's own tools, when they are not
    swecl's `recall`: a user's memory server; the CLI agents' prompts name them) and
    `mcp_call_timeout_s() -> float` (its own limit on a call: the CLIs wait longer).
    """

    def recall(self, query: str, k: int = 5, repo: str | None = None) -> Sequence[RecalledLike]: ...

    def mcp_server_argv(self) -> list[str]: ...


@dataclass(frozen=True)
class HistoryEntry:
    """One earlier task of the sequence as a full-history prompt gives it: its issue's
    title, the patch the agent submitted there, and the verdict in force."""

    instance_id: str
    order: int
    title: str
    patch: str  # the agent's final patch at that task ("" when it left none)
    outcome: str  # resolved, unresolved, empty_patch, ... (a grade status)

    @property
    def resolved(self) -> bool:
        return self.outcome == "resolved"


@dataclass(frozen=True)
class TaskHistory:
    """The earlier tasks a task's prompt carries (the `full-history` stage): the entries the
    token budget kept, most recent first, and the prompt section rendered from them."""

    entries: tuple[HistoryEntry, ...] = ()
    text: str = ""  # the `<earlier_tasks>` section as the prompt gives it ("" when none)


@dataclass(frozen=True)
class Budget:
    max_turns: int | None = 50
    max_cost_usd: float | None = None
    timeout_s: float | None = 1800.0
    # Input + output tokens one attempt may report. A CLI agent whose stream reports usage
    # per turn (claude, opencode) is ended once they pass it (exit `max_tokens`); for every
    # agent the run checks it after the attempt too (agent.finished.over_limit).
    max_tokens: int | None = None


@dataclass(frozen=True)
class AgentInput:
    instance_id: str
    repo: str
    issue: str
    worktree: Path  # a git checkout at base_commit; the agent edits it in place
    scratch_dir: Path  # this task's private working space (configs, logs)
    hints: str = ""
    base_commit: str | None = None  # default: the worktree's HEAD when the agent starts
    # What the run's memory gives this task (the kind of memory is the run's business):
    # a recall handle and its prompt style, or a native memory folder the agent keeps.
    recall: Recall | None = None  # None: no recall
    # The earlier tasks of the sequence, given in the prompt (the full-history stage); None: none.
    history: TaskHistory | None = None
    budget: Budget = field(default_factory=Budget)
    model: str | None = None
    code_mode: CodeMode = "agentic"
    prompt_style: PromptStyle = "plain"
    stage: str = "base"
    pass_: str = "initial"  # lets a replay pick its predictions per pass
    memory_dir: Path | None = None  # the agent's native memory, kept across the tasks of a run+sequence
    apply_check: Callable[[str], bool] | None = None  # the grader's dry-run apply
    # Where the agent's processes run (graders.host.Sandbox); None: unconfined, as a library
    # caller that builds its own inputs asks. `swecl run` always passes one.
    sandbox: Sandbox | None = None
    # What a confined agent may reach beyond its model API, and (filled by the run) what
    # it reached; None: the API endpoints only, web tools off, nothing kept.
    egress: Egress | None = None

    @property
    def allow_web(self) -> bool:
        """The agent's own web tools stay on (--allow-web)."""
        return self.egress is not None and self.egress.allow_web

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("code_mode", self.code_mode, CODE_MODES),
            ("prompt_style", self.prompt_style, PROMPT_STYLES),
        ):
            if value not in allowed:
                raise SweclError(f"agent input {name} {value!r} is not one of {', '.join(allowed)}")


@dataclass
class AgentResult:
    patch: str = ""  # the worktree's diff against base, taken by _diff.worktree_patch
    exit: ExitKind = "completed"
    exit_code: int | None = None
    turns: int | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    tokens: dict[str, int] = field(default_factory=dict)  # input, output, cache_read, cache_creation
    cost_usd: float | None = None
    duration_s: float = 0.0
    transcript: bytes = b""  # scrubbed
    prompt: str = ""
    session_id: str | None = None
    error: str | None = None
    model: str | None = None
    memory_files: dict[str, str] = field(default_factory=dict)  # builtin: native memory after the run
    # Set by an adapter when its process never started (the sandbox could not exec it) or
    # ended before any model call (`agents._startup`): the attempt says nothing about the
    # agent, and the run records it as agent_error, never scored. Not an event field: the
    # reason is in `error`.
    not_started: str | None = None

    def __post_init__(self) -> None:
        if self.exit not in EXIT_KINDS:
            raise ValueError(f"exit {self.exit!r} is not one of {EXIT_KINDS}")

    def to_event(
        self,
        put_blob: Callable[[bytes | str], str],
        *,
        agent: str,
        sequence_id: str,
        instance_id: str,
        order: int,
        pass_: str,
        attempt: int = 1,
    ) -> AgentFinished:
        """The `agent.finished` event; patch, transcript and prompt go to blobs (None when empty)."""
        return AgentFinished(
            sequence_id=sequence_id,
            instance_id=instance_id,
            order=order,
            pass_=pass_,
            attempt=attempt,
            agent=agent,
            model=self.model,
            patch=put_blob(self.patch) if self.patch else None,
            exit=self.exit,
            exit_code=self.exit_code,
            turns=self.turns,
            tool_calls=list(self.tool_calls),
            cost_usd=self.cost_usd,
            tokens=dict(self.tokens),
            duration_s=self.duration_s,
            transcript=put_blob(self.transcript) if self.transcript else None,
            prompt=put_blob(self.prompt) if self.prompt else None,
            session_id=self.session_id,
            error=self.error,
        )


class Agent(Protocol):
    name: str

    def run(self, inp: AgentInput) -> AgentResult: ...


@dataclass(frozen=True)
class RunSupplies:
    """What a run can hand an agent to build itself from; each agent takes what it needs
    and refuses, in one line, a run that lacks it (see `agents._registry`)."""

    gold: Callable[[], dict[str, str]]  # instance -> gold patch, read only by the oracle
    predictions: Callable[[], Any] | None = None  # the loaded --predictions tables (None: none given)
    command: str | None = None  # --command's template
    demo_attempts: dict[str, str] | None = None  # the built-in demo's scripted attempts; None on other data
    runs_here: bool = True  # False: a driver that fans tasks out checks options, not the agent's CLI
