"""A user's MCP memory server under test: the host outside the sandbox, the recording
proxy an agent's MCP client starts, the events, the data directory's snapshots.

Real parts: the reference knowledge-graph server `@modelcontextprotocol/server-memory`
from npm (inside bubblewrap when this machine has it), the MCP SDK's own client driving
the proxy as an agent's client would, a real ledger; and three small servers written
with the SDK that crash, hang or write garbage in the middle of a call.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import textwrap
import uuid
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest

from bench.processes import live_processes
from commands.run.memory import CallContext, LedgerRecorder, MemoryServerError, ServerHost, parse_memory_server
from commands.run.memory._server_spec import server_environment
from commands.run.memory._server_snapshot import restore, snapshot, snapshot_event
from graders.host import sandbox_for
from ledger import Ledger, SweclError, StreamRange
from tests.agents.conftest import server_memory_bin  # noqa: F401  (the session fixture: npm-installed server)

VERSION, SEQUENCE = "v1", "demo-seq"


@pytest.fixture
def ledger_path(tmp_path: Path) -> Path:
    path = tmp_path / "ledger.db"
    Ledger.open(path, create=True).close()
    return path


def _events(path: Path, type_: str) -> list[Any]:
    with Ledger.open(path, readonly=True) as led:
        return [r.event for r in led.read(types=[type_], ranges=[StreamRange(f"run/{VERSION}/{SEQUENCE}")])]


def _blob(path: Path, digest: str | None) -> str:
    assert digest
    with Ledger.open(path, readonly=True) as led:
        return led.get_blob(digest).decode()


async def _as_agent(argv: list[str], calls: list[tuple[str, dict[str, Any]]]) -> tuple[Any, list[Any], list[Any]]:
    """What an agent's MCP client does: start the proxy over stdio, handshake, list, call."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async with AsyncExitStack() as stack:
        # errlog given: its default is the sys.stderr of the SDK's first import, which an
        # in-process `swecl run --memory-server` of another test (under click's CliRunner,
        # a stream with no file descriptor) may have made.
        params = StdioServerParameters(command=argv[0], args=argv[1:])
        read, write = await stack.enter_async_context(stdio_client(params, errlog=sys.stderr))
        session = await stack.enter_async_context(ClientSession(read, write))
        init = await session.initialize()
        tools = (await session.list_tools()).tools
        results = [await session.call_tool(name, args) for name, args in calls]
        return init, tools, results


def _drive(argv: list[str], calls: list) -> tuple:
    """`_as_agent` on a loop of its own; then what the SDK's stdio client left for the
    garbage collector (a subprocess transport and its pipes, in cycles) is collected here,
    not in the middle of a later test's import, where its finaliser, raising on the closed
    loop, would run inside an AST build (CPython 3.11 then fails that build)."""
    try:
        return anyio.run(_as_agent, argv, calls)
    finally:
        gc.collect()


def _text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


# -- the spec ------------------------------------------------------------------------------


def test_spec_parses_command_lines_urls_and_mapped_variables(tmp_path: Path) -> None:
    spec = parse_memory_server("npx -y '@modelcontextprotocol/server-memory'", ["MEMORY_FILE_PATH={data}/memory.jsonl"])
    assert spec.transport == "stdio" and spec.argv == ("npx", "-y", "@modelcontextprotocol/server-memory")
    assert spec.env_for(tmp_path) == {"MEMORY_FILE_PATH": f"{tmp_path}/memory.jsonl"}
    http = parse_memory_server("https://user:s3cret@mem.example:8443/mcp?token=abc&x")
    assert http.transport == "http" and http.redacted() == "https://mem.example:8443/mcp?token=REDACTED&x"


def test_a_stdio_servers_environment_keeps_where_bytecode_goes_and_none_of_the_rest(tmp_path: Path) -> None:
    spec = parse_memory_server("server", ["MEMORY_FILE_PATH={data}/memory.jsonl"])
    host = {"HOME": "/home/u", "PATH": "/usr/bin", "PYTHONPYCACHEPREFIX": "/home/u/.cache/pyc",
            "PYTHONPATH": "/elsewhere", "SWECL_CACHE": "/cache", "ANTHROPIC_API_KEY": "secret"}
    env = server_environment(spec, tmp_path / "data", host)
    assert env == {"HOME": "/home/u", "PATH": "/usr/bin", "PYTHONPYCACHEPREFIX": "/home/u/.cache/pyc",
                   "TMPDIR": str(tmp_path / "tmp"), "MEMORY_FILE_PATH": f"{tmp_path}/data/memory.jsonl"}


