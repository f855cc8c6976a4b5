"""Adding an agent is one module and one registry entry: every agent builds itself from
what a run offers, refuses in one line what it lacks, and nothing outside `agents` branches
on an agent's name."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from agents import AGENTS, RunSupplies
from agents import agent_entry, build_agent
from agents._registry import REGISTRY
from ledger import SweclError

ROOT = Path(__file__).resolve().parents[2]


def _supplies(**changes: object) -> RunSupplies:
    base: dict[str, object] = {
        "gold": lambda: {"a__b-1": "diff"},
        "predictions": lambda: {"a__b-1": "diff"},
        "command": "true {workdir}",
        "demo_attempts": {},
        "runs_here": False,
    }
    base.update(changes)
    return RunSupplies(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", list(REGISTRY))
def test_every_agent_builds_itself_from_what_a_run_offers(name: str) -> None:
    agent = build_agent(name, _supplies())
    assert agent.name == name and callable(agent.run)


@pytest.mark.parametrize(("name", "lacking", "said"), [
    ("demo", {"demo_attempts": None}, "only knows the built-in demo benchmark"),
    ("predictions", {"predictions": None}, "needs --predictions"),
    ("command", {"command": None}, "needs --command"),
])
def test_an_agent_refuses_a_run_that_lacks_what_it_needs_in_one_line(name: str, lacking: dict, said: str) -> None:
    with pytest.raises(SweclError) as info:
        build_agent(name, _supplies(**lacking))
    assert said in str(info.value) and "\n" not in str(info.value)


def test_an_unknown_agent_is_refused_with_the_known_ones() -> None:
    with pytest.raises(SweclError, match="unknown agent 'nobody': choose one of demo, oracle"):
        agent_entry("nobody")


def test_the_listing_is_the_registry() -> None:
    assert [name for name, _ in AGENTS] == list(REGISTRY)
    assert [name for name, e in REGISTRY.items() if not e.briefed] == ["predictions"]


def test_nothing_outside_agents_branches_on_an_agents_name() -> None:
    """`x.agent == "predictions"` and the like belong in the agent's registry entry."""
    offences = []
    for package in ("commands", "projections", "graders", "ledger", "bench"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if not isinstance(node, ast.Compare):
                    continue
                sides = [node.left, *node.comparators]
                named = any(isinstance(s, ast.Attribute) and s.attr in ("agent", "agent_name") or
                            isinstance(s, ast.Name) and s.id in ("agent", "agent_name") for s in sides)
                literal = any(isinstance(s, ast.Constant) and s.value in REGISTRY for s in sides)
                if named and literal:
                    offences.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offences == []
