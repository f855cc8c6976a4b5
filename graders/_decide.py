"""From per-test statuses to a verdict, with swebench 5.0.2's semantics.

Per listed test (FAIL_TO_PASS and PASS_TO_PASS name tests in the parser's key space):

- F2P passes iff the log says PASSED or XFAIL. FAILED, ERROR, SKIPPED and absence fail it:
  a patch that makes the new tests skip has not shown it fixes anything.
- P2P passes iff the log says PASSED, XFAIL or SKIPPED: as in swebench 5.0.2, a test that
  passed before and is skipped now (platform, optional dependency) is not a regression.
  FAILED, ERROR and absence fail it.
- A name not in the log may be a truncated parametrized id (SWE-bench's lists cut some long
  ids mid-parameter: `test_x[log(photon`). Only for names with more `[` than `]`, the log
  ids it prefixes are taken if they agree on pass-versus-not-pass (PASSED and XFAIL count
  alike); the first of them in log order then stands for the name. Candidates that
  disagree leave the name unmatched (AMBIGUOUS), which fails it.

- An empty parameter id: SWE-bench's lists name `test_compose_roundtrip[]` (astropy
  7606: a unit whose str() is empty) where the log's pytest, the official image's as ours,
  writes the id it generates instead, the argument's name and the index
  (`test_compose_roundtrip[unit0]`). A listed `NAME[]` not in the log takes the status of
  the log ids `NAME[<name><digits>]` if they agree on pass-versus-not, else AMBIGUOUS. Of
  the 440 official logs' 785 listed names that their logs do not hold, this is the one it
  concerns, and its one candidate is the id the log writes: the official harness failed
  that task for every patch, gold included, over the spelling; swecl grades the test.

- A duplicate parametrize id is named by pytest's version: the official runs (pytest 8)
  write `test_unparse[1234-1234_0]` where the older pytest of a task's era writes
  `test_unparse[1234-12340]` for the same test. A listed name with that suffix that is
  not in the log takes the older spelling's status.

resolved iff every F2P and every P2P test passes (empty lists pass vacuously, as in
swebench). PASS_TO_PASS tests a validation found failing on this host with and without
the fix (`excluded`) are left out of the judgement and listed in `p2p_excluded`: the
task's own list stays whole in the record, and what decided is visible beside it.

A run with no usable results is followed by a control run (the same tests without the
model patch, see `blame`): if the control run gives results, the patch broke the run and
the status is `unresolved` (the agent's failure); if not, it stays `infra_error`.

When the log does not describe a completed test run the status is `infra_error`, not
`unresolved`, so that a broken environment shows up as such instead of passing silently
as a model failure. `resolved` is False either way. Two cases, both those where swebench
5.0.2's `get_logs_eval` reports the log as not evaluated (an error):

- no test result at all in the log: the suite never ran (import error at startup, wrong
  command, no tests collected, runner crashed before its report). Beware: a patch that
  breaks the package's import lands here too (most of the 28 such official logs); whoever
  retries or excludes infra_error runs must read `error` and the log, not assume the
  harness was at fault.
- the test command exited non-zero although the log states no FAILED or ERROR result.
  pytest, django's runtests.py and sympy's bin/test each exit non-zero only when a test
  failed or the run itself broke (interrupted, internal error, usage error, killed), so
  an all-passing log with a failing exit means the log is not the whole story: a crash
  after the summary, results printed by patched code (a conftest hook echoing PASSED
  lines), or a truncated report. A non-zero exit *with* failures is an ordinary
  unresolved run: the failures explain the exit code, and any listed test that did not
  run is absent, hence failed. Exit 0 with failures is trusted per test too: the log is
  the only per-test evidence, and runners wrapped in `|| true`-style commands exit 0.
  An unknown exit code (None) trusts the log, as swebench does for logs without one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from graders._parsers import TestStatus, parse_test_log
from graders._results_plugin import apply_overrides
from ledger.events import TEST_MAINTAINED, TEST_PASSING, GradeStatus, f2p_passes, p2p_passes

__all__ = [
    "AMBIGUOUS",
    "INFRA_ERROR",
    "MISSING",
    "PATCH_BROKE_RUN",
    "RESOLVED",
    "UNRESOLVED",
    "Decision",
    "blame",
    "decide",
    "f2p_passes",
    "grade_log",
    "keep_blame",
    "leave_out",
    "match_test",
    "p2p_passes",
]

# the statuses a test run can end in (the whole vocabulary: `ledger.events.GradeStatus`)
RESOLVED = GradeStatus.RESOLVED.value
UNRESOLVED = GradeStatus.UNRESOLVED.value
INFRA_ERROR = GradeStatus.INFRA_ERROR.value

# Per-test values for listed tests the log does not settle; both count as failed.
MISSING = "MISSING"  # no log id equals it (nor, for a truncated id, starts with it)
AMBIGUOUS = "AMBIGUOUS"  # a truncated id whose candidate log ids disagree on the outcome

# How an `error` starts when a control run put a result-less run on the patch; a regrade
# reads it back from the recorded event, so the wording is part of the record's format.
PATCH_BROKE_RUN = "the patch broke the test run"

_PASSING, _MAINTAINED = TEST_PASSING, TEST_MAINTAINED  # TestStatus members are these strings
_FAILING_RESULTS = frozenset({TestStatus.FAILED, TestStatus.ERROR})


@dataclass(frozen=True, slots=True)
class Decision:
    """The verdict on one graded run.

    f2p / p2p: every listed test -> the log's status for it (a `TestStatus` value), or
    MISSING / AMBIGUOUS. tests: every status the log states. error: why the status is
    infra_error (None otherwise). p2p_excluded: listed PASS_TO_PASS tests left out of the
    judgement (not in p2p).
    """

    resolved: bool
    status: str
    f2p: dict[str, str] = field(default_factory=dict)
    p2p: dict[str, str] = field(default_factory=dict)
    tests: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    p2p_excluded: list[str] = field(default_factory=list)

    @property
    def f2p_success(self) -> list[str]:
        return [name for name, status in self.f2p.items() if f2p_passes(status)]

    @property
    def f2p_failure(self) -> list[str]:
        return [name for name, status in self.f2p.items() if not f2p_passes(status)]

    @property
    def p2p_success(self) -> list[str]:
        return [name for name, status in self.p2p.items() if p2p_passes(status)]

    @property
    def p2p_failure(self) -> list[str]:
        return [name for name, status in self.p2p.items() if not p2p_passes(status)]


def leave_out(listed: Iterable[str], excluded: Iterable[str]) -> tuple[list[str], list[str]]:
    """(the PASS_TO_PASS tests that decide, the listed ones left out): `excluded` are
    tests a validation found failing on this host with and without the fix."""
    names = list(listed)
    out = [t for t in dict.fromkeys(excluded) if t in names]
    return [t for t in names if t not in out], out


# pytest 8 suffixes a duplicate id that ends in a digit with `_N`; older pytest with `N`
_DUPLICATE_ID = re.compile(r"^(?P<head>.*\[.*\d)_(?P<n>\d+)\]$")
# What pytest names a parameter whose own id would be empty (a unit whose str() is ""):
# the argument's name and the parameter's index, `test_compose_roundtrip[unit0]`.
_GENERATED_ID = re.compile(r"[A-Za-z_]\w*?\d+")


def _agreeing(candidates: list[str], statuses: Mapping[str, str]) -> str:
    """The status the log ids `candidates` agree on (pass versus not), the first's; MISSING
    with none, AMBIGUOUS when they disagree."""
    if not candidates:
        return MISSING
    if len({statuses[key] in _PASSING for key in candidates}) > 1:
        return AMBIGUOUS
    return str(statuses[candidates[0]])


def match_test(name: str, statuses: Mapping[str, str]) -> str:
    """The log's status for a listed test name, or MISSING / AMBIGUOUS (see module doc)."""
    if name in statuses:
        return str(statuses[name])
    renamed = _DUPLICATE_ID.match(name)
    if renamed and f"{renamed['head']}{renamed['n']}]" in statuses:
        return str(statuses[f"{renamed['head']}{renamed['n']}]"])
    if name.endswith("[]"):
        head = name[:-1]
        return _agreeing([key for key in statuses if key.startswith(head) and key.endswith("]")
                          and _GENERATED_ID.fullmatch(key[len(head):-1])], statuses)
    # Only a name cut inside its parameter brackets can be a truncation; whole names
    # (django descriptions, sympy functions, complete pytest ids) match exactly or not at all.
    if name.count("[") <= name.count("]"):
        return MISSING
    return _agreeing([key for key in statuses if key.startswith(name)], statuses)


