"""The Claude Code CLI as a swecl agent.

One task = one `claude -p --output-format stream-json --verbose` process in the task's
worktree, in a sandboxed `CLAUDE_CONFIG_DIR`:

- memory: the recall MCP server (server name `memory`) through `--mcp-config` with
  `--strict-mcp-config`, or an empty strict config when memory is off (with
  `--memory-server`, the same name serves the user's server's own tools through swecl's
  recording proxy, and the prompt names them: `build_prompt`); the builtin stage
  instead keeps one config dir and one auto-memory dir per run+sequence so Claude Code's
  native memory carries from task to task (everywhere else auto-memory is disabled);
- hooks: `--settings` adds Stop and SessionEnd hooks that only record `session_id` and
  `transcript_path` to a file in the scratch dir and exit 0 (never `--bare`, which skips
  hooks); the harness does any memory work after the CLI has exited;
- permissions: unattended, so `bypassPermissions` by default (as root the CLI refuses it
  unless `IS_SANDBOX=1`, which we then set: the worktree is a throw-away checkout);
- network: only the API. Sandboxed, the CLI's one way out is the egress proxy
  (`_egress`), which allows the host of `ANTHROPIC_BASE_URL` (else api.anthropic.com) and
  any `--allow-host`; `WebFetch` and `WebSearch` are disallowed unless `--allow-web`
  (WebSearch runs on Anthropic's side, where no local rule reaches). Non-essential
  traffic, telemetry, error reports and the auto-updater are switched off;
  `ANTHROPIC_API_KEY` / `ANTHROPIC_BASE_URL` come from the environment and are never
  written anywhere we keep (see `_scrub`). Unsandboxed (`--sandbox none`) nothing but
  the disallowed tools limits it.

`code_mode` blind gives the model no tools but recall: it must answer with a unified diff,
which is applied to the worktree so the patch is still taken by `_diff.worktree_patch`.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import _diff
from ._cli_agent import (
    MCP_SERVER_NAME,
    CliAgent,
    CliInvocation,
    RecallServer,
    find_cli,
    last_line,
    primed_notes,
    read_memory,
    recall_server,
)
from ._protocol import AgentInput, AgentResult, RunSupplies
from ._stream_json import StreamSummary, classify, parse_stream, token_counter

__all__ = [
    "MODEL_ALIASES",
    "ClaudeAgent",
    "ClaudeInvocation",
    "build_prompt",
    "find_claude",
    "hook_records",
    "memory_tools",
    "resolve_model",
]

MODEL_ALIASES: dict[str, str] = {
    "haiku-4-5": "claude-haiku-4-5-20251001",
    "sonnet-4-6": "claude-sonnet-4-6",
    "opus-4-8": "claude-opus-4-8",
}

RECALL_TOOL = f"mcp__{MCP_SERVER_NAME}__recall"
# Claude Code's tools that reach the web (off unless --allow-web).
WEB_TOOLS = ("WebFetch", "WebSearch")

# Quiet, offline-but-for-the-API, non-interactive. Each is documented by Claude Code;
# CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC alone implies most, the rest make it explicit.
_QUIET_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
    "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1",
    "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
    # Connect --mcp-config servers before the first turn (see alwaysLoad below); the wait
    # is capped by MCP_CONNECT_TIMEOUT_MS (5 s by default: a Python MCP server on a busy
    # machine can take longer to import, and the run would start without recall).
    "MCP_CONNECTION_NONBLOCKING": "0",
    "MCP_CONNECT_TIMEOUT_MS": "60000",
}
# Set by a parent Claude Code session (or left over by a user's shell).
_DROPPED_ENV = (
    "CLAUDECODE",
    "CLAUDE_CODE_ENTRYPOINT",
    "CLAUDE_CODE_SSE_PORT",
    "CLAUDE_CONFIG_DIR",
    "CLAUDE_CODE_DISABLE_AUTO_MEMORY",
    "CLAUDE_COWORK_MEMORY_PATH_OVERRIDE",
    "CLAUDE_CODE_SIMPLE",
    "IS_SANDBOX",
)

# The hook: stdlib only, reads the payload from stdin (never from the shell's command
# line) and keeps three fields; any failure is swallowed so it can never block the CLI.
_HOOK_CODE = """\
import json, sys
try:
    payload = json.load(sys.stdin)
    keep = {k: payload.get(k) for k in ("hook_event_name", "session_id", "transcript_path")}
    with open(sys.argv[1], "a", encoding="utf-8") as out:
        out.write(json.dumps(keep) + "\\n")
