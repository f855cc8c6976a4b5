"""The recall audit: which memories influenced each task, where they came from, whether
the agent reused them, and leakage flags (same instance, later task, test content); and
the integrity flags of the agents' patches (`_integrity`: library code reaching into the
test machinery).

`audit_task(ledger, version, task_id)` and `audit_summary(ledger, version)` are pure
functions of the ledger (plus the grading secrets `commands.inputs.load_task_secrets`
reads from the run's dataset, when it is available).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ledger.lazy import lazy_exports

_EXPORTS = {
    "audit_summary": "_audit",
    "audit_task": "_audit",
    "resolve_task": "_audit",
    "INTEGRITY_KINDS": "_integrity",
    "FlaggedGrade": "_integrity",
    "RunIntegrity": "_integrity",
    "integrity_counts": "_integrity",
    "integrity_flags": "_integrity",
    "integrity_line": "_integrity",
    "integrity_of": "_integrity",
    "task_f2p": "_integrity",
    "leakage_counts": "_leakage",
    "leakage_of": "_leakage",
    "TestContent": "_flags",
    "run_started": "_fold",
    "pass_rank": "_fold",
    "fold_with_snapshots": "_fold",
    "FLAG_KINDS": "_model",
    "REUSE_THRESHOLD": "_model",
    "Attempt": "_model",
    "AttributedLine": "_model",
    "AuditedHit": "_model",
    "AuditedRecall": "_model",
    "CopyHop": "_model",
    "DatasetNote": "_model",
    "Decision": "_model",
    "Flag": "_model",
    "FlaggedTask": "_model",
    "Provenance": "_model",
    "ProviderRecall": "_model",
    "ProviderWrite": "_model",
    "provider_recalls": "_provider",
    "iter_provider_recalls": "_provider",
    "seeded_server_writes": "_provider",
    "server_calls": "_provider",
    "server_tools": "_provider",
    "Reuse": "_model",
    "RunAuditSummary": "_model",
    "TaskAudit": "_model",
    "WrittenBy": "_model",
    "changed_lines": "_reuse",
    "patch_reuse": "_reuse",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from ._audit import audit_summary, audit_task, resolve_task
    from ._provider import iter_provider_recalls, provider_recalls, seeded_server_writes, server_calls, server_tools
    from ._flags import TestContent
    from ._fold import fold_with_snapshots, pass_rank, run_started
    from ._integrity import (
        INTEGRITY_KINDS,
        FlaggedGrade,
        RunIntegrity,
        integrity_counts,
        integrity_flags,
        integrity_line,
        integrity_of,
        task_f2p,
    )
    from ._leakage import leakage_counts, leakage_of
    from ._model import (
        FLAG_KINDS,
        REUSE_THRESHOLD,
        Attempt,
        AttributedLine,
        AuditedHit,
        AuditedRecall,
        CopyHop,
        DatasetNote,
        Decision,
        Flag,
        FlaggedTask,
        Provenance,
        ProviderRecall,
        ProviderWrite,
        Reuse,
        RunAuditSummary,
        TaskAudit,
        WrittenBy,
    )
    from ._reuse import changed_lines, patch_reuse


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
