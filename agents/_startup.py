"""Whether an agent's process can start: once before a run, and after each attempt.

An agent whose executable the sandbox cannot reach (a CLI installed under the system's
temporary directory, which the sandbox replaces by an empty one; a path under the hidden
cache or results) fails every task the same way. Scored, each would count as the
agent's 0. So:

- `preflight` runs, before the first task, what the agent offers as its `probe`
  (`CliAgent`: `CLI --version`; `CommandAgent`: an exec check of its program and of its
  script's interpreter) through the very `run_process` and sandbox a task goes through,
  with the environment and mounts a task gets, and refuses in one line that says where
  the executable is, what the sandbox does to that place and what to set;
- `not_started` and `reached_no_model` read an attempt's process end: the sandbox's own
  failure line (bwrap could not exec the program), the shell's 126/127, or a CLI that
  exited non-zero having used no tokens, made no tool call and left no patch. Such an
  attempt says nothing about the agent: the adapter marks it (`AgentResult.not_started`)
  and the run records it as `agent_error`, never scored.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from graders.host import Sandbox, shown_by, tests_view, under
from ledger import SweclError

from ._process import run_process
from ._protocol import AgentInput, AgentResult

__all__ = ["PREFLIGHT_TIMEOUT_S", "Probe", "Probed", "exec_chain", "not_started", "preflight", "reached_no_model",
           "sandbox_view", "where_it_is"]

PREFLIGHT_TIMEOUT_S = 60.0
_SHELL_CANNOT_EXEC = (126, 127)  # found but not executable; not found
LAUNCHER_CANNOT_EXEC = "swecl-launcher: cannot execute "  # agents/_egress.py's launcher


@dataclass(frozen=True)
class Probe:
    """What `preflight` runs for an agent, as a task would run its process."""

    argv: list[str]
    env: dict[str, str]
    what: str  # "the claude CLI", "the agent command"
    executables: list[str]  # what exec resolves: the program, its script's interpreter
    remedy: str  # what to change when the sandbox hides it (--sandbox none is added)
    fix: str  # what to change when it fails anywhere else
    writable: list[Path] = field(default_factory=list)
    readable: list[Path] = field(default_factory=list)
    shows_version: bool = True  # stdout's first line is the program's version


class Probed(Protocol):
    """An agent that runs a process of its own offers the probe a task's process passes."""

    def probe(self, inp: AgentInput) -> Probe: ...


@contextlib.contextmanager
def _task_folder(sandbox: Sandbox | None) -> Iterator[AgentInput]:
    """A task's input in a scratch folder where a task's is (`worktree`, `scratch` inside)."""
    with tempfile.TemporaryDirectory(prefix="swecl-task-") as scratch:
        root = Path(scratch)
        inp = AgentInput(instance_id="preflight", repo="preflight", issue="", worktree=root / "worktree",
                         scratch_dir=root / "scratch", sandbox=sandbox)
        inp.worktree.mkdir()
        inp.scratch_dir.mkdir()
        yield inp


def preflight(agent: object, sandbox: Sandbox | None) -> str | None:
    """Run `agent`'s probe as a task would (same sandbox, hidden paths, mounts,
    environment), in a scratch dir where a task's is. Returns its version line ("" when
    the probe shows none); None for an agent with no process of its own. Refuses in one
    line when it does not start."""
    probe_of = getattr(agent, "probe", None)
    if probe_of is None:
        return None
    with _task_folder(sandbox) as inp:
        root, worktree = inp.worktree.parent, inp.worktree
        probe: Probe = probe_of(inp)
        out, err = root / "probe-stdout.txt", root / "probe-stderr.txt"
        try:
            outcome = run_process(probe.argv, cwd=worktree, env=probe.env, stdout=out, stderr=err,
                                  timeout_s=PREFLIGHT_TIMEOUT_S, sandbox=sandbox, writable=probe.writable,
                                  readable=probe.readable, programs=probe.executables[:1])
        except SweclError as exc:  # unconfined: the exec itself failed here
            raise SweclError(_refusal(probe, sandbox, str(exc))) from None
        said = err.read_text(encoding="utf-8", errors="replace")
        if outcome.timed_out:
            raise SweclError(_refusal(probe, sandbox, f"it did not finish within {PREFLIGHT_TIMEOUT_S:g}s"))
        if outcome.returncode != 0:
            raise SweclError(_refusal(probe, sandbox, f"exit {outcome.returncode}: {_last_line(said)}"))
        lines = out.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        return lines[0].strip()[:200] if probe.shows_version and lines else ""


