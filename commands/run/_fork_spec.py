"""`--fork V@K` as text: the run to fork and the task order to fork it at. Below the
options and the memory backends, which both read it."""

from __future__ import annotations

import re

from ledger import SweclError

__all__ = ["parse_fork"]

_FORK_SPEC = re.compile(r"(?P<version>[^@\s]+)@(?P<order>\d+)")


def parse_fork(text: str) -> tuple[str, int]:
    """`--fork V@K`: the run to fork and the task order to fork it at."""
    m = _FORK_SPEC.fullmatch(text.strip())
    if m is None:
        raise SweclError(f"--fork {text!r}: give VERSION@K, the run and the task order to fork it at (e.g. 3@5)")
    return m["version"], int(m["order"])
