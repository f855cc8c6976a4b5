"""Coding-agent adapters and the memory plugin they talk to.

Agents by name (`build_agent`, `get_agent`, `AGENTS`): demo, oracle, predictions, claude,
command; adding one is a module and a registry entry (`agents._registry`).
Every agent takes an `AgentInput` (only what an agent may see) and returns an
`AgentResult` (the worktree's patch, turns, tool calls, tokens, cost, exit kind,
transcript). `RecallService` is the per-task memory handle; `agents.recall_server` serves
it over MCP stdio. A recall handle may bring an MCP server of its own (the `Recall`
protocol's `mcp_server_argv`, `mcp_server_in_sandbox`); `stdlib_script_argv` is how a
standard-library-only script is run inside the agent's sandbox.

Names resolve lazily: `python -m agents.recall_server` imports this package first, and
an MCP server must start fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ledger.lazy import lazy_exports

_EXPORTS = {
    "Agent": "_protocol",
    "AgentInput": "_protocol",
    "AgentResult": "_protocol",
    "Budget": "_protocol",
    "Recall": "_protocol",
    "HistoryEntry": "_protocol",
    "TaskHistory": "_protocol",
    "CODE_MODES": "_protocol",
    "EXIT_KINDS": "_protocol",
    "PROMPT_STYLES": "_protocol",
    "AGENTS": "_registry",
    "AgentEntry": "_registry",
    "RunSupplies": "_protocol",
    "agent_entry": "_registry",
    "build_agent": "_registry",
    "get_agent": "_registry",
    "RecallService": "_recall",
    "RecalledItem": "_recall",
    "worktree_patch": "_diff",
    "Scrubber": "_scrub",
    "Egress": "_egress",
    "EgressProxy": "_egress",
    "EgressRules": "_egress",
    "parse_allow_host": "_egress",
    "find_claude": "_claude",
    "preflight": "_startup",
    "sandbox_view": "_startup",
    "stdlib_script_argv": "_confine",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from ._claude import find_claude
    from ._confine import stdlib_script_argv
    from ._diff import worktree_patch
    from ._egress import Egress, EgressProxy, EgressRules, parse_allow_host
    from ._protocol import (
        CODE_MODES,
        EXIT_KINDS,
        PROMPT_STYLES,
        Agent,
        AgentInput,
        AgentResult,
        Budget,
        HistoryEntry,
        Recall,
        RunSupplies,
        TaskHistory,
    )
    from ._recall import RecalledItem, RecallService
    from ._registry import AGENTS, AgentEntry, agent_entry, build_agent, get_agent
    from ._scrub import Scrubber
    from ._startup import preflight, sandbox_view


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
