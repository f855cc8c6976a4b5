"""The catalog's grading events and vocabulary: how a recorded test result counts, the
grade statuses, a grade and its corrections, a host's validation of tasks, and a check of
an environment recipe (`swecl env verify`).

Part of the event catalog; import these names from `ledger.events`.
"""

from __future__ import annotations

from enum import StrEnum

import msgspec

from ._event_base import PASS, Event


# How a recorded per-test result (the values of grade.finished's f2p and p2p) counts, by
# swebench 5.0.2's rules: the grader decides with these and the read side explains its
# decisions with the same ones, so they sit with the events both read.
TEST_PASSING = frozenset({"PASSED", "XFAIL"})
TEST_MAINTAINED = TEST_PASSING | {"SKIPPED"}


def f2p_passes(status: str) -> bool:
    """Whether a FAIL_TO_PASS test with this status counts as passing."""
    return status in TEST_PASSING


def p2p_passes(status: str) -> bool:
    """Whether a PASS_TO_PASS test with this status counts as maintained."""
    return status in TEST_MAINTAINED


class GradeStatus(StrEnum):
    """How a task's grade ends: the one vocabulary of the grader, the events (`status` of
    grade.finished and grade.corrected holds the value, kept a plain string so a status a
    newer swecl adds still reads), the projections and the CLI.

    | status        | resolved | scored (1 or 0) | SWE-bench report error |
    |---------------|----------|-----------------|------------------------|
    | resolved      | True     | yes             |                        |
    | unresolved    | False    | yes             |                        |
    | empty_patch   | False    | yes             |                        |
    | patch_failed  | False    | yes             | yes                    |
    | timeout       | False    | yes             | yes                    |
    | env_failed    | None     | no: the host's  | yes                    |
    | infra_error   | None     | no: the host's  | yes                    |
    | agent_error   | None     | no: the host's  | yes                    |
    | ungraded      | None     | no              | yes                    |

    A test run becomes resolved, unresolved or infra_error in one place
    (`graders._decide.decide`); the other statuses end a grade before tests run.
    """

    RESOLVED = "resolved"
    UNRESOLVED = "unresolved"
    EMPTY_PATCH = "empty_patch"
    PATCH_FAILED = "patch_failed"
    TIMEOUT = "timeout"
    ENV_FAILED = "env_failed"
    INFRA_ERROR = "infra_error"
    AGENT_ERROR = "agent_error"
    UNGRADED = "ungraded"

    @property
    def scored(self) -> bool:
        """A valid outcome: counted 1 (resolved) or 0 in every metric."""
        return self in _SCORED

    @property
    def resolved(self) -> bool | None:
        """The verdict it stands for; None when there is none (the task counts missing)."""
        return (self is GradeStatus.RESOLVED) if self in _SCORED else None

    @property
    def not_the_patch(self) -> bool:
        """An end the set-up caused (the host, the harness, the agent's process), not the patch."""
        return self in (GradeStatus.ENV_FAILED, GradeStatus.INFRA_ERROR, GradeStatus.AGENT_ERROR)

    @property
    def report_error(self) -> bool:
        """Counted among `error_ids` of SWE-bench's run report."""
        return self not in (GradeStatus.RESOLVED, GradeStatus.UNRESOLVED, GradeStatus.EMPTY_PATCH)


_SCORED = frozenset({GradeStatus.RESOLVED, GradeStatus.UNRESOLVED, GradeStatus.EMPTY_PATCH, GradeStatus.PATCH_FAILED,
                     GradeStatus.TIMEOUT})


class GradeFinished(Event, tag="grade.finished", kw_only=True):
    sequence_id: str
    instance_id: str
    order: int
    pass_: str = PASS
    attempt: int = 1
    grader: str
    status: str  # a GradeStatus value
    resolved: bool | None
    applied_with: str | None = None
    test_files_reverted: list[str] = msgspec.field(default_factory=list)
    f2p: dict[str, str] = msgspec.field(default_factory=dict)
    p2p: dict[str, str] = msgspec.field(default_factory=dict)
    tests: dict[str, str] = msgspec.field(default_factory=dict)
    log: str | None = None  # blob
    test_exit_code: int | None = None
    test_cmd: list[str] = msgspec.field(default_factory=list)
    duration_s: float = 0.0
    env_key: str | None = None
    error: str | None = None
    similarity: dict[str, float] | None = None
    parser: str | None = None  # the log parser used; a regrade re-reads the log with it
    # PASS_TO_PASS tests left out of the verdict: `swecl validate` found them failing on
    # this host with the fix and without it (network, a missing system tool)
    p2p_excluded: list[str] = msgspec.field(default_factory=list)
    # What the results channel changed of the log's statuses (test -> the status counted;
    # "" where a pass was void: pytest never ran it, or without evidence of the test's own
    # code). The channel's file is gone once the grade is made: a regrade re-reads the log
    # and applies these, so it cannot bring back a pass the channel refused.
    channel_overrides: dict[str, str] = msgspec.field(default_factory=dict)
    # Where the grade's time went, in seconds, by phase (graders.GradeOutcome.timings:
    # checkout, lock, env, install, apply, prepare, tests, parse, reset); empty before it was recorded
    timings: dict[str, float] = msgspec.field(default_factory=dict)


