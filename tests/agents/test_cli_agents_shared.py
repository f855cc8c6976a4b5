"""What every vendor CLI agent beside claude must do the same way, run for codex, gemini
and mini-swe-agent: the real CLI (npm or PyPI, pinned version) against its loopback fake
API; the MCP scenarios for the CLIs with an MCP client (codex, gemini). Each CLI's own
behaviour (its tools, its config, its memory file, its limits) is in test_codex_e2e.py,
test_gemini_e2e.py and test_mini_e2e.py; claude's is in test_claude_e2e.py."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agents._cli_agent import CliAgent
from agents._protocol import AgentInput, AgentResult, Budget
from ledger import SweclError
from ledger.events import ToolCall

from .cli_scenarios import (
    CASES,
    LESSON,
    MCP_CASES,
    BrokenRecall,
    Case,
    Harness,
    harness,
    exported_trajectory,
    ledger_with_a_lesson,
    no_secret_anywhere,
    recall_call_and_memory_steps,
    the_lesson_was_recalled,
    time_out_while_the_api_hangs,
)
from tests.atif_check import AtifValidator

from .fake_api import FakeAPI
from .mini_recall import Item, MiniRecall

pytestmark = pytest.mark.slow


@pytest.fixture(params=CASES, ids=[c.name for c in CASES])
def case(request: pytest.FixtureRequest) -> Case:
    return request.param


@pytest.fixture
def cli(case: Case, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        api_key: str) -> Iterator[Harness]:
    yield from harness(case, request, monkeypatch, tmp_path, api_key)


@pytest.fixture(params=MCP_CASES, ids=[c.name for c in MCP_CASES])
def mcp_cli(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
            api_key: str) -> Iterator[Harness]:
    """A CLI with an MCP client: recall is a tool it calls."""
    yield from harness(request.param, request, monkeypatch, tmp_path, api_key)


def test_a_missing_key_is_auth_failed(
    cli: Harness, make_input: Callable[..., AgentInput], monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = cli.fake([cli.case.say("must never be asked")])
    monkeypatch.delenv(cli.case.key_var)
    result = cli.run(make_input(model=cli.case.model))
    assert result.exit == "auth_failed" and cli.case.key_var in (result.error or ""), (result.exit, result.error)
    assert result.exit_code not in (0, None) and result.patch == "" and result.cost_usd is None
    assert fake.api_requests == []


def test_a_rejected_key_is_auth_failed(cli: Harness, make_input: Callable[..., AgentInput], api_key: str) -> None:
    fake = cli.fake(mode="unauthorized")
    inp = make_input(model=cli.case.model)
    result = cli.run(inp)
    assert result.exit == "auth_failed" and cli.case.rejected in (result.error or ""), (result.exit, result.error)
    assert len(fake.api_requests) == 1
    no_secret_anywhere(result, inp.scratch_dir, api_key)
    if cli.case.name == "mini":  # mini's CLI says the error as a plain traceback, not in rich's boxes
        stderr = (inp.scratch_dir / f"{cli.case.agent.name}-stderr.txt").read_text()
        assert "Traceback (most recent call last)" in stderr and "\u256d" not in stderr, stderr[-2000:]


def test_hanging_api_is_a_timeout_and_the_process_group_is_gone(
    cli: Harness, make_input: Callable[..., AgentInput], tmp_path: Path,
) -> None:
    def attempt(limit: float, scratch: Path) -> tuple[AgentResult, FakeAPI]:
        fake = cli.fake(mode="hang")
        recall = MiniRecall([], tmp_path / f"{scratch.name}-recall")  # an MCP child too: it must die with the CLI
        inp = make_input(model=cli.case.model, recall=recall, scratch_dir=scratch,
                         budget=Budget(timeout_s=limit))
        return cli.run(inp), fake

    result, _ = time_out_while_the_api_hangs(attempt, tmp_path, cli.case.start_s)
    assert result.session_id or not cli.case.sessions  # the CLI said its session's id before the hang


def test_primed_natural_prompt_holds_the_recalled_notes(
    cli: Harness, make_input: Callable[..., AgentInput], tmp_path: Path,
) -> None:
    fake = cli.fake([cli.case.say("Nothing to change.")])
    recall = MiniRecall([Item("m1", 1, 1.0, "greet None", "guard None before .title()", outcome="resolved")],
                        tmp_path / "recall")
    inp = make_input(model=cli.case.model, recall=recall, stage="plugin-primed",
                     prompt_style="natural", budget=Budget(timeout_s=120))
    result = cli.run(inp)
    assert result.exit == "completed", result.error
    sent = cli.case.sent(fake.api_requests[0].body)
    assert "guard None before .title()" in sent and "You have worked in the demo/pkg repository before" in sent
    assert recall.calls() == [{"via": "inproc", "query": inp.issue, "repo": "demo/pkg", "k": 5}]


def test_ledger_recall_through_the_project_recall_service(
    mcp_cli: Harness, make_input: Callable[..., AgentInput], tmp_path: Path, atif_validator: AtifValidator,
) -> None:
    cli = mcp_cli
    ledger_path = tmp_path / "ledger.db"
    service = ledger_with_a_lesson(ledger_path)
    issue = "greet() crashes on None"
    fake = cli.fake([*cli.case.recall(issue), cli.case.say("done")])
    inp = make_input(issue=issue, recall=service, stage="plugin-blank",
                     prompt_style="recall", model=cli.case.model, budget=Budget(timeout_s=120))
    result = cli.run(inp)
    assert result.exit == "completed", result.error
    assert result.tool_calls == [ToolCall("mcp__memory__recall")]
    the_lesson_was_recalled(ledger_path, issue)
    assert LESSON in cli.case.returned(fake.api_requests[-1].body)
    # its transcript, exported as ATIF, is valid and holds the recall with its result
    trajectory = exported_trajectory(ledger_path, result, cli.case.name, atif_validator, tmp_path / "atif")
    recall_call_and_memory_steps(trajectory)


def test_a_memory_server_that_fails_to_start_makes_the_run_an_error(
    mcp_cli: Harness, make_input: Callable[..., AgentInput],
) -> None:
    cli = mcp_cli
    cli.fake([cli.case.say("done without memory")])
    result = cli.run(make_input(model=cli.case.model, recall=BrokenRecall(),
                                budget=Budget(timeout_s=120)))
    assert result.exit == "error"
    assert (result.error or "").startswith("the memory MCP server failed to start: the run had no recall"), result.error


# mini-swe-agent has a blind mode (its commands run where the repository is not): test_mini_e2e.py
@pytest.mark.parametrize("agent", [c.agent for c in CASES if c.name != "mini"], ids=[c.name for c in CASES if c.name != "mini"])
def test_blind_mode_is_refused_in_one_line(agent: type[CliAgent[Any]], make_input: Callable[..., AgentInput]) -> None:
    with pytest.raises(SweclError, match=f"the {agent.name} agent has no blind mode") as info:
        agent(executable=sys.executable).run(make_input(code_mode="blind"))
    assert "\n" not in str(info.value)
