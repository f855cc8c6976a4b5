"""`swecl run --executor ray`: sequences as Ray jobs, shards merged into one ledger.

Everything here runs the real CLI against one real local Ray instance (see conftest):
the same demo runs on the local executor are the reference the fan-out must match.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.run.support import (
    INICONF,
    SPANS,
    as_of,
    comparable,
    decided_ids,
    demo_tasks,
    events,
    finished_cells,
    first_of,
    swecl,
    swecl_json,
)
from tests.shared_runs import BLANK_FREE, demo_run_copy

from tests.agents.conftest import server_memory_bin  # noqa: F401  (the session fixture: npm-installed server)

from .conftest import RAY_ENV, RayCluster

pytestmark = pytest.mark.slow

# The first three tasks of each sequence: enough for every failpoint below (the third
# task.finished of a job, the second shard) and for two jobs to interleave; each task
# is a graded pytest run, paid again in every fan-out and in its local reference.
FIRST = 3


SUBSET = first_of(FIRST, SPANS, INICONF)
BLANK = ("run", "--stage", "plugin-blank", "--sequence", SPANS, "--sequence", INICONF, *SUBSET, "--passes",
         "initial,baseline")
ACCUM = ("run", "--stage", "plugin-accum", "--sequence", SPANS, "--sequence", INICONF, *SUBSET, "--passes", "initial")
SPANS_ONLY = ("run", "--stage", "plugin-blank", "--sequence", SPANS, *first_of(FIRST, SPANS), "--passes", "initial,baseline")
# The full-history arm: each prompt's earlier tasks read from the job's (or Ray task's) ledger copy.
HISTORY = ("run", "--stage", "full-history", "--sequence", SPANS, *first_of(FIRST, SPANS), "--passes", "initial,retest")
# Every kind of order-free work with memory on: a re-test, a baseline and a retest-4 row;
# its serial run on the local executor is the session's shared `free-spans`.
FREE = ("run", *BLANK_FREE, "--version", "1")
FREE_TASKS = demo_tasks(SPANS)
TASKS = {SPANS: FIRST, INICONF: FIRST}  # in BLANK, ACCUM and SPANS_ONLY


def on_ray(cluster: RayCluster, *extra: str) -> tuple[str, ...]:
    return ("--executor", "ray", "--ray-address", cluster.address, *extra)


def run(results: Path, cluster: RayCluster, *args: str, env: dict[str, str] | None = None,
        check: bool = True) -> Any:
    return swecl(results, *args, cache=cluster.cache, env={**RAY_ENV, **(env or {})}, check=check, timeout=300)


def metrics(results: Path, cluster: RayCluster, version: str, sequence: str | None = None) -> dict[str, Any]:
    """CL metrics per sequence (or of one sequence) of a run, as `swecl metrics --json` gives them."""
    found = swecl_json(results, "metrics", "--version", version, cache=cluster.cache)["versions"][0]["sequences"]
    return found if sequence is None else found[sequence]


def json_lines(stdout: str) -> list[dict[str, Any]]:
    """Every line of `--json` output is JSON: nothing Ray prints may land there."""
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def recalls(results: Path, version: str) -> dict[tuple[str, str, int], list[str]]:
    """What each task recalled: (sequence, pass, order) -> item ids by rank."""
    return {
        (p["sequence_id"], p["pass"], p["order"]): [r["item_id"] for r in p["results"]]
        for _, stream, _, p in events(results, "memory.recalled")
        if stream.startswith(f"run/{version}/")
    }


def assert_each_task_once(results: Path, cluster: RayCluster, version: str, expected: int) -> None:
    cells = finished_cells(results, version)
    assert len(cells) == len(set(cells)) == expected
    assert "ledger OK" in swecl(results, "verify", cache=cluster.cache).stdout


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, ray_cluster: RayCluster) -> Path:
    """The same runs on the local executor: v1 plugin-blank, v2 plugin-accum seeded from v1,
    v3 full-history."""
    results = tmp_path_factory.mktemp("local")
    swecl(results, *BLANK, "--jobs", "2", "--quiet", cache=ray_cluster.cache)
    swecl(results, *ACCUM, "--source-memory", "1", "--jobs", "2", "--quiet", cache=ray_cluster.cache)
    swecl(results, *HISTORY, "--quiet", cache=ray_cluster.cache)
    return results


def histories(results: Path, version: str) -> list[tuple[str, int, list[str], int, str | None]]:
    """What each full-history task was given: (pass, order, entries, tokens, text blob)."""
    return sorted((p["pass"], p["order"], p["entries"], p["tokens"], p["text"])
                  for _, stream, _, p in events(results, "memory.history") if stream.startswith(f"run/{version}/"))


def test_fan_out_matches_the_local_executor(tmp_path: Path, ray_cluster: RayCluster, reference: Path) -> None:
    results = tmp_path / "results"
    proc = run(results, ray_cluster, *BLANK, *on_ray(ray_cluster), "--json")
    lines = json_lines(proc.stdout)
    finished = [line for line in lines if line["event"] == "task_finished"]
    assert len(finished) == 2 * (TASKS[SPANS] + TASKS[INICONF])  # progress of both workers reached the driver
    assert {line["sequence"] for line in finished} == set(TASKS)
    assert lines[-2]["event"] == "run_finished" and lines[-2]["status"] == "finished"
    assert metrics(results, ray_cluster, "1") == metrics(reference, ray_cluster, "1")
    assert recalls(results, "1") == recalls(reference, "1")
    assert_each_task_once(results, ray_cluster, "1", 2 * (TASKS[SPANS] + TASKS[INICONF]))
    # the jobs really ran side by side: their streams interleave in the merged ledger
    streams = [s for _, s, t, _ in events(results, "task.started")]
    assert sum(1 for a, b in zip(streams, streams[1:]) if a != b) > 1

    # A seeded stage: the seed is recorded on the driver, and every shard starts from a
    # copy holding it (and the source run's memory) at the same seqs. Shards travel as
    # files through a shared folder this time.
    shards = tmp_path / "shared"
    run(results, ray_cluster, *ACCUM, "--source-memory", "1", *on_ray(ray_cluster, "--shard-dir", str(shards)), "--quiet")
    assert metrics(results, ray_cluster, "2") == metrics(reference, ray_cluster, "2")
    seeded = recalls(results, "2")
    assert seeded == recalls(reference, "2")
    from_v1 = {p["item_id"] for _, stream, _, p in events(results, "memory.written") if stream.startswith("run/1/")}
    assert set(seeded[(SPANS, "initial", 1)]) & from_v1  # the first task already recalls the seed
    assert_each_task_once(results, ray_cluster, "2", TASKS[SPANS] + TASKS[INICONF])
    assert list(shards.iterdir()) == []  # snapshots and shards are removed once merged

    # The full-history arm, its re-test on Ray tasks: each prompt's history is read from the
    # ledger copy where the task runs, and is the local run's.
    run(results, ray_cluster, *HISTORY, "--task-jobs", "2", *on_ray(ray_cluster), "--quiet")
    assert histories(results, "3") == histories(reference, "3") and len(histories(results, "3")) == 2 * TASKS[SPANS]
    assert metrics(results, ray_cluster, "3") == metrics(reference, ray_cluster, "3")


def test_a_job_that_raises_is_retried_from_what_it_delivered(tmp_path: Path, ray_cluster: RayCluster,
                                                             reference: Path) -> None:
    # The job's first attempt raises after delivering its 2nd shard (2 tasks done).
    proc = run(tmp_path, ray_cluster, *SPANS_ONLY, *on_ray(ray_cluster), "--json",
               env={"SWECL_FAILPOINTS": "ray.job.raise:2"})
    notes = [line["text"] for line in json_lines(proc.stdout) if line["event"] == "note"]
    (retried,) = [n for n in notes if "attempt 1 failed" in n]
    assert "failpoint ray.job.raise" in retried and "2 shard(s)" in retried
    assert any("attempt 2 running" in n for n in notes)
    assert metrics(tmp_path, ray_cluster, "1", SPANS) == metrics(reference, ray_cluster, "1", SPANS)
    assert_each_task_once(tmp_path, ray_cluster, "1", 2 * TASKS[SPANS])
    # nothing delivered was done again: one start per task, and no attempt abandoned
    assert len(events(tmp_path, "task.started")) == 2 * TASKS[SPANS]
    assert events(tmp_path, "task.abandoned") == []


def test_a_worker_killed_mid_sequence_is_retried(tmp_path: Path, ray_cluster: RayCluster, reference: Path) -> None:
    # SIGKILL in the job's first attempt right after its 3rd task.finished was written to
    # the worker's copy, before that shard was cut: the 3rd task is lost with the worker
    # and redone by the retry, with the same event ids.
    proc = run(tmp_path, ray_cluster, *SPANS_ONLY, *on_ray(ray_cluster), "--json",
               env={"SWECL_FAILPOINTS": "task.finished:3"})
    notes = [line["text"] for line in json_lines(proc.stdout) if line["event"] == "note"]
    (retried,) = [n for n in notes if "attempt 1 failed" in n]
    assert "WorkerCrashedError" in retried and "2 shard(s)" in retried
    assert metrics(tmp_path, ray_cluster, "1", SPANS) == metrics(reference, ray_cluster, "1", SPANS)
    assert_each_task_once(tmp_path, ray_cluster, "1", 2 * TASKS[SPANS])
    starts = Counter((p["pass"], p["order"], p["attempt"]) for *_, p in events(tmp_path, "task.started"))
    assert set(starts.values()) == {1} and len(starts) == 2 * TASKS[SPANS]


def test_a_killed_driver_resumes_the_fan_out(tmp_path: Path, ray_cluster: RayCluster, reference: Path) -> None:
    # The driver dies (SIGKILL) right after the first sequence was merged complete.
    proc = run(tmp_path, ray_cluster, *BLANK, "--version", "R", *on_ray(ray_cluster), "--quiet",
               env={"SWECL_FAILPOINTS": "ray.sequence.merged:1"}, check=False)
    assert proc.returncode == -9, (proc.returncode, proc.stderr)
    assert swecl_json(tmp_path, "runs", cache=ray_cluster.cache)[0]["status"] == "interrupted"
    assert "ledger OK" in swecl(tmp_path, "verify", cache=ray_cluster.cache).stdout  # a partial fan-out is a valid ledger
    # The first sequence merged complete; the other job may have delivered its last shard
    # in the same moment (both sequences are the same size), so it can be complete too.
    done = {p["sequence_id"] for *_, p in events(tmp_path, "pass.finished") if p["pass"] == "baseline"}
    assert 1 <= len(done) <= 2
    before = Counter(p["sequence_id"] for *_, p in events(tmp_path, "task.started"))
    assert all(before[seq] == 2 * TASKS[seq] for seq in done)

    out = run(tmp_path, ray_cluster, "run", "--resume", "R", *on_ray(ray_cluster), "--json").stdout
    notes = [line["text"] for line in json_lines(out) if line["event"] == "note"]
    after = Counter(p["sequence_id"] for *_, p in events(tmp_path, "task.started"))
    for seq in done:
        assert f"vR {seq}: already finished, not submitted" in notes
        assert after[seq] == before[seq]  # a finished sequence was not run again
    assert_each_task_once(tmp_path, ray_cluster, "R", 2 * (TASKS[SPANS] + TASKS[INICONF]))
    assert metrics(tmp_path, ray_cluster, "R") == metrics(reference, ray_cluster, "1")
    assert swecl_json(tmp_path, "runs", cache=ray_cluster.cache)[0]["status"] == "finished"


def ran_where(lines: list[dict[str, Any]]) -> dict[tuple[str, int], str]:
    """(pass, order) -> where the task ran, as the driver's --json progress says."""
    return {(line["pass"], line["order"]): line["where"] for line in lines if line["event"] == "task_finished"}


