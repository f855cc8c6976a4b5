"""The recall audit: which memories influenced each task, where they came from, whether
the agent reused them, and leakage flags (same instance, later task, test content).

`audit_task(ledger, version, task_id)` and `audit_summary(ledger, version)` are pure
functions of the ledger (plus the grading secrets `commands.inputs.load_task_secrets`
reads from the run's dataset, when it is available).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ledger.lazy import lazy_exports

_AUDIT_NAMES = (
    "FLAG_KINDS",
    "REUSE_THRESHOLD",
    "Attempt",
    "AuditedHit",
    "AuditedRecall",
    "CopyHop",
    "DatasetNote",
    "Decision",
    "Flag",
    "FlaggedTask",
    "Provenance",
    "Reuse",
    "RunAuditSummary",
    "TaskAudit",
    "TestContent",
    "WrittenBy",
    "audit_summary",
    "audit_task",
    "changed_lines",
    "run_started",
    "patch_reuse",
)
_EXPORTS = {name: "_audit" for name in _AUDIT_NAMES}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from ._audit import (
        FLAG_KINDS,
        REUSE_THRESHOLD,
        Attempt,
        AuditedHit,
        AuditedRecall,
        CopyHop,
        DatasetNote,
        Decision,
        Flag,
        FlaggedTask,
        Provenance,
        Reuse,
        RunAuditSummary,
        TaskAudit,
        TestContent,
        WrittenBy,
        audit_summary,
        audit_task,
        changed_lines,
        run_started,
        patch_reuse,
    )


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
