"""Agents by name, for the CLI (`swecl agents [--json]`, `--agent NAME`)."""

from __future__ import annotations

from typing import Any

from ledger import SweclError

from ._claude import ClaudeAgent
from ._command import CommandAgent
from ._demo import DemoAgent
from ._oracle import OracleAgent
from ._predictions import PredictionsAgent
from ._protocol import Agent

__all__ = ["AGENTS", "get_agent"]

AGENTS: tuple[tuple[str, str], ...] = (
    ("demo", "deterministic offline agent of the built-in demo benchmark; reuses recalled fixes that worked"),
    ("oracle", "submits the gold patch (upper bound; checks that grading works)"),
    ("predictions", "replays SWE-bench predictions JSONL (one file, or one per pass or stage)"),
    ("claude", "the Claude Code CLI (claude -p, stream-json), memory through the recall MCP server"),
    ("command", "any CLI agent through a command template with {workdir} {issue_file} {model} placeholders"),
)

_FACTORIES: dict[str, Any] = {
    "demo": DemoAgent,
    "oracle": OracleAgent,
    "predictions": PredictionsAgent,
    "claude": ClaudeAgent,
    "command": CommandAgent,
}


def get_agent(name: str, **options: Any) -> Agent:
    """The agent called `name`, built with `options` (e.g. gold=..., predictions=..., template=...)."""
    factory = _FACTORIES.get(name)
    if factory is None:
        raise SweclError(f"unknown agent {name!r}: choose one of {', '.join(n for n, _ in AGENTS)}")
    try:
        return factory(**options)  # type: ignore[no-any-return]
    except TypeError as exc:
        raise SweclError(f"agent {name!r} cannot be built with options {sorted(options)}: {exc}") from None
