"""`swecl run --memory-server` with basic-memory (PyPI), an MCP memory server that keeps
markdown notes in a project folder and indexes them in SQLite.

Real parts: basic-memory from PyPI (installed once per machine by the `basic_memory_bin`
fixture; it needs Python 3.12 or newer), confined in bubblewrap with no network, its home
and config folders mapped into the run's server data directory with --memory-env; the
real `swecl run` on the demo spans sequence's first tasks with the demo agent, which
recalls through `search_notes` and has its lesson written with `write_note`; a real ledger.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from commands import Experiment
from tests.agents.conftest import basic_memory_bin  # noqa: F401  (the session fixture: the PyPI install)

from .support import recalled_lessons, REPO_ROOT, SPANS, events, first_of, first_tasks, swecl

TASKS = 3
# The server's own update checks and banner off (it has no network in the sandbox anyway);
# its notes and its config (SQLite index, log) in the data directory swecl snapshots.
SERVER_ENV = ("BASIC_MEMORY_HOME={data}/notes", "BASIC_MEMORY_CONFIG_DIR={data}/config",
              "BASIC_MEMORY_AUTO_UPDATE=false", "FASTMCP_CHECK_FOR_UPDATES=off")
RECALL_ARGS = '{"query": "swecl", "search_type": "text", "output_format": "json"}'
WRITE_ARGS = '{"title": "{instance_id}", "directory": "swecl", "content": "{summary}\\n\\n{lesson}"}'


def command_line(binary: str) -> list[str]:
    """The options the basic-memory preset stands for, given by hand, with the install's path."""
    env = [arg for value in SERVER_ENV for arg in ("--memory-env", value)]
    return ["--memory-server", f"{binary} mcp", *env, "--memory-recall-tool", "search_notes",
            "--memory-recall-args", RECALL_ARGS, "--memory-write-tool", "write_note", "--memory-write-args", WRITE_ARGS]


def test_the_readme_gives_the_preset_which_is_this_command_line() -> None:
    from commands.run.memory import PRESETS

    readme = " ".join((REPO_ROOT / "README.md").read_text().replace("\\\n", " ").split())
    assert f"swecl run --stage plugin-blank --sequence {SPANS} --memory-server basic-memory" in readme
    # The preset stands for the options this file's run gives by hand.
    preset = PRESETS["basic-memory"]
    assert ([f"{k}={v}" for k, v in preset.env], preset.recall_tool, preset.recall_args, preset.write_tool,
            preset.write_args) == (list(SERVER_ENV), "search_notes", RECALL_ARGS, "write_note", WRITE_ARGS)


def _payloads(results: Path, type_: str) -> list[dict[str, Any]]:
    return [p for *_, p in events(results, type_)]


def _notes(data: Path) -> dict[str, str]:
    """The markdown notes under a data directory, by name."""
    return {p.stem: p.read_text() for p in sorted((data / "notes").rglob("*.md"))}


@pytest.fixture(scope="module")
def bm_run(tmp_path_factory: pytest.TempPathFactory, cache: Path, basic_memory_bin: str) -> Path:
    results = tmp_path_factory.mktemp("basic-memory-run")
    swecl(results, "run", "--stage", "plugin-blank", "--sequence", SPANS, *first_of(TASKS, SPANS),
          "--passes", "initial", *command_line(basic_memory_bin), "--quiet", cache=cache, timeout=900)
    return results


def test_every_call_is_recorded_and_a_snapshot_follows_each_task(bm_run: Path) -> None:
    tasks = first_tasks(SPANS, TASKS)
    (finished,) = _payloads(bm_run, "run.finished")
    assert finished["status"] == "finished"
    (host,) = _payloads(bm_run, "memory.provider.started")
    assert host["server_name"] == "Basic Memory" and {"search_notes", "write_note"} <= set(host["tools"])
    calls = _payloads(bm_run, "memory.provider.called")
    assert [(c["via"], c["tool"], c["instance_id"]) for c in calls] == [
        (via, tool, iid) for iid in tasks for via, tool in (("recall", "search_notes"), ("write", "write_note"))]
    assert [c["call"] for c in calls] == list(range(1, 2 * TASKS + 1))
    assert all(c["failure"] is None and not c["is_error"] for c in calls)
    assert all(p["status"] != "infra_error" for p in _payloads(bm_run, "grade.finished"))
    snaps = _payloads(bm_run, "memory.provider.snapshot")
    assert [(s["pass"], s["order"], s["instance_id"]) for s in snaps] == [
        ("initial", k, iid) for k, iid in enumerate(tasks, start=1)]
    for k, snap in enumerate(snaps, start=1):
        notes = [f["path"] for f in snap["files"] if f["path"].startswith("notes/")]
        assert sorted(notes) == sorted(f"notes/swecl/{iid}.md" for iid in tasks[:k])


def test_a_later_task_recalls_an_earlier_ones_lesson_as_the_demo_agent_reads_it(bm_run: Path) -> None:
    from commands.run.memory import recalled_items
    from ledger import Ledger

    first, second, third = first_tasks(SPANS, TASKS)
    (recall, _write) = Experiment(bm_run).show("1", third).shown.provider_calls
    with Ledger.open(bm_run / "ledger.db", readonly=True) as led:
        answer = led.get_blob(recall.result_blob or "").decode()
    # What the harness's recall hands the demo agent: the earlier tasks' lessons, patch and all.
    items = recalled_items({"content": [{"type": "text", "text": answer}]}, k=5)
    assert sorted(i.source_instance or "" for i in items) == sorted([first, second])
    assert all(i.kind == "provider" and i.outcome for i in items)


def test_replay_as_of_order_restores_the_notes_as_they_were_before_task_k(bm_run: Path, tmp_path: Path) -> None:
    tasks = first_tasks(SPANS, TASKS)
    exp = Experiment(bm_run)
    (sequence,) = (p.name for p in (bm_run / "v1" / "_provider").iterdir())
    live = bm_run / "v1" / "_provider" / sequence / "initial" / "data"
    for k in range(1, TASKS + 2):
        out = tmp_path / f"k{k}"
        exp.replay(version="1", upto_order=k, out_dir=out)
        data = out / "provider" / sequence / "data"
        notes = _notes(data) if (data / "notes").exists() else {}
        assert sorted(notes) == sorted(tasks[: k - 1])
        for iid, text in notes.items():  # each note is the lesson its task's write gave
            assert text.startswith("---\ntitle: " + iid) and f'"instance_id":"{iid}"' in text
    # After the last task: the server's notes as it left them, byte for byte.
    assert _notes(tmp_path / f"k{TASKS + 1}" / "provider" / sequence / "data") == _notes(live)


def test_audit_attributes_the_returned_notes_to_the_tasks_that_wrote_them(bm_run: Path, cache: Path) -> None:
    first, second, third = first_tasks(SPANS, TASKS)
    (recall,) = Experiment(bm_run).audit("1", third, pass_="initial").audit.provider_recalls
    # search_notes answered one line of JSON: its string values are the returned lines.
    # The server ranks its results: the writes come in the order their lines came.
    assert sorted((w.order, w.instance_id) for w in recall.writes) == [(1, first), (2, second)]
    assert all(not w.flags for w in recall.writes)  # earlier tasks, in order, no test content
    lessons = recalled_lessons(recall)
    assert sorted(line.instance_id or "" for line in lessons) == sorted([first, second])
    text = swecl(bm_run, "audit", "1", third, "--pass", "initial", "--no-dataset", cache=cache).stdout
    assert f"    {first} (task 1, initial attempt 1): write_note #2 at seq" in text
