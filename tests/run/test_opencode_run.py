"""The main job driving the real `opencode` CLI (offline, against the loopback fake
Anthropic API): `swecl run --agent opencode` on a demo sequence, plugin stage, sandboxed
as a run is: recalled through MCP, graded, tokens and cost shown."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.agents.conftest import opencode_bin  # noqa: F401  (the session fixture: npm-installed CLI)
from tests.agents.fake_anthropic import OPENCODE_MODEL, FakeAnthropic, text, tool_use

from .support import a_missing_cli_is_said_before_the_run, a_plugin_run_recalled_and_was_graded, no_secret_in_the_results, run_a_stage, swecl_json

pytestmark = pytest.mark.slow

SECRET = "sk-ant-api03-test-" + "5" * 40


def recall_then_edit(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Recall with the issue, edit a source file with a shell command, finish."""
    step = sum(1 for m in body["messages"] if m["role"] == "assistant")
    if step == 0:
        found = re.search(r"<issue>\\n(.*?)\\n</issue>", json.dumps(body["messages"]))
        assert found, "the task prompt holds the issue"
        return [tool_use("memory_recall", {"query": json.loads(f'"{found.group(1)}"')[:300], "k": 3})]
    if step == 1:
        return [tool_use("bash", {"command": "echo '# looked at by opencode' >> spans/__init__.py", "description": "note"})]
    return [text("Added a note to the package; the fix needs more work.")]


def test_a_plugin_run_with_opencode(tmp_path: Path, cache: Path, opencode_bin: str) -> None:  # noqa: F811
    results = tmp_path / "results"
    home = tmp_path / "home"
    home.mkdir()
    with FakeAnthropic(script=recall_then_edit) as fake:
        run_a_stage(results, cache, "plugin-blank", "opencode", OPENCODE_MODEL,
                    {"ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": SECRET, "SWECL_OPENCODE_BIN": opencode_bin,
                     "HOME": str(home)})
    a_plugin_run_recalled_and_was_graded(
        results, cache, "opencode", OPENCODE_MODEL, turns=3, tools=["mcp__memory__recall", "bash"],
        patch_line="+# looked at by opencode", final_message="Added a note to the package; the fix needs more work.",
        priced=True,
    )
    shown = swecl_json(results, "show", "v1", "1", cache=cache)
    assert shown["cost_usd"] > 0 and shown["tokens"]["output"] > 0, shown
    no_secret_in_the_results(results, SECRET)


def test_a_missing_opencode_cli_is_said_before_the_run_starts(tmp_path: Path, cache: Path) -> None:
    a_missing_cli_is_said_before_the_run(tmp_path, cache, "opencode", "SWECL_OPENCODE_BIN")
