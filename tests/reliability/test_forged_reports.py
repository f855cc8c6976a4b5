"""A patch cannot turn failures into passes by changing pytest's own objects, nor ship
its behaviour as bytecode: each through the real CLI (`swecl grade`), the real grader,
real pytest runs and the real sandbox, on a repository built here.

- D: library code of the patch, imported by the tests, changes pytest at run time (its
  reports, its test runner, the call hook) so that failing tests are reported passed,
  skipped or xfailed. The log, the exit code and pytest's reports all say pass; the
  results channel's evidence of each test's own run (graders/_results_plugin.py) does not.
- E: library code of the patch writes compiled modules into the worktree during the run
  (a cached `.pyc` matching a visible wrong source, a sourceless `.pyc`): never loaded
  (graders/_bytecode.py).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.processes import read_blobs, read_events
from tests.inprocess import swecl
from graders._parsers import parse_log
from graders._results_plugin import EVIDENCE_NOTE, ResultsChannel, check_against_channel
from graders._run import build_test_command, test_environment

from .support import CALC_FILES, CALC_GOLD, calc_curriculum, ledger_state, make_repo, new_file_patch, write_predictions

pytestmark = pytest.mark.slow

F2P = "tests/test_calc.py::test_add_numbers"
P2P = "tests/test_calc.py::test_add_zero"


def _calc_with(lines: list[str]) -> str:
    """A patch that rewrites calc.py whole as `lines`."""
    body = "".join(f"+{line}\n" for line in lines)
    return (
        f"diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,{len(lines)} @@\n"
        f"-def add(a, b):\n-    return a - b\n{body}"
    )


def _tampering(setup: list[str], add: str = "return a - b") -> str:
    """calc.py doing `setup` at import (when the test module imports it), add() as given."""
    return _calc_with([*setup, "", "", "def add(a, b):", f"    {add}"])


# D: every report made passed (the test ran and failed)
REPORTS_PASSED = _tampering([
    "from _pytest.reports import TestReport",
    "_init = TestReport.__init__",
    "def _passed(self, *args, **kwargs):",
    "    _init(self, *args, **kwargs)",
    "    self.outcome, self.longrepr = 'passed', None",
    "TestReport.__init__ = _passed",
])
# D: the test function is never called; pytest reports a pass
RUNTEST_NOOP = _tampering([
    "import _pytest.python",
    "_pytest.python.Function.runtest = lambda self: None",
])
# D: the call phase is never run at all: a passing CallInfo is made instead
CALL_BYPASSED = _tampering([
    "import _pytest.runner as runner",
    "_call_and_report = runner.call_and_report",
    "def _bypass(item, when, log=True, **kwargs):",
    "    if when != 'call':",
    "        return _call_and_report(item, when, log, **kwargs)",
    "    call = runner.CallInfo.from_call(lambda: None, when=when, reraise=None)",
    "    report = item.ihook.pytest_runtest_makereport(item=item, call=call)",
    "    item.ihook.pytest_runtest_logreport(report=report)",
    "    return report",
    "runner.call_and_report = _bypass",
])
# D: failures reported as expected failures (XFAIL counts as a pass)
FAILURES_XFAILED = _tampering([
    "from _pytest.reports import TestReport",
    "_init = TestReport.__init__",
    "def _xfailed(self, *args, **kwargs):",
    "    _init(self, *args, **kwargs)",
    "    if self.outcome == 'failed':",
    "        self.outcome, self.longrepr, self.wasxfail = 'skipped', None, ''",
    "TestReport.__init__ = _xfailed",
])
# D: add() right for the new test, wrong for zero; the broken PASS_TO_PASS test is
# reported skipped (a skipped PASS_TO_PASS test counts as maintained)
P2P_SKIPPED = _tampering([
    "from _pytest.reports import TestReport",
    "_init = TestReport.__init__",
    "def _skipped(self, *args, **kwargs):",
    "    _init(self, *args, **kwargs)",
    "    if self.outcome == 'failed':",
    "        self.outcome, self.longrepr = 'skipped', ('calc.py', 1, 'Skipped: not here')",
    "TestReport.__init__ = _skipped",
], add="return a + b + (1 if (a, b) == (0, 0) else 0)")

# E: the visible source of calc_core.py subtracts; calc.py writes, before importing it,
# bytecode that adds, with the header of that very source (both where the interpreter
# looks by default and in its bytecode cache prefix, when one is set).
_WRITE_BYTECODE = [
    "import importlib._bootstrap_external as ext, importlib.util, marshal, os, sys",
    "_here = os.path.dirname(os.path.abspath(__file__))",
    "def _plant(source_path, pyc_paths, code_text):",
    "    st = os.stat(source_path)",
    "    code = compile(code_text, source_path, 'exec')",
    "    data = ext._code_to_timestamp_pyc(code, st.st_mtime, st.st_size)",
    "    for pyc in pyc_paths:",
    "        try:",
    "            os.makedirs(os.path.dirname(pyc), exist_ok=True)",
    "            with open(pyc, 'wb') as fh:",
    "                fh.write(data)",
    "        except OSError:",
    "            pass",
]
CACHED_BYTECODE = _calc_with([
    *_WRITE_BYTECODE,
    "_src = os.path.join(_here, 'calc_core.py')",
    "_plant(_src, [os.path.join(_here, '__pycache__', 'calc_core.' + sys.implementation.cache_tag + '.pyc'),",
    "              importlib.util.cache_from_source(_src)], 'def add(a, b):\\n    return a + b\\n')",
    "from calc_core import add",
]) + new_file_patch("calc_core.py", ["def add(a, b):", "    return a - b"])
# E: a sourceless module written beside calc.py, preferred when it imports
SOURCELESS_BYTECODE = _calc_with([
    *_WRITE_BYTECODE,
    "_plant(os.path.join(_here, 'calc.py'), [os.path.join(_here, 'calc_fast.pyc')],",
    "       'def add(a, b):\\n    return a + b\\n')",
    "def add(a, b):",
    "    return a - b",
    "try:",
    "    from calc_fast import add",
    "except ImportError:",
    "    pass",
])

PATCHES: dict[str, tuple[str, str]] = {
    # name: (patch, the status it must get)
    "gold": (CALC_GOLD, "resolved"),
    "reports-passed": (REPORTS_PASSED, "unresolved"),
    "runtest-noop": (RUNTEST_NOOP, "unresolved"),
    "call-bypassed": (CALL_BYPASSED, "unresolved"),
    "failures-xfailed": (FAILURES_XFAILED, "unresolved"),
    "p2p-skipped": (P2P_SKIPPED, "unresolved"),
    "cached-bytecode": (CACHED_BYTECODE, "unresolved"),
    "sourceless-bytecode": (SOURCELESS_BYTECODE, "unresolved"),
    # the bytecode writers with a right source: they still resolve (nothing else is refused)
    "cached-bytecode-gold": (CACHED_BYTECODE.replace("+    return a - b", "+    return a + b"), "resolved"),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> dict[str, object]:
    """Grade every patch once (one `swecl grade`), return what the tests inspect."""
    root = tmp_path_factory.mktemp("forged-reports")
    repo_dir = root / "repo"
    base = make_repo(repo_dir, CALC_FILES)
    names = list(PATCHES)
    instances = [f"acme__calc-{i}" for i in range(1, len(names) + 1)]
    by_instance = dict(zip(instances, names, strict=True))
    dataset = calc_curriculum(root / "dataset", base=base, repo_dir=repo_dir, repo="acme/calc-reports",
                              instances=instances, pass_to_pass=(P2P,))
    predictions = write_predictions(root / "pred.jsonl", {iid: PATCHES[name][0] for iid, name in by_instance.items()})
    results = root / "results"
    done = swecl(results, "grade", "--dataset", str(dataset), "--predictions", str(predictions), "--json",
                 cache=cache, check=False, timeout=900)
    assert done.returncode == 0, done.stderr
    grades = {by_instance[e["payload"]["instance_id"]]: e["payload"] for e in read_events(results)
              if e["type"] == "grade.finished"}
    blobs = read_blobs(results)
    logs = {name: blobs[g["log"]].decode("utf-8", "replace") for name, g in grades.items() if g.get("log")}
    return {"grades": grades, "logs": logs, "results": results}


def test_every_patch_gets_its_verdict(graded: dict) -> None:
    assert {name: g["status"] for name, g in graded["grades"].items()} == {n: want for n, (_, want) in PATCHES.items()}
    assert ledger_state(graded["results"]) == []


def test_forged_reports_fool_the_log_but_not_the_evidence(graded: dict) -> None:
    """pytest's own summary and exit code say pass; the grade does not, and says why."""
    grades, logs = graded["grades"], graded["logs"]
    for name in ("reports-passed", "runtest-noop", "call-bypassed"):
        assert grades[name]["test_exit_code"] == 0, name
        assert f"PASSED {F2P}" in logs[name], name
        assert EVIDENCE_NOTE in logs[name], name
    assert grades["reports-passed"]["f2p"] == {F2P: "FAILED"}
    assert f"{F2P} (PASSED: its call raised AssertionError)" in logs["reports-passed"]
    assert grades["runtest-noop"]["f2p"] == {F2P: "MISSING"}
    assert f"{F2P} (PASSED: its test function's code never started)" in logs["runtest-noop"]
    assert grades["call-bypassed"]["f2p"] == {F2P: "MISSING"}
    assert f"{F2P} (PASSED: its test function was never called)" in logs["call-bypassed"]
    assert grades["failures-xfailed"]["f2p"] == {F2P: "MISSING"}
    assert f"{F2P} (XFAIL: no expected failure was raised and it has no xfail mark)" in logs["failures-xfailed"]
    # the PASS_TO_PASS test reported skipped failed in fact (pytest's -rA names a skip by
    # its location, so the log never had it as passing); the new test's pass is real and kept
    assert grades["p2p-skipped"]["p2p"][P2P] in ("FAILED", "MISSING") and grades["p2p-skipped"]["f2p"] == {F2P: "PASSED"}


