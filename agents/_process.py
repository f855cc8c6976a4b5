"""Running an agent's process: its own process group, a wall-clock limit, no shell.

Agent CLIs start children (MCP servers, shells, test runs) that outlive them if left
alone; each run gets a new session so a timeout, and the clean-up after a normal exit,
can end the whole group at once. The session, the kill and the reaping are the host's
(`graders.host.run_in_session`); what is the agents' own is the grace a CLI gets to flush its
transcript, output to two files, stdin, the egress proxy, errors as `SweclError`, and
`stop_on`: a watch on the agent's stdout as it is written (a CLI's running token count),
which ends the group as a timeout does.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import BinaryIO

from ledger import SweclError

from graders.host import ProcessOutcome, Sandbox, run_in_session

from ._egress import Egress, EgressProxy, Rules

__all__ = ["ProcessOutcome", "run_process"]

# Time between SIGTERM and SIGKILL: long enough for a CLI to flush its transcript.
_GRACE_S = 3.0
# How long the stdout reader may take to drain once the group is gone (a descendant that
# escaped the clean-up and still holds the pipe must not hang the run).
_DRAIN_S = 10.0


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
    stop_on: Callable[[bytes], bool] | None = None,
    programs: Sequence[str] = (),
) -> ProcessOutcome:
    """Run `argv` with stdout/stderr to files; end its process group on timeout (SIGTERM,
    `_GRACE_S`, SIGKILL) and whatever it left when it exits.

    With a confined `sandbox` the agent runs inside it: `cwd` and `writable` read-write,
    `readable` read-only, in a network namespace of its own whose one way out is an
    `EgressProxy` allowing the API `endpoints` and `egress`'s `--allow-host`s; what it saw
    goes to `egress.connections`. The proxy's socket and launcher live in a directory of
    their own, read-only inside: not in the scratch dir, where an agent copying its files
    would trip over a socket.

    stdin goes through a pipe fed by a thread (`graders.host.run_in_session`). With `stop_on`,
    stdout goes through a pipe too, copied to its file by a thread that hands each line to
    `stop_on`; the first True ends the group as a timeout would, the outcome `halted`.
    The sandbox shows the install of `argv[0]` and of each of `programs` (a program the
    first one starts: the command a probe's shell checks).
    """
    if not cwd.is_dir():
        raise SweclError(f"agent worktree {cwd} does not exist: prepare the task's checkout first")
    with contextlib.ExitStack() as stack:

        def confine(argv: Sequence[str], env: dict[str, str]) -> tuple[Sequence[str], Mapping[str, str]]:
            if sandbox is None or not sandbox.confined:
                return argv, env
            policy = egress if egress is not None else Egress()
            rules = Rules(endpoints, policy.allow_hosts)
            door = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="swecl-egress-")))
            proxy = stack.enter_context(EgressProxy(rules, policy, door))
            # the launcher is swecl's interpreter; the agent's own program is shown too
            return sandbox.wrap(proxy.launcher_argv(argv), cwd=cwd, env=env, writable=writable,
                                readable=[*readable, door], network=False, programs=[*argv[:1], *programs],
                                exposed=True)

        with open(stdout, "wb") as out, open(stderr, "wb") as err:
            try:
                if stop_on is None:
                    return run_in_session(argv, cwd=cwd, env=env, stdout=out, stderr=err, stdin=stdin,
                                          timeout_s=timeout_s, grace_s=_GRACE_S, wrap=confine)
                with _Watched(out, stop_on) as watched:
                    return run_in_session(argv, cwd=cwd, env=env, stdout=watched.sink, stderr=err, stdin=stdin,
                                          timeout_s=timeout_s, grace_s=_GRACE_S, wrap=confine, halt=watched.halt)
            except FileNotFoundError:
                raise SweclError(f"agent command {argv[0]!r} not found: install it or give its full path") from None
            except PermissionError:
                raise SweclError(f"agent command {argv[0]!r} is not executable: check its permissions") from None


class _Watched:
    """The agent's stdout through a pipe: a thread copies it to `out` and hands `stop_on`
    each complete line; once `stop_on` says stop, `halt` becomes readable (and the copying
    goes on, so the CLI can flush through its grace). On exit, once the process group is
    gone, what is left in the pipe is drained into `out`."""

    def __init__(self, out: BinaryIO, stop_on: Callable[[bytes], bool]) -> None:
        self._out = out
        self._stop_on = stop_on
        self._read, self.sink = os.pipe()
        self.halt, self._halt_w = os.pipe()
        self._thread = threading.Thread(target=self._copy, daemon=True)

    def __enter__(self) -> _Watched:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        os.close(self.sink)  # the last writer but the process group's, which is gone now
        self._thread.join(_DRAIN_S)
        if not self._thread.is_alive():
            for fd in (self._read, self.halt, self._halt_w):
                os.close(fd)

    def _copy(self) -> None:
        pending = b""
        watching = True
        while chunk := os.read(self._read, 65536):
            self._out.write(chunk)
            self._out.flush()
            if not watching:
                continue
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                try:
                    stop = self._stop_on(line)
                except Exception:  # a watch that breaks ends the watching, never the copying
                    stop, watching = False, False
                if stop:
                    watching = False
                    os.write(self._halt_w, b"x")
                if not watching:
                    pending = b""
                    break
