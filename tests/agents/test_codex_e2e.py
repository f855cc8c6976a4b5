"""The codex adapter end to end: the real `codex` CLI (npm, pinned version) against a loopback
fake of OpenAI's Responses API, with a real git worktree and real MCP recall; then `swecl run`
with `--agent codex` on a demo sequence (plugin and builtin stages), sandboxed as a run is.

The fake model uses codex's own tools as a real model would: `tool_search` to find the
deferred MCP tool, `recall` in the `mcp__memory` namespace, the freeform `apply_patch` tool
and `exec_command`. The model name is one of the CLI's catalog (gpt-5.5), so codex offers
the tool set it offers that model on the real service.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
import time
import tomllib
import uuid
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

from agents._codex import CodexAgent, render_config
from agents._codex_events import classify, parse_events, read_rollout
from agents._protocol import AgentInput, AgentResult, Budget
from agents._recall import RecallService
from ledger import Ledger, SweclError
from ledger.events import MemoryRecalled, MemoryWritten, ToolCall
from projections.show import final_message
from tests.run.support import SPANS, events, swecl, swecl_json

from .conftest import build_repo
from .fake_openai import (
    FakeOpenAI,
    apply_patch,
    exec_command,
    mcp_call,
    responses_so_far,
    text,
    tool_outputs,
    tool_search,
)
from .mini_recall import Item, MiniRecall

pytestmark = pytest.mark.slow

MODEL = "gpt-5.5"
GREET_PATCH = """\
*** Begin Patch
*** Update File: pkg/util.py
@@
 def greet(name):
+    if name is None:
+        return "Hello"
     return "Hello, " + name.title()
*** End Patch
"""
# Where the builtin stage's developer instructions say the memory file is.
MEMORY_PATH = re.compile(r"memory file across the tasks you do in this repository: (\S+/AGENTS\.md)")


@pytest.fixture
def api_key() -> str:
    # Deliberately not shaped like an OpenAI key: only the literal-value scrubbing can catch it.
    return f"fake-key-{uuid.uuid4().hex}"


@pytest.fixture
def codex_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, api_key: str) -> Callable[[FakeOpenAI], None]:
    """Point the CLI at a fake; a throw-away HOME so nothing of the real user's is read or written."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("CODEX_API_KEY", "CODEX_HOME", "OPENAI_ORGANIZATION", "OPENAI_PROJECT", "HTTPS_PROXY", "HTTP_PROXY",
                 "https_proxy", "http_proxy", "ALL_PROXY", "all_proxy", "RUST_LOG"):
        monkeypatch.delenv(name, raising=False)

    def point(fake: FakeOpenAI) -> None:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.url)
        monkeypatch.setenv("OPENAI_API_KEY", api_key)

    return point


@pytest.fixture
def fakes() -> Iterator[Callable[..., FakeOpenAI]]:
    started: list[FakeOpenAI] = []

    def start(*args: object, **kwargs: object) -> FakeOpenAI:
        fake = FakeOpenAI(*args, **kwargs).start()  # type: ignore[arg-type]
        started.append(fake)
        return fake

    yield start
    for fake in started:
        fake.stop()


def _no_secret_anywhere(result: AgentResult, scratch: Path, secret: str, *extra: Path) -> None:
    kept = [result.patch, result.transcript.decode("utf-8", "replace"), result.prompt, result.error or "",
            json.dumps(result.memory_files)]
    assert not any(secret in k for k in kept)
    for root in (scratch, *extra):
        for path in root.rglob("*"):
            if path.is_file() and not path.is_symlink():
                assert secret.encode() not in path.read_bytes(), f"the API key leaked into {path}"


def _tools(body: dict[str, Any]) -> list[str]:
    return [str(t.get("name") or t.get("type")) for t in body.get("tools", [])]