def test_the_positive_control_has_evidence_for_every_pass(graded: dict) -> None:
    log = graded["logs"]["gold"]
    assert graded["grades"]["gold"]["f2p"] == {F2P: "PASSED"} and graded["grades"]["gold"]["p2p"] == {P2P: "PASSED"}
    assert EVIDENCE_NOTE not in log and "results channel: 2 tests, finished" in log


def test_bytecode_written_into_the_worktree_is_never_loaded(graded: dict) -> None:
    grades = graded["grades"]
    for name in ("cached-bytecode", "sourceless-bytecode"):
        assert grades[name]["f2p"] == {F2P: "FAILED"}, name  # the visible source ran
    assert grades["cached-bytecode-gold"]["f2p"] == {F2P: "PASSED"}


def test_a_regrade_from_the_recorded_logs_brings_back_no_pass_the_channel_refused(
    graded: dict, tmp_path: Path, cache: Path
) -> None:
    """The channel's file is gone after the grade; the log still says PASSED. The grade
    recorded what the channel changed, and the regrade applies it: nothing is corrected."""
    results = tmp_path / "results"
    shutil.copytree(graded["results"], results)
    assert graded["grades"]["reports-passed"]["channel_overrides"] == {F2P: "FAILED"}
    assert graded["grades"]["gold"]["channel_overrides"] == {}
    version = next(e["payload"]["version"] for e in read_events(results) if e["type"] == "run.started")
    done = swecl(results, "regrade", version, cache=cache)
    assert "0 corrected" in done.stdout, done.stdout
    assert [e for e in read_events(results) if e["type"] == "grade.corrected"] == []


