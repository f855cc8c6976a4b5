"""The memory funnel (issue 67): per task of a run's initial pass, whether the knowledge
its dependencies (`run.started.tasks[].dependencies`) left was stored, retrieved and used,
and whether it resolved; each unresolved task labelled with where its memory failed
(storage gap, retrieval gap, use gap) or `no dependency`. Per sequence and macro counts
and rates; two runs side by side. The design's section 7, "The memory funnel".

`funnel(ledger, version, upto=)` is a pure function of the ledger's events up to a cursor.
"""

from __future__ import annotations

from ._counts import RATES
from ._difference import funnel_difference, label_of
from ._fold import NO_DEPENDENCIES, NO_MEMORY, funnel
from ._format import (
    format_funnel_difference,
    funnel_difference_document,
    funnel_table_lines,
    task_funnel_lines,
)
from ._model import (
    LABELS,
    NO_DEPENDENCY,
    RETRIEVAL_GAP,
    STORAGE_GAP,
    USE_GAP,
    FunnelCounts,
    FunnelDifference,
    LabelChange,
    LabelDifference,
    MacroFunnel,
    RunFunnel,
    SequenceFunnel,
    Source,
    TaskFunnel,
)

__all__ = [
    "LABELS",
    "NO_DEPENDENCIES",
    "NO_DEPENDENCY",
    "NO_MEMORY",
    "RATES",
    "RETRIEVAL_GAP",
    "STORAGE_GAP",
    "USE_GAP",
    "FunnelCounts",
    "FunnelDifference",
    "LabelChange",
    "LabelDifference",
    "MacroFunnel",
    "RunFunnel",
    "SequenceFunnel",
    "Source",
    "TaskFunnel",
    "format_funnel_difference",
    "funnel",
    "funnel_difference",
    "funnel_difference_document",
    "funnel_table_lines",
    "label_of",
    "task_funnel_lines",
]
