"""The demo agent: own attempt with memory off, the first recalled resolved fix that applies with memory on."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from agents._demo import DemoAgent
from agents._diff import check_patch
from agents._protocol import AgentInput
from ledger.events import ToolCall

from .conftest import GREET_FIX
from .mini_recall import Item, MiniRecall

# The demo's own (wrong) attempt: touches total(), not greet().
OWN_ATTEMPT = """\
--- a/pkg/util.py
+++ b/pkg/util.py
@@ -7,6 +7,6 @@
 
 def total(values):
-    result = 0
+    result = 0.0
     for v in values:
         result += v
     return result
"""

STALE = GREET_FIX.replace('return "Hello, " + name.title()', 'return "Hi " + name')


def test_memory_off_applies_its_own_attempt(make_input: Callable[..., AgentInput]) -> None:
    result = DemoAgent({"demo__pkg-1": OWN_ATTEMPT}).run(make_input())
    assert "+    result = 0.0" in result.patch
    assert result.tool_calls == [ToolCall("apply")] and result.turns == 1
    assert result.exit == "completed" and result.cost_usd == 0.0


def test_memory_off_without_an_attempt_submits_nothing(make_input: Callable[..., AgentInput]) -> None:
    result = DemoAgent({}).run(make_input())
    assert result.patch == "" and result.turns == 0 and result.exit == "completed"


def test_memory_on_reuses_the_first_resolved_recalled_fix_that_applies(
    make_input: Callable[..., AgentInput], tmp_path: Path
) -> None:
    recall = MiniRecall(
        [
            Item("m-unresolved", 1, 3.0, "tried before", "failed fix", outcome="unresolved", patch=GREET_FIX),
            Item("m-stale", 2, 2.0, "old fix", "no longer applies", outcome="resolved", patch=STALE),
            Item("m-nopatch", 3, 1.5, "a note", "no patch", outcome="resolved", patch=None),
            Item("m-good", 4, 1.0, "greet None", "guard None in greet", outcome="resolved", patch=GREET_FIX),
        ],
        tmp_path / "recall",
    )
    checked: list[str] = []

    def apply_check(patch: str) -> bool:  # stands where the grader's dry run is injected
        checked.append(patch)
        return check_patch(make_input().worktree, patch)

    inp = make_input(recall=recall, apply_check=apply_check, stage="plugin-blank")
    result = DemoAgent({"demo__pkg-1": OWN_ATTEMPT}).run(inp)
    assert "+    if name is None:" in result.patch and "result = 0.0" not in result.patch
    assert result.tool_calls == [
        ToolCall("recall"),
        ToolCall("apply_check", error=True),
        ToolCall("apply_check"),
        ToolCall("apply"),
    ]
    assert result.turns == 4
    assert checked == [STALE, GREET_FIX]
    assert recall.calls() == [{"via": "inproc", "query": inp.issue, "repo": "demo/pkg", "k": 5}]
    assert b"memory item m-good" in result.transcript


def test_memory_on_with_nothing_useful_falls_back_to_its_own_attempt(
    make_input: Callable[..., AgentInput], tmp_path: Path
) -> None:
    recall = MiniRecall([Item("m-stale", 1, 1.0, "old", "stale", outcome="resolved", patch=STALE)], tmp_path / "r")
    result = DemoAgent({"demo__pkg-1": OWN_ATTEMPT}).run(make_input(recall=recall))
    assert "+    result = 0.0" in result.patch
    assert result.tool_calls == [ToolCall("recall"), ToolCall("apply_check", error=True), ToolCall("apply")]
