"""mini-swe-agent's own behaviour: the real `mini` CLI (PyPI, pinned version) against the
loopback Chat Completions fake, on a real worktree, and its blind mode (the repository out
of sight, the fix submitted as a diff). What it shares with the other CLI agents (auth, a
hanging API, the primed prompt) is in test_cli_agents_shared.py."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agents._mini import MiniSweAgent
from agents._protocol import AgentInput, Budget
from graders.host import sandbox_for
from ledger.events import ToolCall
from projections.show import final_message
from tests.atif_check import AtifValidator

from .conftest import GREET_FIX
from .cli_scenarios import CASES, Harness, exported_trajectory, harness, no_secret_anywhere, processes_mentioning
from .fake_chat import MODEL, SUBMIT, bash, text, tool_results
from .mini_recall import Item, MiniRecall

pytestmark = pytest.mark.slow

CASE = next(c for c in CASES if c.agent is MiniSweAgent)
FIX = "sed -i 's/    return \"Hello, \" + name.title()/    if name is None:\\n        return \"Hello\"\\n&/' pkg/util.py"


@pytest.fixture
def cli(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, api_key: str) -> Iterator[Harness]:
    yield from harness(CASE, request, monkeypatch, tmp_path, api_key)


def test_recalled_notes_a_patch_tokens_and_cost(
    cli: Harness, make_input: Callable[..., AgentInput], repo: Path, tmp_path: Path, api_key: str,
    atif_validator: AtifValidator,
) -> None:
    fake = cli.fake([
        [bash('echo "key=[$OPENAI_API_KEY]"; cat pkg/util.py')],
        [bash(FIX)],
        [text("Fixed greet() for None."), bash(SUBMIT)],
    ])
    recall = MiniRecall([Item("m1", 1, 2.5, "greet None", "guard None before .title()", outcome="resolved")],
                        tmp_path / "recall")
    # plugin-blank's style is `recall` (a tool to call): without an MCP client the notes come primed
    inp = make_input(recall=recall, stage="plugin-blank", prompt_style="recall",
                     model=MODEL, budget=Budget(max_turns=10, timeout_s=120))
    result = cli.run(inp)

    assert result.exit == "completed" and result.exit_code == 0 and result.error is None, result.error
    # recall round trip: the harness recalled once with the issue, and the note reached the model
    assert recall.calls() == [{"via": "inproc", "query": inp.issue, "repo": "demo/pkg", "k": 5}]
    first = fake.api_requests[0].body
    assert first["model"] == "gpt-4o-mini" and [t["function"]["name"] for t in first["tools"]] == ["bash"]
    assert "guard None before .title()" in json.dumps(first["messages"]) and "recall` tool" not in json.dumps(first)
    # the commands the model ran saw the key's variable emptied; the API got the key
    assert "key=[]" in tool_results(fake.api_requests[1].body)[0]
    assert all(r.credential == f"Bearer {api_key}" for r in fake.api_requests)
    # the patch is the real diff of the model's edit
    assert '+    if name is None:\n+        return "Hello"\n' in result.patch
    # turns, tool calls, tokens and cost from the trajectory (3 completions of the fake's usage)
    assert result.turns == 3 and len(fake.api_requests) == 3
    assert result.tool_calls == [ToolCall("bash"), ToolCall("bash")]  # the submission is no tool result
    assert result.tokens == {"input": 270, "output": 60, "cache_read": 30, "cache_creation": 0, "reasoning": 15}
    trajectory = json.loads((inp.scratch_dir / "mini-trajectory.json").read_text())
    priced = [m["extra"]["cost"] for m in trajectory["messages"] if "response" in m.get("extra", {})]
    assert result.cost_usd is not None and result.cost_usd > 0 and result.cost_usd == pytest.approx(sum(priced))
    assert json.loads(result.transcript) == trajectory and final_message(result.transcript.decode()) == "Fixed greet() for None."
    no_secret_anywhere(result, inp.scratch_dir, api_key, tmp_path / "home")
    # its trajectory as ATIF: bash calls with their results, LiteLLM's usage and price per step
    exported = exported_trajectory(tmp_path / "ledger.db", result, "mini-swe-agent", atif_validator, tmp_path / "atif")
    steps = exported["steps"]
    assert [c["function_name"] for s in steps for c in s.get("tool_calls", [])] == ["bash", "bash", "bash"]
    assert "key=[]" in json.dumps([s.get("observation") for s in steps])
    assert sum(s.get("metrics", {}).get("cost_usd", 0) for s in steps) == pytest.approx(result.cost_usd)


def test_a_crash_is_crashed_and_keeps_the_steps_before_it(
    cli: Harness, make_input: Callable[..., AgentInput], tmp_path: Path,
) -> None:
    # The model's second command kills mini itself (its shell's parent) with SIGKILL.
    cli.fake([[bash("ls")], [bash("kill -9 $PPID")]])
    result = cli.run(make_input(model=MODEL, budget=Budget(timeout_s=120)))
    assert result.exit == "crashed" and result.exit_code == -9, (result.exit, result.error)
    assert (result.error or "").startswith("mini was killed by signal 9")
    assert result.turns == 1 and result.tool_calls == [ToolCall("bash")]  # the trajectory saved after step 1
    assert result.not_started is None  # it reached the model: the agent's failure
    assert processes_mentioning(str(tmp_path)) == []


def test_its_limits_the_builtin_stage_and_a_missing_model(make_input: Callable[..., AgentInput], tmp_path: Path) -> None:
    agent = MiniSweAgent(executable=sys.executable)
    inv = agent.prepare(make_input(model=MODEL, budget=Budget(max_turns=7, max_cost_usd=1.5)))
    assert inv.config["agent"] == {"step_limit": 7, "cost_limit": 1.5}
    assert inv.argv[-2:] == ["--model", MODEL] and str(inv.trajectory_path) in inv.argv
    assert inv.stdin == b"" and inv.config["run"]["task"] == inv.prompt  # the task in the config, not in argv
    for bad, words in ((dict(model=None), "needs --model"),
                       (dict(model=MODEL, memory_dir=tmp_path / "m"), "no memory of its own")):
        with pytest.raises(Exception, match=words) as info:
            agent.prepare(make_input(**bad))
        assert "\n" not in str(info.value)


def blind_steps(repo: Path, diff: str) -> list[list[dict[str, object]]]:
    """Look for the repository (here and at its real path), write `diff`, submit it."""
    return [
        [bash(f"pwd; ls -A; cat pkg/util.py; ls -A {repo}; cat {repo}/pkg/util.py; git -C {repo} log --oneline")],
        [bash(f"cat > fix.diff <<'EOF'\n{diff}EOF")],
        [text("greet() returns a bare greeting for None."), bash(f"{SUBMIT} && cat fix.diff")],
    ]


def test_blind_mode_hides_the_repository_and_applies_the_submitted_diff(
    cli: Harness, make_input: Callable[..., AgentInput], repo: Path,
) -> None:
    fake = cli.fake(blind_steps(repo, GREET_FIX))
    inp = make_input(model=MODEL, code_mode="blind", sandbox=sandbox_for("bwrap"), budget=Budget(timeout_s=120))
    result = cli.run(inp)

    assert result.exit == "completed" and result.error is None, result.error
    # the model's commands ran in an empty directory and found the repository nowhere
    seen = tool_results(fake.api_requests[1].body)[0]
    assert str(inp.scratch_dir / "blind-workdir") in seen and "No such file or directory" in seen
    assert "return \"Hello, \" + name.title()" not in seen and "base" not in seen.split("git")[-1]
    # the prompt said so, and never named the checkout
    sent = json.dumps(fake.api_requests[0].body["messages"])
    assert "The repository is not available to you" in sent and "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat fix.diff" in sent
    assert str(repo) not in json.dumps(fake.api_requests[0].body)
    # the submission (the trajectory's info.submission) was applied to the worktree
    trajectory = json.loads((inp.scratch_dir / "mini-trajectory.json").read_text())
    assert trajectory["info"]["submission"] == GREET_FIX
    assert '+    if name is None:\n+        return "Hello"\n' in result.patch
    assert "if name is None" in (repo / "pkg" / "util.py").read_text()
    assert final_message(result.transcript.decode()) == "greet() returns a bare greeting for None."


def test_a_blind_diff_that_does_not_apply_is_kept_as_written_with_a_note(
    cli: Harness, make_input: Callable[..., AgentInput], repo: Path,
) -> None:
    stale = GREET_FIX.replace(' def greet(name):', ' def greet(person):')
    cli.fake(blind_steps(repo, stale))
    result = cli.run(make_input(model=MODEL, code_mode="blind", sandbox=sandbox_for("bwrap"),
                                budget=Budget(timeout_s=120)))
    assert result.exit == "completed"
    assert result.patch == stale and result.error == (
        "blind: the diff in the submission does not apply with git apply; kept as written")
    assert "if name is None" not in (repo / "pkg" / "util.py").read_text()
