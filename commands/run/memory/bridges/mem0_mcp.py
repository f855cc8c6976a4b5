"""mem0's open-source memory (the `mem0ai` library) as an MCP memory server over stdio.

Mem0 publishes MCP servers for its hosted platform only (PyPI `mem0-mcp-server`, npm
`@mem0/mcp-server`: their model calls happen at Mem0, where no one can see or count
them). This program serves the library itself: mem0's own extraction (one LLM call per
write, JSON mode), embeddings and search, with its vector store (Qdrant, embedded) and
history database in one folder. It is swecl's `mem0` preset (docs/memory-servers.md);
it imports nothing of swecl and runs under any Python that has `mem0ai` and `mcp`:

    python mem0_mcp.py

The environment configures it:
  MEM0_DATA             the folder of the vector store and the history (default: ./mem0)
  OPENAI_BASE_URL, OPENAI_API_KEY
                        the OpenAI-compatible API of the model and the embedder
  MEM0_LLM_MODEL        the extraction model (mem0's default when unset)
  MEM0_EMBEDDING_MODEL  the embedding model (default text-embedding-3-small)
  MEM0_EMBEDDING_DIMS   its dimensions (default 1536; sent to the API only when set)
  MEM0_USER_ID          whose memories (default swecl)

Tools: `add_memory(text)`: mem0 extracts memories from the text and stores them before
the call returns (no background queue: what a write stored is in the folder when the
answer arrives); `search_memories(query, limit)`: the closest memories, as JSON (their
texts and scores).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from mem0 import Memory

try:  # mcp 2
    from mcp.server.mcpserver import MCPServer as Server
except ImportError:  # mcp 1
    from mcp.server.fastmcp import FastMCP as Server

DATA = Path(os.environ.get("MEM0_DATA") or "mem0").resolve()
USER = os.environ.get("MEM0_USER_ID") or "swecl"


def _config() -> dict[str, Any]:
    llm: dict[str, Any] = {"openai_base_url": os.environ.get("OPENAI_BASE_URL")}
    if os.environ.get("MEM0_LLM_MODEL"):
        llm["model"] = os.environ["MEM0_LLM_MODEL"]
    dims = os.environ.get("MEM0_EMBEDDING_DIMS")
    embedder: dict[str, Any] = {"model": os.environ.get("MEM0_EMBEDDING_MODEL") or "text-embedding-3-small",
                                "openai_base_url": os.environ.get("OPENAI_BASE_URL")}
    if dims:
        embedder["embedding_dims"] = int(dims)
    return {
        "llm": {"provider": "openai", "config": llm},
        "embedder": {"provider": "openai", "config": embedder},
        "vector_store": {"provider": "qdrant", "config": {
            "collection_name": "mem0", "path": str(DATA / "qdrant"), "on_disk": True,
            "embedding_model_dims": int(dims or 1536)}},
        "history_db_path": str(DATA / "history.db"),
    }


def main() -> None:
    DATA.mkdir(parents=True, exist_ok=True)
    memory = Memory.from_config(_config())
    server = Server("mem0")

    def add_memory(text: str) -> str:
        """Remember what the text says: mem0 extracts self-contained memories from it and stores them."""
        result = memory.add([{"role": "user", "content": text}], user_id=USER)
        found = result.get("results", []) if isinstance(result, dict) else result
        return json.dumps({"stored": [{"id": r.get("id"), "memory": r.get("memory"), "event": r.get("event")}
                                      for r in found]})

    def search_memories(query: str, limit: int = 5) -> str:
        """Search the memories closest to the query; returns them with their scores, best first."""
        result = memory.search(query, top_k=limit, filters={"user_id": USER})
        found = result.get("results", []) if isinstance(result, dict) else result
        # No ids: every string of the answer is a memory's text (what swecl's audit attributes).
        return json.dumps({"memories": [{"memory": r.get("memory"), "score": r.get("score")} for r in found]})

    server.add_tool(add_memory, name="add_memory", description=add_memory.__doc__)
    server.add_tool(search_memories, name="search_memories", description=search_memories.__doc__)
    server.run("stdio")


if __name__ == "__main__":
    main()
