"""The demo agent: deterministic, offline, and able to learn from memory.

It exists so the whole harness (memory, recall audit, grading, CL metrics) runs end to
end without a model. With memory on it recalls with the issue text and reuses the first
recalled fix that worked before and still applies; given the earlier tasks of its
sequence instead (the full-history stage), it tries their patches that resolved, most
recent first, the same way. Otherwise (or when none applies) it submits its own bundled
attempt for the task, which may well be wrong: that is what makes memory measurably
useful in the demo benchmark.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from ledger import SweclError
from ledger.events import ToolCall

from . import _diff
from ._protocol import AgentInput, AgentResult, RunSupplies

__all__ = ["DemoAgent"]


class DemoAgent:
    name = "demo"

    def __init__(self, attempts: Mapping[str, str] | None = None) -> None:
        self._attempts = dict(attempts or {})

    def run(self, inp: AgentInput) -> AgentResult:
        started = time.monotonic()
        base = inp.base_commit or _diff.head_commit(inp.worktree)
        calls: list[ToolCall] = []
        check = inp.apply_check or (lambda patch: _diff.check_patch(inp.worktree, patch))
        chosen: str | None = None

        # The full-history arm: the earlier tasks' own patches that resolved, most recent first.
        for entry in inp.history.entries if inp.history is not None else ():
            if entry.resolved and entry.patch:
                chosen = self._reuse(inp, check, calls, entry.patch, f"earlier task {entry.instance_id}'s patch")
                if chosen is not None:
                    break

        if inp.recall is not None and chosen is None:
            items = list(inp.recall.recall(inp.issue, k=5, repo=inp.repo))
            calls.append(ToolCall("recall"))
            for item in sorted(items, key=lambda i: i.rank):
                if item.outcome != "resolved" or not item.patch:
                    continue
                chosen = self._reuse(inp, check, calls, item.patch, f"memory item {item.item_id}")
                if chosen is not None:
                    break

        error: str | None = None
        if chosen is None:
            own = self._attempts.get(inp.instance_id)
            if own:
                ok = _diff.apply_patch(inp.worktree, own) is not None
                calls.append(ToolCall("apply", error=not ok))
                if not ok:
                    error = f"the demo's own attempt for {inp.instance_id} does not apply"

        return AgentResult(
            patch=_diff.worktree_patch(inp.worktree, base),
            turns=len(calls),
            tool_calls=calls,
            tokens={},
            cost_usd=0.0,
            duration_s=time.monotonic() - started,
            transcript="\n".join(
                f"{c.name}{' (failed)' if c.error else ''}" for c in calls
            ).encode() + (f"\nsubmitted {chosen}\n".encode() if chosen else b"\n"),
            error=error,
        )

    @staticmethod
    def _reuse(inp: AgentInput, check: Callable[[str], bool], calls: list[ToolCall], patch: str,
               what: str) -> str | None:
        """`patch` tried with the apply check and applied if it fits: `what`, else None."""
        fits = bool(check(patch))
        calls.append(ToolCall("apply_check", error=not fits))
        if not fits:
            return None
        ok = _diff.apply_patch(inp.worktree, patch) is not None
        calls.append(ToolCall("apply", error=not ok))
        return what if ok else None


def from_run(run: RunSupplies) -> DemoAgent:
    if run.demo_attempts is None:
        raise SweclError("the demo agent only knows the built-in demo benchmark; pick another --agent for --dataset")
    return DemoAgent(attempts=run.demo_attempts)