def test_recall_edit_and_finish_end_to_end(
    codex_bin: str, make_input: Callable[..., AgentInput], repo: Path, tmp_path: Path,
    fakes: Callable[..., FakeOpenAI], codex_env: Callable[[FakeOpenAI], None], api_key: str,
) -> None:
    issue = "greet() crashes on None: greet(None) raises AttributeError: 'NoneType' object has no attribute 'title'."
    fake = fakes([
        [tool_search("recall notes from earlier tasks")],
        [mcp_call("memory", "recall", {"query": issue, "repo": "demo/pkg", "k": 3})],
        [exec_command("cat pkg/missing.py")],  # fails: no such file
        [apply_patch(GREET_PATCH)],
        [exec_command("printf \"NONE_GREETING = 'Hello'\\n\" > pkg/compat.py")],
        [text("Fixed greet() for None.")],
    ])
    codex_env(fake)
    recall = MiniRecall([Item("m1", 1, 2.5, "greet None", "guard None before .title()", outcome="resolved")],
                        tmp_path / "recall")
    inp = make_input(issue=issue, recall=recall, memory_mode="plugin-real", stage="plugin-blank",
                     prompt_style="recall", model=MODEL, budget=Budget(timeout_s=120))

    # --strict-config: codex refuses a config.toml key it does not know, so every key we write is real.
    result = CodexAgent(executable=codex_bin, max_retries=0, extra_args=["--strict-config"]).run(inp)

    assert result.exit == "completed", result.error
    assert result.exit_code == 0 and result.error is None
    # the MCP recall really ran, through the CLI, with what the model asked
    assert recall.calls() == [{"via": "mcp", "query": issue, "repo": "demo/pkg", "k": 3}]
    assert result.tool_calls == [
        ToolCall("mcp__memory__recall"),
        ToolCall("command_execution", error=True),
        ToolCall("file_change"),
        ToolCall("command_execution"),
    ]
    assert result.turns == 6  # model responses, from codex's session file
    assert result.tokens == {"input": 540, "output": 120, "cache_read": 60, "cache_creation": 0, "reasoning": 30}
    assert result.cost_usd is None and result.model == MODEL
    # the patch is the real diff of the edits the fake asked for
    assert "+    if name is None:\n+        return \"Hello\"\n" in result.patch
    assert "+++ b/pkg/compat.py" in result.patch and "+NONE_GREETING = 'Hello'" in result.patch
    assert (repo / "pkg" / "util.py").read_text().count("if name is None") == 1
    # the transcript is codex's own session file, with its thread id and the final message
    assert result.session_id and result.session_id.encode() in result.transcript
    assert b'"mcp__memory"' in result.transcript
    assert final_message(result.transcript.decode()) == "Fixed greet() for None."
    # the recall result went back to the model
    assert "guard None before .title()" in tool_outputs(fake.response_requests[2].body)[0]  # tool search answers apart
    # the prompt had the agent recall with the issue text before editing
    first = fake.response_requests[0].body
    assert first["model"] == MODEL and first["stream"] is True
    first_user = json.dumps([m for m in first["input"] if m.get("role") == "user"][-1])
    assert "mcp__memory__recall" in first_user and json.dumps(issue)[1:-1] in first_user
    assert {"exec_command", "apply_patch", "tool_search"} <= set(_tools(first))
    assert "web_search" not in _tools(first)  # the network is for the model API only
    # what the CLI asked of the API: one streamed response per model call, with our key
    assert {(r.method, r.path) for r in fake.requests} == {("POST", "/v1/responses")}
    assert len(fake.response_requests) == 6
    assert all(r.authorization == f"Bearer {api_key}" for r in fake.response_requests)
    # the config we wrote names the key's variable, never the key
    config = (inp.scratch_dir / "codex-home" / "config.toml").read_text()
    assert tomllib.loads(config)["model_providers"]["swecl"]["env_key"] == "OPENAI_API_KEY"
    # and the key is nowhere we keep anything
    _no_secret_anywhere(result, inp.scratch_dir, api_key, tmp_path / "home")


