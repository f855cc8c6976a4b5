"""A run's cost budget (`swecl run --budget-usd X`): what it has spent, and the stop.

Spent is read from the ledger, never kept elsewhere: the sum of `agent.finished.cost_usd`
over every attempt of the run, across its resumes (an abandoned attempt's cost was paid
too). An agent that reports no cost adds nothing. The check runs before each task: the
task in flight always finishes (and is graded), so a run stops after the task that
crosses its budget, recorded as `run.budget_reached` and `run.finished` with status
`budget_reached`; `swecl run --resume V --budget-usd Y` raises the budget and goes on.
"""

from __future__ import annotations

from ledger import Ledger, StreamRange, SweclError

__all__ = ["BUDGET_EXIT_CODE", "BudgetReached", "budget_of", "check_budget", "spent_usd"]

# Distinct from an error (2), a bug (70) and a stop (130, 143): a script can tell that the
# run is resumable with a larger budget.
BUDGET_EXIT_CODE = 3


class BudgetReached(SweclError):
    """Run `version` spent `spent` of its `budget` (USD) before its next task."""

    exit_code = BUDGET_EXIT_CODE

    def __init__(self, version: str, spent: float, budget: float) -> None:
        self.version, self.spent, self.budget = version, spent, budget
        super().__init__(
            f"budget reached: ${spent:.2f} spent of ${budget:.2f}; "
            f"resume with --resume {version} --budget-usd {suggested_budget(spent, budget):g}"
        )

    def __reduce__(self) -> tuple[type, tuple[str, float, float]]:
        # Raised in a --jobs worker process, it reaches the run's process by pickle.
        return (BudgetReached, (self.version, self.spent, self.budget))


def suggested_budget(spent: float, budget: float) -> float:
    """A budget worth resuming with: room for as much again as was given, in cents."""
    return round(max(spent, budget) + budget, 2)


def spent_usd(ledger: Ledger, version: str) -> float:
    """What run `version`'s agents have reported spending, every attempt counted."""
    return sum(rec.event.cost_usd or 0.0
               for rec in ledger.read(types=["agent.finished"], ranges=[StreamRange(f"run/{version}")]))


def budget_of(ledger: Ledger, version: str, recorded: float | None) -> float | None:
    """The run's budget now: the last one a resume gave (`run.resumed.budget_usd`), else
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
