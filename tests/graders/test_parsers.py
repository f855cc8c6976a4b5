"""Log parsers and the test-run region on small hand-written logs (the decision: test_decide.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from graders._decide import UNRESOLVED, decide
from graders._parsers import (
    TestStatus,
    canonical_parser,
    find_test_output,
    frame_test_output,
    log_conflicts,
    parse_log,
    parse_test_log,
    parser_for_repo,
    parser_names,
)
from ledger.errors import SweclError

P, F, S, E, X = (TestStatus.PASSED, TestStatus.FAILED, TestStatus.SKIPPED, TestStatus.ERROR, TestStatus.XFAIL)

ESC = "\x1b"

PYTEST_RA = """\
============================= test session starts ==============================
collected 9 items

tests/test_a.py ..FsxXE.                                                  [100%]

=========================== short test summary info ============================
PASSED tests/test_a.py::test_one
PASSED tests/test_a.py::test_param[a b]
FAILED tests/test_a.py::test_two - AssertionError: assert 1 == 2
SKIPPED [1] tests/test_a.py:20: needs network
SKIPPED tests/test_a.py::test_skipped_by_name
XFAIL tests/test_a.py::test_xfail - known bug
XPASS tests/test_a.py::test_xpass unexpectedly fine
ERROR tests/test_a.py::test_fixture_broken - RuntimeError: boom
ERROR: not found: tests/test_a.py::test_nope
   PASSED tests/test_a.py::indented_lines_are_not_summary_lines
============ 1 failed, 2 passed, 1 skipped, 1 xfailed, 1 xpassed, 1 error in 0.1s ============
"""


def test_pytest_summary_lines_every_status() -> None:
    assert parse_log(PYTEST_RA, "pytest") == {
        "tests/test_a.py::test_one": P,
        # the first whitespace token is the key, as in the SWE-bench lists
        "tests/test_a.py::test_param[a": P,
        "tests/test_a.py::test_two": F,
        "tests/test_a.py::test_skipped_by_name": S,
        "tests/test_a.py::test_xfail": X,
        "tests/test_a.py::test_fixture_broken": E,
    }


def test_pytest_later_line_wins_unless_it_would_hide_a_failure() -> None:
    log = "SKIPPED tests/t.py::test_b\nPASSED tests/t.py::test_b\n"
    assert parse_log(log, "pytest") == {"tests/t.py::test_b": P}
    assert log_conflicts(log, "pytest") == {}


# A test reported failing and not failing counts as failed, whatever the order: a PASSED line
# printed after the report (an exit handler of the code under test, then os._exit(0)) must
# not overwrite the runner's FAILED. One log per parser family, the forged line last.
FORGED_AFTER_FAILURE = {
    "pytest": ("FAILED tests/t.py::test_a - assert 1 == 2\nPASSED tests/t.py::test_a\n", "tests/t.py::test_a", F),
    "pytest_options": ("ERROR tests/t.py::test_a[/x/y] - boom\nPASSED tests/t.py::test_a[/x/y]\n",
                       "tests/t.py::test_a[/y]", E),
    "matplotlib": ("FAILED tests/t.py::test_a - x\nXFAIL tests/t.py::test_a\n", "tests/t.py::test_a", F),
    "pytest_v2": (f"{ESC}[31mFAILED{ESC}[0m tests/t.py::test_a - x\ntests/t.py::test_a PASSED\n",
                  "tests/t.py::test_a", F),
    "django": ("test_a (app.tests.T) ... FAIL\ntest_a (app.tests.T) ... ok\n", "test_a (app.tests.T)", F),
    "sympy": ("test_a E\ntest_a ok\n", "test_a", E),
}


@pytest.mark.parametrize("parser", sorted(FORGED_AFTER_FAILURE))
def test_a_pass_printed_after_a_failure_does_not_overwrite_it(parser: str) -> None:
    log, name, failing = FORGED_AFTER_FAILURE[parser]
    assert parse_log(log, parser)[name] is failing
    assert log_conflicts(log, parser)[name][1] is failing
    # and the other order (the failure last) was failing already
    lines = log.splitlines(keepends=True)
    assert parse_log("".join(reversed(lines)), parser)[name] is failing


def test_passed_then_error_in_teardown_is_an_error_as_in_swebench() -> None:
    """pytest -rA prints PASSED lines before ERROR lines: a test whose call passed and whose
    teardown failed appears twice, and swebench's last-line reading keeps ERROR too."""
    log = ("PASSED tests/t.py::test_a\nPASSED tests/t.py::test_b\n"
           "ERROR tests/t.py::test_a - RuntimeError: teardown\n")
    assert parse_log(log, "pytest") == {"tests/t.py::test_a": E, "tests/t.py::test_b": P}
    assert log_conflicts(log, "pytest") == {"tests/t.py::test_a": (E, E)}
    assert decide(parse_log(log, "pytest"), ["tests/t.py::test_a"], []).status == UNRESOLVED


