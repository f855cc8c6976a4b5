"""`swecl run --memory-server cognee`: cognee's MCP server (PyPI `cognee-mcp`), which
builds a knowledge graph and vectors of what it is given with an LLM and an embedding
model, its model calls made through the recording gateway (issue 69).

Real parts: cognee-mcp and cognee from PyPI (`cognee_bin`: the preset's own install,
without torch), confined in bubblewrap with no network; its SQLite, LanceDB and graph
database in the data directory swecl snapshots; its structured extraction (JSON-schema
answers), summaries and embeddings answered by the loopback fake of the OpenAI API
(`tests.fake_openai_compat`, `tests.fake_structured`), which it reaches only through
swecl's gateway; the real `swecl run` of the demo spans sequence's first tasks with the
demo agent; a real ledger.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from commands import Experiment
from commands.run.memory import PRESETS
from tests.agents.conftest import COGNEE_MCP_VERSION, cognee_bin  # noqa: F401  (the session fixture: the install)
from tests.fake_openai_compat import fake_openai_compat

from .support import recalled_lessons, SPANS, events, first_of, first_tasks, no_secret_in_the_results, swecl

TASKS = 3
KEY = "sk-test-cogneepreset-7d41a9e2c5b8f036"


def _payloads(results: Path, type_: str) -> list[dict[str, Any]]:
    return [p for *_, p in events(results, type_)]


@pytest.fixture(scope="module")
def cognee_run(tmp_path_factory: pytest.TempPathFactory, cache: Path,
               cognee_bin: str) -> tuple[Path, list[Any]]:  # noqa: F811
    results = tmp_path_factory.mktemp("cognee-run")
    with fake_openai_compat() as (fake, url):
        swecl(results, "run", "--stage", "plugin-blank", "--sequence", SPANS, *first_of(TASKS, SPANS), "--passes",
              "initial", "--memory-server", "cognee", "--memory-env", f"LLM_API_KEY={KEY}",
              "--memory-model-endpoint", url, "--quiet", cache=cache, env={"SWECL_COGNEE_BIN": cognee_bin},
              timeout=900)
        return results, list(fake.requests)


def test_the_preset_is_pinned_to_what_the_tests_install() -> None:
    preset = PRESETS["cognee"]
    assert (preset.package, preset.version, preset.no_deps, preset.tested) == \
        ("cognee-mcp", COGNEE_MCP_VERSION, True, True)
    assert not any(e.split("=")[0].split(">")[0].split("<")[0] == "torch" for e in preset.extra)


def test_cognee_by_name_runs_offline_and_each_of_its_model_calls_is_an_event(
        cognee_run: tuple[Path, list[Any]]) -> None:
    results, seen = cognee_run
    tasks = first_tasks(SPANS, TASKS)
    (finished,) = _payloads(results, "run.finished")
    assert finished["status"] == "finished"
    (host,) = _payloads(results, "memory.provider.started")
    assert (host["preset"], host["preset_version"], host["recall_tool"], host["write_tool"], host["tools_from"]) == \
        ("cognee", COGNEE_MCP_VERSION, "recall", "remember", "preset")
    assert host["confined"] and not host["network"]
    assert "TIKTOKEN_CACHE_DIR" in host["env_names"]  # its tokenizer's encodings from the install, not the network
    calls = _payloads(results, "memory.provider.called")
    assert [(c["via"], c["instance_id"]) for c in calls] == [(via, iid) for iid in tasks for via in ("recall", "write")]
    assert all(c["failure"] is None and not c["is_error"] for c in calls)
    # Nowhere to go but the gateway: every connection it asked for was allowed.
    assert all(e["allowed"] for c in calls for e in c["egress"])
    model = _payloads(results, "memory.model.called")
    assert len(model) == len(seen) > 0 and all(s.key_tail == KEY[-4:] for s in seen)
    assert all(m["status"] == 200 and m["tokens_in"] and m["cost_usd"] for m in model)
    assert {m["model"] for m in model} == {"gpt-4o-mini", "text-embedding-3-small"}
    for iid in tasks:  # each write cognifies: its own chat calls (graph, summary) and embeddings
        kinds = [m["kind"] for m in model if m["instance_id"] == iid and m["via"] == "write"]
        assert kinds.count("chat") >= 2 and kinds.count("embeddings") >= 1
    # Recall by CHUNKS: the stored text, no model call but the query's embedding.
    assert {m["kind"] for m in model if m["via"] == "recall"} <= {"embeddings"}


def test_a_later_task_recalls_earlier_lessons_and_the_audit_names_their_writers(
        cognee_run: tuple[Path, list[Any]]) -> None:
    results, _ = cognee_run
    first, second, third = first_tasks(SPANS, TASKS)
    (recall,) = Experiment(results).audit("1", third, pass_="initial").audit.provider_recalls
    assert {w.instance_id for w in recall.writes} == {first, second}
    lessons = recalled_lessons(recall)
    assert sorted(line.instance_id or "" for line in lessons) == sorted([first, second])


def _files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_replay_restores_cognees_databases_as_of_any_task(cognee_run: tuple[Path, list[Any]], tmp_path: Path) -> None:
    results, _ = cognee_run
    exp = Experiment(results)
    (sequence,) = (p.name for p in (results / "v1" / "_provider").iterdir())
    live = results / "v1" / "_provider" / sequence / "initial" / "data"
    snapshots = _payloads(results, "memory.provider.snapshot")
    assert len(snapshots) == TASKS
    for k in range(1, TASKS + 2):
        out = tmp_path / f"k{k}"
        exp.replay(version="1", upto_order=k, out_dir=out)
        restored = _files(out / "provider" / sequence / "data")
        # before task k: the snapshot taken after task k - 1 (nothing before the first)
        expected = {} if k == 1 else {f["path"]: f for f in snapshots[k - 2]["files"]}
        assert sorted(restored) == sorted(expected)
        assert k == 1 or any(path.startswith("system/databases/") for path in restored)
    assert _files(tmp_path / f"k{TASKS + 1}" / "provider" / sequence / "data") == _files(live)


def test_the_key_is_nowhere_in_the_ledger_or_the_results(cognee_run: tuple[Path, list[Any]]) -> None:
    no_secret_in_the_results(cognee_run[0], KEY)