except Exception:
    pass
"""


def resolve_model(name: str | None) -> str | None:
    """Full model id for swecl's short aliases; any other name passes through."""
    if name is None:
        return None
    return MODEL_ALIASES.get(name, name)


def find_claude(explicit: str | os.PathLike[str] | None = None) -> str:
    """The `claude` executable: `explicit`, else $SWECL_CLAUDE_BIN, else PATH."""
    return find_cli(ClaudeAgent.command, ClaudeAgent.env_var, ClaudeAgent.package, explicit)


# --- prompts ----------------------------------------------------------------------------


def _effective_style(inp: AgentInput) -> str:
    # Memory off (base, builtin, baseline pass): a prompt naming a tool that does not
    # exist would only waste turns, so memory styles fall back to plain.
    return inp.prompt_style if inp.recall is not None else "plain"


def memory_tools(inp: AgentInput) -> list[str] | None:
    """The tools of a user's memory server (`swecl run --memory-server`) as it announced
    them; None for swecl's own recall server (its one tool is `recall`)."""
    tools = getattr(inp.recall, "mcp_tools", None)
    return [str(t) for t in tools()] if callable(tools) else None


def _tool_list(tools: Sequence[str]) -> str:
    return ", ".join(f"`{t}`" for t in tools) or "none announced"


def build_prompt(inp: AgentInput, notes: Sequence[str] = (), *, recall_tool: bool = True,
                 blind_rules: str | None = None) -> str:
    """The task prompt for `inp`'s code mode and prompt style (notes: primed recall;
    recall_tool False: an agent without an MCP client, given only the notes). With a
    user's memory server the memory sentences name its own tools, not `recall`. The
    earlier tasks' section (`inp.history`, the full-history stage) comes before the issue,
    whatever the style.
    `blind_rules`: a blind prompt's last paragraph, for an agent that keeps a tool of its
    own without the repository (mini-swe-agent's bash), in place of "no tools but recall"."""
    style = _effective_style(inp)
    provided = memory_tools(inp) if inp.recall is not None else None
    parts: list[str] = []
    if style == "natural":
        paragraph = f"You have worked in the {inp.repo} repository before. "
        if notes:
            paragraph += "Notes you kept from that work:\n\n" + "\n".join(notes)
        if recall_tool:
            paragraph += ("\n\n" if notes else "") + (
                f"If more of that experience would help, the `recall` tool of your `{MCP_SERVER_NAME}` server finds it."
                if provided is None else
                f"More of that experience is kept by your `{MCP_SERVER_NAME}` MCP server (its tools: "
                f"{_tool_list(provided)}).")
        elif not notes:
            paragraph += "None of that work seems to bear on this issue."
        parts.append(paragraph)
    if inp.code_mode == "blind":
        parts.append(f"You are fixing an issue in the {inp.repo} repository.")
    else:
        parts.append(
            f"You are fixing an issue in the {inp.repo} repository, checked out in your "
            f"current working directory ({inp.worktree})."
        )
    if style == "recall" and provided is not None:
        parts.append(
            f"Your `{MCP_SERVER_NAME}` MCP server keeps notes across the tasks you do in this repository; "
            f"its tools are {_tool_list(provided)} (each tool's description says what it does). Before "
            "you do anything else, use them to look for notes from earlier tasks that bear on the issue "
            "below, and use what applies. If they let you, record there what you learned that would "
            "help with later issues in this repository before you finish."
        )
    elif style == "recall":
        parts.append(
            f"Before you do anything else, call the `recall` tool of the `{MCP_SERVER_NAME}` MCP server "
            f"({RECALL_TOOL}) with the full issue text below as `query` and \"{inp.repo}\" as `repo`. "
            "It returns notes from earlier tasks in this repository (what was changed and whether "
            "it worked); use them where they apply."
        )
    if inp.history is not None and inp.history.text:
        parts.append(inp.history.text.strip())  # the earlier tasks of the sequence (full-history)
    parts.append(f"<issue>\n{inp.issue.strip()}\n</issue>")
    if inp.hints.strip():
        parts.append(f"<hints>\n{inp.hints.strip()}\n</hints>")
    if inp.code_mode == "blind" and blind_rules is not None:
        parts.append(blind_rules)
    elif inp.code_mode == "blind":
        if inp.recall is None:
            tools = "You have no tools."
        elif provided is not None:
            tools = f"The only tools you have are your `{MCP_SERVER_NAME}` MCP server's: {_tool_list(provided)}."
        else:
            tools = "The only tool you have is `recall`."
        parts.append(
            f"You cannot read or edit files or run commands. {tools} Answer with the fix as one "
            "unified diff against the repository root (paths a/... and b/..., as `git diff` prints "
            "them) inside a single ```diff fenced block in your final message."
        )
    else:
        parts.append(
            "Make the smallest change to the source code that resolves the issue. Edit the files "
            "in place and do not commit. You do not need to add tests."
        )
    return "\n\n".join(parts) + "\n"


