"""OpenAI's Codex CLI as a swecl agent.

One task = one `codex exec --json` process in the task's worktree, with the prompt on
stdin and a `CODEX_HOME` of its own in the task's scratch dir, holding the `config.toml`
we write (codex reads no user config, keeps its sessions and state there, and the dir goes
with the scratch space):

- model API: a provider of our own in the config, speaking the Responses API at
  `base_url` (the adapter's option, else `$OPENAI_BASE_URL`, else OpenAI's) with the key
  codex reads from `$OPENAI_API_KEY` itself (`env_key`): the key is never written anywhere,
  and nothing we keep holds it (see `_scrub`). The commands codex runs for the model get
  the environment without variables named like credentials, so none can print the key;
- memory: the recall MCP server (server name `memory`, tool `recall`: the model sees it as
  `recall` in the namespace `mcp__memory`) under `[mcp_servers.memory]` with
  `required = true`, so a server that does not start fails the run instead of running it
  without recall; absent when memory is off. With `--memory-server` the same entry is
  swecl's recording proxy of the user's server, every tool of it offered. codex may
  defer MCP tools behind its `tool_search` tool (models that support tool search find
  them there);
- builtin stage: codex's native memory file is `AGENTS.md` in `CODEX_HOME` (it loads it
  into every session as instructions). It is kept per run+sequence in
  `memory_dir/auto-memory/AGENTS.md` (the folder `commands.run.memory.restore_builtin_files` rebuilds
  from the ledger), copied into the fresh `CODEX_HOME` before the task and back after it.
  codex never writes the file by itself, so the builtin stage's developer instructions
  say where it is and ask the model to keep its notes there;
- unattended: `--dangerously-bypass-approvals-and-sandbox` (no approval prompts, no
  sandbox of codex's own: swecl's sandbox confines the whole CLI); no update check, no
  analytics, no feedback uploads, no prompt history file, and no web search unless
  `--allow-web` (the network is for the model API; a search would find the task's fix
  upstream). Sandboxed, the egress proxy lets it reach `base_url`'s host only.

Not supported: `code_mode` blind (codex's `apply_patch` tool cannot be switched off, so
there is no tool-less run; refused in one line), and `Budget.max_turns` and
`max_cost_usd` (`codex exec` has neither limit, and reports no cost): only the wall-clock
limit applies.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ledger import SweclError

from . import _diff
from ._claude import build_prompt
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
from ._codex_events import classify, parse_events, read_rollout
from ._protocol import AgentInput, AgentResult, RunSupplies

__all__ = ["DEFAULT_BASE_URL", "CodexAgent", "CodexInvocation", "find_codex", "render_config"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
PROVIDER_ID = "swecl"
MEMORY_FILE = "AGENTS.md"

# Set by a parent codex session or a user's shell (which home it reads, whether it
# thinks it is already sandboxed).
_DROPPED_ENV = (
    "CODEX_HOME",
    "CODEX_SANDBOX",
    "CODEX_SANDBOX_NETWORK_DISABLED",
    "CODEX_THREAD_ID",
    "CODEX_INTERNAL_ORIGINATOR_OVERRIDE",
    "CODEX_API_KEY",  # codex exec's own API-key login: the run's key is $OPENAI_API_KEY alone
)

_BUILTIN_INSTRUCTIONS = """\
You keep one memory file across the tasks you do in this repository: {path}. Codex loads it \
at the start of every task (what it holds now, if anything, is in the AGENTS.md \
instructions). Before you finish, update it with what you learned that would help with \
later issues in this repository: where things live, conventions, pitfalls, how to run the \
tests. Keep it short and general, rewrite rather than repeat, and never put it inside the \
repository."""


def find_codex(explicit: str | os.PathLike[str] | None = None) -> str:
    """The `codex` executable: `explicit`, else $SWECL_CODEX_BIN, else PATH."""
    return find_cli(CodexAgent.command, CodexAgent.env_var, CodexAgent.package, explicit)


# --- config.toml ------------------------------------------------------------------------


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        # A JSON string is a TOML basic string once DEL is escaped too (TOML forbids it raw);
        # ensure_ascii=False keeps characters beyond the BMP whole (JSON would split them
        # into surrogate escapes, which TOML refuses).
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def _toml_key(key: str) -> str:
    bare = key.replace("_", "").replace("-", "").isalnum() and key.isascii()
    return key if bare else _toml_value(key)


def render_config(tables: Mapping[str, Mapping[str, Any]], top: Mapping[str, Any]) -> str:
    """A config.toml: `top` keys first, then one `[table]` per entry (dotted names allowed).
    Checked by parsing it back, so a value TOML cannot hold fails here, not inside codex."""
    lines = ["# Written by swecl for one task; codex reads no other config (CODEX_HOME is the task's own)."]
    lines += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in top.items()]
    for name, table in tables.items():
        lines += ["", f"[{'.'.join(_toml_key(part) for part in name.split('.'))}]"]
        lines += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in table.items()]
    text = "\n".join(lines) + "\n"
    tomllib.loads(text)
    return text


# --- one invocation ---------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class CodexInvocation(CliInvocation):
    codex_home: Path
    config: str  # the config.toml written into codex_home
    memory_root: Path | None  # a native memory folder: where AGENTS.md is carried in across tasks


class CodexAgent(CliAgent[CodexInvocation]):
    """`codex exec` on one task. Options: executable, base_url, max_retries, extra_args, env."""

    name = "codex"
    command = "codex"
    env_var = "SWECL_CODEX_BIN"
    package = "@openai/codex"
    dropped_env = _DROPPED_ENV

    def __init__(self, *, base_url: str | None = None, **options: Any) -> None:
        super().__init__(**options)
        self.base_url = base_url

    def endpoints(self, inp: AgentInput, inv: CodexInvocation) -> list[str]:
        return [self.base_url or inv.env.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL]

    # -- preparing -------------------------------------------------------------------------

    def prepare(self, inp: AgentInput) -> CodexInvocation:
        if inp.code_mode == "blind":
            raise SweclError("the codex agent has no blind mode (its apply_patch tool cannot be switched off): "
                             "use --code-mode agentic")
        scratch = inp.scratch_dir
        scratch.mkdir(parents=True, exist_ok=True)
        codex_home = scratch / "codex-home"
        shutil.rmtree(codex_home, ignore_errors=True)  # a fresh home every task
        codex_home.mkdir(parents=True)

        memory_root: Path | None = None
        top: dict[str, Any] = {}
        if inp.memory_dir is not None:  # a native memory folder kept across tasks
            memory_root = carry_in(inp.memory_dir, codex_home / MEMORY_FILE)
            top["developer_instructions"] = _BUILTIN_INSTRUCTIONS.format(path=codex_home / MEMORY_FILE)
        top.update({
            "model_provider": PROVIDER_ID,
            "web_search": "live" if inp.allow_web else "disabled",
            "check_for_update_on_startup": False,
        })

        provider: dict[str, Any] = {
            "name": "OpenAI Responses API (swecl)",
            "base_url": (self.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/"),
            "env_key": "OPENAI_API_KEY",  # codex reads the key from the environment itself
            "wire_api": "responses",
        }
        if self.max_retries is not None:
            provider["request_max_retries"] = self.max_retries
            provider["stream_max_retries"] = self.max_retries
        tables: dict[str, dict[str, Any]] = {
            "analytics": {"enabled": False},
            "feedback": {"enabled": False},
            "history": {"persistence": "none"},
            # The commands the agent runs get the environment without what is named like a
            # credential (codex's default excludes: *KEY*, *SECRET*, *TOKEN*): codex reads the
            # API key itself, and a command that printed it would hand it to the model.
            "shell_environment_policy": {"inherit": "all", "ignore_default_excludes": False},
            f"model_providers.{PROVIDER_ID}": provider,
        }

        server = recall_server(inp)
        if server is not None:
            entry: dict[str, Any] = {
                "command": server.argv[0],
                "args": server.argv[1:],
                # A server that fails to start ends the run (a memory stage without its memory
                # is not the experiment asked for); 60 s: a Python server on a busy machine.
                "required": True,
                "startup_timeout_sec": 60,
                "tool_timeout_sec": int(memory_tool_timeout_s(inp, 300)),
            }
            if server.env:
                # codex starts MCP servers with a minimal environment: what the server needs
                # beyond it (e.g. the project on PYTHONPATH) is given here.
                entry["env"] = server.env
            tables[f"mcp_servers.{MCP_SERVER_NAME}"] = entry
        config = render_config(tables, top)
        (codex_home / "config.toml").write_text(config, encoding="utf-8")

        # The same prompt as the claude agent's: agents are compared on equal words.
        prompt = build_prompt(inp, primed_notes(inp))

        argv = [
            self.executable, "exec",
            "--json", "--color", "never",
            "--dangerously-bypass-approvals-and-sandbox",
            "--skip-git-repo-check",
        ]
        if inp.model:
            argv += ["--model", inp.model]
        argv += self.extra_args
        argv.append("-")  # the prompt comes on stdin: no argv length limit, not in `ps`

        env = self.base_env(inp)
        env["CODEX_HOME"] = str(codex_home)
        return self.invocation(CodexInvocation, inp, argv=argv, env=env, prompt=prompt, server=server,
                               codex_home=codex_home, config=config, memory_root=memory_root)

    # -- running ---------------------------------------------------------------------------

    def run(self, inp: AgentInput) -> AgentResult:
        inv, ran = self.launch(inp)  # CODEX_HOME is in the scratch dir, the one place it writes
        started, base, outcome, raw_stream, scrubber, stderr = (ran.started, ran.base, ran.outcome, ran.stream,
                                                                ran.scrubber, ran.stderr)
        summary = parse_events(raw_stream.splitlines())
        exit_kind, error = classify(summary, outcome.returncode, timed_out=outcome.timed_out)
        if inv.uses_mcp and "required MCP servers failed to initialize" in stderr:
            # codex refused to start without its required server: no turn, no recall.
            exit_kind, error = "error", f"the memory MCP server failed to start: the run had no recall ({_last_line(stderr)})"
        elif exit_kind == "crashed":
            error = f"{error}; stderr: {_last_line(stderr)}"

        # codex's own files (its session file holds every tool result the model saw) are
        # scrubbed in place before anything is read from them.
        scrubber.tree(inv.codex_home)
        rollout = _rollout(inv.codex_home, summary.thread_id)
        facts = read_rollout(rollout.splitlines()) if rollout else None
        memory_files = carry_back(inv.codex_home / MEMORY_FILE, inv.memory_root) if inv.memory_root is not None else {}
        patch = _diff.worktree_patch(inp.worktree, base)
        return self.judged(ran, AgentResult(
            # A key the agent wrote into the worktree must not travel on in the patch either.
            patch=scrubber.text(patch),
            exit=exit_kind,
            exit_code=outcome.returncode,
            turns=facts.turns if facts else None,
            tool_calls=summary.tool_calls,
            tokens=summary.tokens,
            cost_usd=None,  # codex reports tokens, never a price
            duration_s=time.monotonic() - started,
            transcript=scrubber.bytes(rollout or raw_stream),
            prompt=scrubber.text(inv.prompt),
            session_id=summary.thread_id,
            error=scrubber.optional(error),
            model=inp.model or (facts.model if facts else None),
            memory_files=memory_files,
        ))


def _rollout(codex_home: Path, thread_id: str | None) -> bytes | None:
    """codex's session file of this run: the one named after the thread, else the only one."""
    return session_file(codex_home / "sessions", f"**/rollout-*{thread_id}.jsonl" if thread_id else None,
                        "**/rollout-*.jsonl")


def _last_line(text: str) -> str:
    # codex ends a fatal error with a stack backtrace of numbered frames: the message is
    # the last line before it.
    return last_line(text.split("Stack backtrace:", 1)[0])


def from_run(run: RunSupplies) -> CodexAgent:
    if run.runs_here:
        find_codex()  # a missing CLI is said before the run starts, not once per task
    return CodexAgent()
