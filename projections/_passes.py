"""Pass names: `initial`, the `retest-{i}` rows (after initial task i), `retest`, `baseline`.

One reading of them for every fold that orders passes or needs a row's i, so a name that
is not a row (`retest-x`) is not a row anywhere.
"""

from __future__ import annotations


def retest_row(pass_: str) -> int | None:
    """i of a `retest-{i}` row; None for any other pass."""
    if pass_.startswith("retest-"):
        tail = pass_[len("retest-"):]
        if tail.isdigit():
            return int(tail)
    return None


def pass_rank(name: str) -> tuple[int, int]:
    """Sort key of pass names in the order a run makes them: initial, retest-K, retest, baseline."""
    if name == "initial":
        return (0, 0)
    if name.startswith("retest-"):
        return (1, retest_row(name) or 0)
    return ({"retest": 2, "baseline": 3}.get(name, 4), 0)
