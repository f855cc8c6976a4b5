"""swecl's benchmark inputs: SWE-Bench-CL curricula and manifests, SWE-bench rows,
predictions files, and the built-in demo benchmark.

`load_benchmark(dataset, rows)` is the one entry point for tasks: None is the demo, a
path is a curriculum / manifest (or rows), `hf:NAME` is the Hugging Face Hub; `rows`
completes a manifest. Everything comes back as frozen `Benchmark` / `Sequence` / `Task`
objects, and every bad input as a one-line `SweclError` naming file, sequence, task and
field.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ledger.lazy import lazy_exports

from ._load import (
    benchmark_from_curriculum,
    benchmark_to_list,
    dump_curriculum,
    find_sequence,
    find_task,
    list_sequences,
    load_benchmark,
    task_document,
    write_curriculum,
)
from ._model import DIFFICULTY_LABELS, RUNNABLE_FIELDS, Benchmark, Prediction, Sequence, Task, canonical_content
from ._predictions import load_predictions
from ._rows import read_rows
from ._secrets import load_task_secrets, run_dataset_source
from .demo import (
    DEMO_ATTEMPTS,
    DEMO_DESIGN,
    DEMO_ENVIRONMENT,
    DemoDesign,
    default_repos_dir,
    demo_benchmark,
    materialise_demo_repos,
    write_demo_curriculum,
)

__all__ = [
    "load_task_secrets",
    "run_dataset_source",
    "DEMO_ATTEMPTS",
    "DEMO_DESIGN",
    "DEMO_ENVIRONMENT",
    "DIFFICULTY_LABELS",
    "RUNNABLE_FIELDS",
    "Benchmark",
    "DemoDesign",
    "Prediction",
    "Sequence",
    "SwebenchRow",
    "Task",
    "benchmark_from_curriculum",
    "benchmark_to_list",
    "canonical_content",
    "default_repos_dir",
    "demo_benchmark",
    "dump_curriculum",
    "find_sequence",
    "find_task",
    "list_sequences",
    "load_benchmark",
    "load_predictions",
    "materialise_demo_repos",
    "read_rows",
    "task_document",
    "write_curriculum",
    "write_demo_curriculum",
]

if TYPE_CHECKING:
    from ._schemas import SwebenchRow

# pydantic's models load on first use (see `_schemas`): `swecl run` of the demo needs none.
_EXPORTS = {"SwebenchRow": "_schemas"}
__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
