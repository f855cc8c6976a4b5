"""`swecl grade`: SWE-bench-style predictions graded and recorded as a run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from commands.inputs import load_benchmark
from commands.inputs.demo import write_demo_curriculum

from .support import swecl, swecl_json

pytestmark = pytest.mark.slow


def test_grade_predictions_with_the_swebench_report_keys(tmp_path: Path, cache: Path) -> None:
    dataset = write_demo_curriculum(tmp_path / "demo.json")
    tasks = {t.instance_id: t for t in load_benchmark(str(dataset)).tasks()}
    gold, wrong, empty = "swecl-demo__spans-8", "swecl-demo__spans-12", "swecl-demo__spans-19"
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text(
        "\n".join(
            json.dumps({"instance_id": iid, "model_name_or_path": "test", "model_patch": patch})
            for iid, patch in (
                (gold, tasks[gold].patch),
                (wrong, tasks[gold].patch),  # a fix for another task: applies or not, never resolves
                (empty, ""),
            )
        )
        + "\n"
    )
    results = tmp_path / "results"
    report = json.loads(swecl(results, "grade", "--dataset", str(dataset), "--predictions", str(predictions), "--json",
                              cache=cache).stdout)
    for key in ("total_instances", "submitted_instances", "completed_instances", "resolved_instances",
                "unresolved_instances", "empty_patch_instances", "error_instances", "resolved_ids",
                "unresolved_ids", "empty_patch_ids", "error_ids", "statuses"):
        assert key in report
    assert report["resolved_ids"] == [gold]
    assert report["empty_patch_ids"] == [empty]
    assert report["statuses"][wrong] in ("unresolved", "patch_failed")
    assert report["submitted_instances"] == 3
    (run,) = swecl_json(results, "runs", cache=cache)
    assert (run["agent"], run["stage"], run["resolved"]) == ("predictions", "base", {"initial": 1})


def test_predictions_naming_unknown_tasks_are_refused(tmp_path: Path, cache: Path) -> None:
    dataset = write_demo_curriculum(tmp_path / "demo.json")
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text(json.dumps({"instance_id": "nobody__x-1", "model_name_or_path": "t", "model_patch": ""}) + "\n")
    proc = swecl(tmp_path / "r", "grade", "--dataset", str(dataset), "--predictions", str(predictions), cache=cache,
                 check=False)
    assert proc.returncode == 2 and "nobody__x-1" in proc.stderr and proc.stderr.count("\n") == 1


def _curriculum(tmp_path: Path, edit) -> Path:  # type: ignore[no-untyped-def]
    """The demo curriculum with `edit(task_document)` applied to each task."""
    dataset = write_demo_curriculum(tmp_path / "demo.json")
    doc = json.loads(dataset.read_text())
    for seq in doc["sequences"]:
        for task in seq["tasks"]:
            edit(task)
    dataset.write_text(json.dumps(doc))
    return dataset


def _gold(tmp_path: Path, dataset: Path, *iids: str) -> Path:
    tasks = {t.instance_id: t for t in load_benchmark(str(dataset)).tasks()}
    predictions = tmp_path / "gold.jsonl"
    predictions.write_text("".join(
        json.dumps({"instance_id": iid, "model_name_or_path": "gold", "model_patch": tasks[iid].patch}) + "\n"
        for iid in iids))
    return predictions


def test_grading_needs_no_problem_statement_and_reports_progress_with_json(tmp_path: Path, cache: Path) -> None:
    """Grading rows rebuilt from public sources carry no issue text: nothing is briefed,
    so nothing is missing. Progress still reaches stderr when stdout is the JSON report."""

    def no_issue(task: dict) -> None:
        task["task"]["problem_statement"] = None

    dataset = _curriculum(tmp_path, no_issue)
    gold = "swecl-demo__spans-8"
    done = swecl(tmp_path / "results", "grade", "--dataset", str(dataset), "--predictions",
                 str(_gold(tmp_path, dataset, gold)), "--json", cache=cache)
    report = json.loads(done.stdout)
    assert report["resolved_ids"] == [gold] and report["reasons"] == {}
    progress = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    finished = [p for p in progress if p["event"] == "task_finished"]  # JSON lines: stderr is a pipe
    assert [p["instance_id"] for p in finished] == [gold] and finished[0]["eta_s"] == 0.0
    # an agent that would be briefed still needs the issue
    refused = swecl(tmp_path / "r2", "run", "--dataset", str(dataset), "--agent", "command", "--command",
                    "true {workdir} {issue_file}", "--stage", "base", cache=cache, check=False)
    assert refused.returncode == 2 and "problem_statement" in refused.stderr


def test_infrastructure_failures_are_said_and_nothing_graded_exits_1(tmp_path: Path, cache: Path) -> None:
    """A base commit the repository does not have is the set-up's failure, not the
    patch's: infra_error (never scored), one line on stderr with the reason, the reason
    in the JSON, and exit 1 when no instance could be graded at all."""
    missing = "0123456789abcdef0123456789abcdef01234567"

    def lost_commit(task: dict) -> None:
        task["metadata"]["base_commit"] = missing

    dataset = _curriculum(tmp_path, lost_commit)
    iid = "swecl-demo__spans-8"
    done = swecl(tmp_path / "results", "grade", "--dataset", str(dataset), "--predictions",
                 str(_gold(tmp_path, write_demo_curriculum(tmp_path / "plain.json"), iid)), "--json",
                 cache=cache, check=False)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["statuses"] == {iid: "infra_error"} and report["error_ids"] == [iid]
    assert missing in report["reasons"][iid] and "checkout" in report["reasons"][iid]
    said = [line for line in done.stderr.splitlines() if line.startswith("swecl: ")]
    assert said[0].startswith(f"swecl: {iid}: infra_error: checkout of ") and missing[:12] in said[0]
    assert said[-1] == "swecl: error: nothing could be graded: all 1 instance(s) ended in errors (see above)"


def test_validate_records_what_this_host_cannot_grade_and_metrics_honour_it(tmp_path: Path, cache: Path) -> None:
    """Gold, no-op and empty patches per task; a task whose gold patch does not resolve is
    not gradeable here, recorded once, and every later metric counts it missing."""
    good, broken = "swecl-demo__spans-8", "swecl-demo__spans-12"
    plain = load_benchmark(str(write_demo_curriculum(tmp_path / "plain.json")))
    gold_of_good = {t.instance_id: t for t in plain.tasks()}[good].patch

    def wrong_gold(task: dict) -> None:
        if task["metadata"]["instance_id"] == broken:
            task["evaluation"]["patch"] = gold_of_good  # a "gold" patch that fixes another task

    dataset = _curriculum(tmp_path, wrong_gold)
    results = tmp_path / "results"
    done = swecl(results, "validate", "--dataset", str(dataset), "--instance", good, "--instance", broken, "--json",
                 cache=cache)
    doc = json.loads(done.stdout)
    rows = {row["instance_id"]: row for row in doc["tasks"]}
    assert rows[good]["gradeable"] and (rows[good]["gold"], rows[good]["noop"], rows[good]["empty"]) == (
        "resolved", "unresolved", "empty_patch")
    assert not rows[broken]["gradeable"] and rows[broken]["gold"] != "resolved"
    assert rows[broken]["reason"].startswith("gold patch ")
    assert doc["runs"] == {k: f"validate-1-{k}" for k in ("gold", "noop", "empty")}
    assert doc["repositories"]["swecl-demo/spans"]["gradeable"] == 1
    assert not (results / ".validate").exists() or not any((results / ".validate").rglob("*.jsonl"))  # answers gone
    # what each pass cost, read from its run's events (projections.grading_cost)
    for kind in ("gold", "noop", "empty"):
        cost = doc["costs"][kind]
        assert (cost["version"], cost["grades"], cost["workers"], cost["finished"]) == (
            f"validate-1-{kind}", 2, 1, True)
        assert cost["by_repo"] == {"swecl-demo/spans": {"grades": 2, **cost["per_grade"]}}
    gold = doc["costs"]["gold"]
    per = gold["per_grade"]
    assert per["tests_s"] > 0 and per["busy_s"] >= per["tests_s"]
    # the named phases are parts of a grade's time (timed apart, so within a few tenths)
    assert per["other_s"] >= 0 and per["env_s"] + per["install_s"] + per["tests_s"] <= per["busy_s"] + 0.5, per
    # one worker grades one task at a time: its wall time holds every grade's busy time
    assert gold["worker_s_per_grade"] >= per["busy_s"] - 0.1 and gold["wall_s"] > 0, gold

    # an agent's run over both tasks: the broken task is missing, with the reason, not a 0
    predictions = _gold(tmp_path, write_demo_curriculum(tmp_path / "again.json"), good, broken)
    graded = json.loads(swecl(results, "grade", "--dataset", str(dataset), "--predictions", str(predictions),
                              "--version", "agent", "--json", cache=cache).stdout)
    assert graded["statuses"] == {good: "resolved", broken: "resolved"}
    (metrics,) = swecl_json(results, "metrics", "--version", "agent", cache=cache)["versions"]
    assert metrics["not_gradeable"] == {broken: rows[broken]["reason"]}
    table = swecl(results, "metrics", "--version", "agent", cache=cache).stdout
    assert f"{broken} counted missing, not gradeable on this host" in table
    # and `swecl run`'s own summary says the same for an agent's run
    ran = swecl(results, "run", "--dataset", str(dataset), "--agent", "oracle", "--stage", "base", "--instance", good,
                "--instance", broken,
                cache=cache).stdout
    assert f"{broken} counted missing, not gradeable on this host" in ran


def test_grade_jobs_grades_tasks_at_once_with_every_event_in_order(tmp_path: Path, cache: Path) -> None:
    """`--jobs 3`: the six spans tasks (three environments) graded by three threads, each
    with its own ledger connection and worktree slot. Every task's events stay in causal
    order, tasks of different environments overlap in time, and the verdicts are those
    of grading one at a time."""
    from .support import events

    dataset = write_demo_curriculum(tmp_path / "demo.json")
    tasks = {t.instance_id: t for t in load_benchmark(str(dataset)).tasks() if t.repo == "swecl-demo/spans"}
    predictions = tmp_path / "preds.jsonl"
    wrong = "swecl-demo__spans-12"
    predictions.write_text("".join(
        json.dumps({"instance_id": iid, "model_name_or_path": "t",
                    "model_patch": tasks["swecl-demo__spans-8"].patch if iid == wrong else t.patch}) + "\n"
        for iid, t in tasks.items()))
    results = tmp_path / "results"
    report = json.loads(swecl(results, "grade", "--dataset", str(dataset), "--predictions", str(predictions),
                              "--jobs", "3", "--json", cache=cache).stdout)
    assert report["resolved_ids"] == sorted(set(tasks) - {wrong}), (report["statuses"], report["reasons"])
    assert report["statuses"][wrong] in ("unresolved", "patch_failed")
    order = ("task.started", "agent.finished", "grade.finished", "task.finished")
    seen: dict[str, list[tuple[int, str]]] = {}
    for seq, _, type_, payload in events(results, *order):
        seen.setdefault(payload["instance_id"], []).append((seq, type_))
    assert set(seen) == set(tasks)
    for iid, steps in seen.items():
        assert [t for _, t in steps] == list(order), (iid, steps)
    spans = sorted((steps[0][0], steps[-1][0]) for steps in seen.values())
    assert any(later[0] < earlier[1] for earlier, later in zip(spans, spans[1:])), "no two tasks overlapped"
    swecl(results, "verify", cache=cache)
    with_one = json.loads(swecl(tmp_path / "one", "grade", "--dataset", str(dataset), "--predictions",
                                str(predictions), "--json", cache=cache).stdout)
    assert with_one["statuses"] == report["statuses"]


def _new_test_file(path: str, source: str) -> str:
    """A test-patch hunk that adds `path` with `source`."""
    lines = source.splitlines()
    return (f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
            f"@@ -0,0 +1,{len(lines)} @@\n" + "".join(f"+{line}\n" for line in lines))


ONLINE = "tests/test_online.py::test_the_index_answers"
REGRESSION = "tests/test_source.py::test_merge_keeps_input_order"


def test_validate_leaves_out_pass_to_pass_tests_this_host_fails_either_way(tmp_path: Path, cache: Path) -> None:
    """SWE-bench's validation keeps a PASS_TO_PASS test only if it passes with and without
    the fix. A listed test that needs the network fails here (the sandbox has none) with
    the gold patch and with the no-op patch: it is left out of this host's grades, the
    task stays gradeable, and later grades name what they left out. A test the gold patch
    fails but the no-op patch passes is not the host's doing: that task is not gradeable."""
    online, regress = "swecl-demo__spans-8", "swecl-demo__spans-12"

    def listed_extra_tests(task: dict) -> None:
        iid, ev = task["metadata"]["instance_id"], task["evaluation"]
        if iid == online:
            ev["test_patch"] += _new_test_file("tests/test_online.py", (
                "import socket\n\n\n"
                "def test_the_index_answers():\n"
                "    socket.create_connection(('pypi.org', 443), timeout=5).close()\n"))
            ev["PASS_TO_PASS"].append(ONLINE)
        elif iid == regress:  # passes on the buggy source only: the gold patch "breaks" it
            ev["test_patch"] += _new_test_file("tests/test_source.py", (
                "from pathlib import Path\n\n\n"
                "def test_merge_keeps_input_order():\n"
                "    assert 'for current in intervals:' in Path('spans/ops.py').read_text()\n"))
            ev["PASS_TO_PASS"].append(REGRESSION)

    dataset = _curriculum(tmp_path, listed_extra_tests)
    results = tmp_path / "results"
    done = swecl(results, "validate", "--dataset", str(dataset), "--instance", online, "--instance", regress,
                 "--json", cache=cache)
    rows = {row["instance_id"]: row for row in json.loads(done.stdout)["tasks"]}
    assert rows[online]["gradeable"] and rows[online]["p2p_excluded"] == [ONLINE]
    assert rows[online]["p2p_excluded_why"][ONLINE].startswith("network: "), rows[online]["p2p_excluded_why"]
    assert rows[online]["gold"] == "resolved"  # the gold run's grade, re-decided without it
    assert not rows[regress]["gradeable"] and rows[regress]["p2p_excluded"] == []
    assert rows[regress]["reason"].startswith("gold patch unresolved")

    # an agent's later grade leaves the test out, and says so on the grade
    from .support import events

    predictions = _gold(tmp_path, write_demo_curriculum(tmp_path / "plain.json"), online)
    graded = json.loads(swecl(results, "grade", "--dataset", str(dataset), "--predictions", str(predictions),
                              "--version", "agent", "--json", cache=cache).stdout)
    assert graded["statuses"] == {online: "resolved"}
    (grade,) = [p for _, stream, _, p in events(results, "grade.finished") if stream.startswith("run/agent/")]
    assert grade["p2p_excluded"] == [ONLINE] and ONLINE not in grade["p2p"]
    assert grade["tests"][ONLINE] == "FAILED"  # it still ran; it just does not decide

    # a grade made before the validation agrees once regraded
    early = tmp_path / "early"
    before = json.loads(swecl(early, "grade", "--dataset", str(dataset), "--predictions", str(predictions),
                              "--version", "before", "--json", cache=cache).stdout)
    assert before["statuses"] == {online: "unresolved"}
    validated = swecl(early, "validate", "--dataset", str(dataset), "--instance", online, cache=cache)
    said = validated.stderr
    # a named run's progress lines show its name as it is (once "vvalidate-1-gold")
    assert re.search(r"^validate-\d+-gold \S+ initial 1/1: ", said, re.M) and "vvalidate" not in said, said
    # and each pass's time: worker-seconds a task, then where a grade spent them
    assert re.search(r"^gold pass: 1 grade\(s\) in \d+\.\d min on 1 worker\(s\), \d+\.\d worker-s a task "
                     r"\(a grade: environment build \d+\.\d s, install \d+\.\d, test command \d+\.\d, "
                     r"the rest \d+\.\d\)$", validated.stdout, re.M), validated.stdout
    regraded = swecl(early, "regrade", "before", cache=cache).stdout
    assert f"{online}  initial: unresolved -> resolved" in regraded
    (run,) = [r for r in swecl_json(early, "runs", cache=cache) if r["version"] == "before"]
    assert run["resolved"] == {"initial": 1}


