"""`swecl` called inside the test process for the commands that only read a ledger.

Starting the CLI costs about a second of CPU (the interpreter and every import), and
the tests read ledgers through `swecl runs`, `metrics`, `show` ... hundreds of times.
Where what a test checks is the command's output and exit code, not the behaviour of a
process (signals, crashes, children), the same entry point runs in-process:
`commands.cli.main`, which installs the stop handlers and restores them on the way
out, under click's isolation of stdout, stderr and the environment. The environment
is the one a subprocess of `bench.processes.swecl` would get (its own cache, no
failpoints, no inherited results dir or debug flag), set only for the call.

Every other command (`run`, `grade`, `view` ...: runs, children, servers, signals) is
still a real `swecl` process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from bench import processes

# Read-only commands, whose whole behaviour is their output and exit code.
IN_PROCESS = frozenset({"runs", "metrics", "show", "audit", "compare", "log", "verify", "sequences", "agents"})


def swecl(
    results: Path,
    *args: str,
    cache: Path,
    env: dict[str, str] | None = None,
    timeout: float = 600,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """`bench.processes.swecl`, in-process for the read-only commands."""
    if not args or args[0] not in IN_PROCESS:
        return processes.swecl(results, *args, cache=cache, env=env, timeout=timeout, check=check)
    from commands.cli import main

    argv = ["--results", str(results), *args]
    # What swecl_env gives a child: the cache, and none of the variables it strips.
    overrides: dict[str, str | None] = {
        "SWECL_FAILPOINTS": None, "SWECL_RESULTS": None, "SWECL_DEBUG": None, "SWECL_CACHE": str(cache), **(env or {}),
    }
    code = 0
    with CliRunner().isolation(env=overrides) as (out, err, _):
        try:
            main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        stdout, stderr = out.getvalue().decode(), err.getvalue().decode()
    proc = subprocess.CompletedProcess(["swecl", *argv], code, stdout, stderr)
    if check and code != 0:
        raise AssertionError(f"swecl {' '.join(args)} exited {code}:\n{stdout}\n{stderr}")
    return proc


def swecl_json(results: Path, *args: str, cache: Path) -> Any:
    return json.loads(swecl(results, *args, "--json", cache=cache).stdout)
