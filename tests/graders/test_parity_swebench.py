"""Parity with the installed official `swebench` package (5.0.2, the `test` extra).

swebench's own log parsers, `get_eval_tests_report` / `get_resolution_status` and
`get_logs_eval` (with a TestSpec built here, no network, no Docker) run on the same logs
as ours: every official log, hand-written logs of every family, and generated status maps.
They must agree on every per-test status and every verdict, except for the differences
`graders/_parsers.py` documents, which are shown here as such.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip(
    "swebench.harness.grading",
    reason="SKIPPED LOUDLY: swebench==5.0.2 (the `test` extra) is not installed; run through ./dev pytest",
)

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from swebench.harness.constants import ResolvedStatus  # noqa: E402
from swebench.harness.grading import get_eval_tests_report, get_logs_eval, get_resolution_status  # noqa: E402
from swebench.harness.log_parsers import PARSER_REGISTRY  # noqa: E402
from swebench.harness.log_parsers.python import MAP_REPO_TO_PARSER_PY  # noqa: E402
from swebench.types import TestSpec as SwebenchTestSpec  # noqa: E402  (renamed: not a test class)

from graders._decide import INFRA_ERROR, Decision, decide, grade_log  # noqa: E402
from graders._parsers import (  # noqa: E402
    TestStatus,
    canonical_parser,
    find_test_output,
    frame_test_output,
    log_conflicts,
    parse_log,
    parser_for_repo,
)
from ledger.errors import SweclError  # noqa: E402
from tests.graders.test_official_logs import EXPECTED_RESOLVED_DISAGREEMENTS, OfficialLog, load_official_logs  # noqa: E402
from tests.graders.test_parsers import DJANGO, PYTEST_RA, SYMPY  # noqa: E402

V2_LOG = (
    "a/t.py::test_verbose PASSED\n"
    "PASSED a/t.py::test_param[a b]\n"
    "FAILED a/t.py::test_two - AssertionError: a - b\n"
    "SKIPPED [2] a/t.py:7: no scipy\n"
    "XFAIL a/t.py::test_xfail_reason - not yet\n"
    "\x1b[31mFAILED\x1b[0m a/t.py::\x1b[1mtest_colour\x1b[0m - x\n"
    "ERROR a/t.py::test_setup - RuntimeError\n"
)
OPTIONS_LOG = (
    "PASSED t.py::test_file[/tmp/pytest-1/data/file.dcm]\n"
    "FAILED t.py::test_same[/one/dir/f.py] - x\n"
    "PASSED t.py::test_same[/other/dir/f.py]\n"
    "PASSED t.py::test_url[//host/share]\n"
)
MPL_LOG = "PASSED lib/t.py::test_span[MouseButton.LEFT-MouseButton.RIGHT]\nFAILED lib/t.py::test_x[a - b] - boom\n"
VOCABULARY = {status.value for status in TestStatus}
CL_REPOS = (
    "django/django",
    "sympy/sympy",
    "sphinx-doc/sphinx",
    "matplotlib/matplotlib",
    "scikit-learn/scikit-learn",
    "astropy/astropy",
    "pydata/xarray",
    "pytest-dev/pytest",
)


def swebench_parser(repo_or_parser: str):  # noqa: ANN201 - swebench's callables are untyped
    if "/" in repo_or_parser:
        return MAP_REPO_TO_PARSER_PY[repo_or_parser]
    return PARSER_REGISTRY["parse_log_" + repo_or_parser]


def swebench_parse(text: str, repo_or_parser: str) -> dict[str, str]:
    return swebench_parser(repo_or_parser)(text, None)


def swebench_report(statuses: dict[str, str], f2p: list[str], p2p: list[str]) -> tuple[dict, bool]:
    report = get_eval_tests_report(statuses, {"FAIL_TO_PASS": f2p, "PASS_TO_PASS": p2p})
    return report, get_resolution_status(report) == ResolvedStatus.FULL.value


def our_lists(decision: Decision) -> dict[str, dict[str, list[str]]]:
    return {
        "FAIL_TO_PASS": {"success": decision.f2p_success, "failure": decision.f2p_failure},
        "PASS_TO_PASS": {"success": decision.p2p_success, "failure": decision.p2p_failure},
    }


def their_lists(report: dict) -> dict[str, dict[str, list[str]]]:
    return {kind: report[kind] for kind in ("FAIL_TO_PASS", "PASS_TO_PASS")}


@pytest.fixture(scope="module")
def everything(shared: Path) -> list[OfficialLog]:
    return load_official_logs(shared, applied_only=False)


@pytest.fixture(scope="module")
def parses(everything: list[OfficialLog]) -> dict[str, tuple[dict[str, str], dict[str, TestStatus]]]:
    """Each official log read whole by swebench's parser and by ours, parsed once for all tests."""
    return {
        entry.dir: (swebench_parse(entry.log, entry.repo), parse_log(entry.log, parser_for_repo(entry.repo)))
        for entry in everything
    }


