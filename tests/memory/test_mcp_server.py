"""A recall through the real MCP stdio server, as an agent's MCP client makes it."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from agents._recall import RecallService
from ledger import Ledger

from .builders import REPO, item, start_run, write

PATCH = "diff --git a/w/h.py b/w/h.py\n--- a/w/h.py\n+++ b/w/h.py\n@@ -1 +1 @@\n-split(':')\n+split(':', 1)\n"


async def call_recall(argv: list[str], env: dict[str, str], args: dict) -> tuple[list[str], dict, object]:
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
    async with stdio_client(params) as (read, write_), ClientSession(read, write_) as session:
        await session.initialize()
        tools = await session.list_tools()
        result = await session.call_tool("recall", args)
        return [t.name for t in tools.tools], json.loads(result.content[0].text), result


def test_recall_over_mcp_stdio_is_recorded(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    led = Ledger.open(path, create=True)
    start_run(led, "V")
    digest = led.put_blob(PATCH)
    write(
        led,
        "V",
        item("m-header", "V", 1, title="header values keep colons", body="split on the first colon", patch=digest),
        item("m-logo", "V", 1, title="logo colour", body="wrong colour of the logo"),
        item("m-later", "V", 4, title="header later", body="header colon written by a later task"),
    )
    svc = RecallService(path, "V", "s", "initial", 2, "s-2", 1, REPO)
    argv = svc.mcp_server_argv()
    assert argv[:3] == [sys.executable, "-m", "agents.recall_server"]

    names, payload, raw = asyncio.run(call_recall(argv, svc.mcp_server_env(), {"query": "header colon split", "k": 3}))
    assert names == ["recall"] and not raw.is_error
    items = payload["items"]
    assert [i["item_id"] for i in items] == ["m-header"]
    assert items[0]["rank"] == 1 and items[0]["patch"] == PATCH and items[0]["source_run"] == "V"

    recs = list(led.read(types=["memory.recalled"]))
    assert len(recs) == 1 and recs[0].stream == "run/V/s"
    ev = recs[0].event
    assert (ev.via, ev.instance_id, ev.order, ev.pass_, ev.query, ev.k) == (
        "mcp",
        "s-2",
        2,
        "initial",
        "header colon split",
        3,
    )
    assert [(h.item_id, h.rank, h.score) for h in ev.results] == [("m-header", 1, items[0]["score"])]
    svc.close()
    led.close()


def test_a_bad_call_is_a_tool_error_not_a_crash(tmp_path: Path) -> None:
    svc = RecallService(tmp_path / "missing.db", "V", "s", "initial", 1, "s-1", 1, REPO)
    raw = asyncio.run(_raw_call(svc.mcp_server_argv(), svc.mcp_server_env()))
    assert raw.is_error and "no ledger at" in raw.content[0].text


async def _raw_call(argv: list[str], env: dict[str, str]):
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
    async with stdio_client(params) as (read, write_), ClientSession(read, write_) as session:
        await session.initialize()
        return await session.call_tool("recall", {"query": "x"})


def test_hidden_items_are_left_out_of_the_mcp_recall(tmp_path: Path) -> None:
    """`swecl counterfactual`'s filter reaches the server: a hidden item is as if never written."""
    path = tmp_path / "ledger.db"
    with Ledger.open(path, create=True) as led:
        start_run(led, "V")
        write(led, "V", item("m-header", "V", 1, title="header values keep colons", body="split on the first colon"),
              item("m-colon", "V", 1, title="colon in header", body="header colon"))
    svc = RecallService(path, "V", "s", "initial", 2, "s-2", 1, REPO, hidden=["m-header"])
    argv = svc.mcp_server_argv()
    assert argv[-2:] == ["--hide", "m-header"]
    _names, payload, _raw = asyncio.run(call_recall(argv, svc.mcp_server_env(), {"query": "header colon split"}))
    assert [i["item_id"] for i in payload["items"]] == ["m-colon"]
    assert [i.item_id for i in svc.recall("header colon split")] == ["m-colon"]  # in process too
    svc.close()