# --- one invocation ---------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ClaudeInvocation(CliInvocation):
    session_id: str
    config_dir: Path
    auto_memory_dir: Path | None
    hook_record: Path


class ClaudeAgent(CliAgent[ClaudeInvocation]):
    """`claude -p` on one task. Options: executable, permission_mode, max_retries, extra_args, env."""

    name = "claude"
    command = "claude"
    env_var = "SWECL_CLAUDE_BIN"
    package = "@anthropic-ai/claude-code"
    dropped_env = _DROPPED_ENV
    endpoint_vars = ("ANTHROPIC_BASE_URL",)

    def __init__(self, *, permission_mode: str = "bypassPermissions", **options: Any) -> None:
        super().__init__(**options)
        self.permission_mode = permission_mode

    # -- preparing -------------------------------------------------------------------------

    def prepare(self, inp: AgentInput) -> ClaudeInvocation:
        scratch = inp.scratch_dir
        scratch.mkdir(parents=True, exist_ok=True)
        config_dir, auto_memory = _config_dirs(inp)
        hook_record = scratch / "claude-hooks.jsonl"
        hook_record.unlink(missing_ok=True)
        settings_path = _write_settings(scratch / "claude-settings.json", hook_record, auto_memory)
        server = recall_server(inp)
        mcp_path = _write_mcp_config(scratch / "claude-mcp.json", server)

        style = _effective_style(inp)
        prompt = build_prompt(inp, primed_notes(inp))
        session_id = str(uuid.uuid4())
        argv = self._argv(inp, session_id=session_id, mcp_path=mcp_path, settings_path=settings_path)
        if style == "natural":
            argv += ["--input-format", "stream-json"]
        argv += self.extra_args
        env = self._env(inp, config_dir)
        return self.invocation(ClaudeInvocation, inp, argv=argv, env=env, prompt=prompt, server=server,
                               stdin=_stdin(style, prompt), session_id=session_id, config_dir=config_dir,
                               auto_memory_dir=auto_memory, hook_record=hook_record)

    def _argv(self, inp: AgentInput, *, session_id: str, mcp_path: Path, settings_path: Path) -> list[str]:
        """The command line but for the prompt's input format and the user's extra args."""
        argv = [
            self.executable, "-p",
            "--output-format", "stream-json", "--verbose",
            "--session-id", session_id,
            "--mcp-config", str(mcp_path), "--strict-mcp-config",
            "--settings", str(settings_path),
            "--permission-mode", self.permission_mode,
        ]
        model = resolve_model(inp.model)
        if model:
            argv += ["--model", model]
        if inp.budget.max_turns is not None:
            argv += ["--max-turns", str(inp.budget.max_turns)]
        if inp.budget.max_cost_usd is not None:
            argv += ["--max-budget-usd", f"{inp.budget.max_cost_usd:g}"]
        if inp.code_mode == "blind":
            # No built-in tools at all; MCP tools (recall) stay.
            argv += ["--tools", "", "--disable-slash-commands"]
        elif not inp.allow_web:
            # WebSearch runs on the provider's side, beyond the egress proxy: the tools
            # themselves must be off (a search or a fetch would find the task's fix upstream).
            argv += ["--disallowedTools", ",".join(WEB_TOOLS)]
        return argv

    def _env(self, inp: AgentInput, config_dir: Path) -> dict[str, str]:
        # The paths set below (its config dir, its memory dir) are its own.
        env = self.base_env(inp)
        env.update(_QUIET_ENV)
        env["CLAUDE_CONFIG_DIR"] = str(config_dir)
        if inp.memory_dir is None:  # not the builtin stage: no native memory
            env["CLAUDE_CODE_DISABLE_AUTO_MEMORY"] = "1"
        if self.permission_mode == "bypassPermissions" and hasattr(os, "geteuid") and os.geteuid() == 0:
            env["IS_SANDBOX"] = "1"
        if self.max_retries is not None:
            env["CLAUDE_CODE_MAX_RETRIES"] = str(self.max_retries)
        return env

    # -- running ---------------------------------------------------------------------------

    def token_counter(self) -> Callable[[bytes], int]:
        return token_counter()  # its stream reports each model call's usage as it ends

    def writable(self, inp: AgentInput, inv: ClaudeInvocation) -> list[Path]:
        return [inp.scratch_dir, inv.config_dir, *([inv.auto_memory_dir] if inv.auto_memory_dir else [])]

    def run(self, inp: AgentInput) -> AgentResult:
        inv, ran = self.launch(inp)
        started, base, outcome, raw_stream, scrubber = ran.started, ran.base, ran.outcome, ran.stream, ran.scrubber
        summary = parse_stream(raw_stream.splitlines())
        exit_kind, error = classify(summary, outcome.returncode, timed_out=outcome.timed_out)
        if exit_kind == "crashed":
            error = f"{error}; stderr: {last_line(ran.stderr)}"
        memory_status = summary.mcp_servers.get(MCP_SERVER_NAME)
        if exit_kind == "completed" and inv.uses_mcp and memory_status != "connected":
            # A memory stage that ran without its memory is not the experiment asked for.
            exit_kind, error = "error", f"the memory MCP server's status at start-up was {memory_status or 'missing'}: the run had no recall"

        session_id = summary.session_id or inv.session_id
        transcript = self._transcript(inv, session_id) or raw_stream

        patch_error: str | None = None
        patch = ""
        if inp.code_mode == "blind":
            patch, patch_error = _apply_blind_answer(inp, base, summary)
        if not patch:
            patch = _diff.worktree_patch(inp.worktree, base)

        # The CLI's own files (its transcript holds every tool result the model saw) are
        # scrubbed in place: the builtin stage keeps them across tasks.
        scrubber.tree(inv.config_dir)
        if inv.auto_memory_dir is not None:
            scrubber.tree(inv.auto_memory_dir)
        memory_files = read_memory(inv.auto_memory_dir) if inv.auto_memory_dir else {}
        message = "; ".join(e for e in (error, patch_error) if e) or None
        return self.judged(ran, AgentResult(
            # A key the agent wrote into the worktree must not travel on in the patch either.
            patch=scrubber.text(patch),
            exit=exit_kind,
            exit_code=outcome.returncode,
            turns=summary.turns,
            tool_calls=summary.tool_calls,
            tokens=summary.tokens,
            cost_usd=summary.cost_usd,
            duration_s=time.monotonic() - started,
            transcript=scrubber.bytes(transcript),
            prompt=scrubber.text(inv.prompt),
            session_id=session_id,
            error=scrubber.optional(message),
            model=resolve_model(inp.model) or summary.model,
            memory_files=memory_files,
        ))

    def _transcript(self, inv: ClaudeInvocation, session_id: str) -> bytes | None:
        """The CLI's own session transcript: from the Stop hook's record, else by session id."""
        config = inv.config_dir.resolve()
        candidates: list[Path] = []
        for record in _hook_records(inv.hook_record):
            if record.get("session_id") == session_id and isinstance(record.get("transcript_path"), str):
                candidates.append(Path(record["transcript_path"]))
        candidates += sorted((config / "projects").glob(f"*/{session_id}.jsonl"))
        for path in candidates:
            try:
                resolved = path.resolve()
            except OSError:
                continue
            # Only a file inside our sandbox: the path came from the CLI, not from us.
            if resolved.is_file() and resolved.is_relative_to(config):
                return resolved.read_bytes()
        return None


