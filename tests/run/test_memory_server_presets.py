"""`swecl run --memory-server NAME` (a preset), tool discovery from a server's tool list,
and `swecl memory servers` (issue 69, part 1).

Real parts: the real `swecl run` on the demo spans sequence's first tasks with the demo
agent, confined in bubblewrap; the reference server from npm and basic-memory from PyPI,
the installs the other memory-server tests use (`server_memory_bin`, `basic_memory_bin`),
handed to the presets the way a user with their own install does ($SWECL_*_BIN); a small
stdio server written with the MCP SDK whose tools discovery cannot tell apart.
"""

from __future__ import annotations

import json
import shlex
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from commands.run.memory import PRESETS, propose_tools
from ledger import SweclError
from tests.agents.conftest import (  # noqa: F401  (the session fixtures: the npm and PyPI installs)
    BASIC_MEMORY_VERSION, SERVER_MEMORY_VERSION, basic_memory_bin, server_memory_bin,
)
from tests.inprocess import swecl as swecl_here

from .support import SPANS, events, first_of, first_tasks, swecl

TASKS = 3
FIRST = first_of(TASKS, SPANS)


def _payloads(results: Path, type_: str) -> list[dict[str, Any]]:
    return [p for *_, p in events(results, type_)]


def _memory_config(results: Path) -> dict[str, Any]:
    (started,) = _payloads(results, "run.started")
    return {k: v for k, v in started["config"].items() if k.startswith("memory_")}


def test_the_presets_are_pinned_to_the_versions_the_tests_install() -> None:
    assert PRESETS["server-memory"].version == SERVER_MEMORY_VERSION
    assert PRESETS["basic-memory"].version == BASIC_MEMORY_VERSION
    assert all(p.tested for p in PRESETS.values())  # each runs the demo in a test of its own


# -- presets, end to end --------------------------------------------------------------------


def _preset_run(results: Path, cache: Path, name: str, env: dict[str, str]) -> str:
    proc = swecl(results, "run", "--stage", "plugin-blank", "--sequence", SPANS, *FIRST, "--passes", "initial",
                 "--memory-server", name, "--quiet", cache=cache, env=env, timeout=900)
    return proc.stderr


def _recorded_preset(results: Path, name: str, version: str, recall: str, write: str) -> None:
    """The run recorded the preset, its version and tools, and called them around each task."""
    (finished,) = _payloads(results, "run.finished")
    assert finished["status"] == "finished"
    config = _memory_config(results)
    assert (config["memory_preset"], config["memory_preset_version"], config["memory_tools_from"]) == \
        (name, version, "preset")
    assert (config["memory_recall_tool"], config["memory_write_tool"]) == (recall, write)
    (host,) = _payloads(results, "memory.provider.started")
    assert (host["preset"], host["preset_version"], host["recall_tool"], host["write_tool"], host["tools_from"]) == \
        (name, version, recall, write, "preset")
    assert host["env_names"] == [k for k, _ in PRESETS[name].env]
    calls = _payloads(results, "memory.provider.called")
    assert [(c["via"], c["tool"], c["instance_id"]) for c in calls] == [
        (via, tool, iid) for iid in first_tasks(SPANS, TASKS) for via, tool in (("recall", recall), ("write", write))]
    assert all(c["failure"] is None and not c["is_error"] for c in calls)
    assert len(_payloads(results, "memory.provider.snapshot")) == TASKS


def test_server_memory_by_name_runs_the_users_install_and_recalls_the_earlier_tasks(
    tmp_path: Path, cache: Path, server_memory_bin: str  # noqa: F811
) -> None:
    results = tmp_path / "results"
    said = _preset_run(results, cache, "server-memory", {"SWECL_SERVER_MEMORY_BIN": server_memory_bin})
    assert said.strip() == (f"swecl: --memory-server server-memory: {server_memory_bin} (@modelcontextprotocol/"
                            f"server-memory {SERVER_MEMORY_VERSION}, from $SWECL_SERVER_MEMORY_BIN); "
                            "recall search_nodes, write create_entities")
    _recorded_preset(results, "server-memory", SERVER_MEMORY_VERSION, "search_nodes", "create_entities")
    # Its recall template finds what the earlier tasks of the repo wrote.
    last = _payloads(results, "memory.provider.called")[-2]
    from ledger import Ledger

    with Ledger.open(results / "ledger.db", readonly=True) as led:
        answer = led.get_blob(last["result"]).decode()
    assert all(iid in answer for iid in first_tasks(SPANS, TASKS)[:2])


