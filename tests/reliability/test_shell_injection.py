"""No shell injection: instance ids, test ids, test file names, issue texts and setup lines
with shell metacharacters are data. Each attack here would create a canary file if any
of it reached a shell; none may appear."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from bench.processes import read_blobs, read_events
from tests.inprocess import swecl

from .support import (
    CALC_FILES,
    CALC_GOLD,
    ENVIRONMENT,
    calc_curriculum,
    ledger_state,
    make_repo,
    new_file_patch,
    write_predictions,
)

pytestmark = pytest.mark.slow


def _attacks(canaries: Path, tag: str) -> list[str]:
    """Strings that run `touch CANARY` in a shell, one canary each."""
    c = [canaries / f"{tag}{i}" for i in range(6)]
    return [
        f"; touch {c[0]}",
        f"$(touch {c[1]})",
        f"`touch {c[2]}`",
        f"\ntouch {c[3]}\n",
        f"' && touch {c[4]} && echo '",
        f"\" | touch {c[5]} #",
    ]


def _ran(canaries: Path) -> list[str]:
    return sorted(p.name for p in canaries.iterdir())


def _grade_the_gold_patch(tmp_path: Path, dataset: Path, results: Path, canaries: Path, cache: Path) -> dict:
    """`swecl grade` of the gold patch of acme__calc-1: it exits 0, no canary was touched;
    returns the grade.finished payload."""
    predictions = write_predictions(tmp_path / "pred.jsonl", {"acme__calc-1": CALC_GOLD})
    done = swecl(results, "grade", "--dataset", str(dataset), "--predictions", str(predictions), "--json",
                 cache=cache, check=False)
    assert done.returncode == 0, done.stderr
    assert _ran(canaries) == []
    (grade,) = [e["payload"] for e in read_events(results) if e["type"] == "grade.finished"]
    return grade


def test_test_file_names_and_setup_lines_never_reach_a_shell(tmp_path: Path, cache: Path) -> None:
    canaries = tmp_path / "canaries"
    canaries.mkdir()
    repo_dir = tmp_path / "repo"
    base = make_repo(repo_dir, CALC_FILES)
    repo = "acme/calc-files"  # one repository name per test: the cache keeps one mirror per name
    # test files whose *paths* carry shell syntax: the test command gets them as argv
    # (${IFS} for the spaces: pytest's summary lines split test ids at whitespace)
    dirs = [f"m$(touch${{IFS}}{canaries / 'dir0'})", f"b`touch${{IFS}}{canaries / 'dir1'}`",
            f"s;touch${{IFS}}{canaries / 'dir2'};"]
    test_patch = "".join(
        new_file_patch(f"tests/{d}/test_meta{i}.py",
                       ["from calc import add", "", "", f"def test_meta{i}():", "    assert add(2, 3) == 5"])
        for i, d in enumerate(dirs)
    )
    f2p = [f"tests/{d}/test_meta{i}.py::test_meta{i}" for i, d in enumerate(dirs)]
    dataset = calc_curriculum(tmp_path / "ds", base=base, repo_dir=repo_dir, repo=repo, test_patch=test_patch,
                              fail_to_pass=f2p, pass_to_pass=[])
    document = json.loads(dataset.read_text())
    environment = {
        **ENVIRONMENT,
        "pre_install": [f"echo $(touch {canaries / 'pre0'})", f"echo `touch {canaries / 'pre1'}`",
                        f"true | touch {canaries / 'pre2'}", f"echo x > {canaries / 'pre3'}"],
        "eval_commands": [f"export SWECL_X=$(touch {canaries / 'eval0'})", f"touch {canaries / 'eval1'} &"],
    }
    document["sequences"][0]["environment"] = environment
    dataset.write_text(json.dumps(document))
    results = tmp_path / "results"
    grade = _grade_the_gold_patch(tmp_path, dataset, results, canaries, cache)
    # the setup lines were not run, and the grade log says so, line by line
    log = read_blobs(results)[grade["log"]].decode()
    notes = [line for line in log.splitlines() if line.startswith("[swecl] ")]
    for kind, lines in (("pre_install", environment["pre_install"]), ("eval command", environment["eval_commands"])):
        for line in lines:
            assert any(n.startswith(f"[swecl] {kind} not run (") and n.endswith(f"): {line}") for n in notes), (line, notes)
    # the weird paths reached pytest as plain arguments, and their tests ran and passed
    assert [a for a in grade["test_cmd"] if a.startswith("tests/")] == [f.split("::")[0] for f in f2p]
    assert grade["status"] == "resolved", grade["error"]
    assert grade["f2p"] == {f: "PASSED" for f in f2p}
    assert ledger_state(results) == []


AGENT = """
import json, pathlib, sys
instance_id, workdir, issue_file, out = sys.argv[1:5]
n = len(list(pathlib.Path(out).glob("argv-*.json")))
pathlib.Path(out, f"argv-{n}.json").write_text(json.dumps({"argv": sys.argv[1:], "issue": open(issue_file).read()}))
pathlib.Path(workdir, "calc.py").write_text("def add(a, b):\\n    return a + b\\n")
"""


def test_instance_ids_and_issue_texts_never_reach_a_shell(tmp_path: Path, cache: Path) -> None:
    canaries = tmp_path / "canaries"
    canaries.mkdir()
    out = tmp_path / "agent-out"
    out.mkdir()
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    repo_dir = tmp_path / "repo"
    base = make_repo(repo_dir, CALC_FILES)
    instances = [f"acme__calc-{i}{attack}" for i, attack in enumerate(_attacks(canaries, "id"))]
    issue = "add() is wrong. " + " ".join(_attacks(canaries, "issue"))
    dataset = calc_curriculum(tmp_path / "ds", base=base, repo_dir=repo_dir, repo="acme/calc-ids", instances=instances,
                              issue=issue)
    # the user's template is split once; each placeholder lands inside one argument
    template = f"{sys.executable} {script} {{instance_id}} {{workdir}} {{issue_file}} {out}"
    results = tmp_path / "results"
    done = swecl(results, "run", "--dataset", str(dataset), "--stage", "base", "--agent", "command",
                 "--command", template, "--quiet", cache=cache, check=False, timeout=600)
    assert done.returncode == 0, done.stderr
    assert _ran(canaries) == []
    seen = [json.loads(p.read_text()) for p in sorted(out.glob("argv-*.json"))]
    assert sorted(s["argv"][0] for s in seen) == sorted(instances)
    assert all(s["issue"] == issue for s in seen)
    finished = [e["payload"] for e in read_events(results) if e["type"] == "task.finished"]
    assert sorted(p["instance_id"] for p in finished) == sorted(instances)
    assert {p["status"] for p in finished} == {"resolved"}
    # readers print these ids without trouble
    for args in (("log",), ("runs", "--json"), ("metrics", "--json")):
        assert swecl(results, *args, cache=cache, check=False).returncode == 0
    assert _ran(canaries) == []
    assert ledger_state(results) == []


def test_test_ids_with_shell_syntax_are_only_compared(tmp_path: Path, cache: Path) -> None:
    canaries = tmp_path / "canaries"
    canaries.mkdir()
    repo_dir = tmp_path / "repo"
    base = make_repo(repo_dir, CALC_FILES)
    f2p = [f"tests/test_calc.py::test_add_numbers{a}" for a in _attacks(canaries, "f2p")]
    p2p = [f"tests/test_calc.py::test_add_zero{a}" for a in _attacks(canaries, "p2p")]
    dataset = calc_curriculum(tmp_path / "ds", base=base, repo_dir=repo_dir, repo="acme/calc-test-ids",
                              fail_to_pass=f2p, pass_to_pass=p2p)
    results = tmp_path / "results"
    grade = _grade_the_gold_patch(tmp_path, dataset, results, canaries, cache)
    # no such tests ran, so the listed ones count as failed: a verdict, not a crash
    assert grade["status"] == "unresolved" and grade["resolved"] is False
    assert not any(a in " ".join(grade["test_cmd"]) for a in ("touch", "$(", "`"))
    assert ledger_state(results) == []