@pytest.mark.parametrize(("spec", "env", "says"), [
    ("   ", [], "is empty"),
    ("npx 'unclosed", [], "cannot be split"),
    ("ftp://mem.example/x", [], "must be http or https"),
    ("http:///nohost", [], "not a valid URL"),
    ("http://mem.example/mcp", ["A=b"], "command-line server"),
    ("server", ["NOEQUALS"], "is not NAME=VALUE"),
    ("server", ["1BAD=x"], "is not NAME=VALUE"),
    ("server", ["P={home}/x"], "unknown placeholder {home}"),
])
def test_bad_specs_are_one_line_errors(spec: str, env: list[str], says: str) -> None:
    with pytest.raises(SweclError) as caught:
        parse_memory_server(spec, env)
    assert says in str(caught.value) and "\n" not in str(caught.value)


def test_a_server_that_cannot_start_is_a_memory_server_error(tmp_path: Path) -> None:
    spec = parse_memory_server(f"no-such-memory-server-{uuid.uuid4().hex}")
    with pytest.raises(MemoryServerError, match="not found on PATH"):
        with ServerHost(spec, tmp_path / "p" / "data", sequence_id=SEQUENCE):
            pass


def test_a_server_that_dies_at_start_says_its_last_words_in_the_one_line_error(tmp_path: Path) -> None:
    # A server that cannot start (a missing module, an unset variable) says why on stderr:
    # the one-line error carries it, so the user need not open the log to learn it.
    script = tmp_path / "dying_server.py"
    script.write_text("import sys\nsys.stderr.write('starting\\nError: MEMORY_FILE_PATH is not set\\n')\nsys.exit(3)\n")
    spec = parse_memory_server(f"{sys.executable} {script}")
    with pytest.raises(MemoryServerError) as caught:
        with ServerHost(spec, tmp_path / "p" / "data", sequence_id=SEQUENCE, start_timeout_s=30):
            pass
    message = str(caught.value)
    assert "\n" not in message
    assert "its stderr ends: 'Error: MEMORY_FILE_PATH is not set'" in message
    assert str(tmp_path / "p" / "server.log") in message


# -- the reference server, end to end -------------------------------------------------------


def test_reference_server_through_the_proxy_recorded_and_snapshotted(
    tmp_path: Path, ledger_path: Path, server_memory_bin: str
) -> None:
    spec = parse_memory_server(server_memory_bin, ["MEMORY_FILE_PATH={data}/memory.jsonl"])
    data = tmp_path / "provider" / "data"
    try:
        sandbox = sandbox_for("bwrap")
    except SweclError:
        sandbox = sandbox_for("none")
    context = CallContext(sequence_id=SEQUENCE, instance_id="demo__pkg-2", order=2, pass_="initial", attempt=1)
    entity = {"entities": [{"name": "greet", "entityType": "function",
                            "observations": ["greet(None) must return 'Hello'"]}]}
    recorder = LedgerRecorder(ledger_path, VERSION, SEQUENCE)
    with ServerHost(spec, data, recorder, sequence_id=SEQUENCE, sandbox=sandbox, call_timeout_s=30) as host:
        assert host.info is not None and host.info.server_name == "memory-server"
        assert {"create_entities", "search_nodes", "read_graph"} <= set(host.info.tool_names)
        with host.door(tmp_path / "door", context) as door:
            init, tools, results = _drive( door.proxy_argv, [
                ("create_entities", entity),
                ("search_nodes", {"query": "greet"}),
            ])
        # The agent sees the provider's own tools, schemas and all.
        assert [t.name for t in tools] == host.info.tool_names
        listed = {t["name"]: t for t in host.info.tools}
        for tool in tools:
            assert tool.description == listed[tool.name].get("description")
            assert tool.input_schema == listed[tool.name]["inputSchema"]
        assert not results[0].is_error and not results[1].is_error
        assert "greet(None) must return 'Hello'" in _text(results[1])
        with host.idle(), Ledger.open(ledger_path) as led:
            manifest = snapshot(led, data)
            again = snapshot(led, data)
            led.append(f"run/{VERSION}/{SEQUENCE}", [snapshot_event(
                manifest, sequence_id=SEQUENCE, instance_id=context.instance_id, order=context.order)])
        pid = host.pid
    assert pid is not None and live_processes(environ=str(data)) == []

    (started,) = _events(ledger_path, "memory.provider.started")
    assert started.server_name == "memory-server" and started.server_version
    assert set(started.tools) == set(listed) and started.env_names == ["MEMORY_FILE_PATH"]
    assert started.confined == sandbox.confined and str(data) not in started.spec
    assert {t["name"] for t in json.loads(_blob(ledger_path, started.tools_listing))} == set(listed)

    calls = _events(ledger_path, "memory.provider.called")
    assert [(c.call, c.tool, c.instance_id, c.order, c.pass_, c.attempt, c.via) for c in calls] == [
        (1, "create_entities", "demo__pkg-2", 2, "initial", 1, "agent"),
        (2, "search_nodes", "demo__pkg-2", 2, "initial", 1, "agent"),
    ]
    assert all(c.error is None and c.failure is None and not c.is_error for c in calls)
    assert json.loads(_blob(ledger_path, calls[0].arguments)) == entity
    assert "greet(None) must return 'Hello'" in _blob(ledger_path, calls[1].result)

    # The snapshot holds the server's file; unchanged, it is the same blob; restored, the same bytes.
    assert [f.path for f in manifest] == ["memory.jsonl"] and again == manifest
    (snap,) = _events(ledger_path, "memory.provider.snapshot")
    assert snap.files == manifest and snap.total_bytes == manifest[0].size
    with Ledger.open(ledger_path, readonly=True) as led:
        restore(led, snap.files, tmp_path / "restored")
        assert led.verify().events == 4  # every blob an event names is there (verify raises if not)
    assert (tmp_path / "restored" / "memory.jsonl").read_bytes() == (data / "memory.jsonl").read_bytes()
    assert "greet" in (data / "memory.jsonl").read_text()


