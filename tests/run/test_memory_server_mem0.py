"""`swecl run --memory-server mem0`: mem0's open-source memory (PyPI `mem0ai`, served over
MCP by swecl's bridge), its own model calls made through the recording gateway (issue 69).

Real parts: mem0ai and the MCP SDK from PyPI (`mem0_python`), confined in bubblewrap with
no network; mem0's embedded Qdrant and history database in the data directory swecl
snapshots; its extraction (one JSON-mode chat call a write) and its embeddings answered by
the loopback fake of the OpenAI API (`tests.fake_openai_compat`, checked against the
official client), which the server reaches only through swecl's gateway; the real
`swecl run` of the demo spans sequence's first tasks with the demo agent; a real ledger.
The reference knowledge-graph server (npm) runs the same tasks beside it, and
`swecl compare` sets the two presets apart.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from commands import Experiment
from commands.run.memory import PRESETS
from tests.agents.conftest import (  # noqa: F401  (the session fixtures: the PyPI and npm installs)
    MEM0_MCP, MEM0_VERSION, mem0_python, server_memory_bin,
)
from tests.fake_openai_compat import fake_openai_compat

from .support import recalled_lessons, SPANS, events, first_of, first_tasks, no_secret_in_the_results, swecl, swecl_json

pytest.importorskip("openai")

TASKS = 3
KEY = "sk-test-mem0preset-2b7e4f19c0a3d5e8"


def _payloads(results: Path, type_: str) -> list[dict[str, Any]]:
    return [p for *_, p in events(results, type_)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, cache: Path, mem0_python: str,  # noqa: F811
         server_memory_bin: str) -> tuple[Path, list[Any]]:  # noqa: F811
    """v1: mem0 by name against the fake; v2: the reference server by name, the same tasks."""
    results = tmp_path_factory.mktemp("mem0-run")
    plan = ("run", "--stage", "plugin-blank", "--sequence", SPANS, *first_of(TASKS, SPANS), "--passes", "initial",
            "--quiet")
    with fake_openai_compat() as (fake, url):
        swecl(results, *plan, "--memory-server", "mem0", "--memory-env", f"OPENAI_API_KEY={KEY}",
              "--memory-model-endpoint", url, cache=cache, env={"SWECL_MEM0_PYTHON": mem0_python}, timeout=900)
        seen = list(fake.requests)
    swecl(results, *plan, "--memory-server", "server-memory", cache=cache,
          env={"SWECL_SERVER_MEMORY_BIN": server_memory_bin}, timeout=900)
    return results, seen


def test_the_preset_is_pinned_to_what_the_tests_install() -> None:
    preset = PRESETS["mem0"]
    assert (preset.package, preset.version, preset.extra, preset.tested) == ("mem0ai", MEM0_VERSION, (MEM0_MCP,), True)
    assert preset.script and Path(preset.script).is_file() and preset.args == (preset.script,)


def test_mem0_by_name_runs_offline_and_each_of_its_model_calls_is_an_event(runs: tuple[Path, list[Any]]) -> None:
    results, seen = runs
    tasks = first_tasks(SPANS, TASKS)
    finished = _payloads(results, "run.finished")
    assert [f["status"] for f in finished] == ["finished", "finished"]
    host = _payloads(results, "memory.provider.started")[0]
    assert (host["preset"], host["preset_version"], host["recall_tool"], host["write_tool"], host["tools_from"]) == \
        ("mem0", MEM0_VERSION, "search_memories", "add_memory", "preset")
    assert host["confined"] and not host["network"]
    calls = [c for c in _payloads(results, "memory.provider.called") if c["tool"] in ("search_memories", "add_memory")]
    assert [(c["via"], c["instance_id"]) for c in calls] == [(via, iid) for iid in tasks for via in ("recall", "write")]
    assert all(c["failure"] is None and not c["is_error"] for c in calls)
    # Every request the API saw came through the gateway and is an event of its task: the
    # recall's query embedding; the write's search of what mem0 holds, its extraction (one
    # chat call), the extracted memories' embeddings.
    model = _payloads(results, "memory.model.called")
    assert len(model) == len(seen) > 0 and all(s.key_tail == KEY[-4:] for s in seen)
    assert [(m["instance_id"], m["via"], m["kind"]) for m in model] == [
        (iid, via, kind) for iid in tasks for via, kind in
        (("recall", "embeddings"), ("write", "embeddings"), ("write", "chat"), ("write", "embeddings"))]
    assert all(m["status"] == 200 and m["tokens_in"] and m["cost_usd"] for m in model)
    assert all(m["tokens_out"] for m in model if m["kind"] == "chat")
    # Its store is in the snapshotted folder: a snapshot after each task holds it.
    snaps = _payloads(results, "memory.provider.snapshot")[:TASKS]
    assert all({"mem0/history.db", "mem0/qdrant/collection/mem0/storage.sqlite"} <= {f["path"] for f in s["files"]}
               for s in snaps)


def test_a_later_task_recalls_what_mem0_extracted_and_the_audit_names_its_writers(
        runs: tuple[Path, list[Any]]) -> None:
    results, _ = runs
    first, second, third = first_tasks(SPANS, TASKS)
    (recall,) = Experiment(results).audit("1", third, pass_="initial").audit.provider_recalls
    assert {w.instance_id for w in recall.writes} == {first, second}
    assert recall.unattributed == 0  # each memory mem0 returned is a line of an earlier lesson
    assert recalled_lessons(recall)


def _stored(mem0_python: str, data: Path) -> list[str]:
    """The memories mem0 itself reads from a data directory (no model call: get_all)."""
    script = ("import json, mem0_mcp; from mem0 import Memory; m = Memory.from_config(mem0_mcp._config()); "
              "print(json.dumps(sorted(r['memory'] for r in m.get_all(filters={'user_id': 'swecl'})['results'])))")
    env = {"MEM0_DATA": str(data / "mem0"), "MEM0_DIR": str(data / "mem0-home"), "MEM0_TELEMETRY": "false",
           "OPENAI_API_KEY": "unused", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
           "PYTHONPATH": str(Path(PRESETS["mem0"].script or "").parent), "HOME": str(data.parent)}
    done = subprocess.run([mem0_python, "-c", script], env=env, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_replay_as_of_any_task_restores_a_store_mem0_reads(runs: tuple[Path, list[Any]], tmp_path: Path,
                                                           mem0_python: str) -> None:  # noqa: F811
    results, _ = runs
    tasks = first_tasks(SPANS, TASKS)
    exp = Experiment(results)
    (sequence,) = (p.name for p in (results / "v1" / "_provider").iterdir())
    for k in range(1, TASKS + 2):
        out = tmp_path / f"k{k}"
        exp.replay(version="1", upto_order=k, out_dir=out)
        data = out / "provider" / sequence / "data"
        stored = _stored(mem0_python, data) if (data / "mem0").exists() else []
        lessons = [json.loads(m.split(" ", 1)[1])["instance_id"] for m in stored if m.startswith("swecl-lesson ")]
        assert sorted(lessons) == sorted(tasks[: k - 1])


def test_the_key_is_nowhere_in_the_ledger_or_the_results(runs: tuple[Path, list[Any]]) -> None:
    no_secret_in_the_results(runs[0], KEY)


def test_compare_sets_the_two_presets_apart_cost_per_solved_task_included(
        runs: tuple[Path, list[Any]], cache: Path) -> None:
    results, _ = runs
    doc = swecl_json(results, "compare", "1", "2", cache=cache)
    mem0, reference = doc["cost_per_solved"]["1"], doc["cost_per_solved"]["2"]
    spent = sum(m["cost_usd"] for m in _payloads(results, "memory.model.called"))
    solved = mem0["run"]["solved"]
    assert solved and mem0["memory_run"]["spend"]["cost_usd"] == pytest.approx(spent)
    assert mem0["memory_run"]["usd_per_solved"] == pytest.approx(spent / solved)
    # The demo agent reports no cost: the agents' side is "not reported", never $0; the
    # reference server calls no model through swecl, so it has no memory spend to show.
    assert mem0["run"]["usd_per_solved"] is None and mem0["run"]["usd_na"].startswith("not reported")
    assert reference["memory_run"] is None and doc["cost_per_solved_diff"]["total_usd_per_solved"] is None
    text = " ".join(swecl(results, "compare", "1", "2", cache=cache).stdout.split())
    assert f"the memory's own model calls: ${spent / solved:.2g}" in text
