"""What the CLI agents (claude, codex, gemini) share.

Each adapter runs one vendor CLI per task in the task's worktree; the parts that do not
depend on the vendor live here: finding the executable and its `--version` probe (run in the sandbox by `_startup.preflight`)
(`CliAgent`), the environment the CLI starts from (`CliAgent.base_env`: the host's minus
what a parent session of the same CLI set, minus the host paths a run hides), the recall
MCP server's command (`recall_server`: relayed through a socket when the run is
sandboxed, since the server reads the ledger), the notes of a primed prompt
(`primed_notes`), the confined process itself and the scrubbing of what it wrote
(`CliAgent.launch`), and reading a builtin stage's memory folder (`read_memory`).

An adapter subclasses `CliAgent` with `prepare(AgentInput) -> its CliInvocation` (argv,
environment, config files) and `writable(inp, inv)` (what the sandbox lets it write
beside the worktree), and reads its CLI's own output in `run`. One whose CLI reports its
usage turn by turn while it runs gives `token_counter` (a stdout line -> the input +
output tokens so far): the run then ends the CLI once they pass the budget's
`max_tokens`, as a timeout ends it, and `judged` calls that exit `max_tokens`. One that
can also be held to the budget's `max_turns` that way overrides `stop_watch`, and sets
the exit `max_turns` itself when that was the limit it reached.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from ledger import SweclError

from . import _diff
from ._confine import RecallBridge, agent_environment, checkout_object_stores
from ._egress import endpoint_urls
from ._process import ProcessOutcome, run_process
from ._protocol import AgentInput, AgentResult
from ._scrub import Scrubber
from ._startup import Probe, exec_chain, not_started, reached_no_model

__all__ = [
    "CliAgent", "CliInvocation", "Launched", "RecallServer", "carry_back", "carry_in", "find_cli", "last_line",
    "memory_tool_timeout_s", "primed_notes", "read_memory", "recall_server", "recalled_notes", "run_cli",
    "session_file",
]

MCP_SERVER_NAME = "memory"  # every CLI agent names the recall server so: its tool is memory's `recall`
MEMORY_FOLDER = "auto-memory"  # under memory_dir: the builtin stage's folder, as recorded and restored
_NOTE_CHARS = 2000  # per recalled note in a primed prompt


def find_cli(command: str, env_var: str, package: str, explicit: str | os.PathLike[str] | None = None, *,
             install: str | None = None) -> str:
    """The `command` executable: `explicit`, else $`env_var`, else PATH (`install`, by
    default `npm install -g PACKAGE`, installs it)."""
    install = install or f"npm install -g {package}"
    candidate = explicit or os.environ.get(env_var) or shutil.which(command)
    if not candidate:
        raise SweclError(f"the {command} CLI is not on PATH: {install} (or set {env_var} to its path)")
    path = shutil.which(str(candidate)) or str(candidate)
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise SweclError(f"the {command} CLI {candidate!s} is not an executable file: reinstall it or fix {env_var}")
    # absolute: the CLI runs with the worktree as its cwd
    return os.path.abspath(path)


@dataclass(frozen=True, kw_only=True)
class CliInvocation:
    """Everything one run needs, prepared before the process starts (inspectable in tests);
    each adapter's invocation adds its own paths."""

    argv: list[str]
    env: dict[str, str]
    stdin: bytes
    prompt: str
    uses_mcp: bool  # the recall server is configured (plugin memory on)
    stream_path: Path
    stderr_path: Path
    # Sandboxed plugin stages: the real recall server (argv, env), served through a
    # `RecallBridge` socket in the scratch dir; the CLI's config names the relay.
    recall_server: tuple[list[str], dict[str, str]] | None = None
    # Where the CLI runs when it must not see the task's repository (mini-swe-agent's blind
    # mode: an empty dir in the scratch dir); None: in the worktree. Set, a confined run
    # hides the worktree and binds none of its object stores.
    workdir: Path | None = None


I = TypeVar("I", bound=CliInvocation)


@dataclass(frozen=True)
class Launched:
    """A finished CLI process: its outcome, its stdout as written (for parsing only: it may
    hold a key) and its scrubbed stderr; both files in the scratch dir are scrubbed by now."""

    started: float  # time.monotonic() before anything else
    base: str  # the commit the patch is taken against
    outcome: ProcessOutcome
    stream: bytes
    stderr: str
    scrubber: Scrubber  # for everything else the run hands back


