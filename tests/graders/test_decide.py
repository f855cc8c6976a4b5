"""The decision (a test log's statuses against FAIL_TO_PASS / PASS_TO_PASS) and `verdict_lines`,
on small hand-written logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graders._decide import (
    AMBIGUOUS,
    INFRA_ERROR,
    MISSING,
    PATCH_BROKE_RUN,
    RESOLVED,
    UNRESOLVED,
    blame,
    decide,
    grade_log,
    keep_blame,
    match_test,
)
from graders._parsers import TestStatus, frame_test_output
from graders._verdict import verdict_lines
from ledger.errors import SweclError
from tests.graders.test_parsers import DJANGO, SYMPY

P, F, S, E, X = (TestStatus.PASSED, TestStatus.FAILED, TestStatus.SKIPPED, TestStatus.ERROR, TestStatus.XFAIL)


# ---------------------------------------------------------------------------------------
# the decision


def test_resolved_when_every_listed_test_passes_and_xfail_counts_as_pass() -> None:
    decision = decide({"a": P, "b": X, "c": P, "other": F}, ["a", "b"], ["c"])
    assert (decision.resolved, decision.status, decision.error) == (True, RESOLVED, None)
    assert decision.f2p == {"a": "PASSED", "b": "XFAIL"}
    assert decision.tests["other"] == "FAILED"


def test_skipped_fail_to_pass_fails_but_skipped_pass_to_pass_is_maintained() -> None:
    skipped_f2p = decide({"a": S, "c": P}, ["a"], ["c"])
    assert (skipped_f2p.resolved, skipped_f2p.status) == (False, UNRESOLVED)
    assert skipped_f2p.f2p_failure == ["a"]
    skipped_p2p = decide({"a": P, "c": S}, ["a"], ["c"])
    assert skipped_p2p.resolved and skipped_p2p.p2p_success == ["c"]


@pytest.mark.parametrize("status", [F, E])
def test_failed_or_erroring_listed_test(status: TestStatus) -> None:
    assert decide({"a": P, "c": status}, ["a"], ["c"]).status == UNRESOLVED
    assert decide({"a": status, "c": P}, ["a"], ["c"]).status == UNRESOLVED


def test_listed_test_absent_from_the_log_fails() -> None:
    decision = decide({"a": P}, ["a"], ["gone"])
    assert decision.status == UNRESOLVED
    assert decision.p2p == {"gone": MISSING} and decision.p2p_failure == ["gone"]


def test_truncated_ids_match_by_unambiguous_prefix() -> None:
    log = {
        "t.py::test_grammar[log(photon / cm**2)]": P,
        "t.py::test_grammar[log(photon / s)]": X,
        "t.py::test_mixed[a-1]": P,
        "t.py::test_mixed[a-2]": F,
        "t.py::test_skipfail[x-1]": S,
        "t.py::test_skipfail[x-2]": F,
    }
    assert match_test("t.py::test_grammar[log(photon", log) == "PASSED"
    # candidates disagree on pass versus fail: no match, hence failed
    assert match_test("t.py::test_mixed[a", log) == AMBIGUOUS
    # both not passing: they agree, and the first in log order stands for the name
    assert match_test("t.py::test_skipfail[x", log) == "SKIPPED"
    # a complete name never prefix-matches
    assert match_test("t.py::test_grammar", log) == MISSING
    assert match_test("t.py::test_nothing[a", log) == MISSING
    assert decide(log, ["t.py::test_grammar[log(photon"], []).resolved
    assert not decide(log, ["t.py::test_grammar[log(photon"], ["t.py::test_mixed[a"]).resolved


def test_zero_result_log_is_an_infra_error_not_unresolved() -> None:
    decision = decide({}, ["a"], ["b"], test_exit_code=1)
    assert (decision.resolved, decision.status) == (False, INFRA_ERROR)
    assert "no test result" in (decision.error or "")
    assert decision.f2p == {"a": MISSING}
    assert decide({}, [], [], test_exit_code=0).status == INFRA_ERROR


def test_nonzero_exit_with_a_log_claiming_success_is_an_infra_error() -> None:
    decision = decide({"a": P, "b": S}, ["a"], [], test_exit_code=2)
    assert (decision.resolved, decision.status) == (False, INFRA_ERROR)
    assert "exited 2" in (decision.error or "")


def test_exit_code_with_failures_or_zero_is_trusted() -> None:
    assert decide({"a": P, "other": F}, ["a"], [], test_exit_code=1).status == RESOLVED
    assert decide({"a": F}, ["a"], [], test_exit_code=0).status == UNRESOLVED
    assert decide({"a": P}, ["a"], [], test_exit_code=0).status == RESOLVED
    assert decide({"a": P}, ["a"], [], test_exit_code=None).status == RESOLVED


def test_excluded_pass_to_pass_tests_are_left_out_of_the_decision_and_named() -> None:
    """Tests a validation found failing here with and without the fix do not decide; the
    decision says which listed ones it left out (an excluded name not listed is ignored)."""
    decision = decide({"a": P, "flaky": F, "c": P}, ["a"], ["flaky", "c"], excluded=["flaky", "unlisted"])
    assert (decision.status, decision.p2p, decision.p2p_excluded) == (RESOLVED, {"c": "PASSED"}, ["flaky"])
    assert decide({"a": P, "flaky": F}, ["a"], ["flaky"]).status == UNRESOLVED
    framed = frame_test_output("PASSED t.py::a\nFAILED t.py::net\n", 1)
    logged = grade_log(framed, "pytest", ["t.py::a"], ["t.py::net"], excluded=["t.py::net"])
    assert (logged.status, logged.p2p_excluded) == (RESOLVED, ["t.py::net"])


def test_blame_puts_a_result_less_run_on_the_patch_only_when_the_control_run_gives_results() -> None:
    broken = decide({}, ["a"], [], test_exit_code=1)
    control_ok = decide({"a": F, "b": P}, ["a"], [], test_exit_code=1)
    on_patch = blame(broken, control_ok)
    assert (on_patch.status, on_patch.resolved) == (UNRESOLVED, False)
    assert (on_patch.error or "").startswith(PATCH_BROKE_RUN) and "give 2 results" in (on_patch.error or "")
    for control in (None, decide({}, ["a"], [], test_exit_code=1)):
        ours = blame(broken, control)
        assert ours.status == INFRA_ERROR and "without the patch either" in (ours.error or "")
    decided = decide({"a": P}, ["a"], [])
    assert blame(decided, None) is decided
    # a regrade cannot repeat the control run: the recorded blame stands, and only it
    kept = keep_blame(broken, on_patch.error)
    assert (kept.status, kept.resolved, kept.error) == (UNRESOLVED, False, on_patch.error)
    assert keep_blame(broken, "the tests give no usable results").status == INFRA_ERROR
    assert keep_blame(decided, on_patch.error) is decided


def test_empty_lists_pass_vacuously_as_in_swebench() -> None:
    assert decide({"a": F}, [], []).status == RESOLVED


def test_grade_log_reads_the_exit_code_from_the_log_unless_given() -> None:
    framed = frame_test_output("PASSED t.py::test_a\n", 4)
    assert grade_log(framed, "pytest", ["t.py::test_a"], []).status == INFRA_ERROR
    assert grade_log(framed, "pytest", ["t.py::test_a"], [], test_exit_code=0).status == RESOLVED


def test_grade_log_fault_markers_and_cut_runs_are_infra_errors() -> None:
    timed_out = frame_test_output("PASSED t.py::test_a\n", 0) + ">>>>> Tests Timed Out\n"
    decision = grade_log(timed_out, "pytest", ["t.py::test_a"], [])
    assert decision.status == INFRA_ERROR and "Timed Out" in (decision.error or "")
    cut = ">>>>> Start Test Output\nPASSED t.py::test_a\n"
    decision = grade_log(cut, "pytest", ["t.py::test_a"], [])
    assert decision.status == INFRA_ERROR and "no end marker" in (decision.error or "")
    assert decision.f2p == {"t.py::test_a": "PASSED"}


# ---------------------------------------------------------------------------------------
# verdict_lines


def _write_jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows))
    return path


def test_verdict_lines(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "django.txt").write_text(DJANGO)
    (logs / "sympy.txt").write_bytes(SYMPY.encode() + b"\xff stray byte\n")
    (tmp_path / "empty.txt").write_text("Traceback (most recent call last):\nSyntaxError: invalid syntax\n")
    rows: list[object] = [
        {
            "instance_id": "django__django-1",
            "repo": "django/django",
            "log_path": "logs/django.txt",
            "FAIL_TO_PASS": json.dumps(["Docstring first line is the name."]),
            "PASS_TO_PASS": ["test_plain (basic.tests.ModelTests)", "test_skip (basic.tests.ModelTests)"],
            "version": "4.0",
        },
        "",
        {
            "instance_id": "sympy__sympy-1",
            "repo": "acme/unknown",
            "log_parser": "parse_log_sympy",
            "log_path": str(logs / "sympy.txt"),
            "FAIL_TO_PASS": ["test_fails"],
            "PASS_TO_PASS": "[]",
            "test_exit_code": 1,
        },
        {
            "instance_id": "x__y-1",
            "repo": "pydata/xarray",
            "log_path": "empty.txt",
            "FAIL_TO_PASS": ["t.py::test_a"],
            "PASS_TO_PASS": [],
            "test_exit_code": 1,
        },
    ]
    out = list(verdict_lines(_write_jsonl(tmp_path / "in.jsonl", rows)))
    assert [(v["instance_id"], v["resolved"], v["status"]) for v in out] == [
        ("django__django-1", True, RESOLVED),
        ("sympy__sympy-1", False, UNRESOLVED),
        ("x__y-1", False, INFRA_ERROR),
    ]
    assert out[0]["tests"]["Docstring first line is the name."] == "PASSED"
    assert out[0]["p2p"] == {"test_plain (basic.tests.ModelTests)": "PASSED", "test_skip (basic.tests.ModelTests)": "SKIPPED"}
    assert out[1]["f2p"] == {"test_fails": "FAILED"}
    assert out[2]["tests"] == {} and out[2]["error"]
    json.dumps(out)  # plain JSON values throughout


GOOD = {"instance_id": "a__b-1", "repo": "pydata/xarray", "log_path": "log.txt", "FAIL_TO_PASS": [], "PASS_TO_PASS": []}


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("{not json", ":1: not valid JSON"),
        ("[1, 2]", ":1: must be a JSON object"),
        ({**GOOD, "instance_id": None}, ":1: field 'instance_id': is missing"),
        ({**GOOD, "instance_id": 7}, ":1: field 'instance_id': must be a non-empty string"),
        ({k: v for k, v in GOOD.items() if k != "repo"}, ":1: field 'repo': is missing"),
        ({**GOOD, "repo": "acme/widgets"}, ":1: field 'repo': no log parser is known"),
        ({**GOOD, "log_parser": "jest"}, ":1: field 'log_parser': unknown log parser"),
        ({k: v for k, v in GOOD.items() if k != "FAIL_TO_PASS"}, ":1: field 'FAIL_TO_PASS': is missing"),
        ({**GOOD, "FAIL_TO_PASS": "not json"}, ":1: field 'FAIL_TO_PASS': is a string but not a JSON list"),
        ({**GOOD, "PASS_TO_PASS": [1]}, ":1: field 'PASS_TO_PASS': must be a list of test names"),
        ({**GOOD, "test_exit_code": "1"}, ":1: field 'test_exit_code': must be an integer or null"),
        ({**GOOD, "test_exit_code": True}, ":1: field 'test_exit_code': must be an integer or null"),
        ({**GOOD, "log_path": "missing.txt"}, ":1: field 'log_path': log file"),
    ],
)
def test_verdict_lines_malformed_line_names_file_line_and_field(tmp_path: Path, line: object, needle: str) -> None:
    (tmp_path / "log.txt").write_text("PASSED t.py::test_a\n")
    source = _write_jsonl(tmp_path / "bad.jsonl", [line])
    with pytest.raises(SweclError) as caught:
        list(verdict_lines(source))
    message = str(caught.value)
    assert message.startswith(str(source)) and needle in message
    assert "\n" not in message


def test_verdict_lines_reports_the_line_number_after_good_lines(tmp_path: Path) -> None:
    (tmp_path / "log.txt").write_text("PASSED t.py::test_a\n")
    source = _write_jsonl(tmp_path / "in.jsonl", [GOOD, "", {**GOOD, "log_path": 3}])
    lines = verdict_lines(source)
    assert next(lines)["status"] == RESOLVED
    with pytest.raises(SweclError, match=r"in\.jsonl:3: field 'log_path'"):
        next(lines)


def test_verdict_lines_missing_input_file_and_bad_bytes(tmp_path: Path) -> None:
    with pytest.raises(SweclError, match="input file does not exist"):
        list(verdict_lines(tmp_path / "nope.jsonl"))
    with pytest.raises(SweclError, match="is a directory"):
        list(verdict_lines(tmp_path))
    source = tmp_path / "latin1.jsonl"
    source.write_bytes(b'\n{"instance_id": "caf\xe9"}\n')
    with pytest.raises(SweclError, match=r"latin1\.jsonl:2: is not UTF-8 text"):
        list(verdict_lines(source))


def test_a_duplicate_id_of_pytest_8_matches_the_older_pytests_spelling() -> None:
    # sphinx-7462's official list (pytest 8.3.2) names the tests as the era's pytest 5.4 does not
    log = {"tests/test_pycode_ast.py::test_unparse[1234-12340]": "PASSED",
           "tests/test_pycode_ast.py::test_unparse[1234-12341]": "FAILED"}
    assert match_test("tests/test_pycode_ast.py::test_unparse[1234-1234_0]", log) == "PASSED"
    assert match_test("tests/test_pycode_ast.py::test_unparse[1234-1234_1]", log) == "FAILED"
    assert match_test("tests/test_pycode_ast.py::test_unparse[1234-1234_2]", log) == MISSING
    # only an id ending in a digit gets the underscore; the exact name always wins
    assert match_test("t.py::test_x[a_0]", {"t.py::test_x[a0]": "PASSED"}) == MISSING
    both = {"t.py::test_y[1_0]": "FAILED", "t.py::test_y[10]": "PASSED"}
    assert match_test("t.py::test_y[1_0]", both) == "FAILED"


def test_an_empty_parameter_id_matches_the_id_pytest_generates_for_it() -> None:
    # astropy 7606's list names `test_compose_roundtrip[]`; its log (the official image's
    # pytest, as ours) writes the generated `[unit0]` for the unit whose str() is empty
    head = "astropy/units/tests/test_units.py::test_compose_roundtrip"
    log = {f"{head}[unit0]": "PASSED", f"{head}[%]": "PASSED", f"{head}[A]": "FAILED"}
    assert match_test(f"{head}[]", log) == "PASSED"
    assert match_test(f"{head}[]", {**log, f"{head}[unit0]": "FAILED"}) == "FAILED"
    # two generated ids that disagree tell nothing; none at all is absence
    assert match_test(f"{head}[]", {**log, f"{head}[unit7]": "FAILED"}) == AMBIGUOUS
    assert match_test(f"{head}[]", {f"{head}[%]": "PASSED"}) == MISSING
    # a real parameter id is never taken for it, nor another test's generated id
    assert match_test(f"{head}[]", {f"{head}[m2]": "PASSED", f"{head}x[unit0]": "PASSED"}) == "PASSED"
    assert match_test(f"{head}[]", {f"{head}x[unit0]": "PASSED", f"{head}[1e3]": "PASSED"}) == MISSING
