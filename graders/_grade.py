"""What a grade is: the request, the outcome and its log's header, the grader protocol.

Every grader (`graders._executing`, `graders._overlap`, `graders._by_name`) takes a
`GradeRequest` and returns a `GradeOutcome` through `_finish`, so the log starts with the
same account of the grade whichever grader made it. The graders by name: swebench
(default), local, auto, overlap, none.

Statuses and what `resolved` is for each:

| status        | resolved | meaning                                                        |
|---------------|----------|----------------------------------------------------------------|
| resolved      | True     | every FAIL_TO_PASS and PASS_TO_PASS test passes                |
| unresolved    | False    | the tests ran and some listed test did not pass                |
| empty_patch   | False    | the agent produced no patch                                    |
| patch_failed  | False    | the patch is unsafe or no strategy of the chain applied it     |
| timeout       | False    | the tests ran past the time limit (process group killed)       |
| env_failed    | None     | no usable environment (no interpreter, failed build or install)|
| infra_error   | None     | the harness failed (git, gold test patch, no results even without the patch) |
| ungraded      | None     | the `none` grader: recorded, not graded                        |

`None` means "no verdict": an infrastructure failure is never scored as the agent's.
The overlap grader's verdict is a proxy (no test runs); it says so in `error`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Protocol

import msgspec

from graders._parsers import frame_test_output
from graders._specs import EnvSpec
from ledger.events import GradeStatus

__all__ = ["GRADER_NAMES", "GRADE_STATUSES", "GradeOutcome", "GradeRequest", "Grader"]

GRADER_NAMES = ("swebench", "local", "auto", "overlap", "none")
# what a grader ends with (agent_error is the run's: the agent's process failed before a patch)
GRADE_STATUSES = tuple(s.value for s in GradeStatus if s is not GradeStatus.AGENT_ERROR)


class GradeRequest(msgspec.Struct, frozen=True, kw_only=True):
    """One patch to grade. gold_patch is read only by the overlap grader."""

    instance_id: str
    repo: str
    version: str | None
    base_commit: str
    model_patch: str
    test_patch: str = ""
    fail_to_pass: list[str] = []
    pass_to_pass: list[str] = []
    p2p_excluded: list[str] = []  # PASS_TO_PASS tests to leave out of the decision (see graders._decide)
    environment: EnvSpec | None = None
    gold_patch: str | None = None
    environment_setup_commit: str | None = None  # the era and manifests of the env (see graders._envs.Era)


class GradeOutcome(msgspec.Struct, kw_only=True):
    """The verdict and everything needed to audit it (see the module table)."""

    status: str
    resolved: bool | None
    applied_with: str | None = None
    test_files_reverted: list[str] = []
    tests: dict[str, str] = {}
    f2p: dict[str, str] = {}
    p2p: dict[str, str] = {}
    p2p_excluded: list[str] = []
    channel_overrides: dict[str, str] = {}  # see GradeFinished.channel_overrides
    log: bytes = b""
    test_exit_code: int | None = None
    test_cmd: list[str] = []
    duration_s: float = 0.0
    env_key: str | None = None
    error: str | None = None
    similarity: dict[str, float] | None = None
    grader: str = ""
    parser: str | None = None  # the log parser that read the test output (for regrades)
    # where the grade's time went, in seconds: "checkout" (the worktree slot at the base
    # commit, the era), "env" (building or finding the environment), "install" (the slot
    # cleaned, set-up lines, the repository's own install), "apply" (model patch, test-file
    # revert, test patch), "prepare" (the test command, stray bytecode), "tests" (the test
    # command, and the control run when there is one), "parse" (log, channel, decision),
    # "reset" (the slot put back; after the grade's duration_s)
    timings: dict[str, float] = {}
    env_built: bool | None = None  # whether this grade built its environment (None: no environment)


class Grader(Protocol):
    name: str

    def grade(self, req: GradeRequest) -> GradeOutcome: ...


class _Notes:
    """The grader's own account of a grade, put before the test output in the log."""

    def __init__(self, grader: str, req: GradeRequest) -> None:
        self.lines = [f"[swecl] grader={grader} instance={req.instance_id} repo={req.repo} version={req.version} base={req.base_commit}"]
        self.timings: dict[str, float] = {}
        self.env_built: bool | None = None
        self._phase: str | None = None
        self._since = 0.0

    def phase(self, key: str | None) -> None:
        """End the running phase (its time added to `timings`) and start `key` (None: none)."""
        now = time.perf_counter()
        if self._phase is not None:
            self.timings[self._phase] = round(self.timings.get(self._phase, 0.0) + now - self._since, 3)
        self._phase, self._since = key, now

    @contextlib.contextmanager
    def timed(self, key: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timings[key] = round(self.timings.get(key, 0.0) + time.perf_counter() - start, 3)

    def add(self, text: str) -> None:
        self.lines.append(text.rstrip("\n"))

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _finish(grader: str, notes: _Notes, start: float, status: str, *, test_output: str | None = None,
            exit_code: int | None = None, **fields: object) -> GradeOutcome:
    notes.phase(None)
    if "resolved" not in fields:
        fields["resolved"] = GradeStatus(status).resolved
    body = notes.text()
    if test_output is not None:
        body += frame_test_output(test_output, exit_code)
    return GradeOutcome(
        status=status, log=body.encode("utf-8", "replace"), test_exit_code=exit_code,
        duration_s=round(time.monotonic() - start, 3), grader=grader,
        # the notes' own dict: what the grader times after the outcome is made (the reset) still lands
        timings=notes.timings,
        env_built=notes.env_built, **fields,  # type: ignore[arg-type]
    )