def pid_in(where: str) -> int:
    found = re.search(r"pid (\d+)", where)
    assert found, where
    return int(found.group(1))


def recorded(results: Path) -> Counter[tuple[str, str, str]]:
    """What a run recorded, up to order (see `comparable`), but the run.started whose
    options name the executor."""
    return Counter({key: n for key, n in comparable(results).items() if key[1] != "run.started"})


def test_free_tasks_fan_out_as_ray_tasks(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory,
                                        ray_cluster: RayCluster) -> None:
    """--task-jobs 2 on Ray: the sequence job runs the initial pass itself and hands the
    re-test, baseline and retest-4 tasks to Ray tasks of their own (other processes);
    their events reach the driver through the job, and the ledger holds what a serial
    local run records, the same metrics and recalls."""
    serial, fanned = demo_run_copy(tmp_path_factory, ray_cluster.cache, "free-spans"), tmp_path / "ray"
    proc = run(fanned, ray_cluster, *FREE, "--task-jobs", "2", *on_ray(ray_cluster), "--json")
    assert recorded(fanned) == recorded(serial)
    assert decided_ids(fanned) == decided_ids(serial)
    assert metrics(fanned, ray_cluster, "1") == metrics(serial, ray_cluster, "1")
    assert recalls(fanned, "1") == recalls(serial, "1")
    assert_each_task_once(fanned, ray_cluster, "1", 3 * FREE_TASKS + 4)
    for k in range(1, FREE_TASKS + 2):  # folds by position: as of every task order, the serial run's
        assert as_of(fanned, k) == as_of(serial, k), k

    where = ran_where(json_lines(proc.stdout))
    chain = {where[("initial", n)] for n in range(1, FREE_TASKS + 1)}
    assert len(chain) == 1 and next(iter(chain)).startswith("sequence job")  # the ordered pass stayed in the job
    away = {cell: w for cell, w in where.items() if w.startswith("ray task")}
    assert away and all(pass_ != "initial" for pass_, _ in away)
    assert pid_in(next(iter(chain))) not in {pid_in(w) for w in away.values()}


