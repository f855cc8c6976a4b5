"""The smaller commands, through the real CLI: what users type, what they get back."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from commands.inputs import demo_benchmark
from ledger import Ledger, NewEvent
from ledger.events import GradeFinished
from tests.run.support import SPANS, events, swecl, swecl_json
from tests.shared_runs import demo_run_copy

MANIFEST_COUNTS = {
    "django/django": 50, "sympy/sympy": 50, "sphinx-doc/sphinx": 44, "matplotlib/matplotlib": 34,
    "scikit-learn/scikit-learn": 32, "astropy/astropy": 22, "pydata/xarray": 22, "pytest-dev/pytest": 19,
}


def test_agents_json(tmp_path: Path, cache: Path) -> None:
    listed = swecl_json(tmp_path, "agents", cache=cache)
    assert {a["name"] for a in listed} == {"demo", "oracle", "predictions", "claude", "codex", "gemini", "mini-swe-agent",
                                           "opencode", "command"}
    assert all(a["description"] for a in listed)


def test_sequences_of_the_real_manifest(tmp_path: Path, cache: Path, shared: Path) -> None:
    manifest = shared / "data" / "SWE-Bench-CL-order-manifest.reconstructed.json"
    listed = swecl_json(tmp_path, "sequences", "--dataset", str(manifest), cache=cache)
    assert [(s["repo"], s["num_tasks"]) for s in listed] == list(MANIFEST_COUNTS.items())
    assert all(set(s) == {"id", "repo", "num_tasks", "difficulty"} for s in listed)
    assert sum(sum(s["difficulty"].values()) for s in listed) == 273


def test_running_a_manifest_task_says_what_is_missing(tmp_path: Path, cache: Path, shared: Path) -> None:
    manifest = shared / "data" / "SWE-Bench-CL-order-manifest.reconstructed.json"
    proc = swecl(tmp_path, "run", "--stage", "base", "--agent", "oracle", "--dataset", str(manifest),
                 "--sequence", "pytest-dev_pytest_sequence", cache=cache, check=False)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    for needle in ("problem_statement", "patch", "test_patch", "FAIL_TO_PASS", "--rows"):
        assert needle in proc.stderr
    shown = swecl(tmp_path, "show", "pytest-dev__pytest-7571", "--dataset", str(manifest), cache=cache).stdout
    assert "cannot run yet: missing problem_statement" in shown


@pytest.mark.slow
def test_the_oracle_resolves_every_demo_task_with_the_real_grader(tmp_path: Path, cache: Path) -> None:
    swecl(tmp_path, "run", "--stage", "base", "--agent", "oracle", "--quiet", cache=cache)
    (run,) = swecl_json(tmp_path, "runs", cache=cache)
    assert run["resolved"] == {"initial": len(demo_benchmark(materialise=False).tasks())}


def test_verdict_on_official_logs(tmp_path: Path, cache: Path, shared: Path) -> None:
    logs = shared / "data" / "swebench-logs"
    index = [e for e in json.loads((logs / "INDEX.json").read_text()) if e["patch_successfully_applied"]][:12]
    lines = []
    for entry in index:
        report = json.loads((logs / entry["dir"] / "report.json").read_text())[entry["instance_id"]]
        status = report["tests_status"]
        lines.append({
            "instance_id": entry["instance_id"], "repo": entry["repo"],
            "log_path": str(logs / entry["dir"] / "test_output.txt"),
            "FAIL_TO_PASS": status["FAIL_TO_PASS"]["success"] + status["FAIL_TO_PASS"]["failure"],
            "PASS_TO_PASS": json.dumps(status["PASS_TO_PASS"]["success"] + status["PASS_TO_PASS"]["failure"]),
        })
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    out = [json.loads(x) for x in swecl(tmp_path, "verdict", "--input", str(path), "--json", cache=cache).stdout.splitlines()]
    assert [o["instance_id"] for o in out] == [e["instance_id"] for e in index]
    # the official verdicts, but where swecl grades a test the official harness could not
    # find (tests/graders/test_official_logs.py names each)
    from tests.graders.test_official_logs import EXPECTED_RESOLVED_DISAGREEMENTS

    assert [o["resolved"] for o in out] == [e["resolved"] != (e["dir"] in EXPECTED_RESOLVED_DISAGREEMENTS)
                                            for e in index]
    assert all(set(o) >= {"instance_id", "resolved", "status", "tests"} for o in out)
    path.write_text('{"instance_id": "x"}\n')
    bad = swecl(tmp_path, "verdict", "--input", str(path), cache=cache, check=False)
    assert bad.returncode == 2 and "in.jsonl:1" in bad.stderr and bad.stderr.count("\n") == 1


def test_env_list_and_prune(tmp_path: Path, cache: Path) -> None:
    empty = tmp_path / "empty-cache"
    assert swecl_json(tmp_path, "env", "list", "--cache-dir", str(empty), cache=cache) == []
    assert "removed 0" in swecl(tmp_path, "env", "prune", "--cache-dir", str(empty), "--dry-run", cache=cache).stdout.replace("would remove", "removed")


@pytest.fixture(scope="module")
def blank(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    """plugin-blank over spans, initial pass, as version `ref`: a copy of the session's
    shared run (tests/reliability's reference)."""
    return demo_run_copy(tmp_path_factory, cache, "ref-initial")


BLANK = "ref"  # the version of the run in `blank`


@pytest.mark.slow
def test_dream_export_import(blank: Path, cache: Path, tmp_path: Path) -> None:
    first = swecl(blank, "dream", BLANK, "--json", cache=cache)
    assert json.loads(first.stdout)["version"] == BLANK
    again = json.loads(swecl(blank, "dream", BLANK, "--json", cache=cache).stdout)
    assert again["decisions"] == []  # nothing new, nothing decided
    out = tmp_path / "exported"
    swecl(blank, "memory", "export", BLANK, "--out", str(out), cache=cache)
    assert (out / "items.json").is_file() or (out / "_memory" / "items.json").is_file()
    other = tmp_path / "other-machine"
    swecl(other, "run", "--stage", "plugin-accum", "--sequence", SPANS, "--passes", "initial",
          "--source-memory", str(out), "--quiet", cache=cache)
    (seeded,) = [p for _, _, _, p in events(other, "memory.seeded")]
    assert seeded["source_path"] and seeded["item_count"] > 0 and seeded["items"]
    assert "ledger OK" in swecl(other, "verify", cache=cache).stdout


@pytest.mark.slow
def test_regrade_corrects_a_wrong_recorded_decision(blank: Path, cache: Path) -> None:
    assert "0 corrected" in swecl(blank, "regrade", BLANK, cache=cache).stdout  # today's parsers agree
    led = Ledger.open(blank / "ledger.db")
    original = next(r for r in led.read(types=["grade.finished"]) if r.event.status == "resolved")
    # what an old, buggy parser might have recorded for the very same log: a newer attempt
    # would shadow it, so forge it as a correction-free re-grade of the same attempt
    wrong = GradeFinished(**{**{f: getattr(original.event, f) for f in original.event.__struct_fields__},
                             "status": "unresolved", "resolved": False})
    led.append(original.stream, [NewEvent(wrong, "forged-old-parser-decision")])
    led.close()
    before = swecl_json(blank, "runs", cache=cache)[0]["resolved"]["initial"]
    report = swecl(blank, "regrade", BLANK, cache=cache).stdout
    assert "1 corrected" in report and "unresolved -> resolved" in report
    assert swecl_json(blank, "runs", cache=cache)[0]["resolved"]["initial"] == before + 1
    corrected = [p for _, _, _, p in events(blank, "grade.corrected")]
    assert corrected[0]["corrects"] == "forged-old-parser-decision"
    assert "0 corrected" in swecl(blank, "regrade", BLANK, cache=cache).stdout  # idempotent


@pytest.mark.slow
def test_the_run_summary_says_what_each_run_left_on_disk(tmp_path: Path, cache: Path, blank: Path) -> None:
    """A base run has no memory folder: the summary says so instead of pointing at an empty one."""
    done = swecl(tmp_path, "run", "--stage", "base", "--agent", "oracle", "--sequence", SPANS, cache=cache)
    out = done.stdout
    # stderr is a pipe here, as under nohup or CI: a whole line per task as it ends, with the time left
    initial = [line for line in done.stderr.splitlines() if line.startswith(f"v1 {SPANS} initial ")]
    assert initial and all(re.search(r" \d+/(\d+): \d+: \S+ resolved; resolved \d+/\d+ \(\d+%\), \S+ left in this pass$", line)
                           for line in initial), done.stderr
    total = int(initial[-1].split()[3].rstrip(":").split("/")[1])
    assert len(initial) == total and initial[-1].endswith(", 0s left in this pass")
    assert "run 1 (base): no memory, nothing on disk: its events are in the ledger" in out, out
    assert str(tmp_path / "v1") not in out
    from commands import Experiment  # the memory run's line, from the fixture's run

    said = Experiment(blank).run_summary([BLANK]).on_disk[BLANK]
    assert said.startswith(f"memory in {blank / f'v{BLANK}' / '_memory'}") and ".cookbook-memory" in said
    assert any((blank / f"v{BLANK}" / "_memory" / ".cookbook-memory").glob("*.md"))
