"""Formula sets by name.

A formula set is versioned code, selected by name when scores are projected; the ledger
keeps only raw outcomes, so adding or fixing a set re-scores every past run without
touching it. Changing what a registered set computes means bumping its `version` (so
stored reports say which arithmetic produced them); a different convention gets a new name.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from ledger.errors import SweclError
from projections.metrics import _eval_v1, _native
from projections.metrics._vectors import Lambdas, SequenceOutcomes, SequenceScore

ScoreFunction = Callable[[SequenceOutcomes, Lambdas], SequenceScore]


class FormulaSet(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    version: int
    description: str
    """One line: what distinguishes this set."""
    score: ScoreFunction
    """The nine metrics of one sequence (`SequenceScore.metrics`, keyed by METRIC_NAMES)."""


FORMULAS: dict[str, FormulaSet] = {
    formula.name: formula
    for formula in (
        FormulaSet(
            name=_native.NAME,
            version=_native.VERSION,
            description=_native.DESCRIPTION,
            score=_native.score_native,
        ),
        FormulaSet(
            name=_eval_v1.NAME,
            version=_eval_v1.VERSION,
            description=_eval_v1.DESCRIPTION,
            score=_eval_v1.score_eval_v1,
        ),
    )
}

DEFAULT_FORMULA = _native.NAME


def get_formula(name: str) -> FormulaSet:
    try:
        return FORMULAS[name]
    except (KeyError, TypeError):
        known = ", ".join(sorted(FORMULAS))
        raise SweclError(f"unknown metric formula set {name!r}; choose one of: {known}") from None
