"""The recall audit: which memories influenced each task, where they came from, whether
the agent reused them, and leakage flags (same instance, later task, test content).

`audit_task(ledger, version, task_id)` and `audit_summary(ledger, version)` are pure
functions of the ledger (plus the grading secrets `load_task_secrets` reads from the
run's dataset, when it is available); `audit_cmd` is the click command.
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
    "load_task_secrets",
    "patch_reuse",
)
_EXPORTS = {**{name: "_audit" for name in _AUDIT_NAMES}, "audit_cmd": "_cli"}

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
        load_task_secrets,
        patch_reuse,
    )
    from ._cli import audit_cmd


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
