"""A results channel outside the log: pytest's own report of each test, read after the run.

The test log is written by the runner and by the code under test alike, so it cannot prove
a result: library code can print `PASSED <test>` after pytest's summary and `os._exit(0)`.
For a pytest command the grader therefore loads a tiny plugin (`-p swecl_results_channel`,
`graders/pytest_plugin/swecl_results_channel.py`, copied to a temporary directory outside
the worktree, on PYTHONPATH for that run only) that appends every `pytest_runtest_logreport` and the
`pytest_sessionfinish` to a file the grader reads once the run is over (`read`). Then
(`check_against_channel`):

- a test the log reports passing (PASSED, XFAIL) that the channel reports otherwise
  counts as failed (the channel's failing status when it has one);
- a test the log reports PASSED that the channel never saw is not a pass: pytest reports
  every test it runs through that hook, so the line came from somewhere else;
- a channel without `pytest_sessionfinish` (the process was ended early, by `os._exit`
  or a crash) makes every log pass the channel did not see void, XFAIL included.

pytest's reports are no proof either: library code the tests import can replace
pytest's runner or report classes at run time, and the log, the exit code and
`pytest_runtest_logreport` then all see passes. So the plugin also records evidence of each
test's own run, apart from the reports: hookwrappers around `pytest_runtest_setup`,
`_call` and `_teardown` (trylast, and registered by `-p` before any conftest or plugin of
the repository, so the innermost wrapper: the exception the phase raised reaches it before
anyone else's wrapper could drop it) record what ended the phase (nothing, skip, xfail, a
failing exception; a unittest TestCase's kept `_excinfo` included), and for the call
whether one of the test function's code objects started (the function pytest calls and
what it wraps through `__wrapped__`: `functools.wraps` and `mock.patch` decorators do not
hide it). Python 3.12+ watches with `sys.monitoring` local events on those code objects
only, and also sees the outermost function end by an exception that pytest's call never
showed (PY_UNWIND); older Pythons with a trace function that removes itself at the first
matching frame (a trace function for the whole call made call-heavy tests several times
slower, so there is no such check there). The functions and classes it uses are taken at
import, before the code under test is imported. Then (`judge_evidence`) a test the log and
the reports agree is PASSED needs a call that raised nothing and whose code started; an
XFAIL needs an xfail exception or an xfail-marked call that raised; a SKIPPED, when the
test was called, a skip exception. A phase that raised fails it (FAILED in the call, ERROR
otherwise); a pass without the evidence is void. The grade's log names each such test
with the reason (`EVIDENCE_NOTE`). Items with no function to watch (doctests, non-Python
items) need only the phase evidence.

Still out of reach: code under test runs in the same process and can reach anything of
it, this plugin included (its module's functions, its file descriptor, the monitoring tool
id, `item._excinfo`), and on Python < 3.12 it can call the test function and swallow its
exception inside pytest's runner. Under pytest-xdist the workers do not get the channel's
path (it is gone from the environment at import), so their tests have no evidence and no
pass. The plugin also refuses bytecode for imports from the worktree (`graders._bytecode`).

A test the log reports failing stays failing whatever the channel says, and the
channel's tests the log never mentions are not added: the log keeps its key space (the
SWE-bench lists name tests by it). The plugin reads its file's path from the environment
and removes it at import, before any test code runs; it can still be found by code that
searches the process, so this raises the bar rather than proving anything. pytest under
`tox --current-env` gets it through tox's posargs (graders._tox.pytest_args_at). Runners
other than pytest (django's runtests.py, sympy's bin/test, plain tox) get no plugin: there
only the log's own rule applies (`graders._parsers.parse_log`: a name reported failing and not
failing counts as failing).
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from graders._parsers import TestStatus, log_conflicts, parse_log

__all__ = [
    "CHANNEL_VAR",
    "EVIDENCE_NOTE",
    "Evidence",
    "PLUGIN_NAME",
    "ChannelReport",
    "ResultsChannel",
    "apply_overrides",
    "channel_overrides",
    "check_against_channel",
    "judge_evidence",
]

PLUGIN_NAME = "swecl_results_channel"
CHANNEL_VAR = "SWECL_RESULTS_CHANNEL"


@functools.cache
def plugin_source() -> str:
    """The plugin module's source, as the test run gets it. It is read, never imported:
    importing it would act on swecl's own process (see the comment at its top)."""
    text = resources.files("graders").joinpath("pytest_plugin", f"{PLUGIN_NAME}.py").read_text(encoding="utf-8")
    # the plugin spells the variable out: in the test environment it cannot import swecl
    if f'"{CHANNEL_VAR}"' not in text:
        raise RuntimeError(f"the results plugin does not read {CHANNEL_VAR}: keep the two names the same")
    return text


