"""The memory write side: daydream (after a task), dream (night pass), seeding, export/import.

What the run orchestration and the CLI call:

- `seed_memory(ledger, version, source_memory)` before a plugin-accum/plugin-dreamed
  run's first task (after its run.started); `resolve_seed` + `apply_seed` are its parts.
- `dream(ledger, version, reason="pre-eval")` for plugin-dreamed; `swecl dream VERSION`
  is `dream(ledger, version)`.
- `daydream(ledger, version, TaskView(...), patch=, status=, resolved=, transcript=, secrets=)` after
  each initial-pass task of a memory-on stage.
- `materialise_version(ledger, version, results.version_dir(version))` at the end.
- `export_memory(ledger, version, out_dir)` / `import_seed(ledger, version, path)` for
  `swecl memory export|import`.

Every function returns a report or the recorded events; every refusal is a SweclError.
"""

from __future__ import annotations

from projections.memory import (
    DEFAULT_POLICY,
    GovernancePolicy,
    GradingSecrets,
    MaterialiseReport,
    leak_lines,
    test_name_forms,
)

from ._materialise import materialise_version, write_memory_folder
from ._daydream import (
    DaydreamInput,
    Extractor,
    MemoryDraft,
    PatchFacts,
    TaskView,
    TrajectoryView,
    daydream,
    plan_daydream,
    deterministic_extractor,
    draft_from_builtins,
    item_id_for,
    patch_facts,
    trajectory_view,
)
from ._dream import (
    DreamDecision,
    DreamPolicy,
    DreamReport,
    dream,
    jaccard,
    plan_dream,
    shingles,
)
from ._governance import Checker, Violation, find_secret
from ._seed import (
    VERSION_AT,
    ExportReport,
    SeedPlan,
    SeedResult,
    apply_seed,
    export_memory,
    import_seed,
    read_export,
    refuse_seed_loops,
    seed_cut,
    resolve_seed,
    seed_memory,
)

__all__ = [
    "DEFAULT_POLICY",
    "Checker",
    "DaydreamInput",
    "DreamDecision",
    "DreamPolicy",
    "DreamReport",
    "ExportReport",
    "Extractor",
    "GovernancePolicy",
    "GradingSecrets",
    "MaterialiseReport",
    "MemoryDraft",
    "PatchFacts",
    "SeedPlan",
    "SeedResult",
    "TaskView",
    "TrajectoryView",
    "VERSION_AT",
    "Violation",
    "apply_seed",
    "daydream",
    "plan_daydream",
    "trajectory_view",
    "deterministic_extractor",
    "draft_from_builtins",
    "dream",
    "export_memory",
    "find_secret",
    "leak_lines",
    "test_name_forms",
    "import_seed",
    "item_id_for",
    "jaccard",
    "materialise_version",
    "write_memory_folder",
    "patch_facts",
    "plan_dream",
    "read_export",
    "refuse_seed_loops",
    "seed_cut",
    "resolve_seed",
    "seed_memory",
    "shingles",
]
