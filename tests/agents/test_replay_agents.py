"""oracle and predictions: a known patch applied to a real worktree, taken back as its diff."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from agents._oracle import OracleAgent
from agents._predictions import PredictionsAgent
from agents._protocol import AgentInput
from ledger import SweclError
from ledger.events import ToolCall

from .conftest import GREET_FIX, build_repo


def test_oracle_submits_the_gold_patch_through_the_worktree(make_input: Callable[..., AgentInput], repo: Path) -> None:
    result = OracleAgent({"demo__pkg-1": GREET_FIX}).run(make_input())
    assert result.exit == "completed" and result.error is None
    assert "+    if name is None:" in result.patch and result.patch.startswith("diff --git a/pkg/util.py")
    assert 'return "Hello"' in (repo / "pkg" / "util.py").read_text()
    assert result.tool_calls == [ToolCall("apply")] and result.turns == 1


def test_oracle_without_gold_gives_an_empty_patch_and_says_why(make_input: Callable[..., AgentInput]) -> None:
    result = OracleAgent({}).run(make_input())
    assert result.patch == "" and result.exit == "error"
    assert result.error == "no gold patch for demo__pkg-1"


def test_a_patch_that_does_not_apply_is_handed_on_as_given(make_input: Callable[..., AgentInput], repo: Path) -> None:
    stale = GREET_FIX.replace('return "Hello, " + name.title()', 'return "Hi, " + name')
    result = OracleAgent({"demo__pkg-1": stale}).run(make_input())
    assert result.exit == "error" and "does not apply" in (result.error or "")
    assert result.patch == stale
    assert result.tool_calls == [ToolCall("apply", error=True)]
    assert "if name is None" not in (repo / "pkg" / "util.py").read_text()


def test_predictions_flat_table(make_input: Callable[..., AgentInput]) -> None:
    agent = PredictionsAgent({"demo__pkg-1": GREET_FIX, "other": None})
    assert "+    if name is None:" in agent.run(make_input()).patch


def test_predictions_missing_instance(make_input: Callable[..., AgentInput]) -> None:
    result = PredictionsAgent({"other": GREET_FIX}).run(make_input())
    assert result.patch == "" and result.exit == "error" and "no prediction for demo__pkg-1" == result.error


def test_predictions_per_pass_then_per_stage(make_input: Callable[..., AgentInput], tmp_path: Path) -> None:
    other_fix = GREET_FIX.replace('return "Hello"', 'return "Hello, stranger"')
    agent = PredictionsAgent({"baseline": {"demo__pkg-1": other_fix}, "plugin-blank": {"demo__pkg-1": GREET_FIX}})
    by_pass = agent.run(make_input(pass_="baseline", stage="plugin-blank"))
    assert '+        return "Hello, stranger"' in by_pass.patch
    # a fresh worktree for the second run: the first one already holds a fix
    fresh = build_repo(tmp_path / "fresh")
    by_stage = agent.run(make_input(worktree=fresh, pass_="initial", stage="plugin-blank"))
    assert '+        return "Hello"\n' in by_stage.patch
    neither = agent.run(make_input(worktree=fresh, pass_="retest", stage="base"))
    assert neither.patch == "" and "no table for pass 'retest' or stage 'base'" in (neither.error or "")


def test_predictions_refuse_a_mixed_table() -> None:
    with pytest.raises(SweclError, match="mix per-instance patches"):
        PredictionsAgent({"initial": {"a": "x"}, "b": "patch"})