def _unique(names: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(names))


def decide(
    statuses: Mapping[str, str],
    fail_to_pass: Iterable[str],
    pass_to_pass: Iterable[str],
    *,
    test_exit_code: int | None = None,
    excluded: Iterable[str] = (),
) -> Decision:
    """Judge a run from the statuses its log states (see the module doc for the rules).
    `excluded`: PASS_TO_PASS tests to leave out (see `leave_out`)."""
    tests = {name: str(status) for name, status in statuses.items()}
    f2p = {name: match_test(name, tests) for name in _unique(fail_to_pass)}
    judged, left_out = leave_out(_unique(pass_to_pass), excluded)
    p2p = {name: match_test(name, tests) for name in judged}

    def failed(error: str) -> Decision:
        return Decision(False, INFRA_ERROR, f2p, p2p, tests, error, left_out)

    if not tests:
        return failed(
            "the test log states no test result: the tests did not run (an import or "
            "collection error, possibly caused by the patch; a wrong test command or "
            "environment; or a crash before the report)"
        )
    if test_exit_code not in (None, 0) and not any(s in _FAILING_RESULTS for s in tests.values()):
        return failed(
            f"the test command exited {test_exit_code} but its log states no failed or "
            "erroring test: the log does not describe the whole run"
        )
    resolved = all(s in _PASSING for s in f2p.values()) and all(s in _MAINTAINED for s in p2p.values())
    return Decision(resolved, RESOLVED if resolved else UNRESOLVED, f2p, p2p, tests, None, left_out)


