"""One grade-status vocabulary: the table in `GradeStatus`'s docstring, and every layer
reads its sets from it."""

from __future__ import annotations

from graders import GRADE_STATUSES
from ledger.events import GradeStatus
from projections import INVALID_STATUSES

S = GradeStatus


def test_each_status_says_its_verdict_whether_it_is_scored_and_whose_doing_it_is() -> None:
    table = {s.value: (s.resolved, s.scored, s.not_the_patch, s.report_error) for s in GradeStatus}
    assert table == {
        "resolved": (True, True, False, False),
        "unresolved": (False, True, False, False),
        "empty_patch": (False, True, False, False),
        "patch_failed": (False, True, False, True),
        "timeout": (False, True, False, True),
        "env_failed": (None, False, True, True),
        "infra_error": (None, False, True, True),
        "agent_error": (None, False, True, True),
        "ungraded": (None, False, False, True),
    }


def test_the_grader_and_the_projections_use_the_same_vocabulary() -> None:
    assert set(GRADE_STATUSES) == {s.value for s in GradeStatus} - {"agent_error"}
    assert INVALID_STATUSES == {"env_failed", "infra_error", "agent_error", "ungraded"}
    assert S("resolved") == "resolved" and f"{S.RESOLVED}" == "resolved"  # recorded as the plain value
