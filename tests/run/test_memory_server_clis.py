"""`swecl run --memory-server` with the real CLI agents (claude, codex, gemini).

Real parts: the real `swecl run` of the plugin-blank stage on the demo spans sequence's
first two tasks, sandboxed as a run is; the real vendor CLI from npm against its loopback
fake API; the reference knowledge-graph server `@modelcontextprotocol/server-memory`
from npm as the user's memory server. The scripted model searches the server, writes an
entity to it, edits a source file and finishes: the calls must reach the server through
swecl's recording proxy (the CLI's `memory` MCP server) and be recorded as
`memory.provider.called` under the task that made them, and the second task must find
what the first one wrote.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from commands import Experiment
from ledger import Ledger
from tests.agents.conftest import claude_bin, codex_bin, gemini_bin, server_memory_bin  # noqa: F401  (session fixtures)
from tests.agents import fake_anthropic, fake_gemini, fake_openai

from .support import SPANS, events, first_of, swecl, swecl_json

pytestmark = pytest.mark.slow

TASKS = 2
SEARCH = ("search_nodes", {"query": "spans"})


def _issue_title(prompt_json: str) -> str:
    found = re.search(r"<issue>\\n(.*?)\\n", prompt_json)
    assert found, "the task prompt holds the issue"
    return str(json.loads(f'"{found.group(1)}"')).strip()[:80]


def write_of(title: str) -> tuple[str, dict[str, Any]]:
    """What the model writes for the task whose issue starts with `title`: one entity."""
    return ("create_entities", {"entities": [{"name": f"lesson: {title}", "entityType": "lesson",
                                              "observations": [f"spans: read the failing test first ({title})"]}]})


# The model's moves per CLI: step n of a task -> the reply (search, write, edit, finish).
Script = Callable[[dict[str, Any]], list[dict[str, Any]]]
FINAL = "Searched and wrote the memory, added a note to the package."


def claude_script(body: dict[str, Any]) -> list[dict[str, Any]]:
    step = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
    title = _issue_title(json.dumps(body.get("messages", [])[:1]))
    moves = [SEARCH, write_of(title)]
    if step < len(moves):
        tool, args = moves[step]
        return [fake_anthropic.tool_use(f"mcp__memory__{tool}", args)]
    if step == len(moves):
        return [fake_anthropic.tool_use("Bash", {"command": "echo '# looked at by claude' >> spans/__init__.py"})]
    return [fake_anthropic.text(FINAL)]


def codex_script(body: dict[str, Any]) -> list[dict[str, Any]]:
    step = fake_openai.responses_so_far(body)
    title = _issue_title(json.dumps(body.get("input", [])))
    if step == 0:  # codex may defer MCP tools behind its tool search
        return [fake_openai.tool_search("memory search_nodes create_entities", limit=20)]
    moves = [SEARCH, write_of(title)]
    if step - 1 < len(moves):
        tool, args = moves[step - 1]
        return [fake_openai.mcp_call("memory", tool, args)]
    if step - 1 == len(moves):
        return [fake_openai.exec_command("echo '# looked at by codex' >> spans/__init__.py")]
    return [fake_openai.text(FINAL)]


def gemini_script(body: dict[str, Any]) -> list[dict[str, Any]]:
    step = fake_gemini.model_turns(body)
    title = _issue_title(json.dumps(body.get("contents", [])))
    moves = [SEARCH, write_of(title)]
    if step < len(moves):
        tool, args = moves[step]
        return [fake_gemini.function_call(f"mcp_memory_{tool}", args)]
    if step == len(moves):
        return [fake_gemini.function_call("run_shell_command", {"command": "echo '# looked at by gemini' >> spans/__init__.py",
                                                                "description": "note"})]
    return [fake_gemini.text(FINAL)]


def _blob(results: Path, digest: str) -> str:
    with Ledger.open(results / "ledger.db", readonly=True) as led:
        return led.get_blob(digest).decode()


def provider_run(results: Path, cache: Path, agent: str, model: str, env: dict[str, str], server: str) -> None:
    swecl(results, "run", "--stage", "plugin-blank", "--agent", agent, "--model", model, "--sequence", SPANS,
          *first_of(TASKS, SPANS), "--passes", "initial", "--memory-server", server, "--memory-agent-only",
          "--memory-env", "MEMORY_FILE_PATH={data}/memory.jsonl", "--quiet", cache=cache, env=env, timeout=900)


def the_agent_used_the_provider(results: Path, cache: Path, agent: str, tool_names: dict[str, str],
                                edited: str) -> None:
    """Each task's agent searched and wrote the user's memory server with its own tools,
    through the proxy, recorded under the task; task 2 found task 1's entity; each patch
    was graded. `tool_names`: the provider's tool -> the name the CLI's tool calls record."""
    (run,) = swecl_json(results, "runs", cache=cache)
    assert (run["agent"], run["status"]) == (agent, "finished")
    (host,) = [p for *_, p in events(results, "memory.provider.started")]
    assert host["server_name"] == "memory-server" and {"search_nodes", "create_entities"} <= set(host["tools"])
    assert host["confined"]  # sandboxed as a run is: the agent reached the server through its door only
    agents = sorted((p for *_, p in events(results, "agent.finished")), key=lambda a: a["order"])
    assert len(agents) == TASKS and {a["exit"] for a in agents} == {"completed"}, [a.get("error") for a in agents]
    calls = [(seq, p) for seq, _, _, p in events(results, "memory.provider.called")]
    titles = []
    writes = []  # (seq, call) of each task's create_entities
    for task in agents:
        prompt = _blob(results, task["prompt"])
        # The prompt names the server's own tools as it announced them, not swecl's `recall`.
        assert all(f"`{t}`" in prompt for t in host["tools"]) and "`recall`" not in prompt
        recorded = [c["name"] for c in task["tool_calls"]]
        assert [n for n in recorded if n.startswith("mcp__")] == [tool_names["search_nodes"], tool_names["create_entities"]]
        mine = [c for _, c in calls if (c["instance_id"], c["order"], c["pass"], c["attempt"])
                == (task["instance_id"], task["order"], "initial", task["attempt"])]
        writes += [(seq, c["call"]) for seq, c in calls if c is mine[-1]]
        title = _issue_title(json.dumps(prompt))
        titles.append(title)
        assert [(c["via"], c["tool"]) for c in mine] == [("agent", "search_nodes"), ("agent", "create_entities")]
        assert all(c["failure"] is None and not c["is_error"] for c in mine)
        search, write = mine
        assert json.loads(_blob(results, search["arguments"])) == SEARCH[1]
        assert json.loads(_blob(results, write["arguments"])) == write_of(title)[1]
        found = _blob(results, search["result"])
        # What the first task wrote, the second task's search found (and nothing before).
        assert all(f"lesson: {t}" in found for t in titles[:-1]) and f"lesson: {title}" not in found
    assert len(calls) == 2 * TASKS  # no recall or write tool named: only the agent's calls
    # swecl audit: the server's tool list marks search_nodes read-only and create_entities
    # not, so the second task's search is what it was told, and the lines it returned of
    # the first task's entity are attributed to the first task's own create_entities call.
    first, second = (a["instance_id"] for a in agents)
    (search,) = Experiment(results).audit(run["version"], second, pass_="initial", no_dataset=True).audit.provider_recalls
    assert (search.via, search.tool) == ("agent", "search_nodes")
    (source,) = search.writes
    assert (source.seq, source.call) == writes[0]
    assert (source.via, source.tool, source.instance_id, source.order, source.flags) == (
        "agent", "create_entities", first, 1, [])
    by_line = {line.text: line.write_seq for line in search.lines}
    assert by_line[f'"name": "lesson: {titles[0]}"'] == source.seq
    assert [t for t, w in by_line.items() if f"read the failing test first ({titles[0]})" in t and w == source.seq]
    grades = [p for *_, p in events(results, "grade.finished")]
    assert len(grades) == TASKS and not {g["status"] for g in grades} & {"empty_patch", "agent_error", "infra_error"}
    shown = swecl_json(results, "show", run["version"], "1", cache=cache)
    assert edited in shown["patch"] and shown["final_message"] == FINAL


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    return home


def test_claude_uses_the_memory_servers_own_tools(tmp_path: Path, cache: Path, claude_bin: str,  # noqa: F811
                                                  server_memory_bin: str) -> None:  # noqa: F811
    results = tmp_path / "results"
    with fake_anthropic.FakeAnthropic(script=claude_script) as fake:
        env = {"ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "sk-ant-test-" + "7" * 40,
               "SWECL_CLAUDE_BIN": claude_bin, "HOME": str(_home(tmp_path))}
        provider_run(results, cache, "claude", "claude-fake", env, server_memory_bin)
    the_agent_used_the_provider(results, cache, "claude", {t: f"mcp__memory__{t}" for t in ("search_nodes", "create_entities")},
                                "+# looked at by claude")
    # The model was offered the server's tools under the CLI's `memory` server.
    offered = {t["name"] for r in fake.api_requests for t in r.body.get("tools") or []}
    assert {"mcp__memory__search_nodes", "mcp__memory__create_entities"} <= offered


def test_codex_uses_the_memory_servers_own_tools(tmp_path: Path, cache: Path, codex_bin: str,  # noqa: F811
                                                 server_memory_bin: str) -> None:  # noqa: F811
    results = tmp_path / "results"
    with fake_openai.FakeOpenAI(script=codex_script) as fake:
        env = {"OPENAI_BASE_URL": fake.url, "OPENAI_API_KEY": "sk-proj-test-" + "7" * 40,
               "SWECL_CODEX_BIN": codex_bin, "HOME": str(_home(tmp_path))}
        provider_run(results, cache, "codex", fake_openai.MODEL, env, server_memory_bin)
    the_agent_used_the_provider(results, cache, "codex", {t: f"mcp__memory__{t}" for t in ("search_nodes", "create_entities")},
                                "+# looked at by codex")


def test_gemini_uses_the_memory_servers_own_tools(tmp_path: Path, cache: Path, gemini_bin: str,  # noqa: F811
                                                  server_memory_bin: str) -> None:  # noqa: F811
    results = tmp_path / "results"
    secret = "AIzaSy-test-" + "7" * 28
    with fake_gemini.FakeGemini(script=gemini_script, expected_key=secret) as fake:
        env = {"GOOGLE_GEMINI_BASE_URL": fake.url, "GEMINI_API_KEY": secret, "SWECL_GEMINI_BIN": gemini_bin,
               "HOME": str(_home(tmp_path))}
        provider_run(results, cache, "gemini", fake_gemini.MODEL, env, server_memory_bin)
    the_agent_used_the_provider(results, cache, "gemini", {t: f"mcp__memory__{t}" for t in ("search_nodes", "create_entities")},
                                "+# looked at by gemini")
    offered = {n for r in fake.api_requests for n in fake_gemini.declared_tools(r.body)}
    assert {"mcp_memory_search_nodes", "mcp_memory_create_entities"} <= offered


# Tool names the Gemini CLI cannot offer the model as they are: a `/` and a space (made
# `_`), and a name that with its `mcp_memory_` prefix passes 63 characters (cut in the
# middle). A small server with the MCP SDK, as a user might write one.
ODD = "notes/write note"
LONG = "remember_the_lesson_of_this_task_for_the_later_tasks_of_the_sequence"
ODD_SERVER = '''
from pathlib import Path
from mcp.server.mcpserver import MCPServer

server = MCPServer("odd-names", log_level="WARNING")

async def write(text: str) -> str:
    with open("notes", "a") as fh:
        fh.write(text + "\\n")
    return "stored: " + text

async def read_all() -> str:
    return Path("notes").read_text() if Path("notes").exists() else ""

server.add_tool(write, name=%r, description="keep a note", structured_output=False)
server.add_tool(read_all, name=%r, description="all the notes kept", structured_output=False)
server.run("stdio")
''' % (ODD, LONG)


def test_gemini_calls_the_tools_it_had_to_rename(tmp_path: Path, cache: Path, gemini_bin: str) -> None:  # noqa: F811
    """The CLI offers `ODD` and `LONG` under names of its own; its calls reach the server
    under the server's names (the proxy forwards the CLI's MCP call), and the agent's
    record names them as the server does, like the other CLIs' records."""
    from agents._gemini_events import gemini_tool_name

    odd, long = gemini_tool_name("memory", ODD), gemini_tool_name("memory", LONG)
    assert odd == "mcp_memory_notes_write_note" and len(long) == 63 and "..." in long

    def script(body: dict[str, Any]) -> list[dict[str, Any]]:
        moves = [(odd, {"text": "spans: read the failing test first"}), (long, {})]
        step = fake_gemini.model_turns(body)
        if step < len(moves):
            return [fake_gemini.function_call(*moves[step])]
        if step == len(moves):
            return [fake_gemini.function_call("run_shell_command", {"command": "echo '# odd' >> spans/__init__.py",
                                                                    "description": "note"})]
        return [fake_gemini.text(FINAL)]

    results = tmp_path / "results"
    secret = "AIzaSy-test-" + "7" * 28
    with fake_gemini.FakeGemini(script=script, expected_key=secret) as fake:
        env = {"GOOGLE_GEMINI_BASE_URL": fake.url, "GEMINI_API_KEY": secret, "SWECL_GEMINI_BIN": gemini_bin,
               "HOME": str(_home(tmp_path))}
        swecl(results, "run", "--stage", "plugin-blank", "--agent", "gemini", "--model", fake_gemini.MODEL,
              "--sequence", SPANS, *first_of(1, SPANS), "--passes", "initial", "--memory-server",
              f"{sys.executable} -c {shlex.quote(ODD_SERVER)}", "--memory-agent-only", "--quiet", cache=cache, env=env,
              timeout=900)
    offered = {n for r in fake.api_requests for n in fake_gemini.declared_tools(r.body)}
    assert {odd, long} <= offered
    calls = [p for *_, p in events(results, "memory.provider.called")]
    assert [(c["via"], c["tool"], c["failure"], c["is_error"]) for c in calls] == [
        ("agent", ODD, None, False), ("agent", LONG, None, False)]
    assert _blob(results, calls[1]["result"]).strip() == "spans: read the failing test first"
    (agent,) = [p for *_, p in events(results, "agent.finished")]
    assert agent["exit"] == "completed", agent.get("error")
    assert [c["name"] for c in agent["tool_calls"] if c["name"].startswith("mcp__")] == [
        f"mcp__memory__{ODD}", f"mcp__memory__{LONG}"]