def test_sequence_jobs_holding_every_cpu_still_finish(tmp_path: Path, ray_cluster: RayCluster,
                                                      reference: Path) -> None:
    """Two sequence jobs on the 2-CPU instance: a Ray task of either can start only once
    a job ended, so each job takes back the free work it handed over and runs it itself."""
    run(tmp_path, ray_cluster, *BLANK, "--task-jobs", "2", *on_ray(ray_cluster), "--quiet")
    assert metrics(tmp_path, ray_cluster, "1") == metrics(reference, ray_cluster, "1")
    assert recalls(tmp_path, "1") == recalls(reference, "1")
    assert_each_task_once(tmp_path, ray_cluster, "1", 2 * (TASKS[SPANS] + TASKS[INICONF]))
    assert events(tmp_path, "task.abandoned") == []


@pytest.mark.parametrize(("failpoint", "error"), [("ray.task.raise:1", "failpoint ray.task.raise"),
                                                  ("ray.task.kill:1", "WorkerCrashedError")])
def test_a_failed_ray_task_is_submitted_again(tmp_path: Path, ray_cluster: RayCluster, reference: Path,
                                              failpoint: str, error: str) -> None:
    # The job's first Ray task raises, or SIGKILLs its worker, right after its task
    # finished in the task's copy, before the shard was cut: the job submits the task
    # again from its own ledger, and it runs again as the same attempt.
    proc = run(tmp_path, ray_cluster, *SPANS_ONLY, "--task-jobs", "2", *on_ray(ray_cluster), "--json",
               env={"SWECL_FAILPOINTS": failpoint})
    notes = [line["text"] for line in json_lines(proc.stdout) if line["event"] == "note"]
    (retried,) = [n for n in notes if "the Ray task of baseline" in n]
    assert error in retried and "(try 2)" in retried
    assert not [n for n in notes if "attempt 1 failed" in n]  # the sequence job carried on
    assert metrics(tmp_path, ray_cluster, "1", SPANS) == metrics(reference, ray_cluster, "1", SPANS)
    assert_each_task_once(tmp_path, ray_cluster, "1", 2 * TASKS[SPANS])
    starts = Counter((p["pass"], p["order"], p["attempt"]) for *_, p in events(tmp_path, "task.started"))
    assert set(starts.values()) == {1} and {attempt for *_, attempt in starts} == {1}
    assert events(tmp_path, "task.abandoned") == []