def _config_dirs(inp: AgentInput) -> tuple[Path, Path | None]:
    """The CLI's config dir and its auto-memory dir (None: auto-memory is off). The builtin
    stage keeps both per run+sequence so native memory carries from task to task; any
    other stage gets a fresh config dir every task."""
    if inp.memory_dir is not None:
        config_dir = inp.memory_dir / "claude-config"
        auto_memory: Path | None = inp.memory_dir / "auto-memory"
        auto_memory.mkdir(parents=True, exist_ok=True)
    else:
        config_dir = inp.scratch_dir / "claude-config"
        shutil.rmtree(config_dir, ignore_errors=True)  # a fresh sandbox every task
        auto_memory = None
    config_dir.mkdir(parents=True, exist_ok=True)
    return config_dir, auto_memory


def _write_settings(path: Path, hook_record: Path, auto_memory: Path | None) -> Path:
    """The `--settings` file: the Stop and SessionEnd hooks, and the builtin stage's memory dir."""
    hook = {"type": "command", "command": _hook_command(hook_record), "timeout": 30}
    settings: dict[str, object] = {"hooks": {"Stop": [{"hooks": [hook]}], "SessionEnd": [{"hooks": [hook]}]}}
    if auto_memory is not None:
        # Claude Code names the memory dir after the cwd; worktree paths differ per
        # task, so the builtin stage pins it to the run+sequence's own directory.
        settings["autoMemoryDirectory"] = str(auto_memory)
    path.write_text(json.dumps(settings, indent=1))
    return path


