"""opencode (npm `opencode-ai`) as a swecl agent.

One task = one `opencode run --format json` process in the task's worktree, with the
prompt on stdin and a home of its own in the task's scratch dir (`HOME` and the four XDG
dirs: config, data, cache, state), holding the `opencode.json` we write as its global
config: opencode reads no user config, keeps its session database there, and the dir
goes with the scratch space. The repository's own opencode config (an `opencode.json`,
a `.opencode/` folder, its AGENTS.md) is not read (`OPENCODE_DISABLE_PROJECT_CONFIG`):
the run decides how the agent is configured.

- model API: `--model PROVIDER/MODEL` names one of opencode's providers; `anthropic`
  (at `$ANTHROPIC_BASE_URL`, else Anthropic's) and `openai` (at `$OPENAI_BASE_URL`, else
  OpenAI's) are supported, their base URL written in the config, the key read by opencode
  itself from the provider's variable (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`): the key is
  never written anywhere, and nothing we keep holds it (see `_scrub`);
- offline but for that API: no auto-update, no sharing, no model catalog fetch (its
  bundled catalog prices the tokens), no LSP downloads, no external plugins, no session
  title made by a second model call; and the background `npm install` of its plugin
  package into the config dir is answered beforehand (the dir holds a lock that already
  lists it), so nothing reaches the npm registry;
- memory: the recall MCP server (server name `memory`; the model sees its tool as
  `memory_recall`, recorded as `mcp__memory__recall` like the other CLI agents') under
  `mcp`; absent when memory is off. A server that fails to start leaves opencode running
  without it (it logs "server unavailable" on stderr), so the run is then an error;
- builtin stage: opencode's native memory file is its global `AGENTS.md` (in its config
  dir, loaded into every session). It is kept per run+sequence in
  `memory_dir/auto-memory/AGENTS.md`, copied into the fresh config dir before the task and
  back after it; the task prompt says where it is;
- unattended: every permission allowed but the web tools (`webfetch`, `websearch`,
  `codesearch`: denied, so not offered to the model, unless `--allow-web`); sandboxed, the
  egress proxy lets it reach the provider's host only;
- reports turns (model calls), tool calls, tokens and cost (opencode's own pricing).

Limits: opencode has none of its own but the wall clock; swecl ends it, as a timeout
does, once its stream passes `Budget.max_tokens` (exit `max_tokens`) or once `max_turns`
model calls ended wanting another (exit `max_turns`).

Not supported: `code_mode` blind (refused in one line), `Budget.max_cost_usd` (the run's
`--budget-usd` is checked between tasks).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ledger import SweclError
from ledger.sqlite import SqliteError, connect

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
    primed_notes,
    recall_server,
)
from ._opencode_events import OpencodeSummary, classify, parse_events, token_counter, turn_limit_watch
from ._protocol import AgentInput, AgentResult, RunSupplies

__all__ = ["PROVIDERS", "OpencodeAgent", "OpencodeInvocation", "find_opencode"]

MEMORY_FILE = "AGENTS.md"
# The providers swecl can point at an endpoint: id -> (endpoint variable, its default, what
# opencode's SDK appends to it for its base URL).
PROVIDERS: dict[str, tuple[str, str, str]] = {
    "anthropic": ("ANTHROPIC_BASE_URL", "https://api.anthropic.com", "/v1"),
    "openai": ("OPENAI_BASE_URL", "https://api.openai.com/v1", ""),
}
# Tools that reach the network beyond the model API.
WEB_TOOLS = ("webfetch", "websearch", "codesearch")

# Offline but for the model API, quiet, and blind to the repository's own opencode config.
_QUIET_ENV = {
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",  # the catalog bundled in the binary, not models.dev
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_PROJECT_CONFIG": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",  # no ~/.claude instructions or skills
    "OPENCODE_DISABLE_EXTERNAL_SKILLS": "1",
    "OPENCODE_DISABLE_TERMINAL_TITLE": "1",
    "NO_COLOR": "1",
}
# What opencode logs (WARN) when an MCP server did not start; it runs on without it.
_MCP_TROUBLE = f'message="server unavailable" key={MCP_SERVER_NAME} '

_BUILTIN_NOTE = """\
You keep one memory file across the tasks you do in this repository: {path}. opencode \
loads it at the start of every task (what it holds now, if anything, is already in your \
instructions). Before you finish, update it with what you learned that would help with \
later issues in this repository: where things live, conventions, pitfalls, how to run the \
tests. Keep it short and general, rewrite rather than repeat, and never put it inside the \
repository.
"""


def find_opencode(explicit: str | None = None) -> str:
    """The `opencode` executable: `explicit`, else $SWECL_OPENCODE_BIN, else PATH."""
    return find_cli(OpencodeAgent.command, OpencodeAgent.env_var, OpencodeAgent.package, explicit)


def split_model(model: str | None) -> tuple[str, str]:
    """(provider, model) of `PROVIDER/MODEL`; refused in one line otherwise."""
    provider, _, name = (model or "").partition("/")
    if not provider or not name:
        raise SweclError(f"the opencode agent needs --model PROVIDER/MODEL (e.g. anthropic/claude-sonnet-4-5), "
                         f"not {model!r}")
    if provider not in PROVIDERS:
        raise SweclError(f"the opencode agent speaks to the providers {', '.join(PROVIDERS)}, not {provider!r}: "
                         f"use --model {'/MODEL or '.join(PROVIDERS)}/MODEL")
    return provider, name


@dataclass(frozen=True, kw_only=True)
class OpencodeInvocation(CliInvocation):
    home: Path  # HOME, and the XDG dirs under it: everything opencode reads and writes of its own
    config_dir: Path  # XDG_CONFIG_HOME/opencode: opencode.json and the global AGENTS.md
    data_dir: Path  # XDG_DATA_HOME/opencode: the session database and the log
    config: dict[str, Any]  # what opencode.json holds
    memory_root: Path | None  # a native memory folder: where AGENTS.md is carried in across tasks


class OpencodeAgent(CliAgent[OpencodeInvocation]):
    """`opencode run` on one task. Options: executable, extra_args, env (max_retries is
    accepted and unused: opencode retries only what the API calls retryable)."""

    name = "opencode"
    command = "opencode"
    env_var = "SWECL_OPENCODE_BIN"
    package = "opencode-ai"

    def base_env(self, inp: AgentInput) -> dict[str, str]:
        # Set by a parent opencode session or a user's shell (which config, database,
        # permissions or server it uses): the run decides them all.
        env = super().base_env(inp)
        return {k: v for k, v in env.items() if not (k == "OPENCODE" or k.startswith("OPENCODE_"))}

    def endpoints(self, inp: AgentInput, inv: OpencodeInvocation) -> list[str]:
        if inp.model is None:  # the start-up probe: no model call
            return []
        provider, _ = split_model(inp.model)
        var, default, _suffix = PROVIDERS[provider]
        return [inv.env.get(var) or default]

    # -- preparing -------------------------------------------------------------------------

    def prepare(self, inp: AgentInput) -> OpencodeInvocation:
        _refuse_blind(inp)
        # No model: the start-up probe (`--version`), which needs the environment only; a task
        # without one is refused in `run`.
        provider = split_model(inp.model)[0] if inp.model is not None else None
        scratch = inp.scratch_dir
        scratch.mkdir(parents=True, exist_ok=True)
        home = scratch / "opencode-home"
        shutil.rmtree(home, ignore_errors=True)  # a fresh home every task
        xdg = {name: home / name for name in ("config", "data", "cache", "state")}
        for path in xdg.values():
            path.mkdir(parents=True)
        config_dir = xdg["config"] / "opencode"
        config_dir.mkdir()
        # opencode installs its plugin package into each config dir in the background
        # (npm, from the registry) unless the dir's lock already lists it: it does, and we
        # load no plugin, so nothing is fetched.
        (config_dir / "node_modules").mkdir()
        (config_dir / "package-lock.json").write_text(json.dumps(
            {"lockfileVersion": 3, "packages": {"": {"dependencies": {"@opencode-ai/plugin": "*"}}}}), encoding="utf-8")

        memory_root: Path | None = None
        if inp.memory_dir is not None:
            assert inp.memory_dir is not None  # AgentInput checks it
            memory_root = carry_in(inp.memory_dir, config_dir / MEMORY_FILE)

        env = self.base_env(inp)
        env.update(_QUIET_ENV)
        # opencode takes its working directory from $PWD when set (its shell runs there): the
        # worktree, never the directory swecl was started in.
        env["PWD"] = str(inp.worktree)
        env.update({"HOME": str(home), "XDG_CONFIG_HOME": str(xdg["config"]), "XDG_DATA_HOME": str(xdg["data"]),
                    "XDG_CACHE_HOME": str(xdg["cache"]), "XDG_STATE_HOME": str(xdg["state"])})

        permission: dict[str, str] = {"*": "allow"}
        if not inp.allow_web:
            # Denied tools are not offered at all (a fetch would find the task's fix upstream).
            permission.update({tool: "deny" for tool in WEB_TOOLS})
        config: dict[str, Any] = {
            "autoupdate": False,
            "share": "disabled",
            "snapshot": False,  # no git copy of the worktree in its data dir: swecl takes the patch
            "permission": permission,
        }
        if provider is not None:
            var, default, suffix = PROVIDERS[provider]
            base_url = (self.extra_env.get(var) or env.get(var) or default).rstrip("/") + suffix
            config["model"] = inp.model
            config["small_model"] = inp.model  # its helper calls (summaries) use the run's model, no other
            config["provider"] = {provider: {"options": {"baseURL": base_url}}}
        server = recall_server(inp)
        if server is not None:
            entry: dict[str, Any] = {"type": "local", "command": server.argv, "enabled": True,
                                     # ms to list its tools: a Python server on a busy machine
                                     "timeout": 60_000}
            if server.env:
                entry["environment"] = server.env
            config["mcp"] = {MCP_SERVER_NAME: entry}
        (config_dir / "opencode.json").write_text(json.dumps(config, indent=1), encoding="utf-8")

        # The same prompt as the other CLI agents' (agents are compared on equal words), and
        # in the builtin stage where the memory file is.
        prompt = build_prompt(inp, primed_notes(inp))
        if memory_root is not None:
            prompt += "\n" + _BUILTIN_NOTE.format(path=config_dir / MEMORY_FILE)

        argv = [
            self.executable, "run",
            "--format", "json",
            *(["--model", inp.model] if inp.model else []),
            "--title", inp.instance_id,  # a title of its own would cost a model call
            "--pure",  # no external plugins
            "--print-logs", "--log-level", "WARN",  # its warnings (an MCP server that failed) on stderr
        ]
        argv += self.extra_args
        # The prompt comes on stdin: no argv length limit, not in `ps`.
        return self.invocation(OpencodeInvocation, inp, argv=argv, env=env, prompt=prompt, server=server,
                               home=home, config_dir=config_dir, data_dir=xdg["data"] / "opencode",
                               config=config, memory_root=memory_root)

    # -- running ---------------------------------------------------------------------------

    def token_counter(self) -> Callable[[bytes], int]:
        return token_counter()  # its stream reports each model call's usage as it ends

    def stop_watch(self, inp: AgentInput) -> Callable[[bytes], bool] | None:
        # The token limit, and the turn limit opencode lacks: each model call's step_finish
        # says whether it goes on, so the run is ended before a call past `max_turns`.
        tokens = super().stop_watch(inp)
        turns = turn_limit_watch(inp.budget.max_turns) if inp.budget.max_turns is not None else None
        if tokens is None or turns is None:
            return tokens or turns
        # Both see every line: each keeps its own running count.
        return lambda line: any([tokens(line), turns(line)])

    def run(self, inp: AgentInput) -> AgentResult:
        _refuse_blind(inp)
        split_model(inp.model)  # a task names its provider and model, or is refused in one line
        inv, ran = self.launch(inp)  # its home is in the scratch dir, the one place it writes
        scrubber = ran.scrubber
        summary = parse_events(ran.stream.splitlines(), [MCP_SERVER_NAME] if inv.uses_mcp else [])
        exit_kind, error = classify(summary, ran.outcome.returncode, timed_out=ran.outcome.timed_out)
        if ran.outcome.halted and _at_turn_limit(summary, inp):
            exit_kind = "max_turns"  # ended by swecl before a model call past --max-turns
        elif exit_kind == "crashed":
            error = f"{error}; stderr: {last_line(ran.stderr)}"
        if exit_kind == "completed" and inv.uses_mcp and _MCP_TROUBLE in ran.stderr:
            # The server did not start (opencode goes on without it): no recall was possible.
            exit_kind, error = "error", "the memory MCP server failed to start: the run had no recall"

        # Its own files (the session database holds every tool result the model saw) are
        # scrubbed in place before anything is read from them.
        scrubber.tree(inv.home)
        # A run cut short before its first model call ended printed no event: its database
        # (a fresh one, this task's alone) still names the session.
        session_id = summary.session_id or _session_id(inv.data_dir / "opencode.db")
        memory_files = carry_back(inv.config_dir / MEMORY_FILE, inv.memory_root) if inv.memory_root else {}
        patch = _diff.worktree_patch(inp.worktree, ran.base)
        return self.judged(ran, AgentResult(
            # A key the agent wrote into the worktree must not travel on in the patch either.
            patch=scrubber.text(patch),
            exit=exit_kind,
            exit_code=ran.outcome.returncode,
            turns=summary.turns or None,
            tool_calls=summary.tool_calls,
            tokens=summary.tokens,
            cost_usd=summary.cost_usd,
            duration_s=time.monotonic() - ran.started,
            transcript=scrubber.bytes(ran.stream),
            prompt=scrubber.text(inv.prompt),
            session_id=session_id,
            error=scrubber.optional(error),
            model=inp.model,
            memory_files=memory_files,
        ))


def _at_turn_limit(summary: OpencodeSummary, inp: AgentInput) -> bool:
    """The run was ended at its turn limit, not its token limit (which wins when both were reached)."""
    limit, tokens = inp.budget.max_tokens, summary.tokens.get("input", 0) + summary.tokens.get("output", 0)
    return (inp.budget.max_turns is not None and summary.turns >= inp.budget.max_turns
            and (limit is None or tokens <= limit))


def _refuse_blind(inp: AgentInput) -> None:
    if inp.code_mode == "blind":
        raise SweclError("the opencode agent has no blind mode (its file tools cannot all be switched off): "
                         "use --code-mode agentic")


def _session_id(db: Path) -> str | None:
    """The one top-level session in opencode's database, if it can be read."""
    if not db.is_file() or db.is_symlink():
        return None
    try:
        with contextlib.closing(connect(db, readonly=True)) as conn:  # the ledger's one door to SQLite
            conn.setbusytimeout(5000)
            rows = list(conn.execute("SELECT id FROM session WHERE parent_id IS NULL ORDER BY time_created"))
    except SqliteError:
        return None
    return str(rows[0][0]) if len(rows) == 1 else None


def from_run(run: RunSupplies) -> OpencodeAgent:
    if run.runs_here:
        find_opencode()  # a missing CLI is said before the run starts, not once per task
    return OpencodeAgent()
