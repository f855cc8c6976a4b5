"""`swecl show VERSION TASK`: why a task of a real demo run failed, through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from projections.show import final_message
from tests.run.support import events, swecl, swecl_json

from .conftest import unresolved

# `demo` (one plugin-blank run of the textkit sequence) and `unresolved` are in conftest.py:
# `swecl view`'s tests read the same run.


def _one_line_error(proc) -> None:  # type: ignore[no-untyped-def]
    assert proc.returncode != 0
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.slow
def test_show_names_the_failing_tests_and_prints_the_patch(demo: Path, cache: Path) -> None:
    grade = unresolved(demo)
    failing = sorted(name for name, result in grade["f2p"].items() if result != "PASSED")
    assert failing
    (agent,) = [p for _, _, _, p in events(demo, "agent.finished")
                if p["instance_id"] == grade["instance_id"] and p["pass"] == "initial"]
    # --tail 5: the log is cut whatever its length, so the hint to the whole log shows
    out = swecl(demo, "show", "v1", grade["instance_id"], "--tail", "5", cache=cache).stdout
    assert grade["instance_id"] in out and "NOT RESOLVED: status unresolved" in out
    # the failing tests, each named, before any passing one
    lines = out.split("== outcome", 1)[1].split("== recalled memory", 1)[0].splitlines()
    fail_rows = [i for i, line in enumerate(lines) if line.lstrip().startswith("FAIL ")]
    ok_rows = [i for i, line in enumerate(lines) if line.lstrip().startswith("ok ")]
    assert sorted(lines[i].split()[-1] for i in fail_rows) == failing
    assert not ok_rows or max(fail_rows) < min(ok_rows)
    # the full patch text, not a hash prefix; the log's tail with the way to all of it
    shown = swecl_json(demo, "show", "1", grade["instance_id"], cache=cache)
    patch = shown["patch"]
    assert patch and patch.startswith("diff --git") and shown["patch_blob"] == agent["patch"]
    assert patch.rstrip("\n") in out
    assert "--files DIR" in out and shown["log"].splitlines()[-1] in out
    # what the sandbox showed the run's processes (run.started.visible), and the grade's own paths in its log
    assert shown["visible"]["agent"] == [] and "{worktree}" in {m["path"] for m in shown["visible"]["tests"]}
    seen = out.split("== what the sandbox showed", 1)[1].split("== agent", 1)[0]
    assert "no process of its own" in seen and "system (read-only): /usr" in seen and "{environment}" in seen
    assert "[swecl] the test sandbox shows: the system's directories, " in shown["log"]
    assert shown["failing"] == [t["name"] for t in shown["tests"] if not t["passed"]]
    assert sorted(shown["failing"]) == failing and shown["resolved"] is False and shown["pass"] == "initial"
    assert shown["recalls"] and all(r["item_id"].startswith("mem-") for r in shown["recalls"])
    assert shown["turns"] == agent["turns"] and shown["transcript"]
    # a task order names the same task in a one-sequence run
    by_order = swecl_json(demo, "show", "1", str(grade["order"]), cache=cache)
    assert by_order["instance_id"] == grade["instance_id"] and by_order["patch"] == patch


@pytest.mark.slow
def test_show_files_writes_what_a_user_opens(demo: Path, cache: Path, tmp_path: Path) -> None:
    grade = unresolved(demo)
    folder = tmp_path / "why" / grade["instance_id"]
    out = swecl(demo, "show", "1", grade["instance_id"], "--pass", "retest", "--files", str(folder), cache=cache).stdout
    names = {"patch.diff", "test_output.txt", "report.json", "memory_recalled.json", "transcript.txt"}
    assert names <= {p.name for p in folder.iterdir()}
    for name in names:
        assert str(folder / name) in out
    shown = swecl_json(demo, "show", "1", grade["instance_id"], "--pass", "retest", cache=cache)
    assert (folder / "patch.diff").read_text() == shown["patch"]
    assert (folder / "test_output.txt").read_text() == shown["log"] and shown["log"]
    report = json.loads((folder / "report.json").read_text())
    assert report["pass"] == "retest" and report["resolved"] is False
    assert sorted(report["tests_status"]["FAIL_TO_PASS"]["failure"]) == sorted(shown["failing"])
    recalled = json.loads((folder / "memory_recalled.json").read_text())
    assert [r["item_id"] for r in recalled] == [r["item_id"] for r in shown["recalls"]]
    assert not list(folder.glob("*.tmp*")) and not list(folder.glob(".*"))  # atomic writes leave nothing behind


@pytest.mark.slow
def test_show_refuses_a_bad_version_task_or_pass_in_one_line(demo: Path, cache: Path) -> None:
    grade = unresolved(demo)
    bad_task = swecl(demo, "show", "1", "no-such-task", cache=cache, check=False)
    _one_line_error(bad_task)
    assert "no-such-task" in bad_task.stderr and "not in the plan of v1" in bad_task.stderr
    bad_order = swecl(demo, "show", "1", "99", cache=cache, check=False)
    _one_line_error(bad_order)
    never = swecl(demo, "show", "1", grade["instance_id"], "--pass", "retest-2", cache=cache, check=False)
    _one_line_error(never)
    assert "no attempt in pass 'retest-2'" in never.stderr and "initial, retest, baseline" in never.stderr
    typo = swecl(demo, "show", "1", grade["instance_id"], "--pass", "retets", cache=cache, check=False)
    assert typo.returncode == 2 and "is not a pass" in typo.stderr and "Traceback" not in typo.stderr
    no_run = swecl(demo, "show", "v7", grade["instance_id"], cache=cache, check=False)
    _one_line_error(no_run)
    assert "no run version '7'" in no_run.stderr or "no run version 'v7'" in no_run.stderr
    mixed = swecl(demo, "show", "1", grade["instance_id"], "--dataset", "x.json", cache=cache, check=False)
    assert mixed.returncode == 2 and "Traceback" not in mixed.stderr


def test_show_task_alone_still_shows_the_benchmark_task(tmp_path: Path, cache: Path) -> None:
    out = swecl(tmp_path, "show", "swecl-demo__spans-24", cache=cache).stdout
    assert out.startswith("spans#4 swecl-demo__spans-24  (swecl-demo/spans") and "FAIL_TO_PASS" in out
    assert swecl(tmp_path, "show", "spans#4", cache=cache).stdout == out
    wrong = swecl(tmp_path, "show", "swecl-demo__spans-24", "--files", str(tmp_path / "f"), cache=cache, check=False)
    assert wrong.returncode == 2 and "swecl show VERSION TASK" in wrong.stderr


def test_final_message_of_stream_json_and_of_plain_text() -> None:
    stream = "\n".join(json.dumps(o) for o in (
        {"type": "system", "subtype": "init"},
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "Fixed the off-by-one."}]}},
        {"type": "result", "subtype": "success", "result": "Done: the diff is below."},
    ))
    assert final_message(stream) == "Done: the diff is below."
    assert final_message(stream.rsplit("\n", 1)[0]) == "Fixed the off-by-one."
    assert final_message("recall\napply\nsubmitted memory item mem-1\n\n") == "submitted memory item mem-1"
    assert final_message(None) is None and final_message(" \n") is None