def test_the_agents_commands_never_see_the_key(
    codex_bin: str, make_input: Callable[..., AgentInput], fakes: Callable[..., FakeOpenAI],
    codex_env: Callable[[FakeOpenAI], None], api_key: str,
) -> None:
    # The model makes the agent print the key (as a prompt-injected issue might); codex
    # leaves variables named like keys out of its commands' environment.
    fake = fakes([
        [exec_command("echo key=$OPENAI_API_KEY > leaked.txt; echo key=$OPENAI_API_KEY")],
        [text("done")],
    ])
    codex_env(fake)
    inp = make_input(model=MODEL, budget=Budget(timeout_s=120))
    result = CodexAgent(executable=codex_bin, max_retries=0).run(inp)
    assert result.exit == "completed", result.error
    assert result.tool_calls == [ToolCall("command_execution")]
    assert "key=\n" in tool_outputs(fake.response_requests[1].body)[0]
    assert api_key not in json.dumps(fake.response_requests[1].body)
    assert "+key=\n" in result.patch
    _no_secret_anywhere(result, inp.scratch_dir, api_key)


def test_a_missing_key_is_auth_failed(
    codex_bin: str, make_input: Callable[..., AgentInput], fakes: Callable[..., FakeOpenAI],
    codex_env: Callable[[FakeOpenAI], None], monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = fakes([[text("must never be asked")]])
    codex_env(fake)
    monkeypatch.delenv("OPENAI_API_KEY")
    result = CodexAgent(executable=codex_bin, max_retries=0).run(make_input(model=MODEL))
    assert result.exit == "auth_failed" and "OPENAI_API_KEY" in (result.error or "")
    assert result.exit_code == 1 and result.patch == "" and result.cost_usd is None
    assert fake.response_requests == []


def test_a_rejected_key_is_auth_failed(
    codex_bin: str, make_input: Callable[..., AgentInput], fakes: Callable[..., FakeOpenAI],
    codex_env: Callable[[FakeOpenAI], None], api_key: str,
) -> None:
    fake = fakes(mode="unauthorized")
    codex_env(fake)
    inp = make_input(model=MODEL)
    result = CodexAgent(executable=codex_bin, max_retries=0).run(inp)
    assert result.exit == "auth_failed" and "401 Unauthorized" in (result.error or "")
    assert len(fake.response_requests) == 1
    _no_secret_anywhere(result, inp.scratch_dir, api_key)


def test_hanging_api_is_a_timeout_and_the_process_group_is_gone(
    codex_bin: str, make_input: Callable[..., AgentInput], tmp_path: Path, fakes: Callable[..., FakeOpenAI],
    codex_env: Callable[[FakeOpenAI], None],
) -> None:
    fake = fakes(mode="hang")
    codex_env(fake)
    recall = MiniRecall([], tmp_path / "recall")  # an MCP child too: it must die with the CLI
    inp = make_input(model=MODEL, recall=recall, memory_mode="plugin-real", budget=Budget(timeout_s=15))
    started = time.monotonic()
    result = CodexAgent(executable=codex_bin, max_retries=0).run(inp)
    assert time.monotonic() - started < 45
    assert result.exit == "timeout" and result.exit_code is None
    assert len(fake.response_requests) >= 1
    assert result.session_id  # thread.started came before the hang
    # neither the CLI (its CODEX_HOME is in tmp_path) nor its MCP server (the recall dir) survives
    leftovers = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _mentions(p, str(tmp_path))]
    assert leftovers == []


def _mentions(proc: Path, needle: str) -> bool:
    try:
        cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        environ = (proc / "environ").read_bytes().decode("utf-8", "replace")
    except OSError:
        return False
    return needle in cmdline or needle in environ


def _write_memory(body: dict[str, Any], line: str) -> list[dict[str, Any]]:
    """The fake's first move in the builtin stage: add `line` to the memory file its
    developer instructions name, keeping what the file already held (codex showed it)."""
    found = MEMORY_PATH.search(json.dumps(body))
    assert found, "the builtin stage's instructions name the memory file"
    path = found.group(1)
    held = re.search(r"<INSTRUCTIONS>\\n(.*?)\\n</INSTRUCTIONS>", json.dumps(body))
    before = json.loads(f'"{held.group(1)}"') + "\n" if held else ""
    return [exec_command(f"printf %s {shlex.quote(before + line)} > {shlex.quote(path)}")]


