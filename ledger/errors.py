"""Every error swecl raises for conditions a user can act on, in one place.

The CLI turns any `SweclError` into one line on stderr and its `exit_code`, never a
traceback; anything else escaping is a bug. Each layer raises the ones of its concern
(the ledger's, the graders' and the host's, the run's, the read side's) and re-exports
them where its callers look; they are all declared here, below every layer.
"""

from __future__ import annotations


class SweclError(Exception):
    """A problem the user can fix: bad input, a missing tool, a refused operation."""

    exit_code: int = 2


class LedgerError(SweclError):
    """The ledger file cannot be used as asked (not a ledger, newer schema, locked, read-only)."""


class LedgerDamaged(LedgerError):
    """The ledger file is physically damaged: empty, cut short, or a malformed database image.

    Exit 2 like any ledger that cannot be used; `swecl verify` reports it as a failed
    verification (exit 1). Nothing is ever written to such a file.
    """


class ConcurrencyConflict(LedgerError):
    """An append at a stream version that another writer already took; nothing was written."""

    def __init__(self, stream: str, expected: int, actual: int) -> None:
        super().__init__(
            f"stream {stream!r} is at version {actual}, not {expected}: another writer "
            "appended first; nothing of this batch was written"
        )
        self.stream = stream
        self.expected = expected
        self.actual = actual


class IntegrityError(LedgerError):
    """The ledger's contents do not match their hashes (tampering or corruption)."""

    exit_code = 1

    def __init__(self, seq: int | None, message: str) -> None:
        super().__init__(message)
        self.seq = seq


class Terminated(KeyboardInterrupt):
    """SIGTERM (`kill`, a scheduler's time limit, a container stop), handled as Ctrl-C is:
    a run records `interrupted` and stays resumable. A KeyboardInterrupt, so every place
    that cleans up after Ctrl-C cleans up after it too."""


# -- the host and the graders -----------------------------------------------------------------


class SandboxUnavailable(SweclError):
    """The sandbox was asked for and cannot be had on this machine."""


class GitError(SweclError):
    """A git operation failed (missing git, unreachable source, unknown commit)."""


class PythonNotFound(SweclError):
    """No interpreter of the wanted version could be found."""


class EnvBuildError(SweclError):
    """An environment could not be built (no interpreter, venv creation failed, ...)."""


class UnknownEnvSpec(SweclError):
    """No spec for repo@version in the table and the task brought none."""


class InputRefused(SweclError):
    """An input file swecl will not read; `reason` is missing, directory, special,
    too_large or unreadable, `problem` the message without its label."""

    def __init__(self, label: str, problem: str, reason: str) -> None:
        super().__init__(f"{label}: {problem}")
        self.problem = problem
        self.reason = reason


# -- a run ------------------------------------------------------------------------------------

# Distinct from an error (2), a bug (70) and a stop (130, 143): a script can tell that the
# run is resumable with a larger budget.
BUDGET_EXIT_CODE = 3


class AgentUnavailable(SweclError):
    """The agent cannot run here (e.g. not logged in); the run stops, resumable."""


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


class MemoryServerError(SweclError):
    """The memory server could not be started or used: an infrastructure problem of
    the run, not the agent's."""


class NothingGraded(SweclError):
    """Every instance ended without a verdict: a broken set-up, not a score of zero."""

    exit_code = 1


# -- the read side ----------------------------------------------------------------------------


class NotFound(SweclError):
    """Nothing at that address (an unknown run, task or pass is a SweclError too)."""