def sandbox_view(agent: object, sandbox: Sandbox | None) -> dict[str, list[dict[str, str]]] | None:
    """What a run's agent and tests can see, as `run.started` records it (`visible`):
    every path the sandbox shows them, read-only or writable, and why. A task's own paths
    go by what they are (`{checkout}`, `{scratch}`...): the agent's from its probe, made
    as a task's process is; an in-process agent runs no process of its own (`agent`
    empty). None unconfined: then everything of the host is visible."""
    if sandbox is None or not sandbox.confined:
        return None
    view: dict[str, list[dict[str, str]]] = {"agent": [], "tests": tests_view()}
    probe_of = getattr(agent, "probe", None)
    if probe_of is None:
        return view
    with _task_folder(sandbox) as inp:
        root, worktree = inp.worktree.parent, inp.worktree
        probe: Probe = probe_of(inp)
        door = root / "egress"
        door.mkdir()
        # as `run_process` starts it: the egress launcher (swecl's interpreter) runs the program
        plan = sandbox.plan([os.path.realpath(sys.executable)], cwd=worktree, env=probe.env,
                            writable=probe.writable, readable=[*probe.readable, door],
                            programs=[*probe.argv[:1], *probe.executables[:1]], exposed=True)
        names = [(str(worktree), "{checkout}"), (str(inp.scratch_dir), "{scratch}"), (str(door), "{egress door}"),
                 (str(root), "{task folder}")]
        for m in plan:
            record = m.record()
            for real, name in names:
                if record["path"] == real or record["path"].startswith(real + "/"):
                    record["path"] = name + record["path"][len(real):]
                    break
            view["agent"].append(record)
    return view


def _refusal(probe: Probe, sandbox: Sandbox | None, detail: str) -> str:
    confined = sandbox is not None and sandbox.confined
    where = where_it_is(probe.executables, sandbox, [*probe.readable, *probe.writable], probe.env.get("PATH"))
    inside = " inside the sandbox" if confined else ""
    if where is not None:
        path, place = where
        unconfined = ", or run unconfined with --sandbox none" if confined else ""
        return f"{probe.what} cannot start{inside} ({detail}): it is at {path}, and {place}; {probe.remedy}{unconfined}"
    program = probe.executables[0] if probe.executables else None
    located = f"it is at {program}" if program and os.path.exists(program) else f"there is no {program}"
    return f"{probe.what} cannot start{inside} ({detail}): {located}; {probe.fix}"


def where_it_is(executables: list[str], sandbox: Sandbox | None,
                mounted: Sequence[str | os.PathLike[str]] = (), path_env: str | None = None) -> tuple[str, str] | None:
    """(path, what the sandbox makes of it) for the first of `executables` (their real
    paths: a link resolves where it points) the sandbox does not show; None when all
    lie in places it shows. `mounted`: what the task's process gets back on top."""
    if sandbox is None or not sandbox.confined or not executables:
        return None
    plan = sandbox.plan(executables[:1], cwd="/", env={"PATH": path_env or ""}, readable=mounted, exposed=True)
    for exe in executables:
        if not os.path.exists(exe):  # not there at all: nothing the sandbox did
            return None
        real = os.path.realpath(exe)
        if shown_by(real, plan):
            continue
        # A hidden path may lie inside another: the narrower says more.
        for hidden in sorted(sandbox.hidden, key=len, reverse=True):
            if under(real, hidden):
                return real, f"the sandbox hides {hidden} (it hides swecl's cache, results and dataset files)"
        return real, ("the sandbox shows only the system, the agent's own install and its checkout "
                      "(--expose PATH shows more)")
    return None


def exec_chain(program: str, env_path: str | None) -> list[str]:
    """What exec resolves for `program` on the host: its path (PATH-searched when it has no
    slash), then its script's interpreter (`#!/usr/bin/env node`: env and node)."""
    found = program if "/" in program else shutil.which(program, path=env_path)
    if found is None:
        return []
    chain = [os.path.abspath(found)]
    try:
        with open(found, "rb") as fh:
            head = fh.read(256)
    except OSError:
        return chain
    if not head.startswith(b"#!"):
        return chain
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    if not words:
        return chain
    chain.append(words[0])
    if os.path.basename(words[0]) == "env":
        named = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        if named:
            interpreter = shutil.which(named[0], path=env_path)
            if interpreter is not None:
                chain.append(interpreter)
    return chain


def not_started(returncode: int | None, timed_out: bool, stderr: str) -> str | None:
    """Why the process never ran its program, by the evidence of its end: bubblewrap's
    own last word (it exits 1 and says `bwrap: execvp PATH: ...` when the program is not
    there inside), the egress launcher's (127, `swecl-launcher: cannot execute PATH: ...`),
    or the shell's 126 (not executable) / 127 (not found)."""
    if timed_out or returncode is None:
        return None
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    if returncode == 1 and lines and lines[0].startswith("bwrap: "):
        return f"the sandbox could not start it ({lines[0][:300]})"
    if returncode == 127 and lines and lines[0].startswith(LAUNCHER_CANNOT_EXEC):
        # the egress launcher inside the sandbox, which starts the agent, could not exec it
        return f"the sandbox could not start it ({lines[0][:300]})"
    if returncode in _SHELL_CANNOT_EXEC:
        said = f": {lines[-1][:300]}" if lines else ""
        return f"it could not be executed (exit {returncode}{said})"
    return None


def reached_no_model(result: AgentResult, returncode: int | None, timed_out: bool) -> bool:
    """A CLI that ended in failure (non-zero, or a signal) without a trace of a model's
    answer: no tokens, no tool call, no patch. A CLI that reached its model and gave up
    has tokens; one that hit its time limit is the agent's own end."""
    if timed_out or returncode == 0 or result.exit not in ("crashed", "error"):
        return False
    return not (sum(result.tokens.values()) or result.tool_calls or result.patch or result.cost_usd)


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "nothing on stderr"