def test_pytest_v2_keeps_the_rest_of_the_line_and_reads_verbose_endings() -> None:
    log = (
        "astropy/io/tests/test_x.py::test_verbose PASSED\n"
        "astropy/io/tests/test_x.py::test_verbose_fail FAILED\n"
        "PASSED astropy/io/tests/test_x.py::test_param[a b]\n"
        "FAILED astropy/io/tests/test_x.py::test_two - AssertionError: a - b\n"
        "SKIPPED [2] astropy/io/tests/test_x.py:7: no scipy\n"
        "XFAIL astropy/io/tests/test_x.py::test_xfail\n"
        "XFAIL astropy/io/tests/test_x.py::test_xfail_reason - not yet\n"
        "astropy/io/tests/test_x.py::test_progress PASSED                [ 50%]\n"
    )
    assert parse_log(log, "pytest_v2") == {
        "astropy/io/tests/test_x.py::test_verbose": P,
        "astropy/io/tests/test_x.py::test_verbose_fail": F,
        "astropy/io/tests/test_x.py::test_param[a b]": P,
        "astropy/io/tests/test_x.py::test_two": F,
        "astropy/io/tests/test_x.py::test_xfail": X,
        # only FAILED lines lose their ` - message` in this family (swebench's key space)
        "astropy/io/tests/test_x.py::test_xfail_reason - not yet": X,
    }


def test_sphinx_tox_output_with_ansi_colour_codes() -> None:
    log = (
        "py39: commands[0]> python -X dev -m pytest -rA tests/test_build.py\n"
        f"{ESC}[1m============================= test session starts =============================={ESC}[0m\n"
        f"tests/test_build.py {ESC}[32m.{ESC}[0m{ESC}[31mF{ESC}[0m{ESC}[31m  [100%]{ESC}[0m\n"
        f"{ESC}[32mPASSED{ESC}[0m tests/test_build.py::{ESC}[1mtest_ok{ESC}[0m\n"
        f"{ESC}[31mFAILED{ESC}[0m tests/test_build.py::{ESC}[1mtest_bad{ESC}[0m - AssertionError: x\n"
        f"{ESC}[1;33mSKIPPED{ESC}[0m tests/test_build.py::test_multi_param_sgr\n"
        f"{ESC}[33mXFAIL{ESC}[39;49;00m tests/test_build.py::test_known\r\n"
        "py39: exit 1 (3.29 seconds) /testbed> python -X dev -m pytest -rA tests/test_build.py\n"
    )
    assert parse_log(log, "sphinx") == {
        "tests/test_build.py::test_ok": P,
        "tests/test_build.py::test_bad": F,
        "tests/test_build.py::test_multi_param_sgr": S,
        "tests/test_build.py::test_known": X,
    }
    # the plain pytest family does not strip colour codes (swebench does not either)
    assert parse_log(log, "pytest") == {}