def test_repo_to_parser_mapping_is_swebench_s() -> None:
    for repo in CL_REPOS:
        assert swebench_parser(repo) is swebench_parser(parser_for_repo(repo)), repo
    for repo, theirs in MAP_REPO_TO_PARSER_PY.items():
        if repo != "mwaskom/seaborn":  # the one Python family not implemented here
            assert theirs is swebench_parser(parser_for_repo(repo)), repo
    for name in PARSER_REGISTRY:
        short = name.removeprefix("parse_log_")
        try:
            ours = canonical_parser(name)
        except SweclError:
            continue  # a family not implemented here (other languages, seaborn)
        assert PARSER_REGISTRY[name] is swebench_parser(ours), short


def test_parsers_agree_on_every_official_log(everything: list[OfficialLog], parses: dict) -> None:
    """Same keys, same statuses, same order (truncated ids resolve to the first match)."""
    assert len(everything) == 463
    for entry in everything:
        theirs, ours = parses[entry.dir]
        # no status outside the vocabulary occurs in these logs, so nothing is filtered
        assert set(theirs.values()) <= VOCABULARY, entry.dir
        assert list(ours.items()) == list(theirs.items()), entry.dir
        # and the test-run region alone holds the same results as the whole eval log
        region = find_test_output(entry.log, test_cmd=entry.test_cmd)
        assert parse_log(region.text, parser_for_repo(entry.repo)) == ours, entry.dir


def test_reports_and_verdicts_agree_on_every_official_log(everything: list[OfficialLog], parses: dict) -> None:
    """Equal on every log but those tests/graders/test_official_logs.py names, where a rule
    of ours grades a listed test swebench cannot find (and there, only on that test)."""
    applied = [entry for entry in everything if entry.report["patch_successfully_applied"]]
    assert len(applied) == 440
    for entry in applied:
        f2p, p2p = entry.names("FAIL_TO_PASS"), entry.names("PASS_TO_PASS")
        theirs, ours_parsed = parses[entry.dir]
        report, resolved = swebench_report(theirs, f2p, p2p)
        ours = decide(ours_parsed, f2p, p2p)
        if entry.dir in EXPECTED_RESOLVED_DISAGREEMENTS:
            assert (ours.resolved, resolved) == (True, False), entry.dir
            mine, swebench = our_lists(ours), their_lists(report)
            assert mine != swebench and mine["FAIL_TO_PASS"] == swebench["FAIL_TO_PASS"], entry.dir
            continue
        assert ours.resolved == resolved, entry.dir
        assert our_lists(ours) == their_lists(report), entry.dir


