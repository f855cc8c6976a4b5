"""Google's Gemini CLI as a swecl agent.

One task = one `gemini -p "" --output-format stream-json` process in the task's worktree,
with the prompt on stdin and a home of its own (`GEMINI_CLI_HOME`, the CLI's override of
the user's home) in the task's scratch dir, holding the `.gemini/settings.json` we write:
the CLI reads no user settings, keeps its sessions there, and the dir goes with the
scratch space.

- model API: the Gemini API key auth (`security.auth.selectedType: gemini-api-key`), the
  key read by the CLI itself from `$GEMINI_API_KEY`, at `$GOOGLE_GEMINI_BASE_URL` when it
  is set (the CLI's own override; else Google's endpoint). The key is never written
  anywhere, and nothing we keep holds it (see `_scrub`); the CLI's own redaction of the
  commands' environment is on, so its shell tool does not hand the key on;
- memory: the recall MCP server (server name `memory`; the model sees its tool as
  `mcp_memory_recall`, recorded as `mcp__memory__recall` like the other CLI agents') under
  `mcpServers`, trusted (no confirmation); absent when memory is off. With
  `--memory-server` the same entry is swecl's recording proxy of the user's server, every
  tool of it offered (`mcp_memory_TOOL`, renamed by the CLI where the name has odd
  characters or is long: `gemini_tool_name`; recorded under the server's name). A server
  that fails to start leaves the CLI running without it (it says "MCP issues detected" on stderr),
  so the run is then an error: a memory stage without its memory is not the experiment
  asked for;
- builtin stage: the CLI's native memory file is its global `GEMINI.md` (in
  `GEMINI_CLI_HOME/.gemini`, loaded into every session as context). It is kept per
  run+sequence in `memory_dir/auto-memory/GEMINI.md`, copied into the fresh home before the
  task and back after it. The CLI's own prompt tells the model to keep memory by editing
  such files; the task prompt says which file is this one;
- unattended: `--approval-mode yolo` and `--skip-trust` (the worktree is a throw-away
  checkout, and swecl's sandbox confines the whole CLI); no auto-update, no usage
  statistics, no telemetry, no checkpoints, and neither `google_web_search` nor `web_fetch`
  unless `--allow-web` (the network is for the model API; a search would find the task's
  fix upstream); sandboxed, the egress proxy lets it reach its endpoint's host only;
- limits: `Budget.max_turns` is the CLI's `model.maxSessionTurns`; the wall-clock limit
  applies as for every agent. The CLI reports no cost, so `max_cost_usd` cannot apply.

Not supported: `code_mode` blind (no setting leaves the model without the CLI's file
tools; refused in one line).
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ledger import SweclError

from . import _diff
from ._claude import build_prompt, memory_tools
from ._cli_agent import (
    MCP_SERVER_NAME,
    CliAgent,
    CliInvocation,
    carry_back,
    carry_in,
    find_cli,
    last_line,
    memory_tool_timeout_s,
    primed_notes,
    recall_server,
    session_file,
)
from ._gemini_events import classify, parse_events, read_session
from ._protocol import AgentInput, AgentResult, RunSupplies

__all__ = ["GeminiAgent", "GeminiInvocation", "find_gemini"]

MEMORY_FILE = "GEMINI.md"
# Tools that reach the network beyond the model API.
NETWORK_TOOLS = ("google_web_search", "web_fetch")

# Set by a parent Gemini CLI session or a user's shell: each would change what the child
# does (which home, settings or auth it reads, what it thinks it runs in).
_DROPPED_ENV = (
    "GEMINI_CLI_HOME",
    "GEMINI_CLI_SYSTEM_SETTINGS_PATH",
    "GEMINI_CLI_SYSTEM_DEFAULTS_PATH",
    "GEMINI_CLI_TRUST_WORKSPACE",
    "GEMINI_SYSTEM_MD",
    "GEMINI_WRITE_SYSTEM_MD",
    "GEMINI_MODEL",
    "GEMINI_SANDBOX",
    "GEMINI_CLI",
    "GEMINI_CLI_NO_RELAUNCH",
    "SANDBOX",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_GCA",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "CLOUD_SHELL",
    "GEMINI_CLI_USE_COMPUTE_ADC",
    "GEMINI_CLI_ACTIVITY_LOG_TARGET",
)
# Quiet and non-interactive.
_QUIET_ENV = {
    "GEMINI_CLI_NO_RELAUNCH": "true",  # one process (no child re-launched for a larger heap)
    "NO_BROWSER": "true",
    "NO_COLOR": "1",
}

# What the CLI prints on stderr when an MCP server failed to connect (it runs on without it).
_MCP_TROUBLE = "MCP issues detected"

_BUILTIN_NOTE = """\
You keep one memory file across the tasks you do in this repository: {path}. The Gemini \
CLI loads it at the start of every task (what it holds now, if anything, is already in \
your context). Before you finish, update it with what you learned that would help with \
later issues in this repository: where things live, conventions, pitfalls, how to run the \
tests. Keep it short and general, rewrite rather than repeat, and never put it inside the \
repository.
"""


def find_gemini(explicit: str | None = None) -> str:
    """The `gemini` executable: `explicit`, else $SWECL_GEMINI_BIN, else PATH."""
    return find_cli(GeminiAgent.command, GeminiAgent.env_var, GeminiAgent.package, explicit)


@dataclass(frozen=True, kw_only=True)
class GeminiInvocation(CliInvocation):
    gemini_home: Path  # GEMINI_CLI_HOME: the CLI's settings, sessions and memory file live in .gemini/ here
    settings: dict[str, Any]  # what .gemini/settings.json holds
    memory_root: Path | None  # a native memory folder: where GEMINI.md is carried in across tasks


class GeminiAgent(CliAgent[GeminiInvocation]):
    """`gemini -p` on one task. Options: executable, max_retries, extra_args, env."""

    name = "gemini"
    command = "gemini"
    env_var = "SWECL_GEMINI_BIN"
    package = "@google/gemini-cli"
    dropped_env = _DROPPED_ENV
    endpoint_vars = ("GOOGLE_GEMINI_BASE_URL",)

    def prepare(self, inp: AgentInput) -> GeminiInvocation:
        if inp.code_mode == "blind":
            raise SweclError("the gemini agent has no blind mode (its file tools cannot all be switched off): "
                             "use --code-mode agentic")
        scratch = inp.scratch_dir
        scratch.mkdir(parents=True, exist_ok=True)
        gemini_home = scratch / "gemini-home"
        shutil.rmtree(gemini_home, ignore_errors=True)  # a fresh home every task
        dot_gemini = gemini_home / ".gemini"
        dot_gemini.mkdir(parents=True)

        memory_root: Path | None = None
        if inp.memory_dir is not None:
            assert inp.memory_dir is not None  # AgentInput checks it
            memory_root = carry_in(inp.memory_dir, dot_gemini / MEMORY_FILE)

        general: dict[str, Any] = {"enableAutoUpdate": False, "enableAutoUpdateNotification": False,
                                   "checkpointing": {"enabled": False}}
        if self.max_retries is not None:
            general["maxAttempts"] = self.max_retries + 1
        model: dict[str, Any] = {}
        if inp.budget.max_turns is not None:
            model["maxSessionTurns"] = inp.budget.max_turns
        settings: dict[str, Any] = {
            "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False},
                         "environmentVariableRedaction": {"enabled": True}},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": general,
            "tools": {"exclude": [] if inp.allow_web else list(NETWORK_TOOLS)},
            "model": model,
        }
        server = recall_server(inp)
        if server is not None:
            entry: dict[str, Any] = {"command": server.argv[0], "args": server.argv[1:], "trust": True,
                                     "timeout": int(memory_tool_timeout_s(inp, 300) * 1000)}
            if server.env:
                entry["env"] = server.env
            settings["mcpServers"] = {MCP_SERVER_NAME: entry}
        (dot_gemini / "settings.json").write_text(json.dumps(settings, indent=1), encoding="utf-8")

        # The same prompt as the other CLI agents' (agents are compared on equal words), and
        # in the builtin stage where the memory file is.
        prompt = build_prompt(inp, primed_notes(inp))
        if memory_root is not None:
            prompt += "\n" + _BUILTIN_NOTE.format(path=dot_gemini / MEMORY_FILE)

        argv = [
            self.executable,
            "--output-format", "stream-json",
            "--approval-mode", "yolo",
            "--skip-trust",
        ]
        if inp.model:
            argv += ["--model", inp.model]
        argv += self.extra_args
        argv += ["--prompt", ""]  # headless; the prompt comes on stdin: no argv length limit, not in `ps`

        env = self.base_env(inp)
        env.update(_QUIET_ENV)
        env["GEMINI_CLI_HOME"] = str(gemini_home)
        return self.invocation(GeminiInvocation, inp, argv=argv, env=env, prompt=prompt, server=server,
                               gemini_home=gemini_home, settings=settings, memory_root=memory_root)

    # -- running ---------------------------------------------------------------------------

    def run(self, inp: AgentInput) -> AgentResult:
        inv, ran = self.launch(inp)  # GEMINI_CLI_HOME is in the scratch dir, the one place it writes
        scrubber = ran.scrubber
        provided = memory_tools(inp) if inv.uses_mcp else None
        summary = parse_events(ran.stream.splitlines(), [MCP_SERVER_NAME] if inv.uses_mcp else [],
                               {MCP_SERVER_NAME: provided} if provided else None)
        exit_kind, error = classify(summary, ran.outcome.returncode, timed_out=ran.outcome.timed_out, stderr=ran.stderr)
        if exit_kind == "crashed":
            error = f"{error}; stderr: {last_line(ran.stderr)}"

        # The CLI's own files (its session file holds every tool result the model saw) are
        # scrubbed in place before anything is read from them.
        scrubber.tree(inv.gemini_home)
        session = _session(inv.gemini_home, summary.session_id)
        if exit_kind == "completed" and inv.uses_mcp and _MCP_TROUBLE in ran.stderr:
            # The server did not start (the CLI goes on without it): no recall was possible.
            exit_kind, error = "error", "the memory MCP server failed to start: the run had no recall"
        memory_files = carry_back(inv.gemini_home / ".gemini" / MEMORY_FILE, inv.memory_root) if inv.memory_root else {}
        patch = _diff.worktree_patch(inp.worktree, ran.base)
        return self.judged(ran, AgentResult(
            # A key the agent wrote into the worktree must not travel on in the patch either.
            patch=scrubber.text(patch),
            exit=exit_kind,
            exit_code=ran.outcome.returncode,
            turns=read_session(session.splitlines()) if session else None,
            tool_calls=summary.tool_calls,
            tokens=summary.tokens,
            cost_usd=None,  # the CLI reports tokens, never a price
            duration_s=time.monotonic() - ran.started,
            transcript=scrubber.bytes(session or ran.stream),
            prompt=scrubber.text(inv.prompt),
            session_id=summary.session_id,
            error=scrubber.optional(error),
            model=inp.model or summary.model,
            memory_files=memory_files,
        ))


def _session(gemini_home: Path, session_id: str | None) -> bytes | None:
    """The CLI's session file of this run (named after the first 8 characters of the session
    id), else the only one."""
    named = f"*/chats/session-*{session_id[:8]}*.json*" if session_id else None
    return session_file(gemini_home / ".gemini" / "tmp", named, "*/chats/session-*.json*")


def from_run(run: RunSupplies) -> GeminiAgent:
    if run.runs_here:
        find_gemini()  # a missing CLI is said before the run starts, not once per task
    return GeminiAgent()
