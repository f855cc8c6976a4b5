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
  without recall; absent when memory is off. codex may defer MCP tools behind its
  `tool_search` tool (models that support tool search find them there);
- builtin stage: codex's native memory file is `AGENTS.md` in `CODEX_HOME` (it loads it
  into every session as instructions). It is kept per run+sequence in
  `memory_dir/auto-memory/AGENTS.md` (the folder `_ray_job.restore_builtin_files` rebuilds
  from the ledger), copied into the fresh `CODEX_HOME` before the task and back after it.
  codex never writes the file by itself, so the builtin stage's developer instructions
  say where it is and ask the model to keep its notes there;
- unattended: `--dangerously-bypass-approvals-and-sandbox` (no approval prompts, no
  sandbox of codex's own: swecl's sandbox confines the whole CLI); no update check, no
  analytics, no feedback uploads, no prompt history file, and no web search (the network
  is for the model API; a search would find the task's fix upstream).

Not supported: `code_mode` blind (codex's `apply_patch` tool cannot be switched off, so
there is no tool-less run; refused in one line), and `Budget.max_turns` and
`max_cost_usd` (`codex exec` has neither limit, and reports no cost): only the wall-clock
limit applies.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ledger import SweclError

from . import _diff
from ._claude import build_prompt
from ._codex_events import classify, parse_events, read_rollout
from ._confine import RecallBridge, agent_environment, checkout_object_stores
from ._process import run_process
from ._protocol import AgentInput, AgentResult, RunSupplies
from ._scrub import Scrubber

__all__ = ["DEFAULT_BASE_URL", "CodexAgent", "CodexInvocation", "find_codex", "render_config"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
MCP_SERVER_NAME = "memory"
PROVIDER_ID = "swecl"
MEMORY_FILE = "AGENTS.md"
MEMORY_FOLDER = "auto-memory"  # under memory_dir: the builtin stage's folder, as recorded and restored

# Set by a parent codex session or a user's shell: each would change what the child does
# (which home it reads, whether it thinks it is already sandboxed), so the run decides.
_DROPPED_ENV = (
    "CODEX_HOME",
    "CODEX_SANDBOX",
    "CODEX_SANDBOX_NETWORK_DISABLED",
    "CODEX_THREAD_ID",
    "CODEX_INTERNAL_ORIGINATOR_OVERRIDE",
    "CODEX_API_KEY",  # codex exec's own API-key login: the run's key is $OPENAI_API_KEY alone
)

_NOTE_CHARS = 2000  # per recalled note in a primed prompt

_BUILTIN_INSTRUCTIONS = """\
You keep one memory file across the tasks you do in this repository: {path}. Codex loads it \
at the start of every task (what it holds now, if anything, is in the AGENTS.md \
instructions). Before you finish, update it with what you learned that would help with \
later issues in this repository: where things live, conventions, pitfalls, how to run the \
tests. Keep it short and general, rewrite rather than repeat, and never put it inside the \
repository."""


def find_codex(explicit: str | os.PathLike[str] | None = None) -> str:
    """The `codex` executable: `explicit`, else $SWECL_CODEX_BIN, else PATH."""
    candidate = explicit or os.environ.get("SWECL_CODEX_BIN") or shutil.which("codex")
    if not candidate:
        raise SweclError(
            "the codex CLI is not on PATH: npm install -g @openai/codex (or set SWECL_CODEX_BIN to its path)"
        )
    path = shutil.which(str(candidate)) or str(candidate)
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise SweclError(f"the codex CLI {candidate!s} is not an executable file: reinstall it or fix SWECL_CODEX_BIN")
    # absolute: the CLI runs with the worktree as its cwd
    return os.path.abspath(path)


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


@dataclass(frozen=True)
class CodexInvocation:
    """Everything one run needs, prepared before the process starts (inspectable in tests)."""

    argv: list[str]
    env: dict[str, str]
    stdin: bytes
    prompt: str
    codex_home: Path
    config: str  # the config.toml written into codex_home
    memory_root: Path | None  # builtin: the folder AGENTS.md is carried in across tasks
    uses_mcp: bool  # the recall server is configured (plugin memory on)
    stream_path: Path
    stderr_path: Path
    # Sandboxed plugin stages: the real recall server (argv, env), served through a
    # `RecallBridge` socket in the scratch dir; the MCP config names the relay.
    recall_server: tuple[list[str], dict[str, str]] | None = None


class CodexAgent:
    """`codex exec` on one task. Options: executable, base_url, max_retries, extra_args, env."""

    name = "codex"

    def __init__(
        self,
        *,
        executable: str | os.PathLike[str] | None = None,
        base_url: str | None = None,
        max_retries: int | None = None,
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> None:
        self._executable = executable
        self.base_url = base_url
        self.max_retries = max_retries
        self.extra_args = list(extra_args)
        self.extra_env = dict(env or {})

    @property
    def executable(self) -> str:
        return find_codex(self._executable)

    def version(self) -> str:
        """`codex --version`: a preflight the harness can run before a whole sequence."""
        done = subprocess.run(
            [self.executable, "--version"], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60
        )
        if done.returncode != 0:
            raise SweclError(f"{self.executable} --version failed (exit {done.returncode}): reinstall the codex CLI")
        return done.stdout.strip()

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

        builtin = inp.memory_mode == "builtin"
        memory_root: Path | None = None
        top: dict[str, Any] = {}
        if builtin:
            assert inp.memory_dir is not None  # AgentInput checks it
            memory_root = inp.memory_dir / MEMORY_FOLDER
            memory_root.mkdir(parents=True, exist_ok=True)
            kept = memory_root / MEMORY_FILE
            if kept.is_file() and not kept.is_symlink():
                shutil.copyfile(kept, codex_home / MEMORY_FILE)
            top["developer_instructions"] = _BUILTIN_INSTRUCTIONS.format(path=codex_home / MEMORY_FILE)
        top.update({
            "model_provider": PROVIDER_ID,
            "web_search": "disabled",
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

        recall_server: tuple[list[str], dict[str, str]] | None = None
        uses_mcp = inp.recall is not None and not builtin
        if uses_mcp:
            assert inp.recall is not None
            argv = list(inp.recall.mcp_server_argv())
            if not argv:
                raise SweclError("the recall service gave an empty MCP server command")
            # Optional in the Recall protocol: what the server needs beyond the minimal
            # environment codex starts MCP servers with (e.g. the project on PYTHONPATH).
            extra_env = getattr(inp.recall, "mcp_server_env", None)
            server_env = dict(extra_env()) if callable(extra_env) else {}
            if inp.sandbox is not None and inp.sandbox.confined:
                # The server reads the ledger: it runs outside, behind a socket.
                recall_server = (argv, {**os.environ, **server_env})
                argv = RecallBridge(argv, {}, scratch / "recall-bridge").relay_argv
                server_env = {}
            server: dict[str, Any] = {
                "command": argv[0],
                "args": argv[1:],
                # A server that fails to start ends the run (a memory stage without its memory
                # is not the experiment asked for); 60 s: a Python server on a busy machine.
                "required": True,
                "startup_timeout_sec": 60,
                "tool_timeout_sec": 300,
            }
            if server_env:
                server["env"] = server_env
            tables[f"mcp_servers.{MCP_SERVER_NAME}"] = server
        config = render_config(tables, top)
        (codex_home / "config.toml").write_text(config, encoding="utf-8")

        notes: list[str] = []
        if inp.prompt_style == "natural" and inp.recall is not None:
            # The primed invocation: the harness recalls once with the issue (an inproc
            # memory.recalled event) and the notes open the prompt.
            for item in inp.recall.recall(inp.issue, k=5, repo=inp.repo):
                body = (item.body or "").strip()
                if len(body) > _NOTE_CHARS:
                    body = body[:_NOTE_CHARS] + " [...]"
                outcome = f" (outcome: {item.outcome})" if item.outcome else ""
                notes.append(f"- {item.title}{outcome}: {body}")
        # The same prompt as the claude agent's: agents are compared on equal words.
        prompt = build_prompt(inp, notes)

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

        # No cache, results or dataset path of the host's reaches the agent, confined or not;
        # CODEX_HOME, set below, is its own.
        hidden = inp.sandbox.hidden if inp.sandbox is not None else ()
        env = agent_environment({k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}, hidden)
        env["CODEX_HOME"] = str(codex_home)
        env.update(self.extra_env)

        return CodexInvocation(
            argv=argv,
            env=env,
            stdin=prompt.encode(),
            prompt=prompt,
            codex_home=codex_home,
            config=config,
            memory_root=memory_root,
            uses_mcp=uses_mcp,
            stream_path=scratch / "codex-events.jsonl",
            stderr_path=scratch / "codex-stderr.txt",
            recall_server=recall_server,
        )

    # -- running ---------------------------------------------------------------------------

    def run(self, inp: AgentInput) -> AgentResult:
        started = time.monotonic()
        base = inp.base_commit or _diff.head_commit(inp.worktree)
        inv = self.prepare(inp)
        scrubber = Scrubber({**os.environ, **inv.env})
        with contextlib.ExitStack() as stack:
            if inv.recall_server is not None:
                stack.enter_context(RecallBridge(*inv.recall_server, inp.scratch_dir / "recall-bridge"))
            outcome = run_process(
                inv.argv,
                cwd=inp.worktree,
                env=inv.env,
                stdout=inv.stream_path,
                stderr=inv.stderr_path,
                stdin=inv.stdin,
                timeout_s=inp.budget.timeout_s,
                sandbox=inp.sandbox,
                writable=[inp.scratch_dir],  # CODEX_HOME is in there
                readable=checkout_object_stores(inp.worktree),
            )
        raw_stream = inv.stream_path.read_bytes()
        # The scratch copies are scrubbed too: nothing on disk keeps a key after the run.
        inv.stream_path.write_bytes(scrubber.bytes(raw_stream))
        stderr = scrubber.text(inv.stderr_path.read_bytes().decode("utf-8", "replace"))
        inv.stderr_path.write_text(stderr, encoding="utf-8")
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
        memory_files = _carry_memory(inv) if inv.memory_root is not None else {}
        patch = _diff.worktree_patch(inp.worktree, base)
        return AgentResult(
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
        )


def _rollout(codex_home: Path, thread_id: str | None) -> bytes | None:
    """codex's session file of this run: the one named after the thread, else the only one."""
    sessions = codex_home / "sessions"
    found = sorted(sessions.rglob(f"rollout-*{thread_id}.jsonl")) if thread_id else []
    if not found:
        found = sorted(sessions.rglob("rollout-*.jsonl"))
        if len(found) != 1:
            return None
    path = found[-1]
    if path.is_symlink() or not path.is_file():
        return None
    return path.read_bytes()


def _carry_memory(inv: CodexInvocation) -> dict[str, str]:
    """AGENTS.md back from the task's CODEX_HOME into the folder kept across tasks (a file
    the agent deleted is deleted there too); the folder's files, path -> text."""
    assert inv.memory_root is not None
    written = inv.codex_home / MEMORY_FILE
    kept = inv.memory_root / MEMORY_FILE
    if written.is_file() and not written.is_symlink():
        shutil.copyfile(written, kept)
    else:
        kept.unlink(missing_ok=True)
    files: dict[str, str] = {}
    for path in sorted(inv.memory_root.rglob("*")):
        if path.is_file() and not path.is_symlink() and path.stat().st_size <= 1_000_000:
            files[path.relative_to(inv.memory_root).as_posix()] = path.read_text(encoding="utf-8", errors="replace")
    return files


def _last_line(text: str) -> str:
    # codex ends a fatal error with a stack backtrace of numbered frames: the message is
    # the last line before it.
    text = text.split("Stack backtrace:", 1)[0]
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:500] if lines else "(empty)"


def from_run(run: RunSupplies) -> CodexAgent:
    if run.runs_here:
        find_codex()  # a missing CLI is said before the run starts, not once per task
    return CodexAgent()