def test_get_logs_eval_agrees_on_framed_logs(everything: list[OfficialLog], parses: dict, tmp_path: Path) -> None:
    """swebench's whole log-to-verdict path, exit-code check included, on swecl-framed logs.

    Each official run is framed the way swecl stores its logs (swebench's markers and exit
    code line), with an exit code cycling through unknown, 0, 1 and 2, and given to
    swebench's `get_logs_eval` with a TestSpec for the instance: "not found" there must be
    our infra_error, and otherwise statuses, lists and verdict must be equal.
    """
    applied = [entry for entry in everything if entry.report["patch_successfully_applied"]]
    outcomes = {"found": 0, "infra_error": 0}
    for number, entry in enumerate(applied):
        exit_code = (None, 0, 1, 2)[number % 4]
        region = find_test_output(entry.log, test_cmd=entry.test_cmd)
        framed = frame_test_output(region.text, exit_code)
        path = tmp_path / "test_output.txt"
        path.write_text(framed, encoding="utf-8")
        f2p, p2p = entry.names("FAIL_TO_PASS"), entry.names("PASS_TO_PASS")
        spec = SwebenchTestSpec(
            instance_id=entry.instance_id,
            image="",
            eval_script_list=[],
            repo=entry.repo,
            version="",
            FAIL_TO_PASS=f2p,
            PASS_TO_PASS=p2p,
            log_parser=swebench_parser(entry.repo).__name__,
            eval_type="pass_and_fail",
        )
        statuses, found = get_logs_eval(spec, str(path))
        ours = grade_log(framed, parser_for_repo(entry.repo), f2p, p2p)
        if not found:
            assert ours.status == INFRA_ERROR and not ours.resolved, (entry.dir, exit_code)
            outcomes["infra_error"] += 1
            continue
        outcomes["found"] += 1
        assert ours.status != INFRA_ERROR, (entry.dir, exit_code, ours.error)
        assert ours.tests == statuses, entry.dir
        report, resolved = swebench_report(statuses, f2p, p2p)
        assert (ours.resolved, our_lists(ours)) == (resolved, their_lists(report)), entry.dir
    # both branches are exercised: no-result logs and runs that exit non-zero while passing
    assert outcomes["infra_error"] > len([e for e in applied if not parses[e.dir][1]]), outcomes


def test_hand_written_logs_agree_apart_from_the_documented_differences() -> None:
    assert parse_log(DJANGO, "django") == swebench_parse(DJANGO, "django")
    assert parse_log(SYMPY, "sympy") == swebench_parse(SYMPY, "sympy")
    for parser, log in (("pytest_v2", V2_LOG), ("pytest_options", OPTIONS_LOG), ("matplotlib", MPL_LOG)):
        theirs = swebench_parse(log, parser)
        # a name reported both failing and passing fails here; swebench keeps the last line
        theirs.update({name: failing for name, (_, failing) in log_conflicts(log, parser).items()})
        assert list(parse_log(log, parser).items()) == list(theirs.items()), parser
    assert log_conflicts(OPTIONS_LOG, "pytest_options") == {"t.py::test_same[/f.py]": ("PASSED", "FAILED")}
    theirs = swebench_parse(PYTEST_RA, "pytest")
    # swebench stores `ERROR: not found: x` as test "not" with status "ERROR:"; we drop
    # tokens outside the vocabulary
    assert theirs.pop("not") == "ERROR:"
    assert parse_log(PYTEST_RA, "pytest") == theirs
    # a multi-parameter colour code survives swebench's clean-up as text, so that line is
    # lost there; we strip complete colour sequences
    coloured = "\x1b[1;31mFAILED\x1b[0m tests/t.py::test_a - boom\n\x1b[32mPASSED\x1b[0m tests/t.py::test_b\n"
    assert swebench_parse(coloured, "pytest_v2") == {"tests/t.py::test_b": "PASSED"}
    assert parse_log(coloured, "pytest_v2") == {"tests/t.py::test_a": "FAILED", "tests/t.py::test_b": "PASSED"}


# Names drawn from a small pool so that exact hits, truncated prefixes (some ambiguous)
# and absent tests all occur.
_IDS = [
    "t.py::test_a",
    "t.py::test_p[x-1]",
    "t.py::test_p[x-2]",
    "t.py::test_p[y-1]",
    "t.py::test_q[log(photon / s)]",
    "test_plain (app.tests.T)",
]
_LISTED = _IDS + ["t.py::test_p[x", "t.py::test_p[", "t.py::test_q[log(photon", "t.py::test_gone", "t.py::test_p"]
_STATUS = st.sampled_from(sorted(VOCABULARY))


@settings(max_examples=300, deadline=None)
@given(
    statuses=st.dictionaries(st.sampled_from(_IDS), _STATUS, min_size=1),
    f2p=st.lists(st.sampled_from(_LISTED), max_size=4, unique=True),
    p2p=st.lists(st.sampled_from(_LISTED), max_size=4, unique=True),
)
def test_decide_matches_swebench_report_on_generated_maps(
    statuses: dict[str, str], f2p: list[str], p2p: list[str]
) -> None:
    report, resolved = swebench_report(statuses, f2p, p2p)
    ours = decide(statuses, f2p, p2p)
    assert ours.resolved == resolved
    assert our_lists(ours) == their_lists(report)
