"""What a run spent: its agents' reported tokens, dollars and seconds, and its budget.

Summed over every `agent.finished` of the run, abandoned attempts included (they were
paid), across resumes: the same sum `swecl run --budget-usd` stops on. An agent that
reports no cost (demo, codex, gemini) leaves `cost_usd` None rather than a false $0.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ledger import Ledger, StreamRange

__all__ = ["RunSpend", "spend_of"]


class RunSpend(msgspec.Struct, kw_only=True):
    attempts: int = 0
    cost_usd: float | None = None  # None: no attempt reported a cost
    tokens_in: int = 0
    tokens_out: int = 0
    agent_s: float = 0.0  # wall time of the agents' attempts
    over_limit: int = 0  # attempts recorded over --max-tokens-per-task or --max-turns
    budget_usd: float | None = None  # in force now: the last resume's, else the run's own

    def document(self) -> dict[str, Any]:
        doc = msgspec.to_builtins(self)
        # Summed floats: rounded, so $0.4 * 8 reads 3.2 (no cost is finer than a millionth).
        doc["cost_usd"] = None if self.cost_usd is None else round(self.cost_usd, 6)
        doc["agent_s"] = round(self.agent_s, 3)
        return doc

    def line(self) -> str:
        cost = "no cost reported" if self.cost_usd is None else f"${self.cost_usd:.2f}"
        budget = "" if self.budget_usd is None else f" of ${self.budget_usd:.2f} budget"
        over = f", {self.over_limit} over a per-task limit" if self.over_limit else ""
        return (f"{cost}{budget}, tokens in {self.tokens_in} out {self.tokens_out}, "
                f"agents {self.agent_s:.0f}s over {self.attempts} attempts{over}")


def spend_of(ledger: Ledger, version: str) -> RunSpend:
    spend = RunSpend()
    for rec in ledger.read(types=["run.started", "run.resumed", "agent.finished"], ranges=[StreamRange(f"run/{version}")]):
        ev = rec.event
        if rec.type == "run.started":
            spend.budget_usd = ev.config.get("budget_usd")
        elif rec.type == "run.resumed":
            spend.budget_usd = ev.budget_usd if ev.budget_usd is not None else spend.budget_usd
        else:
            spend.attempts += 1
            if ev.cost_usd is not None:
                spend.cost_usd = (spend.cost_usd or 0.0) + ev.cost_usd
            spend.tokens_in += int(ev.tokens.get("input", 0))
            spend.tokens_out += int(ev.tokens.get("output", 0))
            spend.agent_s += ev.duration_s
            spend.over_limit += ev.over_limit is not None
    return spend
