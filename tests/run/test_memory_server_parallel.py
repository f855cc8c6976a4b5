"""A user's memory server with the run features that run tasks at once or re-test as of a
task: `--task-jobs`, `--retest-every` and `--jobs` are plain cases of the memory backend.

Real parts: the real `swecl run` on the demo with the demo agent, the reference
knowledge-graph server `@modelcontextprotocol/server-memory` from npm, bubblewrap, a real
ledger.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ledger import Ledger
from tests.agents.conftest import server_memory_bin  # noqa: F401  (the session fixture: npm-installed server)

from .support import SPANS, TEXTKIT, demo_tasks, events, first_of, first_tasks, swecl

SERVER_OPTIONS = ("--memory-env", "MEMORY_FILE_PATH={data}/memory.jsonl", "--memory-recall-tool", "search_nodes",
                  "--memory-recall-args", '{"query": "{repo}"}', "--memory-write-tool", "create_entities")


def _payloads(results: Path, type_: str) -> list[dict[str, Any]]:
    return [p for *_, p in events(results, type_)]


def _blob(results: Path, digest: str) -> str:
    with Ledger.open(results / "ledger.db", readonly=True) as led:
        return led.get_blob(digest).decode()


def test_a_retest_row_recalls_the_server_as_of_its_task_while_tasks_run_at_once(
    tmp_path: Path, cache: Path, server_memory_bin: str
) -> None:
    results = tmp_path / "results"
    swecl(results, "run", "--stage", "plugin-blank", "--sequence", SPANS, "--passes", "initial",
          "--retest-every", "4", "--task-jobs", "2", "--memory-server", server_memory_bin, *SERVER_OPTIONS, "--quiet",
          cache=cache, timeout=900)
    (finished,) = _payloads(results, "run.finished")
    assert finished["status"] == "finished"
    tasks = first_tasks(SPANS, demo_tasks(SPANS))
    grades = {(p["pass"], p["instance_id"]): p["status"] for p in _payloads(results, "grade.finished")}
    assert set(grades) == {(p, iid) for p, n in (("initial", 8), ("retest-4", 4)) for iid in tasks[:n]}
    assert "infra_error" not in grades.values()
    # One snapshot per initial task, in order; none of the row's.
    snapshots = _payloads(results, "memory.provider.snapshot")
    assert [(s["pass"], s["order"]) for s in snapshots] == [("initial", k) for k in range(1, 9)]
    calls = _payloads(results, "memory.provider.called")
    # The row recalls the memory as the initial pass left it after task 4: tasks 1 to 4's
    # lessons, none of a later task's, however far the initial pass went on meanwhile.
    row = [c for c in calls if c["pass"] == "retest-4"]
    assert sorted(c["instance_id"] for c in row) == sorted(tasks[:4]) and {c["via"] for c in row} == {"recall"}
    for call in row:
        answer = _blob(results, call["result"])
        assert all(iid in answer for iid in tasks[:4]) and not any(iid in answer for iid in tasks[4:])
    # The initial pass's chain: each task recalls what every earlier one wrote.
    recalls = [c for c in calls if c["pass"] == "initial" and c["via"] == "recall"]
    assert [c["instance_id"] for c in recalls] == tasks
    for k, call in enumerate(recalls):
        answer = _blob(results, call["result"])
        assert all(earlier in answer for earlier in tasks[:k]) and tasks[k] not in answer


def test_sequences_in_worker_processes_each_get_their_own_server(
    tmp_path: Path, cache: Path, server_memory_bin: str
) -> None:
    results = tmp_path / "results"
    swecl(results, "run", "--stage", "plugin-blank", "--sequence", SPANS, "--sequence", TEXTKIT,
          *first_of(2, SPANS, TEXTKIT), "--passes", "initial", "--jobs", "2", "--memory-server", server_memory_bin,
          *SERVER_OPTIONS, "--quiet", cache=cache, timeout=900)
    (finished,) = _payloads(results, "run.finished")
    assert finished["status"] == "finished"
    hosts = _payloads(results, "memory.provider.started")
    assert sorted(h["sequence_id"] for h in hosts) == sorted([SPANS, TEXTKIT])
    calls = _payloads(results, "memory.provider.called")
    assert all(c["failure"] is None for c in calls)
    # The mapped variable's value reached each worker's server (never the ledger): its
    # file holds the tasks of its own sequence only.
    for sequence_id in (SPANS, TEXTKIT):
        own = first_tasks(sequence_id, 2)
        second = next(c for c in calls if c["via"] == "recall" and c["instance_id"] == own[1])
        answer = _blob(results, second["result"])
        assert own[0] in answer and not any(iid in answer for iid in first_tasks(
            TEXTKIT if sequence_id == SPANS else SPANS, 2))