def test_basic_memory_by_name_is_the_readmes_nine_lines_in_one(
    tmp_path: Path, cache: Path, basic_memory_bin: str  # noqa: F811
) -> None:
    results = tmp_path / "results"
    _preset_run(results, cache, "basic-memory", {"SWECL_BASIC_MEMORY_BIN": basic_memory_bin})
    _recorded_preset(results, "basic-memory", BASIC_MEMORY_VERSION, "search_notes", "write_note")
    assert _memory_config(results)["memory_server"] == shlex.join([basic_memory_bin, "mcp"])


def test_a_flag_beside_a_preset_wins_and_what_it_needs_is_asked_for_in_one_line(
    tmp_path: Path, cache: Path, server_memory_bin: str  # noqa: F811
) -> None:
    results = tmp_path / "results"
    plan = ("--stage", "plugin-blank", "--sequence", SPANS, *first_of(1, SPANS), "--passes", "initial", "--quiet")
    swecl(results, "run", *plan, "--memory-server", "server-memory", "--memory-recall-args", '{"query": "{instance_id}"}',
          "--memory-env", "MEMORY_FILE_PATH={data}/other.jsonl", cache=cache,
          env={"SWECL_SERVER_MEMORY_BIN": server_memory_bin})
    config = _memory_config(results)
    assert config["memory_recall_args"] == '{"query": "{instance_id}"}' and config["memory_env_names"] == \
        ["MEMORY_FILE_PATH"]
    (snapshot,) = _payloads(results, "memory.provider.snapshot")
    assert [f["path"] for f in snapshot["files"]] == ["other.jsonl"]
    for args, says in ((("--memory-server", "mem0"), "--memory-server mem0 needs --memory-env OPENAI_API_KEY=VALUE"),
                       (("--memory-server", "mem0", "--memory-env", "OPENAI_API_KEY=k"),
                        "no Python with mem0ai given ($SWECL_MEM0_PYTHON)"),
                       (("--memory-server", "cognee", "--memory-env", "LLM_API_KEY=k"),
                        "no cognee-mcp installed (on PATH or $SWECL_COGNEE_BIN)")):
        proc = swecl(tmp_path / "refused", "run", *plan, *args, cache=cache, check=False,
                     env={"SWECL_MEM0_PYTHON": "", "SWECL_COGNEE_BIN": ""})
        assert proc.returncode == 2 and says in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
        assert not (tmp_path / "refused" / "ledger.db").exists()


# -- discovery --------------------------------------------------------------------------------


def test_with_no_tool_flag_swecl_proposes_the_reference_servers_tools_and_records_them(
    tmp_path: Path, cache: Path, server_memory_bin: str  # noqa: F811
) -> None:
    results = tmp_path / "results"
    proc = swecl(results, "run", "--stage", "plugin-blank", "--sequence", SPANS, *first_of(2, SPANS), "--passes",
                 "initial", "--memory-server", server_memory_bin, "--memory-env", "MEMORY_FILE_PATH={data}/m.jsonl",
                 "--quiet", cache=cache, timeout=600)
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(f"swecl: --memory-server {server_memory_bin}: from its tool list, recall search_nodes")
    assert "write create_entities" in line
    config = _memory_config(results)
    assert (config["memory_recall_tool"], config["memory_write_tool"], config["memory_tools_from"]) == \
        ("search_nodes", "create_entities", "discovered")
    assert json.loads(config["memory_write_args"])["entities"][0]["name"] == "{instance_id}"
    (host,) = _payloads(results, "memory.provider.started")
    assert (host["recall_tool"], host["write_tool"], host["tools_from"], host["preset"]) == \
        ("search_nodes", "create_entities", "discovered", None)
    assert [(c["via"], c["tool"]) for c in _payloads(results, "memory.provider.called")] == \
        [("recall", "search_nodes"), ("write", "create_entities")] * 2


