"""The grading secrets of a run's tasks (gold test patch, FAIL_TO_PASS, PASS_TO_PASS),
read from the dataset the run recorded, for the recall audit's test-content check."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ledger import SweclError
from projections.audit import DatasetNote, run_started
from projections.memory import GradingSecrets

from ._load import load_benchmark
from .demo import demo_benchmark

if TYPE_CHECKING:
    from ledger import Ledger


def run_dataset_source(config: dict[str, Any], benchmark: str, dataset: str | None = None,
                       rows: str | None = None) -> tuple[str | None, str | None]:
    """Where a run's tasks come from: `dataset`/`rows` when given, else the source its
    options recorded, else (a run that recorded no options) its benchmark's name; None is
    the built-in demo."""
    if dataset is not None:
        return dataset, rows
    if "dataset" in config:
        return config.get("dataset"), config.get("rows")
    return (None if benchmark == "demo" else benchmark), None


def load_task_secrets(
    ledger: Ledger, version: str, *, dataset: str | None = None, rows: str | None = None
) -> tuple[dict[str, GradingSecrets] | None, DatasetNote]:
    """The grading secrets of the run's tasks, from the dataset its run.started recorded
    (or `dataset`/`rows` given instead). Never raises for an unavailable dataset: the
    note says why the test-content check cannot run."""
    started = run_started(ledger, version)
    source, rows_source = run_dataset_source(started.config or {}, started.benchmark, dataset, rows)
    label = source or "the built-in demo benchmark"
    try:
        if source is None:
            # The secrets need no repositories: skip creating them.
            benchmark = demo_benchmark(materialise=False)
        else:
            benchmark = load_benchmark(source, rows_source)
    except (SweclError, OSError) as exc:
        return None, DatasetNote(
            available=False, source=label, note=f"dataset not available ({' '.join(str(exc).split())}): test content not checked"
        )
    note = None
    if benchmark.content_hash != started.dataset_hash:
        note = (
            f"the dataset's content hash is {benchmark.content_hash[:12]}, the run's was {started.dataset_hash[:12]}: "
            "it changed since the run; checked against the current content"
        )
    secrets = {
        t.instance_id: GradingSecrets(
            test_patch=t.test_patch or "", fail_to_pass=tuple(t.fail_to_pass or ()), pass_to_pass=tuple(t.pass_to_pass or ())
        )
        for t in benchmark.tasks()
    }
    return secrets, DatasetNote(available=True, source=label, note=note)

