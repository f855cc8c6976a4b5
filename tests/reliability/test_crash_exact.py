"""Crash safety at exact points: kills planted inside swecl's own process with
`tests/reliability/inject.py` (wrappers around public seams, nothing edited), where a
timer would rarely land: inside a write transaction, right after one, with the agent's
edits on disk, with the patches applied in the grader's worktree, inside the batch that
finishes a task with its lessons, and right after a resume recorded `task.abandoned`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.crashkit import differences_from
from bench.processes import REPO_ROOT, SPANS, read_events, run_exists, swecl_env
from tests.inprocess import swecl
from ledger import Ledger

from .conftest import INITIAL_ARGS

pytestmark = pytest.mark.slow


def _launch_with_kill(results: Path, cache: Path, version: str, start_args: tuple[str, ...], point: str
                      ) -> subprocess.CompletedProcess[str]:
    args = ["run", "--resume", version, "--quiet"] if run_exists(results, version) else [
        "run", *start_args, "--version", version, "--quiet"]
    return subprocess.run(
        [sys.executable, "-m", "tests.reliability.inject", "--results", str(results), *args],
        env=swecl_env(cache, {"SWECL_TEST_KILL": point}), cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
    )


def _ledger_verifies(results: Path) -> int:
    """The ledger's event count after a full verify; 0 for a file a kill left empty (the
    kill came inside the very first transaction, which creates the tables: the next
    `swecl run` initialises that file)."""
    path = results / "ledger.db"
    if path.stat().st_size == 0:
        return 0
    with Ledger.open(path, readonly=True) as ledger:
        return ledger.verify().events


CHAIN = (
    "commit:1", "commit:2", "committed:3", "agent:1", "grade:1", "finishing:1", "commit:5",
    "grade:2", "agent:2", "committed:7", "finishing:2", "commit:4",
)


def test_kills_at_exact_points_then_resume_match_an_uninterrupted_run(
    tmp_path: Path, cache: Path, reference_initial: Path
) -> None:
    results = tmp_path / "results"
    for point in CHAIN:
        done = _launch_with_kill(results, cache, "crash", INITIAL_ARGS, point)
        assert done.returncode == -9, f"{point}: exited {done.returncode} instead of dying:\n{done.stderr}"
        if (results / "ledger.db").exists():
            _ledger_verifies(results)
    final = swecl(results, "run", "--resume", "crash", "--quiet", cache=cache, check=False)
    assert final.returncode == 0, final.stderr
    assert differences_from(results, "crash", reference_initial, "ref", cache) == []


def test_a_kill_inside_the_finishing_batch_writes_none_of_it(tmp_path: Path, cache: Path) -> None:
    results = tmp_path / "results"
    assert _launch_with_kill(results, cache, "crash", INITIAL_ARGS, "finishing:1").returncode == -9
    types = [e["type"] for e in read_events(results, prefix="run/crash")]
    # the first task got as far as its grade; its task.finished and its lesson are both absent
    assert "grade.finished" in types
    assert "task.finished" not in types and "memory.written" not in types
    assert _ledger_verifies(results) == len(read_events(results))
    # the resume abandons attempt 1 and redoes the task as attempt 2 (killed at the same place)
    assert _launch_with_kill(results, cache, "crash", INITIAL_ARGS, "finishing:1").returncode == -9
    tail = [(e["type"], e["payload"].get("attempt")) for e in read_events(results, prefix="run/crash/" + SPANS)]
    assert ("task.abandoned", 1) in tail and ("task.started", 2) in tail and ("grade.finished", 2) in tail
    assert "task.finished" not in [t for t, _ in tail]


def test_resume_after_a_crash_just_after_abandoning_an_attempt(
    tmp_path: Path, cache: Path, reference_initial: Path
) -> None:
    """A resume records task.abandoned for the interrupted attempt and dies before the
    next attempt starts; the resume after that must still use a new attempt number."""
    results = tmp_path / "results"
    assert _launch_with_kill(results, cache, "crash", INITIAL_ARGS, "grade:1").returncode == -9
    assert _launch_with_kill(results, cache, "crash", INITIAL_ARGS, "abandon:1").returncode == -9
    final = swecl(results, "run", "--resume", "crash", "--quiet", cache=cache, check=False)
    assert final.returncode == 0, final.stderr
    assert differences_from(results, "crash", reference_initial, "ref", cache) == []


def test_a_killed_run_is_reported_interrupted_and_a_finished_one_redoes_nothing(
    tmp_path: Path, cache: Path
) -> None:
    results = tmp_path / "results"
    assert _launch_with_kill(results, cache, "crash", ("--stage", "base", "--sequence", SPANS), "agent:2").returncode == -9
    rows = json.loads(swecl(results, "runs", "--json", cache=cache).stdout)
    assert [(r["version"], r["status"]) for r in rows] == [("crash", "interrupted")]
    swecl(results, "run", "--resume", "crash", "--quiet", cache=cache)
    before = [e["event_id"] for e in read_events(results)]
    # resuming a finished run appends its resume marks and nothing of any task
    swecl(results, "run", "--resume", "crash", "--quiet", cache=cache)
    added = [e["type"] for e in read_events(results) if e["event_id"] not in before]
    assert added == ["run.resumed", "run.finished"]
    rows = json.loads(swecl(results, "runs", "--json", cache=cache).stdout)
    assert [(r["version"], r["status"]) for r in rows] == [("crash", "finished")]


def test_ctrl_c_mid_run_records_interrupted_and_the_resume_matches(
    tmp_path: Path, cache: Path, own_cache: Path, reference_initial: Path
) -> None:
    """SIGINT to the whole process group, as a terminal's Ctrl-C sends it."""
    import os
    import signal
    import time

    from bench.processes import LedgerWatch, spawn, swecl_argv

    results = tmp_path / "results"
    own = own_cache  # SIGINT reaches git too: what it leaves must not reach other tests (conftest)
    proc = spawn(swecl_argv(results, "run", *INITIAL_ARGS, "--version", "crash", "--quiet"), cache=own,
                 log=tmp_path / "swecl.log")
    watch = LedgerWatch(results / "ledger.db", "crash")
    deadline = time.monotonic() + 120
    while sum(1 for _, _, t in watch.since(0) if t == "task.started") < 3 and time.monotonic() < deadline:
        assert proc.poll() is None, (tmp_path / "swecl.log").read_text()
        time.sleep(0.01)
    watch.close()
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=120) == 130
    log = (tmp_path / "swecl.log").read_text()
    assert "Traceback" not in log and log.strip().splitlines()[-1] in ("swecl: interrupted", "swecl: aborted")
    header = [e["payload"].get("status") for e in read_events(results, prefix="run/crash") if e["type"] == "run.finished"]
    assert header == ["interrupted"]
    final = swecl(results, "run", "--resume", "crash", "--quiet", cache=own, check=False)
    assert final.returncode == 0, final.stderr
    assert differences_from(results, "crash", reference_initial, "ref", cache) == []


