"""The recall MCP server (stdio): one tool, `recall(query, repo, k)`, for one task.

    python -m agents.recall_server --ledger results/ledger.db --version V --sequence S \\
        --pass initial --order 3 --instance I [--attempt 1] [--repo R] [--ranker bm25] [--hide ITEM]...

Started by the agent's MCP client (see `RecallService.mcp_server_argv`). stdout is the
protocol: nothing else may print there, so logging goes to stderr and errors become
tool errors. Only argparse and the MCP SDK load at start; the ledger and the memory
projection load on the first call.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any

SERVER_NAME = "swecl-memory"
TOOL_DESCRIPTION = (
    "Recall memories of earlier tasks on this repository: issue summaries, files and functions "
    "touched, outcomes and patches. Give a query such as the issue text or an error message; "
    "returns up to k items as JSON, best first."
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m agents.recall_server", description="swecl recall MCP server (stdio)")
    p.add_argument("--ledger", required=True)
    p.add_argument("--version", required=True)
    p.add_argument("--sequence", required=True)
    p.add_argument("--pass", dest="pass_", required=True)
    p.add_argument("--order", type=int, required=True)
    p.add_argument("--instance", required=True)
    p.add_argument("--attempt", type=int, default=1)
    p.add_argument("--repo", default=None)
    p.add_argument("--ranker", default="bm25", choices=("bm25", "vector", "hybrid"))
    p.add_argument("--embedder", default=None, help="hashing[:DIM] or local:/path/to/model (never downloaded)")
    p.add_argument("--hide", action="append", default=[], metavar="ITEM",
                   help="an item id this task must not see (swecl counterfactual); repeatable")
    return p.parse_args(argv)


def _sdk() -> tuple[Any, type[Exception]]:
    """The server class and the tool-error type of the installed MCP SDK."""
    try:
        from mcp.server.mcpserver import MCPServer  # mcp 2.x
        from mcp.server.mcpserver.exceptions import ToolError

        return MCPServer, ToolError
    except ImportError:  # mcp 1.x
        from mcp.server.fastmcp import FastMCP
        from mcp.server.fastmcp.exceptions import ToolError as ToolError1

        return FastMCP, ToolError1


def build_server(args: argparse.Namespace) -> Any:
    service: Any = None

    def get_service() -> Any:
        nonlocal service
        if service is None:
            from ._recall import RecallService  # lazy: only argparse and the MCP SDK load at start (module doc)

            service = RecallService(
                args.ledger,
                args.version,
                args.sequence,
                args.pass_,
                args.order,
                args.instance,
                args.attempt,
                args.repo,
                via="mcp",
                ranker=args.ranker,
                embedder_spec=args.embedder,
                hidden=args.hide,
            )
        return service

    server_class, tool_error = _sdk()

    async def recall(query: str, repo: str | None = None, k: int = 5) -> str:
        # Runs on the event loop thread, one call at a time: the ledger connection is
        # never shared between threads.
        # lazy: only argparse and the MCP SDK load at start (module doc)
        import msgspec

        from ledger import SweclError

        try:
            items = get_service().recall(query, k=k, repo=repo)
        except SweclError as exc:
            # A user-level problem (no ledger, bad ranker): the agent sees the one line.
            raise tool_error(str(exc)) from None
        return json.dumps({"items": msgspec.to_builtins(items)}, ensure_ascii=False)

    server = server_class(SERVER_NAME, log_level="WARNING")
    try:
        server.add_tool(recall, name="recall", description=TOOL_DESCRIPTION, structured_output=False)
    except TypeError:  # an older 1.x without structured output
        server.add_tool(recall, name="recall", description=TOOL_DESCRIPTION)
    return server


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    build_server(args).run("stdio")


if __name__ == "__main__":
    main()
