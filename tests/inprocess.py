"""`swecl` called inside the test process.

Starting the CLI costs CPU at each call (the interpreter and the imports: ~0.2 s for a
read command, ~0.35 s for `run` or `grade`), and the tests call it hundreds of times.
Where what a test checks is the command's output, exit code, ledger and files, not the
behaviour of a process (signals, crashes), the same entry point runs in-process:
`commands.cli.main`, which installs the stop handlers and restores them on the way out,
under click's isolation of stdout, stderr and the environment. The environment is the one
a subprocess of `bench.processes.swecl` would get (its own cache, no failpoints, no
inherited results dir or debug flag), set only for the call; a command's own children
(agents, test runs, the recall server) are real processes either way.

A real `swecl` process still runs: `view` (it serves until stopped), a command given a
failpoint (it kills the process) or starting processes of swecl's own (--jobs,
--task-jobs, Ray), and whatever a test starts itself to signal or kill
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

# `view` serves until it is stopped: always a process of its own.
_IN_A_PROCESS = frozenset({"view"})
# A command given one of these starts swecl processes of its own (--jobs, --task-jobs:
# multiprocessing's spawn, which re-imports the caller; Ray): the test runs it as a user would.
_PROCESS_FLAGS = frozenset({"--jobs", "--task-jobs", "--executor", "--ray-address", "--shard-dir"})


def _in_process(args: tuple[str, ...], env: dict[str, str] | None) -> bool:
    if not args or args[0] in _IN_A_PROCESS:
        return False
    return "SWECL_FAILPOINTS" not in (env or {}) and not any(a.split("=", 1)[0] in _PROCESS_FLAGS for a in args)


def swecl(
    results: Path,
    *args: str,
    cache: Path,
    env: dict[str, str] | None = None,
    timeout: float = 600,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """`bench.processes.swecl`, in-process where `_in_process` allows (the module doc)."""
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