# -- a server over streamable HTTP -----------------------------------------------------------

# A memory server the user runs themselves, reached by URL: the SDK's own server under
# uvicorn on a loopback port it picks (printed), keeping its notes in a file of its own.
HTTP_SERVER = textwrap.dedent('''
    import json, socket, sys
    from pathlib import Path
    import uvicorn
    from mcp.server.mcpserver import MCPServer

    notes = Path(sys.argv[1])
    server = MCPServer("http-notes", version="1.2.3", log_level="WARNING")

    def remember(text: str) -> str:
        kept = json.loads(notes.read_text()) if notes.exists() else []
        notes.write_text(json.dumps(kept + [text]))
        return f"kept {len(kept) + 1}"

    def recall(query: str) -> str:
        kept = json.loads(notes.read_text()) if notes.exists() else []
        return "\\n".join(t for t in kept if query.lower() in t.lower()) or "nothing"

    server.add_tool(remember, name="remember", description="keep a note", structured_output=False)
    server.add_tool(recall, name="recall", description="notes that mention the query", structured_output=False)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)  # listening before the port is said: a connection waits for uvicorn, never refused
    print(sock.getsockname()[1], flush=True)
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])
''')


def test_a_server_reached_over_streamable_http_is_called_and_recorded(tmp_path: Path, ledger_path: Path) -> None:
    script = tmp_path / "http_server.py"
    script.write_text(HTTP_SERVER)
    notes = tmp_path / "their-notes.json"
    server = subprocess.Popen([sys.executable, str(script), str(notes)], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        spec = parse_memory_server(f"http://127.0.0.1:{port}/mcp?token=not-for-the-ledger")
        context = CallContext(sequence_id=SEQUENCE, instance_id="demo__pkg-3", order=3, pass_="initial", attempt=1)
        with ServerHost(spec, tmp_path / "p" / "data", LedgerRecorder(ledger_path, VERSION, SEQUENCE),
                        sequence_id=SEQUENCE, call_timeout_s=30) as host:
            assert host.info is not None and host.info.server_name == "http-notes"
            assert host.pid is None  # nothing of swecl's to start or end: the user runs it
            with host.door(tmp_path / "door", context) as door:
                _, tools, results = _drive(door.proxy_argv, [
                    ("remember", {"text": "greet(None) must return 'Hello'"}),
                    ("recall", {"query": "greet"}),
                ])
            assert not list(host.failures)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert [t.name for t in tools] == ["remember", "recall"]
    assert _text(results[0]) == "kept 1" and _text(results[1]) == "greet(None) must return 'Hello'"
    (started,) = _events(ledger_path, "memory.provider.started")
    assert (started.transport, started.server_name, started.server_version) == ("http", "http-notes", "1.2.3")
    assert "not-for-the-ledger" not in started.spec and not started.confined
    calls = _events(ledger_path, "memory.provider.called")
    assert [(c.call, c.tool, c.instance_id, c.via, c.failure) for c in calls] == [
        (1, "remember", "demo__pkg-3", "agent", None), (2, "recall", "demo__pkg-3", "agent", None)]
    assert json.loads(_blob(ledger_path, calls[1].arguments)) == {"query": "greet"}
    assert "greet(None) must return 'Hello'" in _blob(ledger_path, calls[1].result)


# -- servers that fail mid-call -------------------------------------------------------------

FAULTY_SERVER = textwrap.dedent('''
    import os, sys, time
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("faulty", log_level="WARNING")

    async def remember(text: str) -> str:
        if sys.argv[1] == "crash":
            os._exit(3)
        time.sleep(3600)  # hang
        return "ok"

    server.add_tool(remember, name="remember", description="keep a text", structured_output=False)
    server.run("stdio")
''')

# The SDK's stdio server moves its wire off fd 1, so stray prints cannot break it: the
# server that writes garbage on its protocol stream speaks JSON-RPC by hand.
GARBAGE_SERVER = textwrap.dedent('''
    import json, sys, time
    TOOL = {"name": "remember", "description": "keep a text",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}
    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        if msg["method"] == "initialize":
            result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "garbage", "version": "0"}}
        elif msg["method"] == "tools/list":
            result = {"tools": [TOOL]}
        else:
            sys.stdout.write("this is not JSON-RPC\\n")
            sys.stdout.flush()
            time.sleep(3600)
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\\n")
        sys.stdout.flush()
''')


@pytest.fixture
def faulty_script(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    path = tmp_path / "faulty_server.py"
    path.write_text(GARBAGE_SERVER if request.node.callspec.params["mode"] == "garbage" else FAULTY_SERVER)
    return path


@pytest.mark.parametrize(("mode", "kind"), [("crash", "crashed"), ("hang", "timeout"), ("garbage", "garbage")])
def test_a_failing_server_gives_a_tool_error_a_recorded_failure_and_no_process(
    tmp_path: Path, ledger_path: Path, faulty_script: Path, mode: str, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = f"faulty-{uuid.uuid4().hex}"
    secret = f"fake-key-{uuid.uuid4().hex}"
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    spec = parse_memory_server(f"{sys.executable} {faulty_script} {mode} {marker}")
    context = CallContext(sequence_id=SEQUENCE, instance_id="demo__pkg-1", order=1)
    with ServerHost(spec, tmp_path / "p" / "data", LedgerRecorder(ledger_path, VERSION, SEQUENCE),
                    sequence_id=SEQUENCE, call_timeout_s=2) as host:
        (pid,) = live_processes(cmdline=marker)
        # Its environment holds none of swecl's secrets, and it runs in the data directory.
        assert secret.encode() not in Path(f"/proc/{pid}/environ").read_bytes()
        assert Path(f"/proc/{pid}/cwd").resolve() == (tmp_path / "p" / "data").resolve()
        with host.door(tmp_path / "door", context) as door:
            _, tools, results = _drive( door.proxy_argv, [
                ("remember", {"text": "a"}), ("remember", {"text": "b"}),
            ])
        assert [t.name for t in tools] == ["remember"]
        failures = list(host.failures)
    assert live_processes(cmdline=marker) == []

    assert all(r.is_error for r in results)
    expected_first = {"crashed": "failed during remember", "timeout": "did not answer remember within 2 s",
                      "garbage": "non-JSON-RPC output: 'this is not JSON-RPC'"}[kind]
    assert expected_first in _text(results[0])
    calls = _events(ledger_path, "memory.provider.called")
    if kind == "timeout":
        # A hung call does not end the server: the next call is tried (and hangs too).
        assert [c.failure for c in calls] == ["timeout", "timeout"]
    else:
        # Gone for good: the next call fails at once, without reaching it.
        assert [c.failure for c in calls] == [kind, "unavailable"]
        assert "gone" in _text(results[1])
    assert calls[0].error is not None and expected_first in calls[0].error
    assert [f.kind for f in failures] == [c.failure for c in calls]
    assert all(f.context == context for f in failures)