class GradeCorrected(Event, tag="grade.corrected", kw_only=True):
    """A re-decision from the recorded log with newer parsers; the original stays."""

    corrects: str  # event_id of the grade.finished (or earlier correction) it replaces
    sequence_id: str
    instance_id: str
    order: int
    pass_: str = PASS
    attempt: int = 1
    status: str
    resolved: bool | None
    f2p: dict[str, str] = msgspec.field(default_factory=dict)
    p2p: dict[str, str] = msgspec.field(default_factory=dict)
    tests: dict[str, str] = msgspec.field(default_factory=dict)
    error: str | None = None
    reason: str = ""
    parser: str | None = None
    p2p_excluded: list[str] = msgspec.field(default_factory=list)  # as in grade.finished


class TaskValidity(msgspec.Struct, frozen=True, kw_only=True):
    """What `swecl validate` found for one task on this host."""

    instance_id: str
    gradeable: bool
    gold: str  # grade status of the gold patch
    noop: str  # ... of a patch that changes no code (the tests run, the fix is absent)
    empty: str  # ... of the empty patch
    reason: str | None = None  # why not gradeable, in the grader's words
    # PASS_TO_PASS tests that fail here with the gold patch and with the no-op patch alike:
    # SWE-bench's own validation keeps a test in PASS_TO_PASS only if it passes before and
    # after the fix, so grades on this host leave these out (recorded on each grade)
    p2p_excluded: list[str] = msgspec.field(default_factory=list)
    # why each was left out, as the gold run's log says: `network: ...`, `system package:
    # ...`, `naming: ...` (the log holds no test of that name), or `fails here: ...`
    p2p_excluded_why: dict[str, str] = msgspec.field(default_factory=dict)


class TasksValidated(Event, tag="tasks.validated", kw_only=True):
    """SWE-bench's validation step on this host: the tasks whose gold patch does not
    resolve (PASS_TO_PASS tests failing here with and without the fix left out), or
    whose no-op patch passes FAIL_TO_PASS, are not gradeable here. Metrics report them as
    missing (with the reason), never as the agent's 0. A later validation of the same
    task replaces an earlier one."""

    runs: dict[str, str]  # patch kind (gold, noop, empty) -> run version that graded it
    tasks: list[TaskValidity]


# --- environment recipes (`swecl env verify`) ----------------------------------------------


class VerifiedFailure(msgspec.Struct, frozen=True, kw_only=True):
    test: str
    status: str  # FAILED or ERROR
    cause: str = ""  # the log's own words (pytest's summary message, the traceback's last line)


class EnvVerified(Event, tag="env.verified", kw_only=True):
    """`swecl env verify`: one repo@version's environment recipe run on this host, as a
    task of that version gets it (spec, era cut-off, install), on the repository's release
    sdist or a checkout, with the version's test modules sampled. It checks the recipe, not
    any task's gold patch; grades and validations never read it."""

    repo: str
    version: str
    source: str = ""  # `sdist NAME-X.Y.Z.tar.gz`, `checkout at COMMIT`, `directory as it is`
    cutoff: str | None = None  # the era cut-off the build resolved packages as of
    cutoff_from: str = ""  # where it came from (the setup commit, or --cutoff)
    env_key: str | None = None
    python: str | None = None  # the interpreter's version
    built: bool = False  # False: an environment of the cache was reused
    build_ok: bool = False
    build_s: float = 0.0
    install_ok: bool | None = None  # None: not reached, or the spec installs nothing
    tests: list[str] = msgspec.field(default_factory=list)  # the sample the test command was given
    collected: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    failures: list[VerifiedFailure] = msgspec.field(default_factory=list)
    exit_code: int | None = None
    duration_s: float = 0.0  # the whole check of this version
    error: str | None = None  # why it stopped short (no era, no sdist, build or install failed, no results)
    warnings: list[str] = msgspec.field(default_factory=list)