def test_a_memory_server_run_fans_out_with_its_servers_on_the_nodes(tmp_path: Path, ray_cluster: RayCluster,
                                                                     server_memory_bin: str) -> None:
    """--memory-server on Ray: each sequence job starts the server on what its ledger copy
    holds (the mapped variable's value travels with the job, never into the ledger); the
    snapshots and calls reach the driver's ledger like any event."""
    results = tmp_path / "ray"
    run(results, ray_cluster, "run", "--stage", "plugin-blank", "--sequence", SPANS, *first_of(2, SPANS), "--passes",
        "initial,retest", "--memory-server", server_memory_bin, "--memory-env", "MEMORY_FILE_PATH={data}/memory.jsonl",
        "--memory-recall-tool", "search_nodes", "--memory-recall-args", '{"query": "{repo}"}',
        "--memory-write-tool", "create_entities", *on_ray(ray_cluster), "--quiet")
    assert_each_task_once(results, ray_cluster, "1", 4)
    snapshots = [p for *_, p in events(results, "memory.provider.snapshot")]
    assert [(s["pass"], s["order"]) for s in snapshots] == [("initial", 1), ("initial", 2)]
    calls = [p for *_, p in events(results, "memory.provider.called")]
    assert calls and all(c["failure"] is None for c in calls)
    tasks = [a for a in first_of(2, SPANS) if a != "--instance"]
    retests = [c for c in calls if c["pass"] == "retest"]
    assert sorted(c["instance_id"] for c in retests) == sorted(tasks)
    (started,) = [p for *_, p in events(results, "run.started")]
    assert "memory_env" not in started["config"] and started["config"]["memory_env_names"] == ["MEMORY_FILE_PATH"]
