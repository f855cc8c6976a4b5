"""The oracle: submits the gold patch, taken back through the worktree like any agent's.

Constructed by the harness with the gold patches (which an `AgentInput` never carries);
it is the upper bound a grader must resolve, and a check that grading works at all.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from ledger.events import ToolCall
from ledger.patches import patch_paths

from . import _diff
from ._protocol import AgentInput, AgentResult, RunSupplies

__all__ = ["OracleAgent", "replay_patch"]


def replay_patch(inp: AgentInput, patch: str | None, *, source: str) -> AgentResult:
    """Apply a known patch to the worktree and return the worktree's diff as the result.

    A missing patch gives an empty one with the reason; a patch that does not apply here is
    passed on as given (exit `error`), so the grader's fuller apply chain still decides.
    """
    started = time.monotonic()
    if not patch or not patch.strip():
        return AgentResult(
            exit="error", turns=0, error=f"no {source} for {inp.instance_id}",
            duration_s=time.monotonic() - started,
        )
    base = inp.base_commit or _diff.head_commit(inp.worktree)
    applied = _diff.apply_patch(inp.worktree, patch)
    if applied is None:
        return AgentResult(
            patch=patch if patch.endswith("\n") else patch + "\n",
            exit="error",
            turns=1,
            tool_calls=[ToolCall("apply", error=True)],
            error=f"the {source} for {inp.instance_id} does not apply to the worktree with git apply; kept as given",
            duration_s=time.monotonic() - started,
        )
    return AgentResult(
        patch=_diff.worktree_patch(inp.worktree, base),
        turns=1,
        tool_calls=[ToolCall("apply")],
        duration_s=time.monotonic() - started,
    )


def paths_of(patch: str | None) -> list[str]:
    """The files a replayed patch touches: all its checkout needs (`RepoCache.agent_checkout`'s
    `only`); a patch that names a file it leaves out fails to apply there, and the full
    checkout is made then (`_diff.apply_patch`)."""
    return patch_paths(patch) if patch and patch.strip() else []


class OracleAgent:
    name = "oracle"

    def __init__(self, gold: Mapping[str, str]) -> None:
        self._gold = gold

    def replayed_paths(self, instance_id: str, pass_: str, stage: str) -> list[str]:
        return paths_of(self._gold.get(instance_id))

    def run(self, inp: AgentInput) -> AgentResult:
        return replay_patch(inp, self._gold.get(inp.instance_id), source="gold patch")


def from_run(run: RunSupplies) -> OracleAgent:
    return OracleAgent(gold=run.gold())