class CliAgent(Generic[I]):
    """A vendor CLI on one task. Options: executable, max_retries, extra_args, env."""

    name: ClassVar[str]
    command: ClassVar[str]  # the executable's name on PATH
    env_var: ClassVar[str]  # the variable naming another executable (SWECL_..._BIN)
    package: ClassVar[str]  # the npm package that installs it
    install: ClassVar[str | None] = None  # how to install it, when not `npm install -g PACKAGE`
    # Set by a parent session of the same CLI, or left over in a user's shell: each would
    # change what the child does, so the run decides them itself.
    dropped_env: ClassVar[tuple[str, ...]] = ()
    # The variables naming the CLI's API endpoints (each with its default, `_egress.API_ENDPOINTS`):
    # a sandboxed CLI reaches these hosts and no other.
    endpoint_vars: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        *,
        executable: str | os.PathLike[str] | None = None,
        max_retries: int | None = None,
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> None:
        self._executable = executable
        self.max_retries = max_retries
        self.extra_args = list(extra_args)
        self.extra_env = dict(env or {})

    @property
    def executable(self) -> str:
        return find_cli(self.command, self.env_var, self.package, self._executable, install=self.install)

    def probe(self, inp: AgentInput) -> Probe:
        """`CLI --version` with what a task's process gets: the prepared invocation's
        executable, environment and writable dirs (`prepare` on an input with no recall)."""
        inv = self.prepare(inp)
        program = inv.argv[0]
        install = self.install or f"npm install -g {self.package}"
        return Probe(
            argv=[program, "--version"],
            env=inv.env,
            what=f"the {self.command} CLI",
            executables=exec_chain(program, inv.env.get("PATH")) or [program],
            remedy=f"set {self.env_var} to an install outside it ({install})",
            fix=f"reinstall it ({install}) or set {self.env_var} to one that runs",
            writable=self.writable(inp, inv),
            readable=checkout_object_stores(inp.worktree),
        )

    def token_counter(self) -> Callable[[bytes], int] | None:
        """A fresh running count for one run: each line of the CLI's stdout in, the input +
        output tokens its turns reported so far out; None when the CLI reports its usage
        only at the end (the run then checks --max-tokens-per-task after the attempt)."""
        return None

    def stop_watch(self, inp: AgentInput) -> Callable[[bytes], bool] | None:
        """What ends the CLI while it runs, fed each line of its stdout: more input +
        output tokens than the budget's `max_tokens`, when `token_counter` reads them."""
        count, limit = self.token_counter(), inp.budget.max_tokens
        if count is None or limit is None:
            return None
        return lambda line: count(line) > limit

    def judged(self, ran: Launched, result: AgentResult) -> AgentResult:
        """`result`, marked `not_started` when the CLI never ran (the sandbox could not
        exec it) or ended in failure before any model call: the run's, not the agent's.
        A CLI ended at its token limit is the agent's attempt ending there (`max_tokens`),
        as is one the adapter found ended at its turn limit (`max_turns`)."""
        outcome = ran.outcome
        if outcome.halted and result.exit == "max_turns":
            result.error = f"ended at its turn limit: {result.turns} model calls"
            return result
        if outcome.halted:
            used = result.tokens.get("input", 0) + result.tokens.get("output", 0)
            result.exit = "max_tokens"
            result.error = f"ended at its token limit: {used} input + output tokens reported"
            return result
        why = not_started(outcome.returncode, outcome.timed_out, ran.stderr)
        if why is not None:  # its own words are about a process that never ran
            result.not_started = result.error = f"the {self.command} CLI did not run: {why}"
        elif result.exit != "auth_failed" and reached_no_model(result, outcome.returncode, outcome.timed_out):
            result.not_started = f"the {self.command} CLI exited {outcome.returncode} before any model call"
            result.error = "; ".join(e for e in (result.error, result.not_started) if e)
        return result

    def base_env(self, inp: AgentInput) -> dict[str, str]:
        """The CLI's environment before the adapter sets its own variables: no cache,
        results or dataset path of the host's reaches the agent, confined or not, and none
        of `dropped_env`. Credentials stay: the CLI reads its key from here."""
        hidden = inp.sandbox.hidden if inp.sandbox is not None else ()
        return agent_environment({k: v for k, v in os.environ.items() if k not in self.dropped_env}, hidden)

    def prepare(self, inp: AgentInput) -> I:
        raise NotImplementedError

    def invocation(self, cls: type[I], inp: AgentInput, *, argv: list[str], env: dict[str, str], prompt: str,
                   server: RecallServer | None, stdin: bytes | None = None, **own: Any) -> I:
        """`prepare`'s result: the adapter's `own` fields, and the shared ones filled the same
        way for every CLI (the prompt on stdin unless `stdin` says otherwise, the options'
        environment over the adapter's, `NAME-stream.jsonl` and `NAME-stderr.txt` in the
        scratch dir, the recall server's relay)."""
        return cls(
            argv=argv,
            env={**env, **self.extra_env},
            stdin=prompt.encode() if stdin is None else stdin,
            prompt=prompt,
            uses_mcp=server is not None,
            stream_path=inp.scratch_dir / f"{self.name}-stream.jsonl",
            stderr_path=inp.scratch_dir / f"{self.name}-stderr.txt",
            recall_server=server.bridged if server is not None else None,
            **own,
        )

    def endpoints(self, inp: AgentInput, inv: I) -> list[str]:
        """The API endpoint URLs the CLI calls: as its environment names them, else the defaults."""
        return endpoint_urls(inv.env, self.endpoint_vars)

    def writable(self, inp: AgentInput, inv: I) -> list[Path]:
        """What the sandbox lets the CLI write beside the worktree: the scratch dir, by default."""
        return [inp.scratch_dir]

    def launch(self, inp: AgentInput) -> tuple[I, Launched]:
        """Prepare, run the CLI (`run_cli`), and scrub its stdout and stderr files in place:
        nothing on disk keeps a key after the run."""
        started = time.monotonic()
        base = inp.base_commit or _diff.head_commit(inp.worktree)
        inv = self.prepare(inp)
        scrubber = Scrubber({**os.environ, **inv.env})
        outcome = run_cli(inp, inv, self.writable(inp, inv), self.endpoints(inp, inv), self.stop_watch(inp))
        stream = inv.stream_path.read_bytes()
        inv.stream_path.write_bytes(scrubber.bytes(stream))
        stderr = scrubber.bytes(inv.stderr_path.read_bytes())
        inv.stderr_path.write_bytes(stderr)
        return inv, Launched(started, base, outcome, stream, stderr.decode("utf-8", "replace"), scrubber)