def test_validate_names_a_missing_system_package_as_the_reason(tmp_path: Path, cache: Path) -> None:
    """A task whose set-up installs a Debian package this host lacks, and whose gold patch
    does not resolve here: not gradeable, and the reason names the package first."""
    import shutil

    if shutil.which("dpkg-query") is None:
        pytest.skip("not a Debian-based host")
    good, broken = "swecl-demo__spans-8", "swecl-demo__spans-12"
    gold_of_good = {t.instance_id: t for t in load_benchmark(str(write_demo_curriculum(tmp_path / "p.json"))).tasks()}[
        good].patch

    def needs_a_package(task: dict) -> None:
        if task["metadata"]["instance_id"] == broken:
            task["evaluation"]["patch"] = gold_of_good
            task["environment"] = {**(task.get("environment") or {}), "python": None, "pip_packages": ["pytest"],
                                   "test_cmd": "python -m pytest -rA -p no:cacheprovider", "log_parser": "pytest",
                                   "pre_install": ["apt-get update && apt-get install -y swecl-no-such-package"]}

    dataset = _curriculum(tmp_path, needs_a_package)
    done = swecl(tmp_path / "results", "validate", "--dataset", str(dataset), "--instance", broken, "--json",
                 cache=cache)
    (row,) = json.loads(done.stdout)["tasks"]
    assert not row["gradeable"]
    assert row["reason"].startswith("missing system package(s) swecl-no-such-package (the set-up installs them")
    assert "gold patch " in row["reason"]  # what the grade said, kept after it