def test_builtin_agents_md_carries_across_tasks(
    codex_bin: str, make_input: Callable[..., AgentInput], tmp_path: Path, fakes: Callable[..., FakeOpenAI],
    codex_env: Callable[[FakeOpenAI], None],
) -> None:
    memory_dir = tmp_path / "builtin-v1-seq"
    fake = fakes(lambda body: _write_memory(body, "- greet(None) needs a guard")
                 if not tool_outputs(body) else [text("Noted.")])
    codex_env(fake)
    agent = CodexAgent(executable=codex_bin, max_retries=0)
    first = agent.run(make_input(model=MODEL, memory_mode="builtin", stage="builtin",
                                 memory_dir=memory_dir, budget=Budget(timeout_s=120)))
    assert first.exit == "completed", first.error
    assert first.memory_files == {"AGENTS.md": "- greet(None) needs a guard"}
    assert (memory_dir / "auto-memory" / "AGENTS.md").read_text() == "- greet(None) needs a guard"
    assert first.patch == ""  # the memory lives outside the worktree

    fake2 = fakes(lambda body: _write_memory(body, "- total() sums a list")
                  if not tool_outputs(body) else [text("Seen my notes.")])
    codex_env(fake2)
    second = agent.run(make_input(model=MODEL, memory_mode="builtin", stage="builtin",
                                  memory_dir=memory_dir, worktree=build_repo(tmp_path / "repo2"),
                                  scratch_dir=tmp_path / "scratch2", budget=Budget(timeout_s=120)))
    assert second.exit == "completed", second.error
    assert second.memory_files == {"AGENTS.md": "- greet(None) needs a guard\n- total() sums a list"}
    # codex loaded the kept AGENTS.md into the next task's context, as instructions
    first_request = json.dumps(fake2.response_requests[0].body)
    assert "# AGENTS.md instructions" in first_request and "greet(None) needs a guard" in first_request


def test_no_memory_no_mcp_server_and_no_memory_instructions(
    codex_bin: str, make_input: Callable[..., AgentInput], fakes: Callable[..., FakeOpenAI],
    codex_env: Callable[[FakeOpenAI], None],
) -> None:
    fake = fakes([[text("nothing to do")]])
    codex_env(fake)
    inp = make_input(model=MODEL, budget=Budget(timeout_s=120))
    result = CodexAgent(executable=codex_bin, max_retries=0).run(inp)
    assert result.exit == "completed", result.error
    config = tomllib.loads((inp.scratch_dir / "codex-home" / "config.toml").read_text())
    assert "mcp_servers" not in config and "developer_instructions" not in config
    body = json.dumps(fake.response_requests[0].body)
    assert "mcp__memory" not in body and "AGENTS.md instructions" not in body


def test_primed_natural_prompt_holds_the_recalled_notes(
    codex_bin: str, make_input: Callable[..., AgentInput], tmp_path: Path, fakes: Callable[..., FakeOpenAI],
    codex_env: Callable[[FakeOpenAI], None],
) -> None:
    fake = fakes([[text("Nothing to change.")]])
    codex_env(fake)
    recall = MiniRecall([Item("m1", 1, 1.0, "greet None", "guard None before .title()", outcome="resolved")],
                        tmp_path / "recall")
    inp = make_input(model=MODEL, recall=recall, memory_mode="plugin-real", stage="plugin-primed",
                     prompt_style="natural", budget=Budget(timeout_s=120))
    result = CodexAgent(executable=codex_bin, max_retries=0).run(inp)
    assert result.exit == "completed", result.error
    sent = json.dumps(fake.response_requests[0].body["input"])
    assert "guard None before .title()" in sent and "You have worked in the demo/pkg repository before" in sent
    assert recall.calls() == [{"via": "inproc", "query": inp.issue, "repo": "demo/pkg", "k": 5}]