# -- the evidence on its own, outside a grade ----------------------------------------------


def test_the_evidence_follows_decorated_class_unittest_and_doctest_tests(tmp_path: Path) -> None:
    """Nothing forged: every kind of test keeps exactly the status pytest gave it."""
    (tmp_path / "test_kinds.py").write_text(
        "import functools, unittest, pytest\nfrom unittest import mock\n\n"
        "def deco(f):\n    @functools.wraps(f)\n    def inner(*a, **k):\n        return f(*a, **k)\n    return inner\n\n"
        "@deco\ndef test_wrapped():\n    pass\n\n"
        "@mock.patch('os.getcwd')\ndef test_mocked(m):\n    pass\n\n"
        "@pytest.mark.parametrize('x', [1, 2])\ndef test_param(x):\n    assert x\n\n"
        "@pytest.mark.xfail\ndef test_xfail():\n    assert False\n\n"
        "@pytest.mark.xfail(run=False)\ndef test_xfail_not_run():\n    pass\n\n"
        "@pytest.mark.xfail(strict=True)\ndef test_xpass_strict():\n    pass\n\n"
        "def test_skip_inside():\n    pytest.skip('no')\n\n"
        "class TestPlain:\n    def test_method(self):\n        pass\n\n"
        "class TestCase(unittest.TestCase):\n    def test_ok(self):\n        pass\n\n"
        "    def test_bad(self):\n        self.assertEqual(1, 2)\n\n"
        "    @unittest.expectedFailure\n    def test_expected(self):\n        self.assertEqual(1, 2)\n\n"
        "    @unittest.skip('no')\n    def test_skipped(self):\n        pass\n\n"
        "def double(x):\n    '''\n    >>> double(2)\n    4\n    '''\n    return 2 * x\n",
        encoding="utf-8",
    )
    channel = ResultsChannel()
    try:
        cmd = build_test_command("python -m pytest -rA -p no:cacheprovider --doctest-modules", ["test_kinds.py"],
                                 python=Path(sys.executable), bin_dir=None, worktree=tmp_path, channel=channel)
        done = subprocess.run(cmd.argv, cwd=tmp_path, env=test_environment(bin_dir=None, channel=cmd.channel),
                              capture_output=True, text=True, timeout=120)
        parsed = parse_log(done.stdout, "pytest")
        statuses, notes = check_against_channel(parsed, done.stdout, channel, "pytest")
        assert statuses == parsed and not any(EVIDENCE_NOTE in n for n in notes), notes
        report = channel.read()
        assert len(report.outcomes) == 14 and set(report.evidence) == set(report.outcomes)
        assert {name for name, s in parsed.items() if s == "PASSED"} >= {
            "test_kinds.py::test_wrapped", "test_kinds.py::test_mocked", "test_kinds.py::test_param[1]",
            "test_kinds.py::TestPlain::test_method", "test_kinds.py::TestCase::test_ok", "test_kinds.py::test_kinds.double"}
    finally:
        channel.close()