@dataclass(frozen=True)
class RecallServer:
    """The recall MCP server as the CLI's config names it, and, in a sandboxed run, the real
    server (argv, env) that `run_cli` serves outside behind the relay `argv` starts."""

    argv: list[str]
    env: dict[str, str]  # beyond the CLI's own environment (e.g. the project on PYTHONPATH)
    bridged: tuple[list[str], dict[str, str]] | None = None


def recall_server(inp: AgentInput) -> RecallServer | None:
    """The recall server of a plugin stage (None when memory is off or builtin)."""
    if inp.recall is None or inp.memory_dir is not None:
        return None
    argv = list(inp.recall.mcp_server_argv())
    if not argv:
        raise SweclError("the recall service gave an empty MCP server command")
    # Optional in the Recall protocol: what the server needs beyond the CLI's environment.
    extra_env = getattr(inp.recall, "mcp_server_env", None)
    server_env = dict(extra_env()) if callable(extra_env) else {}
    if inp.sandbox is not None and inp.sandbox.confined and not getattr(inp.recall, "mcp_server_in_sandbox", False):
        # The server reads the ledger: it runs outside, behind a socket in the scratch dir.
        relay = RecallBridge(argv, {}, inp.scratch_dir / "recall-bridge").relay_argv
        return RecallServer(relay, {}, (argv, {**os.environ, **server_env}))
    return RecallServer(argv, server_env)


def memory_tool_timeout_s(inp: AgentInput, default: float) -> float:
    """How long the CLI waits on one memory tool call: `default`, or longer than the
    recall handle's own call limit (a user's memory server, `--memory-call-timeout`), so
    the host's recorded verdict on a hung call reaches the agent before the CLI gives up."""
    own = getattr(inp.recall, "mcp_call_timeout_s", None)
    return max(default, float(own()) + 30) if callable(own) else default


