"""Leakage counts of a run, as `swecl metrics`, `swecl runs`, the end-of-run summary and
the report print them: one function, so every output shows the same numbers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from projections._cut import order_cut

if TYPE_CHECKING:
    from ledger import Ledger

    from ._model import RunAuditSummary


def leakage_of(ledger: Ledger, version: str, as_of_order: int | None = None) -> dict[str, Any]:
    """Leakage flags of a run's recalls, from `swecl audit VERSION --summary`'s own function:
    `recalled_items` (hits of the recalls counted), `flagged` (hits with any flag), `by_kind`
    (flagged hits per kind, in `FLAG_KINDS` order) and `test_content_checked`.
    Without the dataset's grading secrets (cheap, offline) the test-content check is not run.
    Only attempts that count: an attempt abandoned by a kill and redone is not counted twice.
    `as_of_order` K: the run as it stood before task K started in each sequence, the cut
    `swecl metrics --as-of-order` folds the outcomes at, so the counts beside them are of
    the same recalls."""
    # lazy: every CLI command imports this name at start-up; the audit's folds load only when one shows leakage
    from ._audit import audit_summary

    cut = None
    if as_of_order is not None:
        cut = order_cut(ledger, version, as_of_order)
    return leakage_counts(audit_summary(ledger, version, counted_only=True, cut=cut))


def leakage_counts(summary: RunAuditSummary) -> dict[str, Any]:
    """`leakage_of`'s counts from a summary already folded (`counted_only=True`): the report
    folds the audit once for both the run's counts and its per-task markers."""
    return {
        "recalled_items": summary.hits,
        "flagged": summary.flagged_hits,
        "by_kind": dict(summary.by_kind),
        "test_content_checked": summary.dataset.available,
    }
