"""Any CLI coding agent, through a command template.

The template is split with shlex once; placeholders are substituted inside each argument
(never through a shell, so an issue text or a path cannot become a command):
`{workdir}` the worktree, `{issue_file}` a file holding the issue text, `{hints_file}`,
`{model}`, `{instance_id}`, `{repo}`, `{scratch}`. `${NAME}` takes the value of the
environment variable NAME when the agent runs: that is how a token reaches a command
without being written into the run's record. The process runs in the worktree in its
own process group (a timeout ends all of it) and the patch is the worktree's diff.
"""

from __future__ import annotations

import os
import re
import shlex
import time
from collections.abc import Mapping, Sequence

from ledger import SweclError

from . import _diff
from ._process import run_process
from ._protocol import AgentInput, AgentResult, ExitKind
from ._scrub import Scrubber

__all__ = ["PLACEHOLDERS", "CommandAgent"]

PLACEHOLDERS = ("{workdir}", "{issue_file}", "{hints_file}", "{model}", "{instance_id}", "{repo}", "{scratch}")
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class CommandAgent:
    def __init__(
        self,
        template: str | Sequence[str],
        *,
        name: str = "command",
        env: Mapping[str, str] | None = None,
    ) -> None:
        try:
            parts = shlex.split(template) if isinstance(template, str) else list(template)
        except ValueError as exc:
            raise SweclError(f"agent command template {template!r} cannot be split: {exc}") from None
        if not parts:
            raise SweclError("agent command template is empty: give the command to run, e.g. 'my-agent --cwd {workdir}'")
        self.template = parts
        self.name = name
        self.extra_env = dict(env or {})

    def argv(self, inp: AgentInput, issue_file: str, hints_file: str) -> list[str]:
        values = {
            "{workdir}": str(inp.worktree),
            "{issue_file}": issue_file,
            "{hints_file}": hints_file,
            "{model}": inp.model or "",
            "{instance_id}": inp.instance_id,
            "{repo}": inp.repo,
            "{scratch}": str(inp.scratch_dir),
        }
        out = []
        for arg in self.template:
            # environment first: a value substituted from the task is never expanded again
            arg = _ENV_REF.sub(lambda m: os.environ.get(m.group(1), ""), arg)
            for key, value in values.items():
                arg = arg.replace(key, value)
            out.append(arg)
        return out

    def run(self, inp: AgentInput) -> AgentResult:
        started = time.monotonic()
        base = inp.base_commit or _diff.head_commit(inp.worktree)
        scratch = inp.scratch_dir
        scratch.mkdir(parents=True, exist_ok=True)
        issue_file = scratch / "issue.md"
        issue_file.write_text(inp.issue, encoding="utf-8")
        hints_file = scratch / "hints.md"
        hints_file.write_text(inp.hints, encoding="utf-8")
        argv = self.argv(inp, str(issue_file), str(hints_file))
        env = dict(os.environ)
        env.update(self.extra_env)
        out_path, err_path = scratch / "command-stdout.txt", scratch / "command-stderr.txt"
        outcome = run_process(
            argv, cwd=inp.worktree, env=env, stdout=out_path, stderr=err_path, timeout_s=inp.budget.timeout_s
        )
        scrubber = Scrubber(env)
        stdout = scrubber.bytes(out_path.read_bytes())
        stderr = scrubber.bytes(err_path.read_bytes())
        out_path.write_bytes(stdout)
        err_path.write_bytes(stderr)

        exit_kind: ExitKind = "completed"
        error: str | None = None
        if outcome.timed_out:
            exit_kind, error = "timeout", f"{argv[0]} did not finish within {inp.budget.timeout_s}s"
        elif outcome.returncode is not None and outcome.returncode < 0:
            exit_kind, error = "crashed", f"{argv[0]} was killed by signal {-outcome.returncode}"
        elif outcome.returncode:
            tail = stderr.decode("utf-8", "replace").strip().splitlines()
            exit_kind = "error"
            error = f"{argv[0]} exited {outcome.returncode}" + (f": {tail[-1][:300]}" if tail else "")

        transcript = b"".join(
            part for part in (b"--- stdout\n", stdout, b"\n--- stderr\n", stderr) if part
        )
        return AgentResult(
            patch=scrubber.text(_diff.worktree_patch(inp.worktree, base)),
            exit=exit_kind,
            exit_code=outcome.returncode,
            duration_s=time.monotonic() - started,
            transcript=transcript,
            prompt=scrubber.text(inp.issue),
            error=scrubber.optional(error),
            model=inp.model,
        )
