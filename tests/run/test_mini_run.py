"""The main job driving the real mini-swe-agent (offline, against the loopback fake Chat
Completions API): `swecl run --agent mini-swe-agent` on the first two tasks of a demo
sequence in a plugin stage, sandboxed as a run is; the daydream reads its trajectory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.agents.conftest import mini_bin  # noqa: F401  (the session fixture: PyPI-installed CLI)
from tests.agents.fake_chat import MODEL, SUBMIT, FakeChat, bash, text, turns_so_far

from .support import SPANS, a_missing_cli_is_said_before_the_run, events, first_of, no_secret_in_the_results, swecl, swecl_json

pytestmark = pytest.mark.slow

SECRET = "sk-proj-test-" + "5" * 40
NOTE = "+# looked at by mini"


def edit_then_submit(body: dict[str, Any]) -> list[dict[str, Any]]:
    if turns_so_far(body) == 0:
        return [bash(f"echo '{NOTE[1:]}' >> spans/__init__.py")]
    return [text("Added a note to the package; the fix needs more work."), bash(SUBMIT)]


def test_a_plugin_run_with_mini_swe_agent(tmp_path: Path, cache: Path, mini_bin: str) -> None:  # noqa: F811
    results, home = tmp_path / "results", tmp_path / "home"
    home.mkdir()
    env = {"OPENAI_BASE_URL": "", "OPENAI_API_KEY": SECRET, "SWECL_MINI_BIN": mini_bin, "HOME": str(home)}
    with FakeChat(script=edit_then_submit) as fake:
        env["OPENAI_BASE_URL"] = fake.url
        swecl(results, "run", "--stage", "plugin-blank", "--agent", "mini-swe-agent", "--model", MODEL,
              "--sequence", SPANS, *first_of(2, SPANS), "--passes", "initial", "--quiet", cache=cache, env=env,
              timeout=600)
    (run,) = swecl_json(results, "runs", cache=cache)
    assert (run["agent"], run["status"]) == ("mini-swe-agent", "finished")
    agents = [p for _, _, _, p in events(results, "agent.finished")]
    assert len(agents) == 2 and {a["exit"] for a in agents} == {"completed"}, [a.get("error") for a in agents]
    assert all(a["turns"] == 2 and a["tokens"]["input"] > 0 and a["cost_usd"] > 0 and a["model"] == MODEL
               for a in agents)
    # recall before each task, inproc with the issue; task 2 found what task 1's daydream wrote,
    # and its prompt (what the model was sent) held it
    recalls = sorted((p for _, _, _, p in events(results, "memory.recalled")), key=lambda r: r["order"])
    assert [(r["via"], r["order"], len(r["results"]) > 0) for r in recalls] == [("inproc", 1, False), ("inproc", 2, True)]
    # each lesson tells, from the agent's trajectory, its last words
    written = sorted((p for _, _, _, p in events(results, "memory.written")), key=lambda w: w["source_order"])
    assert [w["source_order"] for w in written] == [1, 2]
    assert all(w["body"].endswith("\nHow it was found: Added a note to the package; the fix needs more work.")
               for w in written), [w["body"] for w in written]
    firsts = [r.body for r in fake.api_requests if turns_so_far(r.body) == 0]
    assert "Notes you kept from that work" not in json.dumps(firsts[0])
    assert "Notes you kept from that work" in json.dumps(firsts[1])
    # each patch graded (run against the tests, not excused); show has its numbers and last words
    grades = [p for _, _, _, p in events(results, "grade.finished")]
    assert len(grades) == 2 and not {g["status"] for g in grades} & {"empty_patch", "agent_error", "infra_error"}
    shown = swecl_json(results, "show", run["version"], "1", cache=cache)
    assert NOTE in shown["patch"] and shown["final_message"] == "Added a note to the package; the fix needs more work."
    assert shown["tokens"] == agents[0]["tokens"] and shown["cost_usd"] == agents[0]["cost_usd"] > 0
    assert all(r.credential == f"Bearer {SECRET}" for r in fake.api_requests)
    no_secret_in_the_results(results, SECRET)


def test_a_missing_mini_cli_is_said_before_the_run_starts(tmp_path: Path, cache: Path) -> None:
    a_missing_cli_is_said_before_the_run(tmp_path, cache, "mini-swe-agent", "SWECL_MINI_BIN")
