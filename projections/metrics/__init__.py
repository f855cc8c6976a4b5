"""Continual-learning metrics: pure functions of recorded outcomes, by versioned formula set.

    from projections.metrics import SequenceOutcomes, compute, to_frame

    result = compute([SequenceOutcomes(name="django", initial=[1, 0, 1, 1],
                                       final=[0, 0, 1, 1], baseline=[1, 0, 0, 1])])
    result.sequences["django"].metrics["CL-Score"]; result.macro["ACC"]

Formula sets (`FORMULAS`, `get_formula`): `native` (docs/design.md section 7) and `eval-v1` (the
SWE-Bench-CL authors' eval_v1 code). Their docstrings (`_native`, `_eval_v1`) define each
metric and what a missing outcome (None) does to it.
"""

from __future__ import annotations

from projections.metrics._compute import (
    MACRO_ROW,
    MetricsResult,
    SequenceResult,
    compute,
    macro_average,
    metrics_from_vectors_document,
    result_document,
    to_frame,
)
from projections.metrics._direction import BETTER, LEGEND, ScoredRun, marked, score_drivers
from projections.metrics._extras import (
    NO_STEPS_REASON,
    MemoryContrast,
    MissingCounts,
    SequenceExtras,
    SnapshotPhase,
    StratumScore,
    ToolUseEfficiency,
    sequence_extras,
)
from projections.metrics._measured import NEEDS_BASELINE, NEEDS_RETEST, macro_unmeasured, unmeasured
from projections.metrics._registry import DEFAULT_FORMULA, FORMULAS, FormulaSet, get_formula
from projections.metrics._wilson import Z95, wilson
from projections.metrics._vectors import (
    DIFFICULTY_LEVELS,
    METRIC_NAMES,
    Lambdas,
    Outcome,
    SequenceOutcomes,
    SequenceScore,
    sequences_from_vectors_document,
)

__all__ = [
    "Z95",
    "wilson",
    "BETTER",
    "LEGEND",
    "ScoredRun",
    "marked",
    "score_drivers",
    "DEFAULT_FORMULA",
    "DIFFICULTY_LEVELS",
    "FORMULAS",
    "MACRO_ROW",
    "METRIC_NAMES",
    "NEEDS_BASELINE",
    "NEEDS_RETEST",
    "NO_STEPS_REASON",
    "FormulaSet",
    "Lambdas",
    "MemoryContrast",
    "MetricsResult",
    "MissingCounts",
    "Outcome",
    "SequenceExtras",
    "SequenceOutcomes",
    "SequenceResult",
    "SequenceScore",
    "SnapshotPhase",
    "StratumScore",
    "ToolUseEfficiency",
    "compute",
    "get_formula",
    "macro_average",
    "macro_unmeasured",
    "metrics_from_vectors_document",
    "result_document",
    "sequence_extras",
    "sequences_from_vectors_document",
    "to_frame",
    "unmeasured",
]