@pytest.mark.parametrize("leftover", ["HEAD.lock", "index.lock"])
def test_a_lock_file_left_by_a_killed_git_command_does_not_break_later_tasks(
    leftover: str, tmp_path: Path, cache: Path
) -> None:
    """SIGKILL during `git checkout` / `git reset` in a worktree slot leaves git's lock
    file behind (created with O_EXCL, renamed into place at the end). The slot's flock
    says no other process is using the slot, so the next task must not be stopped by it
    (the soak hit this: every later task of the repository became agent_error)."""
    from .support import CALC_FILES, CALC_GOLD, calc_curriculum, make_repo, write_predictions

    repo = f"acme/calc-{leftover.lower().replace('.', '-')}"
    base = make_repo(tmp_path / "repo", CALC_FILES)
    dataset = calc_curriculum(tmp_path / "ds", base=base, repo_dir=tmp_path / "repo", repo=repo)
    predictions = write_predictions(tmp_path / "pred.jsonl", {"acme__calc-1": CALC_GOLD})
    for attempt in ("first", "after the leftover"):
        results = tmp_path / f"results-{attempt.replace(' ', '-')}"
        done = swecl(results, "grade", "--dataset", str(dataset), "--predictions", str(predictions), "--json",
                     cache=cache, check=False)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["statuses"] == {"acme__calc-1": "resolved"}, (attempt, [
            e["payload"].get("error") for e in read_events(results) if e["type"] in ("agent.finished", "grade.finished")])
        if attempt != "first":
            continue
        # what a killed git leaves in every slot's private git dir
        slot_gits = list((cache / "repos" / f"{repo.replace('/', '__')}.git" / "worktrees").iterdir())
        assert slot_gits, "the first grade left no worktree slot to plant the lock in"
        for slot_git in slot_gits:
            (slot_git / leftover).write_text("0000000000000000000000000000000000000000\n")
        # positive control: a plain git in the slot is stopped by the planted lock
        slots = [p for p in (cache / "worktrees" / repo.replace("/", "__")).glob("slot-*") if p.is_dir()]
        assert slots
        for slot in slots:
            stopped = subprocess.run(["git", "-C", str(slot), "reset", "-q", "--hard", base], capture_output=True,
                                     text=True)
            assert stopped.returncode != 0 and ".lock" in stopped.stderr, stopped.stderr
