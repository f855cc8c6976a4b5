"""The write side: everything that appends to the ledger.

- `commands.run`: the main job (stages over sequences, resumable), and grading.
- `commands.memory`: daydream, dream, seeding, export/import of memory.
- `commands.inputs`: datasets, grading rows, predictions, the demo benchmark.
- `regrade`, `validate`: a run's grades again under today's rules; SWE-bench's
  validation step on this host.
- `Experiment`: the application core over one results folder (its ledger, locks and
  layout), with every job as a method returning a plain document.
- `commands.cli`: the click CLI, a thin shell (parse, call, print) over these and the
  read side (`projections`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ledger.lazy import lazy_exports

_EXPORTS = {
    "Experiment": "_experiment",
    "NOOP_PATCH": "_validate",
    "ExperimentFolder": "_folder",
    "Reading": "_folder",
    "Runs": "_jobs_run",
    "RunsSummary": "_jobs_run",
    "regrade": "_regrade",
    "check_slug": "_validate",
    "validate": "_validate",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from ._experiment import Experiment
    from ._folder import ExperimentFolder, Reading
    from ._jobs_run import Runs, RunsSummary
    from ._regrade import regrade
    from ._validate import NOOP_PATCH, check_slug, validate

__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
