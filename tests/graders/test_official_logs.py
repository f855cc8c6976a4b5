"""Our verdicts on the 463 real official SWE-bench logs in ../shared/data/swebench-logs.

Every INDEX entry whose patch applied (440) is graded from its `test_output.txt` alone, with
FAIL_TO_PASS / PASS_TO_PASS taken from its report.json (success and failure lists together
name the tests), and must reach report.json's `resolved` and its per-test success and
failure lists exactly. Differences are allowed only when named below with their reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from graders._decide import AMBIGUOUS, INFRA_ERROR, MISSING, RESOLVED, UNRESOLVED, Decision, grade_log
from graders._parsers import find_test_output, parse_test_log, parser_for_repo

# Logs where our `resolved` differs from the official report, with the reason; the test
# checks the set is exactly this. (The official swebench 5.0.2 parsers, run on these logs,
# reach 440 of 440: the one difference is a rule of ours, not of parsing.)
EXPECTED_RESOLVED_DISAGREEMENTS: dict[str, str] = {
    # Its PASS_TO_PASS list names `test_compose_roundtrip[]`, which its own log (and ours)
    # writes `test_compose_roundtrip[unit0]`: the official harness failed the test, so the
    # task, for every patch, the gold included, over the spelling. swecl grades the test
    # (graders/_decide.py, the empty parameter id): it passed, as every other listed test.
    "astropy__astropy-7606__20240620_sweagent_claude3.5sonnet": "test_compose_roundtrip[] is the log's [unit0]",
}

# Logs that state no test result: we say `infra_error` where the 2024 report says
# unresolved (it had no error category and listed every test as failed; swebench 5.0.2's
# own grading also calls such logs an error: no results, not a failed patch). `resolved`
# agrees (false). The value is the line of the log that shows why nothing ran; the test
# checks it is there. Most are patches that break the import of the package under test.
EXPECTED_NO_RESULT_LOGS: dict[str, str] = {
    "django__django-11333__20240620_sweagent_claude3.5sonnet": "ImportError: cannot import name 'cached_get_resolver'",
    "django__django-11815__20240620_sweagent_claude3.5sonnet": "NameError: name 'cached_property' is not defined",
    "django__django-12304__20240620_sweagent_claude3.5sonnet": "TypeError: Cannot extend enumerations",
    "django__django-12713__20240620_sweagent_claude3.5sonnet": "IndentationError: unexpected indent",
    "django__django-13112__20240620_sweagent_claude3.5sonnet": "SyntaxError: invalid syntax",
    "django__django-13401__20240620_sweagent_claude3.5sonnet": "ImportError: cannot import name 'set_script_prefix'",
    "django__django-13794__20240620_sweagent_claude3.5sonnet": "IndentationError: unexpected indent",
    "django__django-14539__20240620_sweagent_claude3.5sonnet": "ImportError: cannot import name 'html_safe'",
    "matplotlib__matplotlib-23299__20240620_sweagent_claude3.5sonnet": "partially initialized module 'matplotlib'",
    # 2024 harness: tox ran pytest without -rA, so a passing run names no test at all
    "sphinx-doc__sphinx-7889__20240620_sweagent_claude3.5sonnet": "congratulations :)",
    "sphinx-doc__sphinx-9711__20240620_sweagent_claude3.5sonnet": "congratulations :)",
    # sympy's bin/test crashed in its own reporter before printing any result
    "sympy__sympy-12489__20240620_sweagent_claude3.5sonnet": "'PyTestReporter' object has no attribute '_active_file'",
    "sympy__sympy-24661__20240620_sweagent_claude3.5sonnet": "ImportError: cannot import name 'split_symbols'",
    "django__django-13810__composio_langgraph_agent": "BadMigrationError: Migration test_graph in app tests has no Migration class",
    "sympy__sympy-20801__composio_langgraph_agent_1725635187N": "NotImplementedError: left_open and right_open",
    "sympy__sympy-20801__composio_langgraph_agent_1725642671N": "'BooleanTrue' object has no attribute 'is_true'",
    "django__django-11999__composio_langgraph_agent_1725824120N": "SyntaxError: invalid syntax",
    "django__django-13568__composio_langgraph_agent_1725824120N": "SyntaxError: invalid syntax",
    "django__django-13925__composio_langgraph_agent_1725824120N": "SyntaxError: invalid syntax",
    "django__django-14534__composio_langgraph_agent_1725824120N": "can't apply @html_safe to BoundWidget",
    "pytest-dev__pytest-5787__composio_langgraph_agent_1725824120N": "no tests ran",
    "sympy__sympy-13551__composio_langgraph_agent_1725892143N": "ImportError: cannot import name 'qp'",
    "django__django-16493__composio_langgraph_agent_1725981199N": "'FileField' object has no attribute '_primary_key_set_explicitly'",
    "django__django-12273__composio_langgraph_agent_1726076078N": "SyntaxError: invalid syntax",
    "django__django-12308__composio_langgraph_agent_1726076078N": "No module named 'psycopg2'",
    "django__django-15280__composio_langgraph_agent_1726076078N": "SyntaxError: invalid syntax",
    "pytest-dev__pytest-7982__composio_langgraph_agent_1726076078N": "ImportError: cannot import name 'absolutepath'",
    "django__django-16493__composio_langgraph_agent_3735": 'OperationalError: near "None": syntax error',
}


@dataclass(frozen=True)
class OfficialLog:
    dir: str
    instance_id: str
    repo: str
    test_cmd: str
    log: str
    report: dict[str, Any]

    @property
    def lists(self) -> dict[str, dict[str, list[str]]]:
        status = self.report["tests_status"]
        return {kind: status[kind] for kind in ("FAIL_TO_PASS", "PASS_TO_PASS")}

    def names(self, kind: str) -> list[str]:
        return self.lists[kind]["success"] + self.lists[kind]["failure"]

    def grade(self) -> Decision:
        return grade_log(
            self.log,
            parser_for_repo(self.repo),
            self.names("FAIL_TO_PASS"),
            self.names("PASS_TO_PASS"),
            test_cmd=self.test_cmd,
        )


def load_official_logs(shared: Path, *, applied_only: bool = True) -> list[OfficialLog]:
    root = shared / "data" / "swebench-logs"
    logs = []
    for entry in json.loads((root / "INDEX.json").read_text()):
        if applied_only and not entry["patch_successfully_applied"]:
            continue
        folder = root / entry["dir"]
        report = json.loads((folder / "report.json").read_text())[entry["instance_id"]]
        logs.append(
            OfficialLog(
                dir=entry["dir"],
                instance_id=entry["instance_id"],
                repo=entry["repo"],
                test_cmd=entry["test_cmd"],
                log=(folder / "test_output.txt").read_text(encoding="utf-8", errors="replace"),
                report=report,
            )
        )
    return logs


@pytest.fixture(scope="module")
def official(shared: Path) -> list[OfficialLog]:
    return load_official_logs(shared)


@pytest.fixture(scope="module")
def decisions(official: list[OfficialLog]) -> dict[str, Decision]:
    return {entry.dir: entry.grade() for entry in official}


def test_the_sample_is_the_one_described(official: list[OfficialLog]) -> None:
    assert len(official) == 440
    assert all(entry.report["patch_successfully_applied"] for entry in official)
    assert sum(entry.report["resolved"] for entry in official) == 164


def test_resolved_matches_the_official_report(official: list[OfficialLog], decisions: dict[str, Decision]) -> None:
    disagreements = {
        entry.dir: (entry.report["resolved"], decisions[entry.dir].status)
        for entry in official
        if decisions[entry.dir].resolved != entry.report["resolved"]
    }
    assert disagreements.keys() == EXPECTED_RESOLVED_DISAGREEMENTS.keys(), disagreements
    assert all(ours == RESOLVED for _, ours in disagreements.values())  # each is a test we could grade
    agreeing = len(official) - len(disagreements)
    assert agreeing == 440 - len(EXPECTED_RESOLVED_DISAGREEMENTS)


def test_per_test_success_and_failure_lists_match(official: list[OfficialLog], decisions: dict[str, Decision]) -> None:
    mismatches = []
    for entry in official:
        if entry.dir in EXPECTED_RESOLVED_DISAGREEMENTS:
            continue
        decision = decisions[entry.dir]
        ours = {
            "FAIL_TO_PASS": {"success": decision.f2p_success, "failure": decision.f2p_failure},
            "PASS_TO_PASS": {"success": decision.p2p_success, "failure": decision.p2p_failure},
        }
        for kind, outcomes in entry.lists.items():
            for outcome, names in outcomes.items():
                if sorted(names) != sorted(ours[kind][outcome]):
                    mismatches.append((entry.dir, kind, outcome))
    assert mismatches == []


def test_logs_without_results_are_infra_errors_with_their_cause(
    official: list[OfficialLog], decisions: dict[str, Decision]
) -> None:
    by_dir = {entry.dir: entry for entry in official}
    infra = {name for name, decision in decisions.items() if decision.status == INFRA_ERROR}
    assert infra == EXPECTED_NO_RESULT_LOGS.keys()
    for name, evidence in EXPECTED_NO_RESULT_LOGS.items():
        entry = by_dir[name]
        assert decisions[name].tests == {}
        assert not entry.report["resolved"]
        assert evidence in find_test_output(entry.log, test_cmd=entry.test_cmd).text, name
    statuses = {decision.status for name, decision in decisions.items() if name not in infra}
    assert statuses == {RESOLVED, UNRESOLVED}


def test_the_test_run_is_found_in_every_official_log(shared: Path) -> None:
    """All 463 (applied or not) are unframed eval logs: the trace of the test command locates the run."""
    everything = load_official_logs(shared, applied_only=False)
    assert len(everything) == 463
    for entry in everything:
        parsed = parse_test_log(entry.log, parser_for_repo(entry.repo), test_cmd=entry.test_cmd)
        assert parsed.region.framing == "xtrace", entry.dir
        # results come from the run itself, never from the git output around it
        assert not (parsed.statuses and parsed.whole_log_fallback), entry.dir
        assert not parsed.region.text.startswith("+ git"), entry.dir


def test_truncated_listed_ids_resolve_by_prefix_in_real_logs(decisions: dict[str, Decision]) -> None:
    """SWE-bench lists cut some parametrized ids; without prefix matching this run is unresolved."""
    decision = decisions["scikit-learn__scikit-learn-14710__20240620_sweagent_claude3.5sonnet"]
    truncated = [name for name in (*decision.f2p, *decision.p2p) if name not in decision.tests]
    assert len(truncated) >= 3 and all(name.count("[") > name.count("]") for name in truncated)
    assert decision.resolved
    matched_by_prefix = {
        name
        for name, graded in decisions.items()
        for listed, status in (*graded.f2p.items(), *graded.p2p.items())
        if listed not in graded.tests and status not in (MISSING, AMBIGUOUS)
    }
    assert len(matched_by_prefix) == 13  # 12 truncated ids and astropy 7606's empty parameter id
