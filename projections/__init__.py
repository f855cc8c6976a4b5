"""The read side: pure folds over the ledger (memory substrate, a(i,j) matrices, metrics).

Nothing here appends events; everything here can be rebuilt from the ledger as of any seq.
"""

from __future__ import annotations

from ._checkpoints import ChainCheckpoints, CheckpointStore
from ._files import WRITE_ERRNOS, atomic_file, output_file, undo_new_folder, write_atomic, write_error, write_if_changed, write_output
from ._outcomes import INVALID_STATUSES, Cell, OutcomeProjection, RunOutcomes, SequenceCells
from ._runner import Folded, Projection, Projector, Selection
from ._rebuild import Rebuilt, rebuild
from ._runs import RunsProjection, RunsState, RunSummary
from ._views import read_views

__all__ = [
    "Cell",
    "ChainCheckpoints",
    "CheckpointStore",
    "Folded",
    "INVALID_STATUSES",
    "OutcomeProjection",
    "Projection",
    "Projector",
    "Rebuilt",
    "RunOutcomes",
    "RunSummary",
    "RunsProjection",
    "RunsState",
    "Selection",
    "SequenceCells",
    "WRITE_ERRNOS",
    "atomic_file",
    "output_file",
    "read_views",
    "rebuild",
    "undo_new_folder",
    "write_atomic",
    "write_error",
    "write_if_changed",
    "write_output",
]
