"""`swecl run --resume V` where V is one of several runs a single `swecl run` started (the
demo suite, `--repeat K`): the whole invocation carries on, in its order. Killed mid-way
(SIGKILL at a failpoint), the runs that never began are started, the interrupted one is
finished, finished ones are left alone, and the seeded stages seed from their own
repeat's plugin-blank."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from .support import SPANS, events, first_of, swecl, swecl_json

pytestmark = pytest.mark.slow

# The first four tasks of the spans sequence: every run of an invocation is one of these
# (each task a graded pytest run), enough for a kill in the middle of the second run.
FIRST = 4
SUBSET = first_of(FIRST, SPANS)


def _started(results: Path) -> dict[str, dict]:
    return {p["version"]: p for _, _, _, p in events(results, "run.started")}


def _finished_once(results: Path) -> Counter:
    """How often each (run, pass, order) finished: a resume must not redo a finished task."""
    return Counter((s.split("/")[1], p["pass"], p["order"]) for _, s, _, p in events(results, "task.finished"))


def test_resuming_a_repeat_starts_the_repeats_that_never_began(tmp_path: Path, cache: Path) -> None:
    n = FIRST
    args = ("run", "--stage", "base", "--sequence", SPANS, *SUBSET, "--repeat", "3", "--quiet")
    # killed in repeat 2, at its 3rd task: repeat 3 never began
    killed = swecl(tmp_path, *args, cache=cache, check=False, env={"SWECL_FAILPOINTS": f"task.finished:{n + 3}"})
    assert killed.returncode != 0
    assert sorted(_started(tmp_path)) == ["1", "2"]
    done = swecl(tmp_path, "run", "--resume", "2", "--quiet", "--json", cache=cache)
    started = _started(tmp_path)
    assert {v: (e["stage"], e["repeat_group"], e["repeat_index"], e["repeat_count"], e["suite"], e["suite_stages"])
            for v, e in started.items()} == {v: ("base", "1", int(v), 3, "1", ["base"]) for v in ("1", "2", "3")}
    assert {r["version"]: r["status"] for r in swecl_json(tmp_path, "runs", cache=cache)} == dict.fromkeys("123", "finished")
    once = _finished_once(tmp_path)
    assert set(once.values()) == {1} and len(once) == 3 * n  # run 1 untouched, nothing twice
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert [v["version"] for v in summary["versions"]] == ["1", "2", "3"]
    assert summary["grouped"]["groups"][0]["versions"] == ["1", "2", "3"]


def test_resuming_the_demo_suite_runs_the_stages_that_never_began(tmp_path: Path, cache: Path) -> None:
    n = FIRST
    args = ("run", "--sequence", SPANS, *SUBSET, "--passes", "initial", "--quiet")
    # killed in plugin-blank (run 2): plugin-accum and plugin-dreamed never began
    killed = swecl(tmp_path, *args, cache=cache, check=False, env={"SWECL_FAILPOINTS": f"task.finished:{n + 2}"})
    assert killed.returncode != 0 and sorted(_started(tmp_path)) == ["1", "2"]
    swecl(tmp_path, "run", "--resume", "2", "--quiet", cache=cache)
    started = _started(tmp_path)
    assert [(v, e["stage"], e["suite"]) for v, e in sorted(started.items())] == [
        ("1", "base", "1"), ("2", "plugin-blank", "1"), ("3", "plugin-accum", "1"), ("4", "plugin-dreamed", "1")]
    assert all(e["repeat_group"] is None and e["passes"] == ["initial"] for e in started.values())
    # both seeded stages seed from this suite's plugin-blank, as an uninterrupted suite does
    seeded = {s.split("/")[1]: p["source_run"] for _, s, _, p in events(tmp_path, "memory.seeded")}
    assert seeded == {"3": "2", "4": "2"}
    assert {r["version"]: r["status"] for r in swecl_json(tmp_path, "runs", cache=cache)} == dict.fromkeys("1234", "finished")
    once = _finished_once(tmp_path)
    assert set(once.values()) == {1} and len(once) == 4 * n


def test_a_run_started_alone_is_resumed_alone(tmp_path: Path, cache: Path) -> None:
    args = ("run", "--stage", "base", "--sequence", SPANS, *SUBSET, "--quiet")
    killed = swecl(tmp_path, *args, cache=cache, check=False, env={"SWECL_FAILPOINTS": "task.finished:2"})
    assert killed.returncode != 0
    swecl(tmp_path, "run", "--resume", "1", "--quiet", cache=cache)
    (only,) = _started(tmp_path).values()
    assert only["suite"] is None and only["suite_stages"] is None
    assert [r["status"] for r in swecl_json(tmp_path, "runs", cache=cache)] == ["finished"]
