"""A memory server's own model calls are part of the run (`--memory-model-endpoint`).

Real parts: the real `swecl run` of the demo spans sequence's first tasks with the demo
agent, bubblewrap, a real ledger, and a small real MCP memory server (below) that calls
an OpenAI-compatible API through the official `openai` client, as mem0 or cognee do: on
its write tool an embedding, a chat completion and a streamed one, on its search tool
the query's embedding. The API is a loopback fake (`tests.fake_openai_compat`); the
server reaches it only through swecl's recording gateway (`{model_gateway}`).
"""

from __future__ import annotations

import json
import shlex
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from ledger import Ledger
from tests.fake_openai_compat import fake_openai_compat

from .support import SPANS, events, first_of, first_tasks, no_secret_in_the_results, swecl, swecl_json

pytest.importorskip("openai")

TASKS = 3
KEY = "sk-test-memorymodel-5f3c9a1e7b2d4c6f8a0b"

# Given inline (-c): a confined server sees no file under /tmp, where the test's files are.
# `direct`: whether it can open a connection to the API itself, past the gateway.
MODEL_SERVER = textwrap.dedent('''
    import json, math, os, socket, urllib.request
    from pathlib import Path
    from mcp.server.mcpserver import MCPServer
    from openai import OpenAI

    server = MCPServer("model-memory", log_level="WARNING")
    client = OpenAI(max_retries=0, timeout=30)  # OPENAI_BASE_URL and OPENAI_API_KEY from the environment
    notes = Path("notes.jsonl")

    def vector(text):
        return client.embeddings.create(model="text-embedding-3-small", input=text).data[0].embedding

    def direct():
        host, port = os.environ["DIRECT_ENDPOINT"].rsplit(":", 1)
        try:
            socket.create_connection((host, int(port)), timeout=3).close()
            return "direct=reached"
        except OSError:
            return "direct=blocked"

    def elsewhere():  # as a telemetry client would: through the proxy the environment names
        try:
            urllib.request.urlopen("http://telemetry.example.com/ping", timeout=5).close()
            return "elsewhere=reached"
        except OSError:
            return "elsewhere=refused"

    async def remember(text: str) -> str:
        summary = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "summarise " + text[:200]}])
        streamed = client.chat.completions.create(
            model="gpt-4o-mini", stream=True, stream_options={"include_usage": True},
            messages=[{"role": "user", "content": "tags for " + text[:100]}])
        tags = "".join(c.choices[0].delta.content or "" for c in streamed if c.choices)
        with notes.open("a") as fh:
            fh.write(json.dumps({"text": text, "vector": vector(text), "summary": summary.choices[0].message.content,
                                 "tags": tags}) + "\\n")
        return "ok " + direct() + " " + elsewhere()

    async def search(query: str) -> str:
        q = vector(query)
        found = [json.loads(line) for line in notes.read_text().splitlines()] if notes.exists() else []
        found.sort(key=lambda n: -sum(a * b for a, b in zip(q, n["vector"])))
        return "\\n".join(n["text"] for n in found[:3])

    server.add_tool(search, name="search", description="find notes", structured_output=False)
    server.add_tool(remember, name="remember", description="keep a note", structured_output=False)
    server.run("stdio")
''')


