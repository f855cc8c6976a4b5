"""Agents by name, for the CLI (`swecl agents [--json]`, `--agent NAME`).

Adding an agent is one module (a class with `name` and `run(AgentInput) -> AgentResult`,
plus a `from_run(RunSupplies)` that builds it from what a run offers) and one entry
below. Nothing else in swecl names an agent.

An entry names its module and class; the module is imported when the agent is built, so
a run imports the one adapter it uses, not all nine (the CLI adapters and their event
parsers: about 15 ms of CPU at every `swecl run` start).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ledger import SweclError

from ._protocol import Agent, RunSupplies

__all__ = ["AGENTS", "REGISTRY", "AgentEntry", "agent_entry", "build_agent", "get_agent"]


@dataclass(frozen=True)
class AgentEntry:
    name: str
    description: str
    module: str  # the adapter's module in `agents` (`_claude`), imported on first use
    cls: str  # its agent class, built with explicit options (`get_agent`)
    briefed: bool = True  # reads the issue text; False: replays recorded patches, never briefed

    def _adapter(self) -> Any:
        return importlib.import_module(f"{__package__}.{self.module}")

    @property
    def factory(self) -> Callable[..., Agent]:
        """The agent class (`get_agent`)."""
        return getattr(self._adapter(), self.cls)

    @property
    def from_run(self) -> Callable[[RunSupplies], Agent]:
        """The module's `from_run`: the agent built from what a run offers (`build_agent`)."""
        return self._adapter().from_run


REGISTRY: dict[str, AgentEntry] = {e.name: e for e in (
    AgentEntry("demo", "deterministic offline agent of the built-in demo benchmark; reuses recalled fixes that worked",
               "_demo", "DemoAgent"),
    AgentEntry("oracle", "submits the gold patch (upper bound; checks that grading works)",
               "_oracle", "OracleAgent"),
    AgentEntry("predictions", "replays SWE-bench predictions JSONL (one file, or one per pass or stage)",
               "_predictions", "PredictionsAgent", briefed=False),
    AgentEntry("claude", "the Claude Code CLI (claude -p, stream-json): recall MCP server in plugin stages, its auto-memory "
               "as its builtin memory; turns, tool calls, tokens, cost; agentic and blind, turn, cost and time limits",
               "_claude", "ClaudeAgent"),
    AgentEntry("codex", "the OpenAI Codex CLI (codex exec --json): recall MCP server in plugin stages, AGENTS.md as its "
               "builtin memory; turns, tool calls, tokens (no cost); agentic only, time limit (turns checked after the "
               "attempt; no cost cap)",
               "_codex", "CodexAgent"),
    AgentEntry("gemini", "the Google Gemini CLI (gemini -p, stream-json): recall MCP server in plugin stages, GEMINI.md as "
               "its builtin memory; turns, tool calls, tokens (no cost); agentic only, turn and time limits (no cost cap)",
               "_gemini", "GeminiAgent"),
    AgentEntry("mini-swe-agent", "mini-swe-agent (mini, any LiteLLM model): recall primed into the prompt in plugin "
               "stages (no MCP client), no builtin memory; turns, tool calls, tokens, cost; agentic and blind (its commands "
               "run where the repository is not; it submits a diff), turn, cost and time limits", "_mini", "MiniSweAgent"),
    AgentEntry("opencode", "opencode (opencode run --format json, --model PROVIDER/MODEL: anthropic or openai): recall MCP "
               "server in plugin stages, AGENTS.md as its builtin memory; turns, tool calls, tokens, cost; agentic only, "
               "turn, token and time limits (ended by swecl; no cost cap)",
               "_opencode", "OpencodeAgent"),
    AgentEntry("command", "any CLI agent through a command template with {workdir} {issue_file} {model} placeholders",
               "_command", "CommandAgent"),
)}

AGENTS: tuple[tuple[str, str], ...] = tuple((e.name, e.description) for e in REGISTRY.values())


def agent_entry(name: str) -> AgentEntry:
    entry = REGISTRY.get(name)
    if entry is None:
        raise SweclError(f"unknown agent {name!r}: choose one of {', '.join(REGISTRY)}")
    return entry


def build_agent(name: str, run: RunSupplies) -> Agent:
    """The agent called `name`, built from what the run offers (refused in one line when
    the run lacks what it needs)."""
    return agent_entry(name).from_run(run)


def get_agent(name: str, **options: Any) -> Agent:
    """The agent called `name`, built with `options` (e.g. gold=..., predictions=..., template=...)."""
    factory = agent_entry(name).factory
    try:
        return factory(**options)
    except TypeError as exc:
        raise SweclError(f"agent {name!r} cannot be built with options {sorted(options)}: {exc}") from None