def test_ledger_recall_through_the_project_recall_service(
    codex_bin: str, make_input: Callable[..., AgentInput], tmp_path: Path, fakes: Callable[..., FakeOpenAI],
    codex_env: Callable[[FakeOpenAI], None],
) -> None:
    ledger_path = tmp_path / "ledger.db"
    with Ledger.open(ledger_path, create=True) as ledger:
        ledger.append("run/v1/seq1", [MemoryWritten(
            item_id="item-1", kind="episode", title="greet None guard", body="greet(None) needs a None guard before .title()",
            repo="demo/pkg", source_run="v1", sequence_id="seq1", source_instance="demo__pkg-0", source_order=1,
            source_pass="initial", outcome="resolved", files=["pkg/util.py"], symbols=["greet"],
        )])
    service = RecallService(ledger_path, "v1", "seq1", "initial", 2, "demo__pkg-1", 1, "demo/pkg")
    issue = "greet() crashes on None"
    fake = fakes([
        [tool_search("recall")],
        [mcp_call("memory", "recall", {"query": issue, "repo": "demo/pkg", "k": 3})],
        [text("done")],
    ])
    codex_env(fake)
    inp = make_input(issue=issue, recall=service, memory_mode="plugin-real", stage="plugin-blank",
                     prompt_style="recall", model=MODEL, budget=Budget(timeout_s=120))
    result = CodexAgent(executable=codex_bin, max_retries=0).run(inp)
    assert result.exit == "completed", result.error
    assert result.tool_calls == [ToolCall("mcp__memory__recall")]
    with Ledger.open(ledger_path, readonly=True) as ledger:
        recalled = [r.event for r in ledger.read(types=["memory.recalled"])]
    assert len(recalled) == 1
    event = recalled[0]
    assert isinstance(event, MemoryRecalled) and event.via == "mcp"
    assert event.instance_id == "demo__pkg-1" and event.order == 2 and event.query == issue
    assert [h.item_id for h in event.results] == ["item-1"]
    assert "greet(None) needs a None guard" in tool_outputs(fake.response_requests[2].body)[0]


def test_a_memory_server_that_fails_to_start_makes_the_run_an_error(
    codex_bin: str, make_input: Callable[..., AgentInput], fakes: Callable[..., FakeOpenAI],
    codex_env: Callable[[FakeOpenAI], None],
) -> None:
    class Broken:
        def recall(self, query: str, k: int = 5, repo: str | None = None) -> list[Item]:
            return []

        def mcp_server_argv(self) -> list[str]:
            return [sys.executable, "-c", "import sys; sys.exit('no memory today')"]

    fake = fakes([[text("done without memory")]])
    codex_env(fake)
    result = CodexAgent(executable=codex_bin, max_retries=0).run(
        make_input(model=MODEL, recall=Broken(), memory_mode="plugin-real", budget=Budget(timeout_s=120))
    )
    assert result.exit == "error"
    assert (result.error or "").startswith("the memory MCP server failed to start: the run had no recall (")
    assert "required MCP servers failed to initialize: memory" in (result.error or "")
    assert fake.response_requests == []  # codex never started the turn


def test_blind_mode_is_refused_in_one_line(make_input: Callable[..., AgentInput]) -> None:
    with pytest.raises(SweclError, match="the codex agent has no blind mode") as info:
        CodexAgent(executable=sys.executable).run(make_input(code_mode="blind"))
    assert "\n" not in str(info.value)


# --- swecl run --agent codex ------------------------------------------------------------

SECRET = "sk-proj-test-" + "7" * 40


def _issue(body: dict[str, Any]) -> str:
    prompt = json.dumps(body.get("input", []))
    found = re.search(r"<issue>\\n(.*?)\\n</issue>", prompt)
    assert found, "the task prompt holds the issue"
    return str(json.loads(f'"{found.group(1)}"'))


