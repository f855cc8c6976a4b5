"""A run's cost budget (`swecl run --budget-usd X`): what it has spent, and the stop.

Spent is read from the ledger, never kept elsewhere: the sum of `agent.finished.cost_usd`
over every attempt of the run, across its resumes (an abandoned attempt's cost was paid
too), and of `memory.model.called.cost_usd`, a memory server's own model calls through
swecl's gateway (priced from its table). An agent that reports no cost, and a model call
the table cannot price, add nothing. The check runs before each task: the
task in flight always finishes (and is graded), so a run stops after the task that
crosses its budget, recorded as `run.budget_reached` and `run.finished` with status
`budget_reached`; `swecl run --resume V --budget-usd Y` raises the budget and goes on.
"""

from __future__ import annotations

from ledger import Ledger, StreamRange
from ledger.errors import BUDGET_EXIT_CODE, BudgetReached

__all__ = ["BUDGET_EXIT_CODE", "BudgetReached", "budget_of", "check_budget", "spent_usd"]

def spent_usd(ledger: Ledger, version: str) -> float:
    """What run `version` has spent: its agents' reported costs, every attempt counted, and
    its memory server's priced model calls."""
    return sum(rec.event.cost_usd or 0.0 for rec in ledger.read(types=["agent.finished", "memory.model.called"],
                                                                ranges=[StreamRange(f"run/{version}")]))


def budget_of(ledger: Ledger, version: str, recorded: float | None) -> float | None:
    """The run's budget now: the last one a resume gave (`run.resumed.budget.usd`), else
    the one it started with (`recorded`, from run.started's options)."""
    budget = recorded
    for rec in ledger.read(types=["run.resumed"], streams=[f"run/{version}"]):
        if rec.event.budget_usd is not None:
            budget = rec.event.budget_usd
    return budget


def check_budget(ledger: Ledger, version: str, budget: float | None) -> float | None:
    """Before a task: raise BudgetReached when the run has spent its budget; else what is
    left of it (None: no budget), the most the next task may spend where its agent can be told."""
    if budget is None:
        return None
    spent = spent_usd(ledger, version)
    if spent >= budget:
        raise BudgetReached(version, spent, budget)
    return budget - spent