AMBIGUOUS = textwrap.dedent('''
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("two-searches", log_level="WARNING")

    async def find_notes(query: str) -> str:
        return ""

    async def find_facts(query: str) -> str:
        return ""

    async def save(content: str) -> str:
        return "ok"

    server.add_tool(find_notes, name="search_notes", description="search the notes", structured_output=False)
    server.add_tool(find_facts, name="search_facts", description="search the facts", structured_output=False)
    server.add_tool(save, name="save_note", description="keep a note", structured_output=False)
    server.run("stdio")
''')


def test_a_server_with_two_equally_good_recall_tools_is_refused_in_one_line(tmp_path: Path, cache: Path) -> None:
    results = tmp_path / "results"
    proc = swecl(results, "run", "--stage", "plugin-blank", "--sequence", SPANS, *first_of(1, SPANS), "--passes",
                 "initial", "--memory-server", f"{sys.executable} -c {shlex.quote(AMBIGUOUS)}", "--quiet",
                 cache=cache, check=False, timeout=300)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "search_notes and search_facts are equally good recall tools: name one with --memory-recall-tool" in line
    assert not (results / "ledger.db").exists()


def _tool(name: str, description: str, props: dict[str, Any], required: list[str], **hints: bool) -> dict[str, Any]:
    return {"name": name, "description": description, "annotations": hints,
            "inputSchema": {"type": "object", "properties": props, "required": required}}


S = {"type": "string"}


def test_discovery_reads_names_schemas_and_hints() -> None:
    # basic-memory's own pair: a required query beats an optional one; write_note's
    # required strings are named (title, folder, text); its delete and edit tools never write.
    tools = [
        _tool("search_notes", "Search notes", {"query": {"anyOf": [S, {"type": "null"}]}}, [], readOnlyHint=True),
        _tool("search", "Search adapter", {"query": S}, ["query"], readOnlyHint=True),
        _tool("write_note", "Create a note", {"title": S, "content": S, "directory": S},
              ["title", "content", "directory"], readOnlyHint=False, destructiveHint=True),
        _tool("delete_note", "Delete a note", {"identifier": S}, ["identifier"], destructiveHint=True),
        _tool("edit_note", "Add to a note", {"identifier": S, "content": S}, ["identifier", "content"]),
        _tool("create_project", "Create a project", {"project_path": S}, ["project_path"]),
    ]
    proposal = propose_tools(tools, "srv")
    assert (proposal.recall_tool, json.loads(proposal.recall_args)) == ("search", {"query": "{query}"})
    assert proposal.write_tool == "write_note"
    assert json.loads(proposal.write_args) == {"title": "{instance_id}", "content": "{summary}\n\n{lesson}",
                                               "directory": "swecl"}
    # A tool marked read-only never writes, one marked otherwise never recalls.
    with pytest.raises(SweclError, match="no tool of it looks like a write tool"):
        propose_tools([_tool("search", "find", {"query": S}, ["query"]),
                       _tool("add_note", "add", {"text": S}, ["text"], readOnlyHint=True)], "srv")
    with pytest.raises(SweclError, match="no tool of it looks like a recall tool"):
        propose_tools([_tool("search", "find", {"query": S}, ["query"], readOnlyHint=False)], "srv")


# -- swecl memory servers -------------------------------------------------------------------------


def test_swecl_memory_servers_lists_the_presets_as_a_table_and_as_json(tmp_path: Path, cache: Path) -> None:
    lines = swecl_here(tmp_path, "memory", "servers", cache=cache, env={"COLUMNS": "100"}).stdout.splitlines()
    assert lines[0].split() == ["name", "version", "tested", "needs", "recall", "write"]
    rows = {line.split()[0]: line.split() for line in lines if not line.startswith(" ")}
    assert rows["server-memory"][1:] == [SERVER_MEMORY_VERSION, "yes", "-", "search_nodes", "create_entities"]
    assert rows["mem0"][1:4] == ["2.2.1", "yes", "OPENAI_API_KEY"]
    assert all(len(line) <= 100 for line in lines)
    listed = json.loads(swecl_here(tmp_path, "memory", "servers", "--json", cache=cache).stdout)
    assert [p["name"] for p in listed] == list(PRESETS)
    (cognee,) = [p for p in listed if p["name"] == "cognee"]
    assert cognee["model_endpoint"] == "https://api.openai.com/v1" and cognee["needs"] == ["LLM_API_KEY"]
    assert cognee["env"]["LLM_ENDPOINT"] == "{model_gateway}" and cognee["allow_hosts"] == []  # every model call through the gateway
