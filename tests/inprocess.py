"""`swecl` called inside the test process for the commands that read a ledger, and for
`swecl run`.

Starting the CLI costs CPU at each call (the interpreter and the imports: ~0.2 s for a
read command, ~0.35 s for `run`), and the tests call it hundreds of times. Where what a
test checks is the command's output, exit code and ledger, not the behaviour of a
process (signals, crashes), the same entry point runs in-process: `commands.cli.main`,
which installs the stop handlers and restores them on the way out, under click's
isolation of stdout, stderr and the environment. The environment is the one a
subprocess of `bench.processes.swecl` would get (its own cache, no failpoints, no
inherited results dir or debug flag), set only for the call; a run's own children
(agents, test runs, the recall server) are real processes either way.

A real `swecl` process still runs: a `run` given a failpoint (it kills the process) or
starting processes of swecl's own (--jobs, --task-jobs, Ray), every other command
(`grade`, `view`, `env` ...), and whatever a test starts itself to signal or kill
(`bench.processes.spawn`, the crash tests' loops).
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
# `run` is called in-process too, but not where the process is part of what is tested: a
# failpoint (it kills the process), and the runs that start swecl processes of their own
# (--jobs, --task-jobs: multiprocessing's spawn, which re-imports the caller; Ray).
_RUN_IN_A_PROCESS = frozenset({"--jobs", "--task-jobs", "--executor", "--ray-address", "--shard-dir"})


def _in_process(args: tuple[str, ...], env: dict[str, str] | None) -> bool:
    if not args:
        return False
    if args[0] in IN_PROCESS:
        return True
    return (args[0] == "run" and "SWECL_FAILPOINTS" not in (env or {})
            and not any(a.split("=", 1)[0] in _RUN_IN_A_PROCESS for a in args))


def swecl(
    results: Path,
    *args: str,
    cache: Path,
    env: dict[str, str] | None = None,
    timeout: float = 600,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """`bench.processes.swecl`, in-process for the read-only commands and for the runs
    `_in_process` allows (the module doc)."""
    if not _in_process(args, env):
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
