"""Running an agent's process: its own process group, a wall-clock limit, no shell.

Agent CLIs start children (MCP servers, shells, test runs) that outlive them if left
alone; each run gets a new session so a timeout, and the clean-up after a normal exit,
can end the whole group at once. The session, the kill and the reaping are the grader's
(`graders.run_in_session`); what is the agents' own is the grace a CLI gets to flush its
transcript, output to two files, stdin, the egress proxy, and errors as `SweclError`.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from ledger import SweclError

from graders import ProcessOutcome, Sandbox, run_in_session

from ._egress import Egress, EgressProxy, Rules

__all__ = ["ProcessOutcome", "run_process"]

# Time between SIGTERM and SIGKILL: long enough for a CLI to flush its transcript.
_GRACE_S = 3.0


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
    """Run `argv` with stdout/stderr to files; end its process group on timeout (SIGTERM,
    `_GRACE_S`, SIGKILL) and whatever it left when it exits.

    With a confined `sandbox` the agent runs inside it: `cwd` and `writable` read-write,
    `readable` read-only, in a network namespace of its own whose one way out is an
    `EgressProxy` allowing the API `endpoints` and `egress`'s `--allow-host`s; what it saw
    goes to `egress.connections`. The proxy's socket and launcher live in a directory of
    their own, read-only inside: not in the scratch dir, where an agent copying its files
    would trip over a socket.

    stdin goes through a pipe fed by a thread (`graders.run_in_session`).
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
            return sandbox.wrap(proxy.launcher_argv(argv), cwd=cwd, env=env, writable=writable,
                                readable=[*readable, door], network=False)

        with open(stdout, "wb") as out, open(stderr, "wb") as err:
            try:
                return run_in_session(argv, cwd=cwd, env=env, stdout=out, stderr=err, stdin=stdin,
                                      timeout_s=timeout_s, grace_s=_GRACE_S, wrap=confine)
            except FileNotFoundError:
                raise SweclError(f"agent command {argv[0]!r} not found: install it or give its full path") from None
            except PermissionError:
                raise SweclError(f"agent command {argv[0]!r} is not executable: check its permissions") from None
