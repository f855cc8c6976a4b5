"""A results channel outside the log: pytest's own report of each test, read after the run.

The test log is written by the runner and by the code under test alike, so it cannot prove
a result: library code can print `PASSED <test>` after pytest's summary and `os._exit(0)`.
For a pytest command the grader therefore loads a tiny plugin (`-p swecl_results_channel`,
a module swecl writes to a temporary directory outside the worktree, on PYTHONPATH for
that run only) that appends every `pytest_runtest_logreport` and the
`pytest_sessionfinish` to a file the grader reads once the run is over (`read`). Then
(`check_against_channel`):

- a test the log reports passing (PASSED, XFAIL) that the channel reports otherwise
  counts as failed (the channel's failing status when it has one);
- a test the log reports PASSED that the channel never saw is not a pass: pytest reports
  every test it runs through that hook, so the line came from somewhere else;
- a channel without `pytest_sessionfinish` (the process was ended early, by `os._exit`
  or a crash) makes every log pass the channel did not see void, XFAIL included.

A test the log reports failing stays failing whatever the channel says, and the
channel's tests the log never mentions are not added: the log keeps its key space (the
SWE-bench lists name tests by it). The plugin reads its file's path from the environment
and removes it at import, before any test code runs; it can still be found by code that
searches the process, so this raises the bar rather than proving anything. Runners other
than pytest (django's runtests.py, sympy's bin/test, tox) get no plugin: there only the
log's own rule applies (`graders._parsers.parse_log`: a name reported failing and not
failing counts as failing).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from graders._parsers import TestStatus, log_conflicts, parse_log

__all__ = [
    "CHANNEL_VAR",
    "PLUGIN_NAME",
    "ChannelReport",
    "ResultsChannel",
    "check_against_channel",
]

PLUGIN_NAME = "swecl_results_channel"
CHANNEL_VAR = "SWECL_RESULTS_CHANNEL"

# Kept to the Python and pytest of the oldest SWE-bench environments (no f-strings, no
# annotations). It never raises: a channel that cannot be written is simply empty.
PLUGIN_SOURCE = '''\
"""swecl's results channel (written by swecl for one test run; not part of the repository)."""
import json
import os


def _open():
    path = os.environ.pop("%(var)s", None)  # gone before any test code runs
    if not path:
        return None
    try:
        return os.open(path, os.O_WRONLY | os.O_APPEND)
    except OSError:
        return None


_FD = _open()


def _write(record):
    if _FD is None:
        return
    try:
        os.write(_FD, (json.dumps(record, sort_keys=True) + "\\n").encode("utf-8"))
    except Exception:
        pass


def pytest_configure(config):
    _write({"event": "start"})


def pytest_runtest_logreport(report):
    try:
        _write({
            "nodeid": str(report.nodeid), "when": str(getattr(report, "when", "")),
            "outcome": str(report.outcome), "xfail": hasattr(report, "wasxfail"),
        })
    except Exception:
        pass


def pytest_sessionfinish(session, exitstatus):
    try:
        _write({"event": "finish", "exitstatus": int(exitstatus)})
    except Exception:
        _write({"event": "finish", "exitstatus": None})
''' % {"var": CHANNEL_VAR}

_FAILING = frozenset({TestStatus.FAILED, TestStatus.ERROR})
_PASSING = frozenset({TestStatus.PASSED, TestStatus.XFAIL})


@dataclass(slots=True)
class ChannelReport:
    """What the plugin recorded: nodeid -> status (a failing phase wins), and whether the
    run got as far as pytest_configure and pytest_sessionfinish."""

    started: bool = False
    finished: bool = False
    outcomes: dict[str, TestStatus] = field(default_factory=dict)


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
        (self.dir / f"{PLUGIN_NAME}.py").write_text(PLUGIN_SOURCE, encoding="utf-8")
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
    ended = "finished" if report.finished else ("ended early (no pytest_sessionfinish)" if report.started else "empty")
    notes.append(f"[swecl] results channel: {len(report.outcomes)} tests, {ended}")
    if changed:
        notes.append(f"[swecl] log results pytest did not report, not counted as passes: {', '.join(changed[:20])}"
                     + (f" and {len(changed) - 20} more" if len(changed) > 20 else ""))
    return checked, notes