def test_matplotlib_mouse_buttons_by_value() -> None:
    log = "PASSED lib/matplotlib/tests/test_widgets.py::test_span[MouseButton.LEFT-MouseButton.RIGHT]\n"
    assert parse_log(log, "matplotlib") == {"lib/matplotlib/tests/test_widgets.py::test_span[1-3]": P}


def test_pytest_options_keep_the_basename_of_path_options() -> None:
    log = (
        "PASSED tests/test_x.py::test_file[/tmp/pytest-1/data/file.dcm]\n"
        "PASSED tests/test_x.py::test_url[//host/share]\n"
        "PASSED tests/test_x.py::test_glob[/a/*.py]\n"
        "FAILED tests/test_x.py::test_same[/one/dir/f.py] - x\n"
        "PASSED tests/test_x.py::test_same[/other/dir/f.py]\n"
    )
    assert parse_log(log, "pytest_options") == {
        "tests/test_x.py::test_file[/file.dcm]": P,
        "tests/test_x.py::test_url[//host/share]": P,
        "tests/test_x.py::test_glob[/a/*.py]": P,
        # two paths, one basename: one of the tests this name stands for failed, so the
        # name fails (as a truncated listed id whose candidates disagree does in `decide`)
        "tests/test_x.py::test_same[/f.py]": F,
    }


DJANGO = """\
Testing against Django installed in '/testbed/django'
Creating test database for alias 'default'...
System check identified no issues (0 silenced).
test_plain (basic.tests.ModelTests) ... ok
test_new_style (basic.tests.ModelTests.test_new_style) ... ok
test_documented (basic.tests.ModelTests)
Docstring first line is the name. ... ok
test_skip (basic.tests.ModelTests) ... skipped 'Database has feature(s) foo'
test_fails (basic.tests.ModelTests) ... FAIL
test_errors (basic.tests.ModelTests) ... ERROR
test_expected (basic.tests.ModelTests) ... expected failure
test_talkative (basic.tests.ModelTests) ... printed by the test
more output
ok
test_ok_upper (basic.tests.ModelTests) ... OK

======================================================================
FAIL: test_fails (basic.tests.ModelTests)
----------------------------------------------------------------------
Traceback (most recent call last):
AssertionError: 1 != 2

----------------------------------------------------------------------
Ran 9 tests in 0.012s

FAILED (failures=1, errors=1, skipped=1, expected failures=1)
"""


def test_django_runner_every_status() -> None:
    assert parse_log(DJANGO, "django") == {
        "test_plain (basic.tests.ModelTests)": P,
        "test_new_style (basic.tests.ModelTests.test_new_style)": P,
        # a test with a docstring is named by its first line (so are the SWE-bench lists)
        "Docstring first line is the name.": P,
        "test_skip (basic.tests.ModelTests)": S,
        "test_fails (basic.tests.ModelTests)": F,
        "test_errors (basic.tests.ModelTests)": E,
        # `ok` on its own line after the test's output belongs to the last described test
        "test_talkative (basic.tests.ModelTests)": P,
        "test_ok_upper (basic.tests.ModelTests)": P,
        # the recap line's first word, as swebench records it
        "test_fails": F,
        # `expected failure` is not recorded, as in swebench: listed, it would be absent
    }


def test_django_status_split_from_its_test_by_a_long_print() -> None:
    log = (
        "test_runner (admin_scripts.tests.Cmd) ... Internal Server Error: /admin/x/\n"
        "ok\n"
        "test_version (admin_scripts.tests.CommandTypes)\n"
        "--version is equivalent to version\n"
    )
    statuses = parse_log(log, "django")
    assert statuses["test_runner (admin_scripts.tests.Cmd)"] is P
    assert statuses["--version is equivalent to version"] is P