def primed_notes(inp: AgentInput) -> list[str]:
    """The primed invocation (prompt style natural, memory on): the harness recalls once
    with the issue (an inproc memory.recalled event) and these notes open the prompt."""
    if inp.prompt_style != "natural" or inp.recall is None:
        return []
    return recalled_notes(inp)


def recalled_notes(inp: AgentInput) -> list[str]:
    """The harness's one recall with the issue (an inproc memory.recalled event), as the
    notes of a primed prompt; the agents without an MCP client get their recall so."""
    if inp.recall is None:
        return []
    notes: list[str] = []
    for item in inp.recall.recall(inp.issue, k=5, repo=inp.repo):
        body = (item.body or "").strip()
        if len(body) > _NOTE_CHARS:
            body = body[:_NOTE_CHARS] + " [...]"
        outcome = f" (outcome: {item.outcome})" if item.outcome else ""
        notes.append(f"- {item.title}{outcome}: {body}")
    return notes


def run_cli(inp: AgentInput, inv: CliInvocation, writable: Sequence[Path], api: Sequence[str] = (),
            stop_on: Callable[[bytes], bool] | None = None) -> ProcessOutcome:
    """The CLI in the task's worktree, confined when the run is (`writable` beside the
    worktree; of the network, the `api` endpoints and --allow-host only), within the time
    limit, and ended as a timeout would be once `stop_on` says so of a line of its stdout
    (`CliAgent.stop_watch`); the recall server served outside for as long as it runs. An
    invocation with a `workdir` runs there instead, the worktree out of a confined CLI's
    sight."""
    cwd, sandbox, readable = inp.worktree, inp.sandbox, checkout_object_stores(inp.worktree)
    if inv.workdir is not None:
        cwd, readable = inv.workdir, []
        sandbox = sandbox.hiding(inp.worktree) if sandbox is not None else None
    with contextlib.ExitStack() as stack:
        if inv.recall_server is not None:
            stack.enter_context(RecallBridge(*inv.recall_server, inp.scratch_dir / "recall-bridge"))
        return run_process(
            inv.argv,
            cwd=cwd,
            env=inv.env,
            stdout=inv.stream_path,
            stderr=inv.stderr_path,
            stdin=inv.stdin,
            timeout_s=inp.budget.timeout_s,
            sandbox=sandbox,
            writable=writable,
            readable=readable,
            egress=inp.egress,
            endpoints=api,
            stop_on=stop_on,
        )


def carry_in(memory_dir: Path, target: Path) -> Path:
    """Builtin stage, CLIs whose native memory is one file in their own (fresh) home: the
    kept copy, if any, into `target` before the task. Returns the folder it is kept in
    across the tasks of a run+sequence (`memory_dir/auto-memory`, the folder
    `commands.run.memory.restore_builtin_files` rebuilds from the ledger)."""
    root = memory_dir / MEMORY_FOLDER
    root.mkdir(parents=True, exist_ok=True)
    kept = root / target.name
    if kept.is_file() and not kept.is_symlink():
        shutil.copyfile(kept, target)
    return root


def carry_back(written: Path, root: Path) -> dict[str, str]:
    """The memory file back from the task's home into the folder kept across tasks (a file
    the agent deleted is deleted there too); the folder's files, path -> text."""
    kept = root / written.name
    if written.is_file() and not written.is_symlink():
        shutil.copyfile(written, kept)
    else:
        kept.unlink(missing_ok=True)
    return read_memory(root)


def session_file(root: Path, named: str | None, pattern: str) -> bytes | None:
    """The CLI's own session file of this run under `root`: the one the glob `named` (with
    the session's id) finds, else the only one `pattern` finds; never a link."""
    found = sorted(root.glob(named)) if named else []
    if not found:
        found = sorted(root.glob(pattern))
        if len(found) != 1:
            return None
    path = found[-1]
    if path.is_symlink() or not path.is_file():
        return None
    return path.read_bytes()


def read_memory(root: Path) -> dict[str, str]:
    """The native memory files under `root` (already scrubbed in place), relative path -> text."""
    files: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink() and path.stat().st_size <= 1_000_000:
            files[path.relative_to(root).as_posix()] = path.read_text(encoding="utf-8", errors="replace")
    return files


def last_line(text: str) -> str:
    """The last non-empty line of a CLI's stderr, cut to 500 characters."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:500] if lines else "(empty)"
