"""The memory server's model calls: the loopback fake of an OpenAI-compatible API (its wire
format checked with the official `openai` client), the recording gateway in front of it
(every call an event with its tokens and price, never the key), the price table, and the
`{model_gateway}` / `--memory-model-endpoint` options."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from commands.run.memory import MODEL_PRICES, ModelGateway, model_cost, parse_memory_server, price_of
from ledger import Ledger, SweclError
from ledger.events import MemoryModelCalled
from tests.fake_openai_compat import embed, fake_openai_compat

openai = pytest.importorskip("openai")
KEY = "sk-test-gateway-0123456789abcdef"


def _client(base_url: str) -> Any:
    return openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0, timeout=20)


def test_the_official_client_parses_the_fakes_json_schema_answers_into_its_models() -> None:
    from pydantic import BaseModel

    class Node(BaseModel):
        id: str
        name: str
        type: str
        description: str

    class Edge(BaseModel):
        source_node_id: str
        target_node_id: str
        relationship_name: str
        note: str | None

    class KnowledgeGraph(BaseModel):  # the shape of cognee's: $defs, $ref, a nullable field
        nodes: list[Node]
        edges: list[Edge]

    with fake_openai_compat() as (_fake, url):
        parsed = _client(url).beta.chat.completions.parse(
            model="gpt-4o-mini", response_format=KnowledgeGraph,
            messages=[{"role": "user", "content": "spans#1 fixed Interval.overlaps\nfor touching spans"}])
        graph = parsed.choices[0].message.parsed
        assert isinstance(graph, KnowledgeGraph) and parsed.usage is not None and parsed.usage.completion_tokens
        (node,), (edge,) = graph.nodes, graph.edges
        assert node.name == "spans#1 fixed Interval.overlaps" and "touching spans" in node.description
        assert edge.source_node_id == edge.target_node_id == node.id and edge.note is None


def test_the_official_client_parses_the_fakes_answers() -> None:
    with fake_openai_compat() as (fake, url):
        client = _client(url)
        chat = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hello there"}])
        assert chat.choices[0].message.content == "ok: hello there" and chat.usage.prompt_tokens == 5
        chunks = list(client.chat.completions.create(model="gpt-4o-mini", stream=True,
                                                     stream_options={"include_usage": True},
                                                     messages=[{"role": "user", "content": "a b c"}]))
        assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "ok: a b c"
        assert chunks[-1].usage.completion_tokens == 4 and not chunks[-1].choices
        emb = client.embeddings.create(model="text-embedding-3-small", input=["one two", "one two"])
        assert len(emb.data[0].embedding) == 1536 and emb.data[0].embedding == emb.data[1].embedding  # the API's length
        assert emb.data[0].embedding == embed("one two", 1536) and emb.usage.prompt_tokens == 4
        short = client.embeddings.create(model="text-embedding-3-small", input="one two", dimensions=64)
        assert short.data[0].embedding == embed("one two", 64)
        extraction = client.chat.completions.create(  # JSON mode: mem0's extraction prompt, as mem0 sends it
            model="gpt-4.1-nano", response_format={"type": "json_object"},
            messages=[{"role": "system", "content": "You are a Memory Extractor"},
                      {"role": "user", "content": "## Existing Memories\n[]\n\n## New Messages\nuser: Fixed the "
                                                  "parser.\nIt needed a guard.\n\n## Observation Date\n2026-12-02"}])
        assert json.loads(extraction.choices[0].message.content) == {"memory": [
            {"id": "0", "text": "Fixed the parser."}, {"id": "1", "text": "It needed a guard."}]}
        with pytest.raises(urllib.error.HTTPError) as caught:  # no key: the API's own 401
            urllib.request.urlopen(urllib.request.Request(url + "/embeddings", data=b'{"input": "x"}'), timeout=10)
        assert caught.value.code == 401
        assert {s.key_tail for s in fake.requests} <= {KEY[-4:], None}


def test_the_gateway_forwards_streams_and_records_every_call_without_the_key() -> None:
    recorded: list[MemoryModelCalled] = []
    with fake_openai_compat() as (fake, url), ModelGateway(url, recorded.append, sequence_id="seq") as gateway:
        client = _client(gateway.url)  # `{model_gateway}`: the endpoint's base URL
        client.embeddings.create(model="text-embedding-3-small", input="fix the parser")
        chat = client.chat.completions.create(model="gpt-4o-mini-2024-07-18", messages=[{"role": "user", "content": "x y"}])
        assert chat.choices[0].message.content == "ok: x y"
        streamed = client.chat.completions.create(model="gpt-4o-mini", stream=True, stream_options={"include_usage": True},
                                                  messages=[{"role": "user", "content": "p q r"}])
        assert "".join(c.choices[0].delta.content or "" for c in streamed if c.choices) == "ok: p q r"
        _client(gateway.url + "/v1").chat.completions.create(model="local-llama", messages=[{"role": "user", "content": "z"}])
    assert [s.route for s in fake.requests] == ["/v1/embeddings", "/v1/chat/completions", "/v1/chat/completions",
                                                "/v1/chat/completions"]  # no /v1/v1: the prefix is not given twice
    assert all(s.key_tail == KEY[-4:] for s in fake.requests)  # the key went through to the endpoint
    emb, chat_ev, stream_ev, unknown = recorded
    assert (emb.kind, emb.model, emb.status, emb.tokens_in, emb.tokens_out) == ("embeddings", "text-embedding-3-small",
                                                                                200, 3, None)
    assert emb.cost_usd == pytest.approx(3 * 0.02 / 1e6) and emb.path == "/v1/embeddings"
    assert (chat_ev.kind, chat_ev.tokens_in, chat_ev.tokens_out) == ("chat", 5, 3)
    assert chat_ev.cost_usd == pytest.approx((5 * 0.15 + 3 * 0.60) / 1e6)
    assert stream_ev.stream and (stream_ev.tokens_in, stream_ev.tokens_out) == (6, 4) and stream_ev.cost_usd
    assert unknown.model == "local-llama" and unknown.tokens_in == 4 and unknown.cost_usd is None  # not $0
    assert [e.call for e in recorded] == [1, 2, 3, 4] and {e.via for e in recorded} == {"start"}
    assert all(e.host == url.split("//")[1].removesuffix("/v1") for e in recorded)
    import msgspec

    assert KEY not in msgspec.json.encode(recorded).decode() and "Bearer" not in msgspec.json.encode(recorded).decode()


def test_an_unreachable_endpoint_is_a_502_recorded_with_its_reason() -> None:
    recorded: list[MemoryModelCalled] = []
    with fake_openai_compat() as (_, url):
        dead = url  # the port is free again once the fake stops
    with ModelGateway(dead, recorded.append, sequence_id="seq") as gateway:
        with pytest.raises(openai.APIStatusError) as caught:
            _client(gateway.url).embeddings.create(model="text-embedding-3-small", input="x")
    assert caught.value.status_code == 502
    (ev,) = recorded
    assert ev.status is None and ev.error and ev.cost_usd is None and ev.tokens_in is None


def test_prices_come_from_the_table_and_an_unknown_model_has_none() -> None:
    assert price_of("gpt-4o-mini") == MODEL_PRICES["gpt-4o-mini"] == price_of("openai/gpt-4o-mini-2024-07-18")
    assert price_of("gpt-4o-2024-08-06") == MODEL_PRICES["gpt-4o"]
    assert price_of("llama3") is None and model_cost("llama3", 100, 10) is None
    assert model_cost("gpt-4o-mini", None, None) is None  # no usage reported: unknown, not $0
    assert model_cost("text-embedding-3-large", 1_000_000, None) == pytest.approx(0.13)


def test_the_model_gateway_placeholder_and_its_endpoint_are_checked() -> None:
    spec = parse_memory_server("srv", ["OPENAI_BASE_URL={model_gateway}", "F={data}/f"])
    assert spec.uses_model_gateway
    assert spec.env_for(Path("/d"), "http://127.0.0.1:9") == {
        "OPENAI_BASE_URL": "http://127.0.0.1:9", "F": "/d/f"}
    with pytest.raises(SweclError, match="unknown placeholder"):
        parse_memory_server("srv", ["X={gateway}"])


def test_the_memorys_priced_calls_count_toward_the_budget_and_apart_in_the_spend(tmp_path: Path) -> None:
    from commands.run._budget import BudgetReached, check_budget, spent_usd
    from projections import run_cost, spend_of

    def call(cost: float | None, order: int, pass_: str = "initial") -> MemoryModelCalled:
        return MemoryModelCalled(sequence_id="s", instance_id=f"t{order}", order=order, pass_=pass_, model="m",
                                 tokens_in=100, tokens_out=10, cost_usd=cost, status=200)

    with Ledger.open(tmp_path / "ledger.db", create=True) as led:
        led.append("run/v1/s", [call(0.25, 1), call(None, 1), call(0.5, 2, "retest")])
        assert spent_usd(led, "v1") == pytest.approx(0.75)
        assert check_budget(led, "v1", 1.0) == pytest.approx(0.25)
        with pytest.raises(BudgetReached):
            check_budget(led, "v1", 0.7)
        spend = spend_of(led, "v1")
        assert (spend.memory_calls, spend.memory_tokens_in, spend.memory_tokens_out) == (3, 300, 30)
        assert spend.cost_usd is None and spend.total_cost_usd == pytest.approx(0.75)
        assert spend.document()["memory_cost_usd"] == 0.75
        cost = run_cost(led, "v1", {"s": 2})
        assert cost.run.usd_per_solved is None and cost.memory_run is not None
        assert cost.memory_run.usd_per_solved == pytest.approx(0.125)  # the initial pass's calls, per solved task
        assert cost.memory_whole_run is not None and cost.memory_whole_run.cost_usd == pytest.approx(0.75)
        assert run_cost(led, "v2", {}).memory_run is None  # a run without model calls shows nothing apart