SYMPY = """\
============================= test process starts ==============================
executable:         /opt/miniconda3/envs/testbed/bin/python  (3.9.19-final-0) [CPython]

sympy/core/tests/test_x.py[5]
test_passes ok
test_fails F
test_errors E
test_expected_fail f
test_talkative printed something
ok
                                                                          [FAIL]

________________________________________________________________________________
__________________ sympy/core/tests/test_x.py:test_fails _______________________
Traceback (most recent call last):
AssertionError

============= tests finished: 2 passed, 1 failed, 1 expected to fail, 1 exceptions ==============
DO *NOT* COMMIT!
"""


def test_sympy_bin_test_every_status() -> None:
    assert parse_log(SYMPY, "sympy") == {
        "sympy/core/tests/test_x.py:test_fails": F,
        "test_passes": P,
        "test_fails": F,
        "test_errors": E,
        # `f` (expected to fail) is not recorded, as in swebench; a `test_x <output>` line
        # whose `ok` comes later is not read either
    }


def test_parser_names_and_repo_mapping() -> None:
    assert parser_names() == ("pytest", "pytest_v2", "pytest_options", "matplotlib", "django", "sympy")
    assert {
        repo: parser_for_repo(repo)
        for repo in (
            "django/django",
            "sympy/sympy",
            "sphinx-doc/sphinx",
            "matplotlib/matplotlib",
            "scikit-learn/scikit-learn",
            "astropy/astropy",
            "pydata/xarray",
            "pytest-dev/pytest",
        )
    } == {
        "django/django": "django",
        "sympy/sympy": "sympy",
        "sphinx-doc/sphinx": "pytest_v2",
        "matplotlib/matplotlib": "matplotlib",
        "scikit-learn/scikit-learn": "pytest_v2",
        "astropy/astropy": "pytest_v2",
        "pydata/xarray": "pytest",
        "pytest-dev/pytest": "pytest",
    }
    assert canonical_parser("parse_log_scikit") == "pytest_v2"
    assert canonical_parser("parse_log_django") == "django"
    assert canonical_parser("xarray") == "pytest"
    with pytest.raises(SweclError, match="unknown log parser 'jest'"):
        canonical_parser("jest")
    with pytest.raises(SweclError, match="no log parser is known for repo 'acme/widgets'"):
        parser_for_repo("acme/widgets")


# ---------------------------------------------------------------------------------------
# the test-run region

EVAL_LOG = """\
+ git status
On branch main
+ git diff abc123
diff --git a/tests/test_a.py b/tests/test_a.py
+PASSED tests/test_a.py::test_from_the_diff
+ git apply -v -
Applied patch tests/test_a.py cleanly.
+ PYTHONWARNINGS=ignore::UserWarning
+ pytest -rA 'tests/test_a.py'
PASSED tests/test_a.py::test_one
FAILED tests/test_a.py::test_two - AssertionError
+ git checkout abc123 tests/test_a.py
Updated 1 path from def456
"""


def test_region_by_the_trace_of_the_test_command() -> None:
    region = find_test_output(EVAL_LOG, test_cmd="PYTHONWARNINGS='ignore::UserWarning' pytest -rA tests/test_a.py")
    assert region.framing == "xtrace"
    assert region.text == "PASSED tests/test_a.py::test_one\nFAILED tests/test_a.py::test_two - AssertionError"
    parsed = parse_test_log(EVAL_LOG, "pytest", test_cmd="pytest -rA tests/test_a.py")
    assert parsed.statuses == {"tests/test_a.py::test_one": P, "tests/test_a.py::test_two": F}
    assert not parsed.whole_log_fallback


def test_region_without_framing_is_the_whole_text() -> None:
    assert find_test_output(EVAL_LOG).framing == "whole"
    assert find_test_output(EVAL_LOG, test_cmd="pytest -rA other.py").framing == "whole"