_FAILING = frozenset({TestStatus.FAILED, TestStatus.ERROR})
_EVIDENCED = frozenset({TestStatus.PASSED, TestStatus.XFAIL, TestStatus.SKIPPED})
EVIDENCE_NOTE = "[swecl] results pytest reported without evidence from the test's own run, not counted as passes"
_PASSING = frozenset({TestStatus.PASSED, TestStatus.XFAIL})


@dataclass(slots=True)
class ChannelReport:
    """What the plugin recorded: nodeid -> status (a failing phase wins), and whether the
    run got as far as pytest_configure and pytest_sessionfinish."""

    started: bool = False
    finished: bool = False
    outcomes: dict[str, TestStatus] = field(default_factory=dict)
    evidence: dict[str, Evidence] = field(default_factory=dict)  # nodeid -> what its phases showed


@dataclass(slots=True)
class Evidence:
    """What the plugin saw of one test's phases itself, apart from pytest's reports.

    `raised`: (phase, exception type) of each phase that ended in a failing exception.
    `skipped` / `xfailed`: a phase ended in pytest's skip / xfail exception. `called`: the
    call phase ran. `ran`: one of the test function's code objects started during it
    (None: no function to watch, as for a doctest). `unwound`: (Python 3.12+) the function
    pytest called ended by this exception, whatever the call phase then showed."""

    raised: list[tuple[str, str]] = field(default_factory=list)
    skipped: bool = False
    xfailed: bool = False
    xfail_marked: bool = False
    called: bool = False
    ran: bool | None = None
    unwound: str | None = None

    def add(self, record: Mapping[str, object]) -> None:
        phase, kind = str(record.get("evidence")), record.get("exc")
        if phase == "setup":  # a new run of the test (pytest-rerunfailures): the last one counts
            self.raised, self.skipped, self.xfailed, self.xfail_marked = [], False, False, False
            self.called, self.ran, self.unwound = False, None, None
        if kind == "fail":
            self.raised.append((phase, str(record.get("exc_type") or "?")))
        elif kind == "skip":
            self.skipped = True
        elif kind == "xfail":
            self.xfailed = True
        if phase == "call":
            ran = record.get("ran")
            if isinstance(ran, bool):
                self.ran = ran if self.ran is None else (self.ran and ran)
            self.called = True
            self.xfail_marked = self.xfail_marked or bool(record.get("xfail_mark"))
            if isinstance(record.get("unwound"), str):
                self.unwound = str(record["unwound"])


def _status(record: Mapping[str, object]) -> TestStatus | None:
    outcome, when, xfail = record.get("outcome"), record.get("when"), bool(record.get("xfail"))
    if outcome == "failed":
        return TestStatus.FAILED if when == "call" else TestStatus.ERROR
    if outcome == "skipped":
        return TestStatus.XFAIL if xfail else TestStatus.SKIPPED
    if outcome == "passed" and when == "call":
        return TestStatus.PASSED  # an XPASS too: pytest's summary does not call it failed
    return None  # a passing setup or teardown, a rerun attempt: no verdict of its own