@pytest.fixture(scope="module")
def model_run(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> tuple[Path, list[Any]]:
    results = tmp_path_factory.mktemp("memory-model-run")
    with fake_openai_compat() as (fake, url):
        swecl(results, "run", "--stage", "plugin-blank", "--sequence", SPANS, *first_of(TASKS, SPANS),
              "--passes", "initial", "--memory-server", f"{sys.executable} -c {shlex.quote(MODEL_SERVER)}",
              "--memory-env", "OPENAI_BASE_URL={model_gateway}", "--memory-env", f"OPENAI_API_KEY={KEY}",
              "--memory-env", f"DIRECT_ENDPOINT={url.split('//')[1].removesuffix('/v1')}",
              "--memory-model-endpoint", url, "--memory-recall-tool", "search",
              "--memory-write-tool", "remember", "--memory-write-args", '{"text": "{lesson}"}', "--quiet",
              cache=cache, timeout=600)
        return results, list(fake.requests)


def _payloads(results: Path, type_: str) -> list[dict[str, Any]]:
    return [p for *_, p in events(results, type_)]


def test_every_model_call_of_the_server_is_recorded_under_its_task_with_tokens_and_cost(
        model_run: tuple[Path, list[Any]]) -> None:
    results, seen = model_run
    (finished,) = _payloads(results, "run.finished")
    assert finished["status"] == "finished"
    calls = _payloads(results, "memory.model.called")
    assert len(calls) == len(seen) > 0  # every request the API saw went through the gateway, and is recorded
    tasks = first_tasks(SPANS, TASKS)
    # Per task: the recall's query embedding, then the write's chat, streamed chat and embedding.
    assert [(c["instance_id"], c["via"], c["kind"]) for c in calls] == [
        (iid, via, kind) for iid in tasks for via, kind in
        (("recall", "embeddings"), ("write", "chat"), ("write", "chat"), ("write", "embeddings"))]
    assert all(c["status"] == 200 and c["tokens_in"] and c["cost_usd"] and c["pass"] == "initial" for c in calls)
    assert all(c["tokens_out"] for c in calls if c["kind"] == "chat")
    assert [c["stream"] for c in calls[1:4]] == [False, True, False]
    assert {c["model"] for c in calls} == {"gpt-4o-mini", "text-embedding-3-small"}
    (started,) = _payloads(results, "run.started")
    assert started["config"]["memory_model_endpoint"].endswith("/v1")
    assert "OPENAI_API_KEY" in started["config"]["memory_env_names"]


def test_the_key_is_nowhere_in_the_ledger_or_the_results(model_run: tuple[Path, list[Any]]) -> None:
    results, seen = model_run
    assert all(s.key_tail == KEY[-4:] for s in seen)  # it reached the API
    no_secret_in_the_results(results, KEY)


def test_a_confined_server_reaches_its_api_only_through_the_gateway(model_run: tuple[Path, list[Any]]) -> None:
    results, _ = model_run
    (host,) = _payloads(results, "memory.provider.started")
    assert host["confined"] and not host["network"]
    writes = [p for p in _payloads(results, "memory.provider.called") if p["via"] == "write"]
    assert len(writes) == TASKS
    with Ledger.open(results / "ledger.db", readonly=True) as led:
        texts = [led.get_blob(w["result"]) for w in writes]
    assert texts == [b"ok direct=blocked elsewhere=refused"] * TASKS
    # Where else it tried to go is on the call: refused by the proxy, with the host it named.
    for write in writes:
        refused = [(c["host"], c["port"]) for c in write["egress"] if not c["allowed"]]
        assert refused == [("telemetry.example.com", 80)]
    assert all(c["allowed"] for p in _payloads(results, "memory.provider.called") if p["via"] == "recall"
               for c in p["egress"])


def test_metrics_show_the_agents_and_the_memorys_spend_apart_and_together(
        model_run: tuple[Path, list[Any]], cache: Path) -> None:
    results, _ = model_run
    calls = _payloads(results, "memory.model.called")
    doc = swecl_json(results, "metrics", cache=cache)
    (spend,) = doc["spend"].values()
    assert spend["memory_calls"] == len(calls)
    assert spend["memory_cost_usd"] == pytest.approx(sum(c["cost_usd"] for c in calls), abs=1e-6)
    assert spend["memory_tokens_in"] == sum(c["tokens_in"] for c in calls)
    assert spend["memory_tokens_out"] == sum(c["tokens_out"] or 0 for c in calls)
    assert spend["cost_usd"] is None  # the demo agent reports no cost: the agent's stays unknown
    assert spend["total_cost_usd"] == pytest.approx(spend["memory_cost_usd"])
    (version,) = doc["versions"]
    cost = version["cost_per_solved"]
    assert cost["memory_whole_run"]["cost_usd"] == pytest.approx(spend["memory_cost_usd"], abs=1e-6)
    assert cost["memory_whole_run"]["attempts"] == len(calls)
    assert cost["whole_run"]["cost_usd"] is None  # the agents' stays apart
    assert cost["total_run"]["spend"]["cost_usd"] == pytest.approx(cost["memory_run"]["spend"]["cost_usd"])
    text = swecl(results, "metrics", cache=cache).stdout
    assert "memory model $" in text and "agents and memory together" in text


@pytest.mark.parametrize(("args", "says"), [
    (["--memory-env", "OPENAI_BASE_URL={model_gateway}"], "give the model API it stands for with --memory-model-endpoint"),
    (["--memory-model-endpoint", "ftp://example.com/v1"], "give an http(s) URL with a host"),
    (["--memory-model-endpoint", "https://example.com/v1#x"], "no credentials, query or fragment"),
    (["--memory-allow-host", "a b"], "--memory-allow-host 'a b' is not a HOST"),
    (["--memory-allow-host", "db.local"], "is for a command-line --memory-server"),
])
def test_bad_model_gateway_options_are_one_line_errors_and_write_nothing(
    tmp_path: Path, cache: Path, args: list[str], says: str
) -> None:
    results = tmp_path / "results"
    server = "http://127.0.0.1:9/mcp" if "db.local" in args else "srv"
    proc = swecl(results, "run", "--stage", "plugin-blank", "--memory-server", server, *args, "--sequence", SPANS,
                 cache=cache, check=False)
    assert proc.returncode != 0 and says in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert not (results / "ledger.db").exists()


def test_show_lists_the_attempts_model_calls(model_run: tuple[Path, list[Any]], cache: Path) -> None:
    results, _ = model_run
    task = first_tasks(SPANS, TASKS)[1]
    shown = json.loads(swecl(results, "show", "1", task, "--json", cache=cache).stdout)
    assert [(m["via"], m["kind"]) for m in shown["model_calls"]] == [
        ("recall", "embeddings"), ("write", "chat"), ("write", "chat"), ("write", "embeddings")]
    text = swecl(results, "show", "1", task, cache=cache).stdout
    assert "the memory server's own model calls (through swecl's gateway)" in text
    assert "#" in text and "embeddings text-embedding-3-small" in text and "during swecl's recall: HTTP 200" in text


def test_the_views_task_page_lists_the_model_calls(model_run: tuple[Path, list[Any]], cache: Path) -> None:
    from tests.cli.test_view import get, serving, task_url

    results, _ = model_run
    with serving(results, cache) as (base, _proc):
        status, _, page = get(task_url(base, "1", first_tasks(SPANS, TASKS)[1]))
    assert status == 200 and "The memory server's own model calls" in page
    assert page.count("<li>#") >= 4 and "during swecl&#x27;s write: HTTP 200" in page
