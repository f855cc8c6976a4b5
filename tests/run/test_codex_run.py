"""The main job driving the real `codex` CLI (offline, against the loopback fake
Responses API): `swecl run --agent codex` on a demo sequence, plugin and builtin stages,
sandboxed as a run is."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.agents.conftest import codex_bin  # noqa: F401  (the session fixture: npm-installed CLI)
from tests.agents.fake_openai import (
    MODEL,
    FakeOpenAI,
    exec_command,
    mcp_call,
    responses_so_far,
    text,
    tool_outputs,
    tool_search,
    write_agents_md,
)

from .support import (
    a_missing_cli_is_said_before_the_run,
    a_plugin_run_recalled_and_was_graded,
    builtin_versions_recorded,
    no_secret_in_the_results,
    run_a_stage,
    the_next_task_read_it,
)

pytestmark = pytest.mark.slow

SECRET = "sk-proj-test-" + "7" * 40


def _issue(body: dict[str, Any]) -> str:
    prompt = json.dumps(body.get("input", []))
    found = re.search(r"<issue>\\n(.*?)\\n</issue>", prompt)
    assert found, "the task prompt holds the issue"
    return str(json.loads(f'"{found.group(1)}"'))


def recall_then_edit(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Find the recall tool, recall with the issue, edit a source file with a shell command, finish."""
    step = responses_so_far(body)
    if step == 0:
        return [tool_search("memory recall")]
    if step == 1:
        return [mcp_call("memory", "recall", {"query": _issue(body)[:300], "k": 3})]
    if step == 2:
        return [exec_command("echo '# looked at by codex' >> spans/__init__.py")]
    return [text("Added a note to the package; the fix needs more work.")]


def _codex_run_env(fake: FakeOpenAI, codex: str, home: Path) -> dict[str, str]:
    home.mkdir()
    return {"OPENAI_BASE_URL": fake.url, "OPENAI_API_KEY": SECRET, "SWECL_CODEX_BIN": codex, "HOME": str(home)}


def test_a_plugin_run_with_the_codex_cli(tmp_path: Path, cache: Path, codex_bin: str) -> None:  # noqa: F811
    results = tmp_path / "results"
    with FakeOpenAI(script=recall_then_edit) as fake:
        run_a_stage(results, cache, "plugin-blank", "codex", MODEL, _codex_run_env(fake, codex_bin, tmp_path / "home"))
    a_plugin_run_recalled_and_was_graded(
        results, cache, "codex", MODEL, turns=4, tools=["mcp__memory__recall", "command_execution"],
        patch_line="+# looked at by codex", final_message="Added a note to the package; the fix needs more work.",
    )
    # the key reached the API and nothing we keep
    assert all(r.credential == f"Bearer {SECRET}" for r in fake.api_requests)
    no_secret_in_the_results(results, SECRET)


def test_a_missing_codex_cli_is_said_before_the_run_starts(tmp_path: Path, cache: Path) -> None:
    a_missing_cli_is_said_before_the_run(tmp_path, cache, "codex", "SWECL_CODEX_BIN")


def test_a_builtin_run_records_codex_agents_md(tmp_path: Path, cache: Path, codex_bin: str) -> None:  # noqa: F811
    """`--stage builtin`: codex keeps its notes in AGENTS.md; swecl carries the file from task
    to task and records each new version as `memory.written` (the one before superseded)."""
    notes: list[str] = []

    def take_a_note(body: dict[str, Any]) -> list[dict[str, Any]]:
        if tool_outputs(body):
            return [text("Noted for next time.")]
        notes.append(f"- task {len(notes) + 1}: read the failing test before editing")
        return write_agents_md(body, notes[-1])

    results = tmp_path / "results"
    with FakeOpenAI(script=take_a_note) as fake:
        run_a_stage(results, cache, "builtin", "codex", MODEL, _codex_run_env(fake, codex_bin, tmp_path / "home"), version="b1")
    builtin_versions_recorded(results, cache, "AGENTS.md", ["\n".join(notes[: n + 1]) for n in range(len(notes))])
    # codex read the carried file: task 2's first request holds task 1's note as instructions
    the_next_task_read_it([r.body for r in fake.api_requests if not tool_outputs(r.body)], notes[0])
    no_secret_in_the_results(results, SECRET)
