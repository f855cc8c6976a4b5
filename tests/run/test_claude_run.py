"""The main job driving the real `claude` CLI (offline, against the loopback fake API)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import apsw
import pytest

from tests.agents.conftest import claude_bin  # noqa: F401  (the session fixture: npm-installed CLI)
from tests.agents.fake_anthropic import FakeAnthropic, text, tool_use

from .support import SPANS, events, swecl, swecl_json

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
        swecl(results, "run", "--stage", "plugin-blank", "--agent", "claude", "--model", "claude-fake",
              "--sequence", SPANS, "--passes", "initial", "--quiet", cache=cache, env=env, timeout=600)
    finally:
        fake.stop()
    (run,) = swecl_json(results, "runs", cache=cache)
    assert (run["agent"], run["status"]) == ("claude", "finished")
    recalls = [p for _, _, _, p in events(results, "memory.recalled")]
    assert len(recalls) == 6 and {r["via"] for r in recalls} == {"mcp"}  # through the real MCP server
    agents = [p for _, _, _, p in events(results, "agent.finished")]
    assert {a["exit"] for a in agents} == {"completed"}
    assert all(a["turns"] == 2 and a["cost_usd"] is not None and a["tokens"]["input"] > 0 for a in agents)
    assert all(any(c["name"] == "mcp__memory__recall" for c in a["tool_calls"]) for a in agents)
    assert all(a["transcript"] and a["session_id"] for a in agents)
    grades = [p for _, _, _, p in events(results, "grade.finished")]
    assert {g["status"] for g in grades} == {"empty_patch"}  # it edited nothing: graded, not excused
    # the key reached the API and nothing we keep
    assert any(r.api_key == SECRET for r in fake.requests if r.api_key)
    conn = apsw.Connection(str(results / "ledger.db"), flags=apsw.SQLITE_OPEN_READONLY)
    for (payload,) in conn.execute("SELECT payload FROM events"):
        assert SECRET.encode() not in bytes(payload)
    for (data,) in conn.execute("SELECT data FROM blobs"):
        import zlib

        raw = bytes(data)
        try:
            raw = zlib.decompress(raw)
        except zlib.error:
            pass
        assert SECRET.encode() not in raw
    conn.close()


def test_a_missing_claude_cli_is_said_before_the_run_starts(tmp_path: Path, cache: Path) -> None:
    env = {"SWECL_CLAUDE_BIN": str(tmp_path / "no-such-claude"), "PATH": "/usr/bin:/bin"}
    proc = swecl(tmp_path / "r", "run", "--stage", "base", "--agent", "claude", "--sequence", SPANS,
                 cache=cache, env=env, check=False)
    assert proc.returncode == 2 and "claude" in proc.stderr and proc.stderr.count("\n") == 1
    assert not (tmp_path / "r" / "ledger.db").exists() or events(tmp_path / "r") == []