def blame(decision: Decision, control: Decision | None) -> Decision:
    """Whose failure is an infra_error run: `control` is the decision on the same tests
    run without the model patch (None: the control run did not run or did not finish).
    Results there mean the harness is sound and the patch broke the run (a syntax or
    import error, a crash at collection): `unresolved`, never excused as infrastructure.
    Other decisions pass through."""
    if decision.status != INFRA_ERROR:
        return decision
    error = decision.error or "no usable test results"
    if control is None or control.status == INFRA_ERROR:
        return replace(decision, error=f"{error}; the tests give no usable results without the patch either")
    return replace(decision, status=UNRESOLVED, error=(
        f"{PATCH_BROKE_RUN} ({error}); without it the same tests give {len(control.tests)} results"))


def keep_blame(decision: Decision, recorded_error: str | None) -> Decision:
    """A re-decision from a recorded log cannot repeat the control run: a result-less run
    the recorded grade put on the patch (its error says so) stays the patch's doing."""
    if decision.status != INFRA_ERROR or PATCH_BROKE_RUN not in (recorded_error or ""):
        return decision
    return replace(decision, status=UNRESOLVED, resolved=False, error=recorded_error)


def grade_log(
    log: str,
    parser: str,
    fail_to_pass: Iterable[str],
    pass_to_pass: Iterable[str],
    *,
    test_exit_code: int | None = None,
    test_cmd: str | None = None,
    excluded: Iterable[str] = (),
    overrides: Mapping[str, str] | None = None,
) -> Decision:
    """Find the test run in `log`, parse it with `parser` and decide.

    `test_exit_code` is the runner's own measurement and wins over an exit code the log
    records; `test_cmd` helps find the test output inside an unframed eval log.
    """
    parsed = parse_test_log(log, parser, test_cmd=test_cmd)
    region = parsed.region
    exit_code = test_exit_code if test_exit_code is not None else region.exit_code
    statuses = parsed.statuses
    if overrides:  # what the results channel changed when the grade was made
        statuses = apply_overrides(statuses, overrides)
    decision = decide(statuses, fail_to_pass, pass_to_pass, test_exit_code=exit_code, excluded=excluded)
    error: str | None = None
    if region.fault is not None:
        error = f"the log says {region.fault!r}: its test results are not those of a completed run"
    elif not region.complete:
        error = "the test output has a start marker but no end marker: the run was cut short"
    if error is None:
        return decision
    return Decision(False, INFRA_ERROR, decision.f2p, decision.p2p, decision.tests, error, decision.p2p_excluded)
