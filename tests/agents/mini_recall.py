"""A tiny, real recall handle for the agent tests: fixed items, a real MCP stdio server.

It lets the adapter tests check our wiring (the MCP config, the tool name the CLI
exposes, inproc recall by the demo and by the primed prompt) on their own; the test with
the project's `RecallService` checks the ledger side. Every call is appended to a JSONL
file, so a test sees what the agent asked and through which path.

Run as a script it is the MCP server: `python mini_recall.py ITEMS_JSON CALLS_JSONL`.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Item:
    item_id: str
    rank: int
    score: float
    title: str
    body: str
    repo: str = "demo/pkg"
    files: list[str] = field(default_factory=list)
    symbols: list[str] = field(default_factory=list)
    outcome: str | None = None
    patch: str | None = None
    source_instance: str | None = None
    source_run: str | None = None


class MiniRecall:
    def __init__(self, items: list[Item], directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.items = items
        self.items_file = directory / "items.json"
        self.items_file.write_text(json.dumps([asdict(i) for i in items]))
        self.calls_file = directory / "calls.jsonl"

    def recall(self, query: str, k: int = 5, repo: str | None = None) -> list[Item]:
        _record(self.calls_file, "inproc", query, repo, k)
        return sorted(self.items, key=lambda i: i.rank)[:k]

    def mcp_server_argv(self) -> list[str]:
        return [sys.executable, str(Path(__file__).resolve()), str(self.items_file), str(self.calls_file)]

    def calls(self) -> list[dict[str, object]]:
        if not self.calls_file.exists():
            return []
        return [json.loads(line) for line in self.calls_file.read_text().splitlines() if line.strip()]


def _record(path: Path, via: str, query: str, repo: str | None, k: int) -> None:
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps({"via": via, "query": query, "repo": repo, "k": k}) + "\n")


def _serve(items_file: Path, calls_file: Path) -> None:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("memory")
    items = json.loads(items_file.read_text())

    @server.tool()
    def recall(query: str, repo: str | None = None, k: int = 5) -> list[dict[str, object]]:
        """Notes from earlier tasks in this repository, best match first."""
        _record(calls_file, "mcp", query, repo, k)
        return [{"item_id": i["item_id"], "title": i["title"], "body": i["body"], "outcome": i["outcome"]}
                for i in sorted(items, key=lambda i: i["rank"])[:k]]

    server.run("stdio")


if __name__ == "__main__":
    _serve(Path(sys.argv[1]), Path(sys.argv[2]))
