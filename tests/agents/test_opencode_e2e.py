"""The opencode adapter end to end: the real `opencode` CLI (npm `opencode-ai`, pinned
version) against the loopback fake of the Anthropic Messages API, with a real git worktree
and real MCP recall (what every such CLI must do alike, timeouts, auth failures and recall
among it, is test_cli_agents_shared.py; the event parser is test_opencode_events.py).

The fake model uses opencode's own tools as a real model would: `memory_recall` (the
recall tool of the `memory` MCP server, as opencode names it), `read`, `edit` and `bash`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agents._opencode import OpencodeAgent
from agents._protocol import AgentInput, Budget
from ledger.events import ToolCall
from projections.show import final_message

from .cli_scenarios import CASES, Harness, harness, no_secret_anywhere, processes_mentioning
from .conftest import build_repo
from .fake_anthropic import OPENCODE_MODEL, text, tool_results, tool_use
from .mini_recall import Item, MiniRecall

pytestmark = pytest.mark.slow

CASE = next(c for c in CASES if c.name == "opencode")
FIX_OLD = "def greet(name):\n"
FIX_NEW = 'def greet(name):\n    if name is None:\n        return "Hello"\n'


@pytest.fixture
def cli(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, api_key: str) -> Iterator[Harness]:
    """opencode pointed at its fake (`cli.fake(script)`), in an isolated environment."""
    yield from harness(CASE, request, monkeypatch, tmp_path, api_key)


def test_recall_edit_and_finish_end_to_end(
    make_input: Callable[..., AgentInput], repo: Path, tmp_path: Path, cli: Harness, api_key: str,
) -> None:
    issue = "greet() crashes on None: greet(None) raises AttributeError."
    util = str(repo / "pkg" / "util.py")
    fake = cli.fake([
        [tool_use("memory_recall", {"query": issue, "repo": "demo/pkg", "k": 3})],
        [tool_use("read", {"filePath": str(repo / "pkg" / "missing.py")})],  # fails: no such file
        [tool_use("edit", {"filePath": util, "oldString": FIX_OLD, "newString": FIX_NEW})],
        # the key is not hidden from its shell: what the command printed is scrubbed from all we keep
        [tool_use("bash", {"command": "echo note > notes.txt; echo key=$ANTHROPIC_API_KEY", "description": "note"})],
        [text("Fixed greet() for None.")],
    ])
    recall = MiniRecall([Item("m1", 1, 2.5, "greet None", "guard None before .title()", outcome="resolved")],
                        tmp_path / "recall")
    inp = make_input(issue=issue, recall=recall, stage="plugin-blank",
                     prompt_style="recall", model=OPENCODE_MODEL, budget=Budget(timeout_s=120))

    result = cli.run(inp)

    assert result.exit == "completed", result.error
    assert result.exit_code == 0 and result.error is None
    assert recall.calls() == [{"via": "mcp", "query": issue, "repo": "demo/pkg", "k": 3}]
    assert result.tool_calls == [ToolCall("mcp__memory__recall"), ToolCall("read", error=True), ToolCall("edit"),
                                 ToolCall("bash")]
    assert result.turns == 5
    # five model calls of the fake's 100 in / 20 out, priced by opencode's catalog ($3 / $15 per M)
    assert result.tokens == {"input": 500, "output": 100, "cache_read": 0, "cache_creation": 0, "reasoning": 0}
    assert result.cost_usd == pytest.approx(5 * (100 * 3 + 20 * 15) / 1e6)
    assert result.model == OPENCODE_MODEL and result.session_id and result.session_id.startswith("ses_")
    assert "+    if name is None:\n+        return \"Hello\"\n" in result.patch
    assert "+++ b/notes.txt" in result.patch  # its shell ran in the worktree
    assert final_message(result.transcript.decode()) == "Fixed greet() for None."
    assert "guard None before .title()" in json.dumps(tool_results(fake.api_requests[1].body))
    # one model call per step, all with our key, the model we named, and no web tool offered
    assert {(r.method, r.route) for r in fake.requests} == {("POST", "/v1/messages")}
    assert len(fake.api_requests) == 5 and all(r.credential == api_key for r in fake.api_requests)
    assert {r.body["model"] for r in fake.api_requests} == {"claude-sonnet-4-5"}
    offered = {t["name"] for t in fake.api_requests[0].body["tools"]}
    assert {"memory_recall", "read", "edit", "bash"} <= offered and not {"webfetch", "websearch"} & offered
    first_user = json.dumps(fake.api_requests[0].body["messages"])
    assert "mcp__memory__recall" in first_user and json.dumps(issue)[1:-1] in first_user
    # nothing was fetched from npm or elsewhere: its home holds no npm cache, its config no plugin
    home = inp.scratch_dir / "opencode-home"
    assert not (home / ".npm").exists() and list((home / "config" / "opencode" / "node_modules").iterdir()) == []
    no_secret_anywhere(result, inp.scratch_dir, api_key, tmp_path / "home")


def test_a_crash_mid_session_is_crashed_and_leaves_nothing_running(
    make_input: Callable[..., AgentInput], tmp_path: Path, cli: Harness,
) -> None:
    # The model has opencode's shell kill opencode itself (the shell's parent): a real crash.
    cli.fake([[tool_use("bash", {"command": "kill -9 $PPID", "description": "crash"})], [text("unreachable")]])
    inp = make_input(model=OPENCODE_MODEL, budget=Budget(timeout_s=120))
    result = cli.run(inp)
    assert result.exit == "crashed", (result.exit, result.error)
    assert result.exit_code == -9 and (result.error or "").startswith("killed by signal 9 before its session ended")
    assert result.session_id  # from its database: the stream ended before any step finished
    assert processes_mentioning(str(tmp_path)) == []


def test_token_limit_ends_the_cli_and_keeps_its_patch(
    make_input: Callable[..., AgentInput], repo: Path, tmp_path: Path, cli: Harness,
) -> None:
    # Each model call reports 100 input + 20 output tokens: a note written, then a shell forever.
    fake = cli.fake([[tool_use("bash", {"command": "echo note > notes.txt", "description": "note"})],
                     [tool_use("bash", {"command": "true", "description": "again"})]])
    inp = make_input(model=OPENCODE_MODEL, budget=Budget(timeout_s=120, max_tokens=300))
    result = cli.run(inp)
    assert result.exit == "max_tokens", (result.exit, result.error)
    assert result.exit_code is None and result.not_started is None
    assert result.tokens["input"] + result.tokens["output"] >= 360  # the third call's step passed 300
    assert 3 <= len(fake.api_requests) < 20
    assert "+++ b/notes.txt" in result.patch
    assert processes_mentioning(str(tmp_path)) == []


def test_turn_limit_ends_the_cli_before_its_next_model_call(
    make_input: Callable[..., AgentInput], repo: Path, tmp_path: Path, cli: Harness,
) -> None:
    # opencode has no turn limit of its own: swecl ends it once 3 model calls went on to a tool.
    fake = cli.fake([[tool_use("bash", {"command": "echo note > notes.txt", "description": "note"})],
                     [tool_use("bash", {"command": "true", "description": "again"})]])
    result = cli.run(make_input(model=OPENCODE_MODEL, budget=Budget(timeout_s=120, max_turns=3)))
    assert result.exit == "max_turns", (result.exit, result.error)
    assert result.error == f"ended at its turn limit: {result.turns} model calls" and result.turns >= 3
    assert result.exit_code is None and result.not_started is None
    assert 3 <= len(fake.api_requests) < 20
    assert "+++ b/notes.txt" in result.patch  # graded on what it left
    assert processes_mentioning(str(tmp_path)) == []


def test_an_answer_at_the_turn_limit_is_not_cut(
    make_input: Callable[..., AgentInput], repo: Path, cli: Harness,
) -> None:
    cli.fake([[tool_use("bash", {"command": "echo note > notes.txt", "description": "note"})], [text("Done.")]])
    result = cli.run(make_input(model=OPENCODE_MODEL, budget=Budget(timeout_s=120, max_turns=2)))
    assert (result.exit, result.turns) == ("completed", 2), (result.exit, result.error)


def test_builtin_agents_md_carries_across_tasks(
    make_input: Callable[..., AgentInput], tmp_path: Path, cli: Harness,
) -> None:
    memory_dir = tmp_path / "builtin-v1-seq"

    def writes(line: str) -> Callable[[dict[str, object]], list[dict[str, object]]]:
        def step(body: dict[str, object]) -> list[dict[str, object]]:
            if tool_results(body):
                return [text("Noted.")]
            path = json.dumps(body).split("memory file across the tasks you do in this repository: ")[1].split(". ")[0]
            return [tool_use("bash", {"command": f"echo '{line}' >> {path}", "description": "remember"})]
        return step

    agent = OpencodeAgent(executable=cli.binary)
    cli.fake(writes("- greet(None) needs a guard"))
    first = agent.run(make_input(model=OPENCODE_MODEL, stage="builtin", memory_dir=memory_dir,
                                 budget=Budget(timeout_s=120)))
    assert first.exit == "completed", first.error
    assert first.memory_files == {"AGENTS.md": "- greet(None) needs a guard\n"} and first.patch == ""

    fake2 = cli.fake(writes("- total() sums a list"))
    second = agent.run(make_input(model=OPENCODE_MODEL, stage="builtin", memory_dir=memory_dir,
                                  worktree=build_repo(tmp_path / "repo2"), scratch_dir=tmp_path / "scratch2",
                                  budget=Budget(timeout_s=120)))
    assert second.exit == "completed", second.error
    assert second.memory_files == {"AGENTS.md": "- greet(None) needs a guard\n- total() sums a list\n"}
    # opencode loaded the kept AGENTS.md into the next task's instructions
    assert "greet(None) needs a guard" in json.dumps(fake2.api_requests[0].body["system"])