def test_region_by_markers_with_exit_code() -> None:
    log = "+ git diff\nPASSED not/the/run.py::x\n" + frame_test_output("PASSED t.py::test_a\n", 0) + "+ git checkout x\n"
    region = find_test_output(log)
    assert (region.framing, region.text, region.exit_code, region.complete) == ("markers", "PASSED t.py::test_a\n", 0, True)
    assert parse_test_log(log, "pytest").statuses == {"t.py::test_a": P}


def test_swebench_style_markers_in_shell_trace() -> None:
    log = (
        "+ : '>>>>> Start Test Output'\n"
        "+ pytest -rA t.py\n"
        "FAILED t.py::test_a - x\n"
        "+ SWEBENCH_TEST_EXIT_CODE=1\n"
        "+ : '>>>>> End Test Output'\n"
        "+ echo '>>>>> Test Exit Code: 1'\n"
        ">>>>> Test Exit Code: 1\n"
    )
    region = find_test_output(log)
    assert region.text == "+ pytest -rA t.py\nFAILED t.py::test_a - x\n+ SWEBENCH_TEST_EXIT_CODE=1\n"
    assert region.exit_code == 1


def test_exit_code_printed_by_the_tests_does_not_count() -> None:
    log = frame_test_output("PASSED t.py::test_a\n>>>>> Test Exit Code: 0\n", 1)
    assert find_test_output(log).exit_code == 1


def test_results_outside_the_markers_are_read_from_the_whole_log() -> None:
    log = "PASSED t.py::test_a\n" + frame_test_output("collected 1 item\n", 0)
    parsed = parse_test_log(log, "pytest")
    assert parsed.whole_log_fallback and parsed.statuses == {"t.py::test_a": P}


def test_frame_without_exit_code_and_empty_output() -> None:
    framed = frame_test_output("", None)
    assert framed == ">>>>> Start Test Output\n>>>>> End Test Output\n"
    assert find_test_output(framed).text == ""


# The official logs that report some name both failing and not failing, and why.
OFFICIAL_LOGS_WITH_CONFLICTS = {
    # pytest's own suite prints an inner run's summary (XFAIL), then its own (FAILED)
    "pytest-dev__pytest-7490__20240620_sweagent_claude3.5sonnet": {
        "test_xfail_imperative_in_setup_function.py::test_this": (F, F)},
    # two django tests share a docstring first line, so a name: one ok, one FAIL
    "django__django-15987__composio_langgraph_agent_1726076078N": {
        "settings.FIXTURE_DIRS cannot contain a default fixtures directory": (F, F)},
}


def test_conflicting_statuses_change_no_official_verdict(shared: Path) -> None:
    """Of the 463 official logs, two report a name both ways; in both the last line already
    said FAILED, so swebench's last-line reading and the failure-wins rule agree, and every
    verdict (all 440 applied logs are checked in test_official_logs) stays the official one."""
    from tests.graders.test_official_logs import load_official_logs

    everything = load_official_logs(shared, applied_only=False)
    assert len(everything) == 463
    found = {}
    for entry in everything:
        parser = parser_for_repo(entry.repo)
        region = find_test_output(entry.log, test_cmd=entry.test_cmd)
        conflicts = log_conflicts(region.text, parser) or log_conflicts(entry.log, parser)
        if conflicts:
            found[entry.dir] = conflicts
    assert found == OFFICIAL_LOGS_WITH_CONFLICTS
    by_dir = {entry.dir: entry for entry in everything}
    for name in found:
        entry = by_dir[name]
        parser = parser_for_repo(entry.repo)
        ours = entry.grade()
        region = find_test_output(entry.log, test_cmd=entry.test_cmd).text
        last_line_wins = {**parse_log(region, parser), **{k: last for k, (last, _) in found[name].items()}}
        theirs = decide(last_line_wins, entry.names("FAIL_TO_PASS"), entry.names("PASS_TO_PASS"))
        assert ours.resolved == theirs.resolved == entry.report["resolved"], name
        assert (ours.f2p, ours.p2p) == (theirs.f2p, theirs.p2p), name
