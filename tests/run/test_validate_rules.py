"""The validation's rules on recorded verdicts: which listed tests are the host's doing,
and what a task that is not gradeable is told (no grading here; `test_grade_command`
runs them end to end)."""

from __future__ import annotations

from commands._validate import failing_either_way, judge, setup_not_run, why_left_out
from commands.inputs import Task
from ledger.events import GradeFinished

F2P, NET, OTHER = "t.py::test_fix", "t.py::test_fetch", "t.py::test_other"


def _verdict(status: str, f2p: str, net: str, other: str = "PASSED") -> GradeFinished:
    return GradeFinished(sequence_id="s", instance_id="i", order=1, pass_="initial", grader="swebench", status=status,
                         resolved=status == "resolved", f2p={F2P: f2p}, p2p={NET: net, OTHER: other})


def test_a_listed_test_failing_with_and_without_the_fix_is_the_hosts() -> None:
    gold, noop = _verdict("unresolved", "PASSED", "FAILED"), _verdict("unresolved", "FAILED", "FAILED")
    assert failing_either_way(gold, noop) == [NET]
    assert failing_either_way(gold, _verdict("unresolved", "FAILED", "MISSING")) == [NET]


def test_nothing_is_left_out_when_the_fix_itself_fails_or_breaks_a_passing_test() -> None:
    noop = _verdict("unresolved", "FAILED", "FAILED")
    assert failing_either_way(_verdict("unresolved", "FAILED", "FAILED"), noop) == []  # FAIL_TO_PASS fails
    assert failing_either_way(_verdict("unresolved", "PASSED", "FAILED", "FAILED"),
                              _verdict("unresolved", "FAILED", "FAILED", "PASSED")) == []  # gold breaks OTHER
    assert failing_either_way(_verdict("resolved", "PASSED", "PASSED"), noop) == []  # nothing to leave out
    assert failing_either_way(_verdict("unresolved", "PASSED", "FAILED"), None) == []  # no no-op verdict
    assert failing_either_way(_verdict("unresolved", "PASSED", "FAILED"),
                              _verdict("infra_error", "FAILED", "FAILED")) == []


def test_a_no_op_patch_that_passes_the_new_tests_makes_a_task_not_gradeable() -> None:
    assert judge(("resolved", None), ("unresolved", None)) == (True, None)
    ok, why = judge(("resolved", None), ("unresolved", None), noop_passes_f2p=True)
    assert not ok and why is not None and "FAIL_TO_PASS" in why
    ok, why = judge(("patch_failed", "does not apply"), ("unresolved", None))
    assert not ok and why == "gold patch patch_failed: does not apply"


def test_set_up_the_host_does_not_run_is_named() -> None:
    """sphinx 7.x installs graphviz with apt-get; its inheritance-diagram tests skip without it."""
    task = Task(instance_id="sphinx-doc__sphinx-10614", repo="sphinx-doc/sphinx", base_commit="0" * 40, order=1,
                difficulty=1, version="7.2")
    assert setup_not_run(task) == ["apt-get update && apt-get install -y graphviz"]
    assert setup_not_run(Task(instance_id="x", repo="nobody/none", base_commit="0" * 40, order=1, difficulty=1)) == []


def test_only_listed_tests_are_left_out_and_the_rest_decide_in_order() -> None:
    from graders import leave_out

    assert leave_out([F2P, NET, OTHER], [NET, "t.py::not_listed", NET]) == ([F2P, OTHER], [NET])
    assert leave_out([OTHER], []) == ([OTHER], [])


def test_a_task_whose_python_this_host_lacks_is_not_gradeable_and_says_why() -> None:
    """django 2.2's spec wants Python 3.5, which uv cannot provide: its grades are
    env_failed with the interpreter's message, so validation records the task as not
    gradeable here (the metrics then show it missing, never as an agent's 0)."""
    import pytest

    from graders import PythonNotFound, find_python

    try:
        find_python("3.4")
    except PythonNotFound as exc:
        message = str(exc)
    else:
        pytest.skip("this host has a Python 3.4")
    ok, why = judge(("env_failed", message), ("env_failed", message))
    assert not ok and why is not None
    assert why.startswith("gold patch env_failed: Python 3.4 not found") and "uv provides no Python before 3.6" in why


def test_why_a_test_is_left_out_in_the_logs_own_words() -> None:
    """The network, a system package, a naming difference, or just that it fails here."""
    dot, other, gone = "t.py::test_graph", "t.py::test_other", "t.py::test_compose[]"
    gold = GradeFinished(sequence_id="s", instance_id="i", order=1, pass_="initial", grader="swebench",
                         status="unresolved", resolved=False,
                         p2p={NET: "FAILED", dot: "FAILED", other: "FAILED", gone: "MISSING"},
                         tests={NET: "FAILED", dot: "FAILED", other: "FAILED"})
    log = (f"FAILED {NET} - socket.gaierror: [Errno -3] Temporary failure in name resolution\n"
           f"FAILED {dot} - graphviz.backend.execute.ExecutableNotFound: failed to execute 'dot'\n"
           f"FAILED {other} - AssertionError: 3 != 4\n")
    why = why_left_out([NET, dot, other, gone], gold, log)
    assert why[NET] == "network: socket.gaierror: [Errno -3] Temporary failure in name resolution"
    assert why[dot].startswith("system package: graphviz")
    assert why[other] == "fails here: AssertionError: 3 != 4"
    assert why[gone].startswith("naming: the log holds no test of this name")


def test_how_a_passs_installs_went_and_why_each_ran(tmp_path) -> None:  # noqa: ANN001
    """From the grades' own log lines: ran (and why: a record that did not fit, or none
    yet), put back from a record, or kept from the task before."""
    from commands._validate import installs_of
    from ledger import Ledger

    logs = {
        "a": "[swecl] install: ran (ok)\n[swecl] install recorded (2 venv file(s)) as k1\n",
        "b": "[swecl] install: ran (ok)\n[swecl] the install's record does not fit: the venv, back at its build, "
             "differs from when it was made (+lib/x.py)\n",
        "c": "[swecl] install: restored (ok)\n",
        "d": "[swecl] install: reused (ok)\n",
        "e": "no install line: a spec without one\n",
    }
    with Ledger.open(tmp_path / "ledger.db", create=True) as ledger:
        for order, (iid, log) in enumerate(logs.items(), 1):
            ledger.append("run/v-gold/seq", [GradeFinished(
                sequence_id="seq", instance_id=iid, order=order, pass_="initial", grader="swebench",
                status="resolved", resolved=True, log=ledger.put_blob(log))])
        went = installs_of(ledger, "v-gold")
    assert went["counts"] == {"ran": 2, "restored": 1, "reused": 1}
    assert went["why_ran"] == {"a": "no record of it yet", "b": "the install's record does not fit: the venv, back "
                               "at its build, differs from when it was made (+lib/x.py)"}