def recall_then_edit(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Find the recall tool, recall with the issue, edit a source file with a shell command, finish."""
    step = responses_so_far(body)
    if step == 0:
        return [tool_search("memory recall")]
    if step == 1:
        return [mcp_call("memory", "recall", {"query": _issue(body)[:300], "k": 3})]
    if step == 2:
        return [exec_command("echo '# looked at by codex' >> spans/__init__.py")]
    return [text("Added a note to the package; the fix needs more work.")]


def _codex_run_env(fake: FakeOpenAI, codex_bin: str, home: Path) -> dict[str, str]:
    home.mkdir()
    return {"OPENAI_BASE_URL": fake.url, "OPENAI_API_KEY": SECRET, "SWECL_CODEX_BIN": codex_bin, "HOME": str(home)}


def test_a_plugin_run_with_the_codex_cli(tmp_path: Path, cache: Path, codex_bin: str) -> None:
    fake = FakeOpenAI(script=recall_then_edit).start()
    try:
        results = tmp_path / "results"
        swecl(results, "run", "--stage", "plugin-blank", "--agent", "codex", "--model", MODEL,
              "--sequence", SPANS, "--passes", "initial", "--quiet", cache=cache,
              env=_codex_run_env(fake, codex_bin, tmp_path / "home"), timeout=900)
    finally:
        fake.stop()
    (run,) = swecl_json(results, "runs", cache=cache)
    assert (run["agent"], run["status"]) == ("codex", "finished")
    agents = [p for _, _, _, p in events(results, "agent.finished")]
    tasks = len(agents)
    assert tasks >= 2 and {a["exit"] for a in agents} == {"completed"}
    # every task recalled through the real MCP server, reading and writing the run's ledger
    recalls = [p for _, _, _, p in events(results, "memory.recalled")]
    assert len(recalls) == tasks and {r["via"] for r in recalls} == {"mcp"}
    assert sorted(r["order"] for r in recalls) == sorted(a["order"] for a in agents)
    assert any(r["results"] for r in recalls)  # later tasks find what the daydream wrote
    assert all(a["turns"] == 4 and a["cost_usd"] is None and a["tokens"]["input"] > 0 for a in agents)
    assert all([c["name"] for c in a["tool_calls"]] == ["mcp__memory__recall", "command_execution"] for a in agents)
    assert all(a["transcript"] and a["session_id"] and a["model"] == MODEL for a in agents)
    # the patches were graded: run against the tests, not excused and not empty
    grades = [p for _, _, _, p in events(results, "grade.finished")]
    assert len(grades) == tasks and not {g["status"] for g in grades} & {"empty_patch", "agent_error", "infra_error"}
    shown = swecl_json(results, "show", run["version"], "1", cache=cache)
    assert "+# looked at by codex" in shown["patch"]
    assert shown["final_message"] == "Added a note to the package; the fix needs more work."
    # the key reached the API and nothing we keep
    assert all(r.authorization == f"Bearer {SECRET}" for r in fake.response_requests)
    _no_secret_in_the_ledger(results / "ledger.db", SECRET)


def test_a_missing_codex_cli_is_said_before_the_run_starts(tmp_path: Path, cache: Path) -> None:
    env = {"SWECL_CODEX_BIN": str(tmp_path / "no-such-codex"), "PATH": "/usr/bin:/bin"}
    proc = swecl(tmp_path / "r", "run", "--stage", "base", "--agent", "codex", "--sequence", SPANS,
                 cache=cache, env=env, check=False)
    assert proc.returncode == 2 and "codex" in proc.stderr and proc.stderr.count("\n") == 1
    assert not (tmp_path / "r" / "ledger.db").exists() or events(tmp_path / "r") == []


def _no_secret_in_the_ledger(path: Path, secret: str) -> None:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        for (payload,) in conn.execute("SELECT payload FROM events"):
            assert secret.encode() not in bytes(payload)
        for (data,) in conn.execute("SELECT data FROM blobs"):
            raw = bytes(data)
            try:
                raw = zlib.decompress(raw)
            except zlib.error:
                pass
            assert secret.encode() not in raw
    finally:
        conn.close()


def test_a_builtin_run_records_codex_agents_md(tmp_path: Path, cache: Path, codex_bin: str) -> None:
    """`--stage builtin`: codex keeps its notes in AGENTS.md; swecl carries the file from task
    to task and records each new version as `memory.written` (the one before superseded)."""
    notes: list[str] = []

    def take_a_note(body: dict[str, Any]) -> list[dict[str, Any]]:
        if tool_outputs(body):
            return [text("Noted for next time.")]
        notes.append(f"- task {len(notes) + 1}: read the failing test before editing")
        return _write_memory(body, notes[-1])

    fake = FakeOpenAI(script=take_a_note).start()
    results = tmp_path / "results"
    try:
        swecl(results, "run", "--stage", "builtin", "--version", "b1", "--agent", "codex", "--model", MODEL,
              "--sequence", SPANS, "--passes", "initial", "--quiet", cache=cache,
              env=_codex_run_env(fake, codex_bin, tmp_path / "home"), timeout=900)
    finally:
        fake.stop()
    (run,) = swecl_json(results, "runs", cache=cache)
    assert (run["version"], run["stage"], run["status"]) == ("b1", "builtin", "finished")
    tasks = len([p for _, _, _, p in events(results, "task.finished")])
    assert tasks >= 2 and len(notes) == tasks
    written = [p for _, _, _, p in events(results, "memory.written")]
    assert [(w["kind"], w["title"]) for w in written] == [("builtin-file", "AGENTS.md")] * tasks
    assert [w["body"] for w in written] == ["\n".join(notes[: n + 1]) for n in range(tasks)]
    superseded = [p for _, _, _, p in events(results, "memory.superseded")]
    assert [(s["item_id"], s["by"]) for s in superseded] == [
        (written[n]["item_id"], written[n + 1]["item_id"]) for n in range(tasks - 1)
    ]
    # codex read the carried file: task 2's first request holds task 1's note as instructions
    first_requests = [r.body for r in fake.response_requests if not tool_outputs(r.body)]
    assert notes[0] in json.dumps(first_requests[1]) and notes[0] not in json.dumps(first_requests[0])
    kept = results / "vb1" / "_builtin" / SPANS / "auto-memory" / "AGENTS.md"
    assert kept.read_text() == "\n".join(notes)
    _no_secret_in_the_ledger(results / "ledger.db", SECRET)


# --- the stream parser over real captures of codex 0.169.0 (no CLI needed) ---------------

CAPTURED_RUN = """\
{"type":"thread.started","thread_id":"01a20d84-9fc8-7141-ae91-6a0a33a96805"}
{"type":"turn.started"}
{"type":"item.started","item":{"id":"item_0","type":"mcp_tool_call","server":"memory","tool":"recall",\
"arguments":{"query":"greet None","repo":"demo/pkg","k":3},"result":null,"error":null,"status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_0","type":"mcp_tool_call","server":"memory","tool":"recall",\
"arguments":{"query":"greet None","repo":"demo/pkg","k":3},"result":{"content":[{"type":"text","text":"[]"}],\
"structured_content":{"result":[]}},"error":null,"status":"completed"}}
{"type":"item.started","item":{"id":"item_1","type":"file_change","changes":[{"path":"/tmp/cx/wt/a.txt","kind":"update"}],\
"status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_1","type":"file_change","changes":[{"path":"/tmp/cx/wt/a.txt","kind":"update"}],\
"status":"completed"}}
{"type":"item.started","item":{"id":"item_2","type":"command_execution","command":"/bin/bash -lc 'cat a.txt'",\
"aggregated_output":"","exit_code":null,"status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_2","type":"command_execution","command":"/bin/bash -lc 'cat a.txt'",\
"aggregated_output":"hello\\n","exit_code":0,"status":"completed"}}
{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"All done."}}
{"type":"turn.completed","usage":{"input_tokens":500,"cached_input_tokens":50,"cache_write_input_tokens":0,\
"output_tokens":100,"reasoning_output_tokens":25}}
"""
CAPTURED_NO_KEY = """\
{"type":"thread.started","thread_id":"01a20d86-5ce6-7153-92b4-fbd026fbcea2"}
{"type":"turn.started"}
{"type":"error","message":"Missing environment variable: `OPENAI_API_KEY`."}
{"type":"turn.failed","error":{"message":"Missing environment variable: `OPENAI_API_KEY`."}}
"""


def test_the_stream_of_a_completed_run() -> None:
    s = parse_events(CAPTURED_RUN.splitlines())
    assert s.thread_id == "01a20d84-9fc8-7141-ae91-6a0a33a96805" and s.completed and s.bad_lines == 0
    assert s.tool_calls == [ToolCall("mcp__memory__recall"), ToolCall("file_change"), ToolCall("command_execution")]
    assert s.tokens == {"input": 450, "output": 100, "cache_read": 50, "cache_creation": 0, "reasoning": 25}
    assert s.final_text == "All done." == final_message(CAPTURED_RUN)
    assert classify(s, 0, timed_out=False) == ("completed", None)
    assert classify(s, 3, timed_out=False) == ("error", "the turn completed but the CLI exited 3")
    assert classify(s, None, timed_out=True)[0] == "timeout"


def test_a_missing_key_is_classified_auth_failed() -> None:
    s = parse_events(CAPTURED_NO_KEY.splitlines())
    assert not s.completed and s.tool_calls == [] and s.tokens == {}
    assert classify(s, 1, timed_out=False) == ("auth_failed", "Missing environment variable: `OPENAI_API_KEY`.")


def test_a_run_that_ends_without_its_turn() -> None:
    started = parse_events(CAPTURED_NO_KEY.splitlines()[:2] + ['{"type":"error","message":"Reconnecting... 1/5"}', "garbage"])
    assert started.bad_lines == 1
    assert classify(started, -9, timed_out=False) == ("crashed", "killed by signal 9 before its turn ended")
    assert classify(started, 1, timed_out=False) == (
        "crashed", "exited 1 before its turn ended (last error: Reconnecting... 1/5, 1 reported)")
    assert classify(started, 0, timed_out=False) == ("error", "exited 0 without a turn.completed event")


def test_the_session_file_gives_model_calls_and_the_model() -> None:
    lines = [
        json.dumps({"type": "session_meta", "payload": {"id": "t1"}}),
        json.dumps({"type": "turn_context", "payload": {"model": "gpt-5.5"}}),
        *(json.dumps({"type": "token_usage_record", "payload": {"response_id": f"resp_{n}"}}) for n in (0, 1, 1, 2)),
        json.dumps({"type": "event_msg", "payload": {"type": "task_complete", "last_agent_message": "Done."}}),
    ]
    facts = read_rollout(lines)
    assert (facts.turns, facts.model) == (3, "gpt-5.5")
    assert final_message("\n".join(lines)) == "Done."
    older = [json.dumps({"type": "event_msg", "payload": {"type": "token_count", "info": {"total_token_usage": {}}}})] * 2
    assert read_rollout(older).turns == 2 and read_rollout([]).turns is None


def test_the_config_is_toml_whatever_the_text() -> None:
    awkward = 'quote " backslash \\ tab \t newline \n del \x7f emoji \U0001f600 ünïcode'
    text = render_config({"mcp_servers.memory": {"command": awkward, "args": [awkward], "env": {"A-B.c": awkward}}},
                         {"developer_instructions": awkward, "flag": False, "n": 3})
    parsed = tomllib.loads(text)
    assert parsed["developer_instructions"] == awkward and parsed["flag"] is False and parsed["n"] == 3
    assert parsed["mcp_servers"]["memory"] == {"command": awkward, "args": [awkward], "env": {"A-B.c": awkward}}
