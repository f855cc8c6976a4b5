"""The main job driving the real `gemini` CLI (offline, against the loopback fake Gemini
API): `swecl run --agent gemini` on a demo sequence, plugin and builtin stages, sandboxed
as a run is."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.agents.conftest import gemini_bin  # noqa: F401  (the session fixture: npm-installed CLI)
from tests.agents.fake_gemini import MODEL, FakeGemini, function_call, function_responses, model_turns, text, write_gemini_md

from .support import (
    a_missing_cli_is_said_before_the_run,
    a_plugin_run_recalled_and_was_graded,
    builtin_versions_recorded,
    no_secret_in_the_results,
    run_a_stage,
    the_next_task_read_it,
)

pytestmark = pytest.mark.slow

SECRET = "AIzaSy-test-" + "7" * 28


def _issue(body: dict[str, Any]) -> str:
    found = re.search(r"<issue>\\n(.*?)\\n</issue>", json.dumps(body.get("contents", [])))
    assert found, "the task prompt holds the issue"
    return str(json.loads(f'"{found.group(1)}"'))


def recall_then_edit(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Recall with the issue, edit a source file with a shell command, finish."""
    step = model_turns(body)
    if step == 0:
        return [function_call("mcp_memory_recall", {"query": _issue(body)[:300], "k": 3})]
    if step == 1:
        return [function_call("run_shell_command", {"command": "echo '# looked at by gemini' >> spans/__init__.py",
                                                    "description": "note"})]
    return [text("Added a note to the package; the fix needs more work.")]


def _gemini_run_env(fake: FakeGemini, gemini: str, home: Path) -> dict[str, str]:
    home.mkdir()
    return {"GOOGLE_GEMINI_BASE_URL": fake.url, "GEMINI_API_KEY": SECRET, "SWECL_GEMINI_BIN": gemini, "HOME": str(home)}


def test_a_plugin_run_with_the_gemini_cli(tmp_path: Path, cache: Path, gemini_bin: str) -> None:  # noqa: F811
    results = tmp_path / "results"
    with FakeGemini(script=recall_then_edit, expected_key=SECRET) as fake:
        run_a_stage(results, cache, "plugin-blank", "gemini", MODEL, _gemini_run_env(fake, gemini_bin, tmp_path / "home"))
    a_plugin_run_recalled_and_was_graded(
        results, cache, "gemini", MODEL, turns=3, tools=["mcp__memory__recall", "run_shell_command"],
        patch_line="+# looked at by gemini", final_message="Added a note to the package; the fix needs more work.",
    )
    # the key reached the API and nothing we keep
    assert fake.api_requests and all(r.credential == SECRET for r in fake.api_requests)
    no_secret_in_the_results(results, SECRET)


def test_a_missing_gemini_cli_is_said_before_the_run_starts(tmp_path: Path, cache: Path) -> None:
    a_missing_cli_is_said_before_the_run(tmp_path, cache, "gemini", "SWECL_GEMINI_BIN")


def test_a_builtin_run_records_gemini_md(tmp_path: Path, cache: Path, gemini_bin: str) -> None:  # noqa: F811
    """`--stage builtin`: the Gemini CLI keeps its notes in its GEMINI.md; swecl carries the
    file from task to task and records each new version as `memory.written` (the one before
    superseded)."""
    notes: list[str] = []

    def take_a_note(body: dict[str, Any]) -> list[dict[str, Any]]:
        if function_responses(body):
            return [text("Noted for next time.")]
        notes.append(f"- task {len(notes) + 1}: read the failing test before editing")
        return write_gemini_md(body, notes[-1])

    results = tmp_path / "results"
    with FakeGemini(script=take_a_note) as fake:
        run_a_stage(results, cache, "builtin", "gemini", MODEL, _gemini_run_env(fake, gemini_bin, tmp_path / "home"), version="b1")
    builtin_versions_recorded(results, cache, "GEMINI.md", ["\n".join(notes[: n + 1]) for n in range(len(notes))])
    # the CLI read the carried file: task 2's first request holds task 1's note as context
    the_next_task_read_it([r.body for r in fake.api_requests if not function_responses(r.body)], notes[0])
    no_secret_in_the_results(results, SECRET)
