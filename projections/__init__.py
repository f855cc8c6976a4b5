"""The read side: pure folds over the ledger (memory substrate, a(i,j) matrices, metrics).

Nothing here appends events; everything here can be rebuilt from the ledger as of any seq.
"""

from __future__ import annotations

from ._checkpoints import CheckpointStore
from ._runner import Folded, Projection, Projector, Selection

__all__ = ["CheckpointStore", "Folded", "Projection", "Projector", "Selection"]
