"""Errors every layer raises for conditions a user can act on.

The CLI turns any `SweclError` into one line on stderr and its `exit_code`, never a
traceback; anything else escaping is a bug.
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
