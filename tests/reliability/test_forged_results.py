"""A patch cannot grade itself: forged test results, test configuration and git behaviour
files in a model patch, each through the real CLI (`swecl grade`), the real grader and
real pytest runs on a repository built here.

- A: the code under test writes `PASSED <test>` into the log (after pytest's report, or
  instead of it, ending the process with `os._exit(0)`). The log's own rule (a test
  reported failing and passing counts as failed) and pytest's report through swecl's
  results channel (graders/_results_plugin.py) keep the verdict honest.
- B: a pytest plugin loaded from pytest.ini / pyproject.toml / setup.cfg / tox.ini of the
  patch: those files are reverted like test files before the tests run.
- C: a `.gitattributes` (or `.gitmodules`) in the patch never takes the task out of the
  score: it is left out, the rest of the patch is graded.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.processes import read_events
from tests.inprocess import swecl
from graders._parsers import TestStatus, parse_log
from graders._results_plugin import CHANNEL_VAR, PLUGIN_NAME, ResultsChannel, check_against_channel
from graders._run import build_test_command, test_environment

from .support import CALC_FILES, CALC_GOLD, calc_curriculum, ledger_state, make_repo, new_file_patch, write_predictions

pytestmark = pytest.mark.slow

F2P = "tests/test_calc.py::test_add_numbers"
P2P = "tests/test_calc.py::test_add_zero"

# add() still subtracts, so the new test fails, but zero + zero stays right
WRONG_FIX = (
    "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,3 @@\n def add(a, b):\n"
    "+    # looked at it, seems fine\n     return a - b\n"
)


def _calc_with(lines: list[str]) -> str:
    """A patch that rewrites calc.py whole (still subtracting) as `lines`."""
    body = "".join(f"+{line}\n" for line in lines)
    return (
        f"diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,{len(lines)} @@\n"
        f"-def add(a, b):\n-    return a - b\n{body}"
    )


# A: an exit handler that prints a pass for the failing test and hides pytest's exit code
EXIT_HANDLER = _calc_with([
    "import atexit, os, sys",
    "",
    "",
    "def _forge():",
    f"    sys.stdout.write('PASSED {F2P}\\n')",
    "    sys.stdout.flush()",
    "    os._exit(0)",
    "",
    "",
    "atexit.register(_forge)",
    "",
    "",
    "def add(a, b):",
    "    return a - b",
])

# A: the process ends inside the failing test, after printing a pass for every test past
# pytest's output capture (suspended through its capture manager, found with gc)
EARLY_EXIT = _calc_with([
    "import gc, os, sys",
    "",
    "",
    "def add(a, b):",
    "    if (a, b) == (2, 3):",
    "        from _pytest.capture import CaptureManager",
    "        for found in gc.get_objects():",
    "            if isinstance(found, CaptureManager):",
    "                found.suspend_global_capture(in_=False)",
    f"        sys.stdout.write('\\nPASSED {P2P}\\nPASSED {F2P}\\n')",
    "        sys.stdout.flush()",
    "        os._exit(0)",
    "    return a - b",
])

# B: a plugin that reports every failing test as passed, and the configs that load it
EVIL_PLUGIN = new_file_patch("evil.py", [
    "import pytest",
    "",
    "",
    "@pytest.hookimpl(hookwrapper=True)",
    "def pytest_runtest_makereport(item, call):",
    "    outcome = yield",
    "    outcome.get_result().outcome = 'passed'",
])
PYPROJECT_EVIL = (
    "diff --git a/pyproject.toml b/pyproject.toml\n--- a/pyproject.toml\n+++ b/pyproject.toml\n"
    "@@ -1,2 +1,3 @@\n [tool.pytest.ini_options]\n pythonpath = [\".\"]\n+addopts = \"-p evil\"\n"
)

# C: git behaviour files
UTF16_ATTRIBUTES = new_file_patch(".gitattributes", ["* working-tree-encoding=UTF-16"])
SUBMODULE = new_file_patch(".gitmodules", ['[submodule "x"]', "\tpath = x", "\turl = ../x"])

PATCHES: dict[str, tuple[str, str]] = {
    # name: (patch, the status it must get)
    "gold": (CALC_GOLD, "resolved"),
    "exit-handler": (EXIT_HANDLER, "unresolved"),
    "early-exit": (EARLY_EXIT, "unresolved"),
    "pytest-ini-plugin": (WRONG_FIX + EVIL_PLUGIN + new_file_patch("pytest.ini", ["[pytest]", "addopts = -p evil"]),
                          "unresolved"),
    "pyproject-plugin": (WRONG_FIX + EVIL_PLUGIN + PYPROJECT_EVIL, "unresolved"),
    "gold-with-config": (CALC_GOLD + new_file_patch("pytest.ini", ["[pytest]", "addopts = -p no:cacheprovider"]),
                         "resolved"),
    "gitattributes-wrong": (UTF16_ATTRIBUTES + WRONG_FIX, "unresolved"),
    "gitattributes-gold": (UTF16_ATTRIBUTES + CALC_GOLD + SUBMODULE, "resolved"),
    "gitattributes-only": (UTF16_ATTRIBUTES, "patch_failed"),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> dict[str, object]:
    """Grade every patch once (one `swecl grade`), return what the tests inspect."""
    root = tmp_path_factory.mktemp("forged")
    repo_dir = root / "repo"
    base = make_repo(repo_dir, CALC_FILES)
    names = list(PATCHES)
    instances = [f"acme__calc-{i}" for i in range(1, len(names) + 1)]
    by_instance = dict(zip(instances, names, strict=True))
    dataset = calc_curriculum(root / "dataset", base=base, repo_dir=repo_dir, repo="acme/calc-forged",
                              instances=instances, pass_to_pass=(P2P,))
    predictions = write_predictions(root / "pred.jsonl", {iid: PATCHES[name][0] for iid, name in by_instance.items()})
    results = root / "results"
    done = swecl(results, "grade", "--dataset", str(dataset), "--predictions", str(predictions), "--json",
                 cache=cache, check=False, timeout=900)
    assert done.returncode == 0, done.stderr
    grades = {by_instance[e["payload"]["instance_id"]]: e["payload"] for e in read_events(results)
              if e["type"] == "grade.finished"}
    return {"statuses": {name: g["status"] for name, g in grades.items()}, "grades": grades, "results": results}


def test_every_patch_gets_its_verdict(graded: dict) -> None:
    assert graded["statuses"] == {name: want for name, (_, want) in PATCHES.items()}
    assert ledger_state(graded["results"]) == []


def test_a_pass_printed_after_pytest_s_report_does_not_count(graded: dict) -> None:
    grade = graded["grades"]["exit-handler"]
    assert grade["f2p"] == {F2P: "FAILED"} and grade["test_exit_code"] == 0
    assert grade["p2p"] == {P2P: "PASSED"}


def test_passes_printed_before_an_early_exit_do_not_count(graded: dict) -> None:
    """No FAILED line at all and exit 0: only pytest's own report (the channel) knows the
    new test never finished; the test that ran before the exit keeps its pass."""
    grade = graded["grades"]["early-exit"]
    assert grade["test_exit_code"] == 0
    assert grade["f2p"] == {F2P: "MISSING"} and grade["p2p"] == {P2P: "PASSED"}


def test_test_configuration_of_the_patch_is_reverted_and_its_source_kept(graded: dict) -> None:
    grades = graded["grades"]
    assert grades["pytest-ini-plugin"]["test_files_reverted"] == ["pytest.ini"]
    assert grades["pyproject-plugin"]["test_files_reverted"] == ["pyproject.toml"]
    for name in ("pytest-ini-plugin", "pyproject-plugin"):
        assert grades[name]["f2p"] == {F2P: "FAILED"}, name
    # a right fix with a config change of its own still resolves: the fix stays applied
    assert grades["gold-with-config"]["test_files_reverted"] == ["pytest.ini"]


def test_git_behaviour_files_never_take_a_task_out_of_the_score(graded: dict) -> None:
    grades = graded["grades"]
    for name in ("gitattributes-wrong", "gitattributes-gold", "gitattributes-only"):
        assert grades[name]["resolved"] is False or grades[name]["status"] == "resolved", name
        assert grades[name]["status"] not in ("agent_error", "infra_error", "env_failed"), (name, grades[name])
    assert grades["gitattributes-only"]["error"] == "the patch changes only git behaviour files (.gitattributes, .gitmodules)"


def test_the_grade_log_says_what_was_left_out_and_what_the_channel_saw(graded: dict) -> None:
    from bench.processes import read_blobs

    blobs = read_blobs(graded["results"])
    logs = {name: blobs[g["log"]].decode("utf-8", "replace") for name, g in graded["grades"].items() if g.get("log")}
    assert "not applied (git behaviour files are never taken from a patch): .gitattributes, .gitmodules" in (
        logs["gitattributes-gold"])
    assert "results channel: 2 tests, finished" in logs["gold"]
    assert "results channel: 1 tests, ended early (no pytest_sessionfinish)" in logs["early-exit"]
    assert f"not counted as passes: {F2P} (PASSED, not run)" in logs["early-exit"]
    assert f"reported both failing and not, counted failing: {F2P}" in logs["exit-handler"]


# -- the channel's parts, on their own ---------------------------------------------------


@pytest.mark.parametrize(
    ("test_cmd", "loads"),
    [("pytest -rA", True), ("python -m pytest -rA --tb=no -p no:cacheprovider", True), ("py.test -rA", True),
     ("./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1", False),
     ("bin/test -C --verbose", False), ("tox --current-env -epy39 -v --", True), ("tox -epy39 -v --", False),
     ("tox --current-env -epy39 -v", False),
     ("PYTHONWARNINGS=ignore python3 -m pytest -rA", True)],
)
def test_the_plugin_is_loaded_for_pytest_only(tmp_path: Path, test_cmd: str, loads: bool) -> None:
    channel = ResultsChannel()
    try:
        cmd = build_test_command(test_cmd, ["tests/a.py"], python=Path(sys.executable), bin_dir=None,
                                 worktree=tmp_path, channel=channel)
        env = test_environment(bin_dir=None, extra={"PYTHONPATH": "/spec/path", **cmd.env}, channel=cmd.channel)
        assert ("-p" in cmd.argv and PLUGIN_NAME in cmd.argv) is loads
        assert (cmd.channel is not None) is loads and (channel.dir is not None) is loads
        assert (CHANNEL_VAR in env) is loads
        if loads:
            assert cmd.argv[cmd.argv.index("-p") - 1] in ("pytest", "--") or cmd.argv[1:3] == ["-m", "pytest"] or (
                cmd.argv[0].endswith(("pytest", "py.test")))
            assert env["PYTHONPATH"] == os.pathsep.join([str(channel.dir), "/spec/path"])
            assert channel.dir is not None and not channel.dir.is_relative_to(tmp_path)
        else:
            assert env["PYTHONPATH"] == "/spec/path"
        assert cmd.argv[-1] == "tests/a.py"
    finally:
        channel.close()
    assert channel.dir is None


def _pytest_with_channel(tmp_path: Path, test_source: str) -> tuple[subprocess.CompletedProcess[str], ResultsChannel]:
    (tmp_path / "test_it.py").write_text(test_source, encoding="utf-8")
    channel = ResultsChannel()
    cmd = build_test_command("python -m pytest -rA -p no:cacheprovider", ["test_it.py"], python=Path(sys.executable),
                             bin_dir=None, worktree=tmp_path, channel=channel)
    env = test_environment(bin_dir=None, channel=cmd.channel)
    done = subprocess.run(cmd.argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    return done, channel


def test_the_channel_records_pytest_s_own_outcomes(tmp_path: Path) -> None:
    source = (
        "import os, pytest\n\n"
        "def test_pass():\n    assert CHANNEL not in os.environ\n\n"  # the variable left before the tests ran
        "def test_fail():\n    assert False\n\n"
        "@pytest.fixture\ndef broken():\n    yield\n    raise RuntimeError('teardown')\n\n"
        "def test_teardown_error(broken):\n    pass\n\n"
        "@pytest.mark.xfail\ndef test_xfail():\n    assert False\n\n"
        "@pytest.mark.skip\ndef test_skip():\n    pass\n"
    ).replace("CHANNEL", repr(CHANNEL_VAR))
    done, channel = _pytest_with_channel(tmp_path, source)
    try:
        report = channel.read()
        assert report.started and report.finished, done.stdout
        assert report.outcomes == {
            "test_it.py::test_pass": TestStatus.PASSED, "test_it.py::test_fail": TestStatus.FAILED,
            "test_it.py::test_teardown_error": TestStatus.ERROR, "test_it.py::test_xfail": TestStatus.XFAIL,
            "test_it.py::test_skip": TestStatus.SKIPPED,
        }
        statuses, notes = check_against_channel(parse_log(done.stdout, "pytest"), done.stdout, channel, "pytest")
        # nothing forged: the log and pytest agree, the teardown error included
        assert statuses == parse_log(done.stdout, "pytest")
        assert statuses["test_it.py::test_teardown_error"] is TestStatus.ERROR
        assert "results channel: 5 tests, finished" in notes[-1]
        assert not list(tmp_path.glob("*.jsonl")) and not (tmp_path / f"{PLUGIN_NAME}.py").exists()
    finally:
        channel.close()


def test_a_log_pass_pytest_reported_otherwise_counts_as_failed(tmp_path: Path) -> None:
    source = "def test_fail():\n    assert False\n\ndef test_pass():\n    pass\n"
    done, channel = _pytest_with_channel(tmp_path, source)
    try:
        # what a reporter-patching forger would leave: passes only, no FAILED line
        forged = "PASSED test_it.py::test_fail\nPASSED test_it.py::test_pass\nPASSED test_it.py::test_never_ran\n"
        statuses, notes = check_against_channel(parse_log(forged, "pytest"), forged, channel, "pytest")
        assert statuses == {"test_it.py::test_fail": TestStatus.FAILED, "test_it.py::test_pass": TestStatus.PASSED}
        assert "test_it.py::test_never_ran (PASSED, not run)" in notes[-1]
        # a deleted channel file is an empty channel: no log pass survives it
        channel.results_file.unlink()
        statuses, _ = check_against_channel(parse_log(forged, "pytest"), forged, channel, "pytest")
        assert statuses == {}
    finally:
        channel.close()


def test_swebench_s_progress_marker_keeps_its_log_status_when_pytest_finished(tmp_path: Path) -> None:
    """Two official pytest rows list "[100%]" in PASS_TO_PASS, parsed from a line such as
    `PASSED [100%]`: no test is named so, and swebench counts it when the log has it."""
    done, channel = _pytest_with_channel(tmp_path, "def test_pass():\n    pass\n")
    try:
        log = done.stdout + "PASSED [100%]\nPASSED test_it.py::test_forged\n"
        parsed = parse_log(log, "pytest")
        assert parsed.get("[100%]") is TestStatus.PASSED  # swebench's parser reads it so
        statuses, _ = check_against_channel(parsed, log, channel, "pytest")
        assert statuses.get("[100%]") is TestStatus.PASSED
        assert "test_it.py::test_forged" not in statuses  # a real test name still needs pytest's word
        # a run that never finished gets no such benefit of the doubt
        channel.results_file.unlink()
        statuses, _ = check_against_channel(parsed, log, channel, "pytest")
        assert "[100%]" not in statuses
    finally:
        channel.close()
