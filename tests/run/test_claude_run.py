"""The main job driving the real `claude` CLI (offline, against the loopback fake API)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.agents.conftest import claude_bin  # noqa: F401  (the session fixture: npm-installed CLI)
from tests.agents.fake_anthropic import FakeAnthropic, text, tool_use

from .support import (
    AGENT_RUN_TASKS,
    SPANS,
    a_missing_cli_is_said_before_the_run,
    builtin_versions_recorded,
    events,
    first_of,
    no_secret_in_the_ledger,
    swecl,
    swecl_json,
)

pytestmark = pytest.mark.slow

SECRET = "sk-ant-test-" + "7" * 40


def recall_then_stop(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Turn 0: recall with the issue's title line; turn 1: finish without editing."""
    turns = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
    if turns == 0:
        prompt = json.dumps(body.get("messages", [])[-1:])
        title = "truncate" if "truncate" in prompt else "interval overlap"
        return [tool_use("mcp__memory__recall", {"query": title, "k": 3})]
    return [text("I looked at memory and decided not to change anything.")]


def test_a_plugin_run_with_the_claude_cli(tmp_path: Path, cache: Path, claude_bin: str) -> None:  # noqa: F811
    fake = FakeAnthropic(script=recall_then_stop).start()
    home = tmp_path / "home"
    home.mkdir()
    env = {
        "ANTHROPIC_BASE_URL": fake.url,
        "ANTHROPIC_API_KEY": SECRET,
        "SWECL_CLAUDE_BIN": claude_bin,
        "HOME": str(home),
    }
    try:
        results = tmp_path / "results"
        # A budget the first task's reported cost crosses: the run stops after it (exit 3),
        # and a resume with a larger one finishes the run (the sequence's first tasks).
        stopped = swecl(results, "run", "--stage", "plugin-blank", "--agent", "claude", "--model", "claude-fake",
                        "--sequence", SPANS, *first_of(AGENT_RUN_TASKS, SPANS), "--passes", "initial",
                        "--budget-usd", "0.000001", "--quiet",
                        cache=cache, env=env, timeout=600, check=False)
        assert stopped.returncode == 3, stopped.stderr
        assert "budget reached: $" in stopped.stderr + stopped.stdout
        assert [p["order"] for _, _, _, p in events(results, "task.finished")] == [1]
        (reached,) = [p for _, _, _, p in events(results, "run.budget_reached")]
        assert reached["spent_usd"] > reached["budget_usd"] == 0.000001
        swecl(results, "run", "--resume", "1", "--budget-usd", "100", "--quiet", cache=cache, env=env, timeout=600)
    finally:
        fake.stop()
    (run,) = swecl_json(results, "runs", cache=cache)
    assert (run["agent"], run["status"]) == ("claude", "finished")
    assert run["spend"]["budget_usd"] == 100 and run["spend"]["cost_usd"] > 0
    first, *agents = [p for _, _, _, p in events(results, "agent.finished")]
    # The CLI held the first task to what was left of the budget (its --max-budget-usd): it
    # stopped after its first model call (whether the recall that call asked for ran before
    # the CLI checked its spend is the CLI's timing: task 1 recalled once or not at all).
    assert first["exit"] == "budget" and first["cost_usd"] > 0 and first["transcript"]
    recalls = [p for _, _, _, p in events(results, "memory.recalled")]
    orders = [r["order"] for r in recalls]
    assert orders in (list(range(1, AGENT_RUN_TASKS + 1)), list(range(2, AGENT_RUN_TASKS + 1))), orders
    assert {r["via"] for r in recalls} == {"mcp"}  # through the real MCP server
    assert {a["exit"] for a in agents} == {"completed"}
    assert all(a["turns"] == 2 and a["cost_usd"] is not None and a["tokens"]["input"] > 0 for a in agents)
    assert all(any(c["name"] == "mcp__memory__recall" for c in a["tool_calls"]) for a in agents)
    assert all(a["transcript"] and a["session_id"] for a in agents)
    grades = [p for _, _, _, p in events(results, "grade.finished")]
    assert {g["status"] for g in grades} == {"empty_patch"}  # it edited nothing: graded, not excused
    # the key reached the API and nothing we keep
    assert any(r.credential == SECRET for r in fake.requests if r.credential)
    no_secret_in_the_ledger(results / "ledger.db", SECRET)


def test_a_missing_claude_cli_is_said_before_the_run_starts(tmp_path: Path, cache: Path) -> None:
    a_missing_cli_is_said_before_the_run(tmp_path, cache, "claude", "SWECL_CLAUDE_BIN")


def test_a_builtin_run_records_the_agents_own_memory_files(tmp_path: Path, cache: Path, claude_bin: str) -> None:  # noqa: F811
    """`--stage builtin`: Claude Code keeps its own notes in the sequence's memory folder;
    swecl carries the folder from task to task and records each new version of a note as
    `memory.written` (the one before superseded), so the stage is audited like the others."""
    results = tmp_path / "results"
    note = results / "vb1" / "_builtin" / SPANS / "auto-memory" / "MEMORY.md"
    notes: list[str] = []

    def take_a_note(body: dict[str, Any]) -> list[dict[str, Any]]:
        said = [m for m in body.get("messages", []) if m.get("role") == "assistant"]
        last = json.dumps(said[-1]) if said else ""
        if not said and note.exists():
            return [tool_use("Read", {"file_path": str(note)})]  # Claude Code writes only files it has read
        if not said or '"Read"' in last:
            notes.append(f"- task {len(notes) + 1}: read the failing test before editing\n")
            return [tool_use("Write", {"file_path": str(note), "content": "".join(notes)})]
        return [text("Noted for next time.")]

    fake = FakeAnthropic(script=take_a_note).start()
    home = tmp_path / "home"
    home.mkdir()
    env = {"ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": SECRET, "SWECL_CLAUDE_BIN": claude_bin, "HOME": str(home)}
    try:
        swecl(results, "run", "--stage", "builtin", "--version", "b1", "--agent", "claude", "--model", "claude-fake",
              "--sequence", SPANS, *first_of(AGENT_RUN_TASKS, SPANS), "--passes", "initial", "--quiet", cache=cache,
              env=env, timeout=600)
    finally:
        fake.stop()
    builtin_versions_recorded(results, cache, "MEMORY.md", ["".join(notes[: n + 1]) for n in range(len(notes))])
    # Claude Code read the carried note: task 2's first request holds task 1's line.
    first_requests = [r.body for r in fake.api_requests if r.turn == 0 and r.body.get("tools")]
    assert notes[0].strip() in json.dumps(first_requests[1])
    # The substrate (what an audit or a materialised folder shows): one live note, the latest.
    swecl(results, "memory", "materialise", "b1", cache=cache)
    live = json.loads((results / "vb1" / "_memory" / "items.json").read_text())["items"]  # live items only
    assert [(i["kind"], i["title"], i["body"]) for i in live] == [("builtin-file", "MEMORY.md", "".join(notes))]
    assert note.read_text() == "".join(notes)
