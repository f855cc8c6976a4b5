"""Replaying recorded predictions (SWE-bench predictions JSONL, loaded elsewhere).

Either one mapping `{instance_id: patch}` for every pass and stage, or one per pass or
stage `{pass_or_stage: {instance_id: patch}}` (e.g. `initial` / `retest` / `baseline`
files, or `base` / `plugin-blank`): the task's pass is looked up first, then its stage.
"""

from __future__ import annotations

from collections.abc import Mapping

from ledger import SweclError

from ._oracle import paths_of, replay_patch
from ._protocol import AgentInput, AgentResult, RunSupplies

__all__ = ["PredictionsAgent"]


class PredictionsAgent:
    name = "predictions"

    def __init__(self, predictions: Mapping[str, Mapping[str, str | None]] | Mapping[str, str | None]) -> None:
        values = list(predictions.values())
        nested = [isinstance(v, Mapping) for v in values]
        if any(nested) and not all(nested):
            raise SweclError(
                "predictions mix per-instance patches and per-pass/stage tables: give either "
                "{instance_id: patch} or {pass_or_stage: {instance_id: patch}}"
            )
        self._by_key: Mapping[str, Mapping[str, str | None]] | None = predictions if values and all(nested) else None  # type: ignore[assignment]
        self._flat: Mapping[str, str | None] | None = None if self._by_key is not None else predictions  # type: ignore[assignment]

    def _table(self, pass_: str, stage: str) -> tuple[Mapping[str, str | None] | None, str]:
        if self._flat is not None:
            return self._flat, "prediction"
        assert self._by_key is not None
        for key in (pass_, stage):
            if key in self._by_key:
                return self._by_key[key], f"prediction ({key})"
        return None, f"prediction (no table for pass {pass_!r} or stage {stage!r})"

    def replayed_paths(self, instance_id: str, pass_: str, stage: str) -> list[str]:
        table, _ = self._table(pass_, stage)
        return paths_of(table.get(instance_id) if table is not None else None)

    def run(self, inp: AgentInput) -> AgentResult:
        table, source = self._table(inp.pass_, inp.stage)
        patch = table.get(inp.instance_id) if table is not None else None
        return replay_patch(inp, patch, source=source)


def from_run(run: RunSupplies) -> PredictionsAgent:
    if run.predictions is None:
        raise SweclError("--agent predictions needs --predictions FILE (or PASS=FILE, repeatable)")
    return PredictionsAgent(predictions=run.predictions())
