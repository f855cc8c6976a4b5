"""Running an agent's process: its own process group, a wall-clock limit, no shell.

Agent CLIs start children (MCP servers, shells, test runs) that outlive them if left
alone; each run gets a new session so a timeout, and the clean-up after a normal exit,
can end the whole group at once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ledger import SweclError

from graders import Sandbox
from graders import owned_processes, wait_for_exit

from ._egress import Egress, EgressProxy, Rules

# Time between SIGTERM and SIGKILL: long enough for a CLI to flush its transcript.
_GRACE_S = 3.0


@dataclass(frozen=True)
class ProcessOutcome:
    returncode: int | None  # None when we had to kill it
    timed_out: bool
    duration_s: float


def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdout: Path,
    stderr: Path,
    stdin: bytes | None = None,
    timeout_s: float | None = None,
    sandbox: Sandbox | None = None,
    writable: Sequence[Path] = (),
    readable: Sequence[Path] = (),
    egress: Egress | None = None,
    endpoints: Sequence[str] = (),
) -> ProcessOutcome:
    """Run `argv` with stdout/stderr to files; kill its process group on timeout.

    With a confined `sandbox` the agent runs inside it: `cwd` and `writable` read-write,
    `readable` read-only, in a network namespace of its own whose one way out is an
    `EgressProxy` allowing the API `endpoints` and `egress`'s `--allow-host`s; what it saw
    goes to `egress.connections`. The proxy's socket and launcher live in a directory of
    their own, read-only inside: not in the scratch dir, where an agent copying its files
    would trip over a socket.

    stdin goes through a pipe fed by a thread: some CLIs treat a regular-file stdin
    differently from a pipe (claude's stream-json input reads nothing from a file), and a
    thread cannot deadlock on a prompt larger than the pipe buffer.
    """
    if not cwd.is_dir():
        raise SweclError(f"agent worktree {cwd} does not exist: prepare the task's checkout first")
    with owned_processes(env) as (env, clean_up), contextlib.ExitStack() as stack:
        started = time.monotonic()
        if sandbox is not None and sandbox.confined:
            policy = egress if egress is not None else Egress()
            rules = Rules(endpoints, policy.allow_hosts)
            door = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="swecl-egress-")))
            proxy = stack.enter_context(EgressProxy(rules, policy, door))
            argv, env = sandbox.wrap(proxy.launcher_argv(argv), cwd=cwd, env=env, writable=writable,
                                     readable=[*readable, door], network=False)
        with open(stdout, "wb") as out, open(stderr, "wb") as err:
            try:
                proc = subprocess.Popen(
                    list(argv),
                    cwd=cwd,
                    env=dict(env),
                    stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    start_new_session=True,
                )
            except FileNotFoundError:
                raise SweclError(f"agent command {argv[0]!r} not found: install it or give its full path") from None
            except PermissionError:
                raise SweclError(f"agent command {argv[0]!r} is not executable: check its permissions") from None
            feeder = None
            if stdin is not None:
                feeder = threading.Thread(target=_feed, args=(proc, stdin), daemon=True)
                feeder.start()
            timed_out = False
            try:
                wait_for_exit(proc, timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
                kill_group(proc.pid, proc)
            finally:
                # Whatever it left running (an MCP server, a background shell) goes too.
                kill_group(proc.pid, None)
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
                clean_up()  # children that left the group (setsid) too
                if feeder is not None:
                    feeder.join(timeout=1.0)
        return ProcessOutcome(None if timed_out else proc.returncode, timed_out, time.monotonic() - started)


def _feed(proc: subprocess.Popen[bytes], data: bytes) -> None:
    assert proc.stdin is not None
    try:
        proc.stdin.write(data)
        proc.stdin.close()
    except (BrokenPipeError, OSError):
        pass  # the process exited without reading its input: its exit code says why


def kill_group(pgid: int, proc: subprocess.Popen[bytes] | None) -> None:
    """SIGTERM the group, give it `_GRACE_S`, then SIGKILL whatever is left."""
    if not _signal_group(pgid, signal.SIGTERM):
        return
    deadline = time.monotonic() + _GRACE_S
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is None:
            time.sleep(0.05)
            continue
        if not _group_alive(pgid):
            return
        time.sleep(0.05)
    _signal_group(pgid, signal.SIGKILL)
    if proc is not None:
        proc.wait()


def _signal_group(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False