class ResultsChannel:
    """The plugin module and the results file for one graded run, in a temporary directory
    outside the worktree. Nothing touches the disk until `prepare`; `close` removes it."""

    def __init__(self) -> None:
        self.dir: Path | None = None

    def prepare(self) -> None:
        if self.dir is not None:
            return
        self.dir = Path(tempfile.mkdtemp(prefix="swecl-channel-"))
        (self.dir / f"{PLUGIN_NAME}.py").write_text(plugin_source(), encoding="utf-8")
        self.results_file.write_bytes(b"")

    @property
    def results_file(self) -> Path:
        assert self.dir is not None, "prepare() the channel first"
        return self.dir / "results.jsonl"

    def paths(self) -> list[Path]:
        """What the test run must be able to write (for a confining sandbox)."""
        return [] if self.dir is None else [self.dir]

    def environment(self, base: Mapping[str, str]) -> dict[str, str]:
        """`base` with the plugin importable (first on PYTHONPATH) and the file named."""
        assert self.dir is not None, "prepare() the channel first"
        env = dict(base)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (os.fspath(self.dir), env.get("PYTHONPATH", "")) if p)
        env[CHANNEL_VAR] = os.fspath(self.results_file)
        return env

    def reset(self) -> None:
        """An empty results file (before a run whose channel is read)."""
        if self.dir is not None:
            self.results_file.write_bytes(b"")

    def read(self) -> ChannelReport:
        """The records so far; a missing or unreadable file is an empty, unfinished channel."""
        report = ChannelReport()
        if self.dir is None:
            return report
        try:
            data = self.results_file.read_bytes()
        except OSError:
            return report
        for line in data.decode("utf-8", "replace").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a torn write: the process was killed mid-line
            if not isinstance(record, dict):
                continue
            if record.get("event") == "start":
                report.started = True
            elif record.get("event") == "finish":
                report.finished = True
            elif isinstance(record.get("evidence"), str) and isinstance(record.get("nodeid"), str):
                report.evidence.setdefault(record["nodeid"], Evidence()).add(record)
            elif isinstance(record.get("nodeid"), str):
                status = _status(record)
                if status is None:
                    continue
                nodeid = record["nodeid"]
                previous = report.outcomes.get(nodeid)
                if previous not in _FAILING:
                    report.outcomes[nodeid] = status
        return report

    def close(self) -> None:
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None


# swebench's pytest parser reads pytest's progress marker as a test name on some lines,
# and two official reports list "[100%]" in PASS_TO_PASS. No test can be named so, so the
# channel never reports it: it keeps the log's status when pytest ran to the end.
_PROGRESS_MARKER = re.compile(r"^\[\s*\d{1,3}%\]$")


def _keyed(report: ChannelReport, parser: str) -> dict[str, TestStatus]:
    """The channel's outcomes under the log parser's names: each nodeid is named as the
    parser names it on a `PASSED <nodeid>` summary line (a failing outcome wins a name)."""
    keyed: dict[str, TestStatus] = {}
    for nodeid, status in report.outcomes.items():
        for key in parse_log(f"PASSED {nodeid}\n", parser):
            if keyed.get(key) not in _FAILING:
                keyed[key] = status
    return keyed


def _keyed_evidence(report: ChannelReport, parser: str) -> dict[str, Evidence]:
    """The evidence under the log parser's names (as `_keyed`); nodeids that one name
    covers are merged."""
    keyed: dict[str, Evidence] = {}
    for nodeid, ev in report.evidence.items():
        for key in parse_log(f"PASSED {nodeid}\n", parser):
            into = keyed.setdefault(key, Evidence())
            into.raised += ev.raised
            into.skipped, into.xfailed = into.skipped or ev.skipped, into.xfailed or ev.xfailed
            into.xfail_marked = into.xfail_marked or ev.xfail_marked
            if ev.called:
                into.ran = ev.ran if not into.called else (None if ev.ran is None or into.ran is None else into.ran and ev.ran)
                into.called = True
            into.unwound = into.unwound or ev.unwound
    return keyed