def _write_mcp_config(path: Path, server: RecallServer | None) -> Path:
    """The `--mcp-config` file: the recall server, or no server (memory off, or builtin)."""
    servers: dict[str, object] = {}
    if server is not None:
        # alwaysLoad: the CLI waits for this server before the first turn (in -p mode it
        # otherwise starts while servers are "pending", and a first recall fails with
        # "still connecting") and never defers its tools behind tool search.
        entry: dict[str, object] = {"type": "stdio", "command": server.argv[0], "args": server.argv[1:],
                                    "alwaysLoad": True}
        if server.env:
            entry["env"] = server.env
        servers[MCP_SERVER_NAME] = entry
    path.write_text(json.dumps({"mcpServers": servers}, indent=1))
    return path


def _stdin(style: str, prompt: str) -> bytes:
    """The prompt as the CLI reads it: the natural style sends one stream-json user
    message (with `--input-format stream-json`), the others plain text."""
    if style == "natural":
        message = {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": prompt}]},
                   "parent_tool_use_id": None, "session_id": ""}
        return (json.dumps(message) + "\n").encode()
    return prompt.encode()


def _hook_command(record: Path) -> str:
    # The hook runs through the shell, so every piece is quoted; only our own paths and
    # code are on the command line, the CLI's payload arrives on stdin.
    return " ".join(shlex.quote(p) for p in (sys.executable, "-I", "-S", "-c", _HOOK_CODE, str(record)))


def _hook_records(path: Path) -> list[dict[str, object]]:
    if not path.is_file():
        return []
    out: list[dict[str, object]] = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out


def hook_records(scratch_dir: Path) -> list[dict[str, object]]:
    """What the hooks recorded in a task's scratch dir (event name, session id, transcript path)."""
    return _hook_records(scratch_dir / "claude-hooks.jsonl")


def _apply_blind_answer(inp: AgentInput, base: str, summary: StreamSummary) -> tuple[str, str | None]:
    return _diff.apply_answer(inp.worktree, base, summary.result_text or summary.final_text)


def from_run(run: RunSupplies) -> ClaudeAgent:
    if run.runs_here:
        find_claude()  # a missing CLI is said before the run starts, not once per task
    return ClaudeAgent()
