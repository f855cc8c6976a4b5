"""How the CLI agents set up a task with a user's memory server (`swecl run --memory-server`),
before any process: the prompt, the MCP configuration, the sandbox. The end-to-end tests
with the real CLIs are `tests/run/test_memory_server_clis.py`.
"""

from __future__ import annotations

import json
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

from agents._claude import ClaudeAgent, build_prompt
from agents._codex import CodexAgent
from agents._gemini import GeminiAgent
from agents._protocol import AgentInput
from graders.host import Sandbox

from .mini_recall import MiniRecall


def _flag(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


class ServerLike(MiniRecall):
    """What `ServerRecall` (a user's memory server, `swecl run --memory-server`) adds to
    a recall handle: the server's own tools, a proxy that may run in the sandbox, and
    the host's limit on one call (`--memory-call-timeout 600`)."""

    mcp_server_in_sandbox = True

    def mcp_tools(self) -> list[str]:
        return ["create_entities", "search_nodes"]

    def mcp_call_timeout_s(self) -> float:
        return 600.0


def test_a_users_memory_server_is_named_by_its_own_tools_in_every_memory_prompt(
    make_input: Callable[..., AgentInput], tmp_path: Path
) -> None:
    server = ServerLike([], tmp_path / "p")
    for style, code_mode in (("recall", "agentic"), ("natural", "agentic"), ("recall", "blind")):
        prompt = build_prompt(make_input(recall=server, prompt_style=style,
                                         code_mode=code_mode))
        assert "`create_entities`, `search_nodes`" in prompt, (style, code_mode)
        assert "recall" not in prompt  # no tool of that name exists
    recall_style = build_prompt(make_input(recall=server, prompt_style="recall"))
    assert "Before you do anything else, use them to look for notes" in recall_style
    blind = build_prompt(make_input(recall=server, prompt_style="recall", code_mode="blind"))
    assert "The only tools you have are your `memory` MCP server's: `create_entities`, `search_nodes`." in blind


def test_a_confined_run_starts_a_memory_servers_proxy_in_the_sandbox_and_relays_swecls_recall(
    make_input: Callable[..., AgentInput], tmp_path: Path
) -> None:
    confined = Sandbox("bwrap", "bwrap")
    server = ServerLike([], tmp_path / "p")
    agent = ClaudeAgent(executable=sys.executable)
    inv = agent.prepare(make_input(recall=server, sandbox=confined))
    config = json.loads(Path(_flag(inv.argv, "--mcp-config") or "").read_text())
    argv = server.mcp_server_argv()
    assert (config["mcpServers"]["memory"]["command"], config["mcpServers"]["memory"]["args"]) == (argv[0], argv[1:])
    assert inv.recall_server is None  # nothing served outside: the proxy reaches its door itself
    # swecl's own recall server reads the ledger: relayed, served outside the sandbox.
    own = MiniRecall([], tmp_path / "r")
    relayed = agent.prepare(make_input(recall=own, sandbox=confined,
                                       scratch_dir=tmp_path / "scratch2"))
    assert relayed.recall_server is not None and relayed.recall_server[0] == own.mcp_server_argv()


def test_codex_and_gemini_wait_longer_on_a_memory_tool_than_the_servers_own_call_limit(
    make_input: Callable[..., AgentInput], tmp_path: Path
) -> None:
    server = ServerLike([], tmp_path / "p")
    codex = CodexAgent(executable=sys.executable).prepare(make_input(recall=server))
    assert tomllib.loads(codex.config)["mcp_servers"]["memory"]["tool_timeout_sec"] == 630
    gemini = GeminiAgent(executable=sys.executable).prepare(make_input(recall=server,
                                                                       scratch_dir=tmp_path / "scratch2"))
    assert gemini.settings["mcpServers"]["memory"]["timeout"] == 630_000
    # swecl's own recall server: the CLIs' defaults
    own = MiniRecall([], tmp_path / "r")
    codex = CodexAgent(executable=sys.executable).prepare(make_input(recall=own,
                                                                     scratch_dir=tmp_path / "scratch3"))
    assert tomllib.loads(codex.config)["mcp_servers"]["memory"]["tool_timeout_sec"] == 300
    gemini = GeminiAgent(executable=sys.executable).prepare(make_input(recall=own,
                                                                       scratch_dir=tmp_path / "scratch4"))
    assert gemini.settings["mcpServers"]["memory"]["timeout"] == 300_000