def judge_evidence(status: TestStatus, ev: Evidence | None) -> tuple[TestStatus | None, str | None]:
    """A status pytest reported (PASSED, XFAIL, SKIPPED) against what the plugin saw of
    the test itself: (the status to count, None when it is void; why it changed, or None)."""
    if ev is None:
        if status is TestStatus.SKIPPED:
            return status, None  # skipped before any phase (collection, a deselecting plugin)
        return None, "no phase of it was observed"
    if status is TestStatus.XFAIL:
        if ev.xfailed:
            return status, None  # pytest.xfail(), xfail(run=False), unittest's expectedFailure
        if ev.xfail_marked and ev.called and ev.ran is not False and any(p == "call" for p, _ in ev.raised):
            return status, None  # an xfail-marked test whose call raised
        return None, "no expected failure was raised" + ("" if ev.xfail_marked else " and it has no xfail mark")
    if ev.raised:
        phase, exc = ev.raised[0]
        return (TestStatus.FAILED if phase == "call" else TestStatus.ERROR), f"its {phase} raised {exc}"
    if status is TestStatus.SKIPPED:
        return (status, None) if ev.skipped or not ev.called else (None, "it ran and raised no skip")
    if not ev.called:
        return None, "its test function was never called"
    if ev.skipped or ev.xfailed:
        return None, "it was skipped or xfailed, not passed"
    if ev.ran is False:
        return None, "its test function's code never started"
    if ev.unwound:
        return TestStatus.FAILED, f"its test function ended by {ev.unwound}, which pytest's call never saw"
    return status, None


def channel_overrides(from_log: Mapping[str, TestStatus], checked: Mapping[str, TestStatus]) -> dict[str, str]:
    """What the channel changed of the log's statuses: test -> the status counted, "" where
    the log's pass was void (recorded on the grade, so a regrade that re-reads the log
    applies them: `apply_overrides`)."""
    return {name: str(checked[name]) if name in checked else "" for name, status in from_log.items()
            if checked.get(name) != status}


def apply_overrides(statuses: Mapping[str, TestStatus], overrides: Mapping[str, str]) -> dict[str, TestStatus]:
    """The log's statuses as the grade counted them (`channel_overrides`)."""
    out = dict(statuses)
    for name, status in overrides.items():
        if not status:
            out.pop(name, None)
        else:
            out[name] = TestStatus(status)
    return out


def check_against_channel(
    statuses: Mapping[str, TestStatus],
    output: str,
    channel: ResultsChannel | None,
    parser: str,
) -> tuple[dict[str, TestStatus], list[str]]:
    """The log's statuses after the channel's evidence (module doc), and grade-log notes."""
    notes: list[str] = []
    conflicts = log_conflicts(output, parser)
    if conflicts:
        shown = ", ".join(f"{name} ({last} after {failing})" for name, (last, failing) in list(conflicts.items())[:10])
        notes.append(f"[swecl] reported both failing and not, counted failing: {shown}")
    checked = dict(statuses)
    if channel is None or channel.dir is None:
        return checked, notes
    report = channel.read()
    seen = _keyed(report, parser)
    changed: list[str] = []
    for name, status in statuses.items():
        if status not in _PASSING:
            continue
        truth = seen.get(name)
        if truth is None and report.finished and _PROGRESS_MARKER.match(name):
            continue  # swebench's artifact, graded as swebench does (below)
        if truth is None:
            if status is TestStatus.PASSED or not report.finished:
                del checked[name]  # never run as far as pytest knows: not a pass
                changed.append(f"{name} ({status}, not run)")
        elif truth != status:
            checked[name] = truth if truth in _FAILING else TestStatus.FAILED
            changed.append(f"{name} ({status}, pytest: {truth})")
    # pytest's reports can be changed by the code under test; a pass also needs what the
    # plugin saw of the test itself (module doc)
    evidence = _keyed_evidence(report, parser)
    voided: list[str] = []
    for name, status in list(checked.items()):
        if status not in _EVIDENCED or name not in seen:
            continue
        counted, why = judge_evidence(status, evidence.get(name))
        if why is None:
            continue
        if counted is None:
            del checked[name]
        else:
            checked[name] = counted
        voided.append(f"{name} ({status}: {why})")
    ended = "finished" if report.finished else ("ended early (no pytest_sessionfinish)" if report.started else "empty")
    notes.append(f"[swecl] results channel: {len(report.outcomes)} tests, {ended}")
    if changed:
        notes.append(f"[swecl] log results pytest did not report, not counted as passes: {', '.join(changed[:20])}"
                     + (f" and {len(changed) - 20} more" if len(changed) > 20 else ""))
    if voided:
        notes.append(f"{EVIDENCE_NOTE}: {', '.join(voided[:20])}"
                     + (f" and {len(voided) - 20} more" if len(voided) > 20 else ""))
    return checked, notes
