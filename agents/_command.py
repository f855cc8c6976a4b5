"""Any CLI coding agent, through a command template.

The template is split with shlex once; placeholders are substituted inside each argument
(never through a shell, so an issue text or a path cannot become a command):
`{workdir}` the worktree, `{issue_file}` a file holding the issue text (after the earlier
tasks' section in the full-history stage), `{hints_file}`,
`{model}`, `{instance_id}`, `{repo}`, `{scratch}`, `{usage_file}` (where the command may
write what it spent, as JSON `{"cost_usd": 0.12, "tokens": {"input": 900, "output": 80},
"turns": 4}`: recorded on agent.finished, summed by --budget-usd, checked by
--max-tokens-per-task and --max-turns after the attempt;
a file that is missing or not that shape records nothing). `${NAME}` takes the value of the
environment variable NAME when the agent runs: that is how a token reaches a command
without being written into the run's record. The process runs in the worktree in its
own process group (a timeout ends all of it) and the patch is the worktree's diff.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from graders.host import Sandbox
from ledger import SweclError

from . import _diff
from ._confine import agent_environment, checkout_object_stores
from ._egress import API_ENDPOINTS, endpoint_urls
from ._process import run_process
from ._protocol import AgentInput, AgentResult, ExitKind, RunSupplies
from ._scrub import Scrubber
from ._startup import Probe, exec_chain, not_started

__all__ = ["PLACEHOLDERS", "CommandAgent", "issue_text"]

PLACEHOLDERS = ("{workdir}", "{issue_file}", "{hints_file}", "{model}", "{instance_id}", "{repo}", "{scratch}",
                "{usage_file}")
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

# The preflight's probe: an arbitrary command has no harmless option to run (`--version`
# may start the agent itself), so inside the sandbox only exec's own checks are made, on
# each path exec resolves (the program, its script's interpreter): it is there and it is
# executable. The shell's 127 and 126 say which failed.
_EXEC_CHECK = """\
for f in "$@"; do
  [ -e "$f" ] || { echo "$f: No such file or directory" >&2; exit 127; }
  [ -f "$f" ] && [ -x "$f" ] || { echo "$f: not an executable file" >&2; exit 126; }
done
"""


def issue_text(inp: AgentInput) -> str:
    """What `{issue_file}` holds: the issue, after the earlier tasks' section when the run's
    memory gives one (the full-history stage: a template's only prompt is that file)."""
    if inp.history is not None and inp.history.text:
        return inp.history.text.strip() + "\n\n" + inp.issue
    return inp.issue


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
            "{usage_file}": str(inp.scratch_dir / USAGE_FILE),
        }
        out = []
        for arg in self.template:
            # environment first: a value substituted from the task is never expanded again
            arg = _ENV_REF.sub(lambda m: os.environ.get(m.group(1), ""), arg)
            for key, value in values.items():
                arg = arg.replace(key, value)
            out.append(arg)
        return out

    def probe(self, inp: AgentInput) -> Probe:
        """Whether the program (and its script's interpreter) can be exec'd inside the
        sandbox with a task's environment and mounts, without running it."""
        argv = self.argv(inp, str(inp.scratch_dir / "issue.md"), str(inp.scratch_dir / "hints.md"))
        env = self._env(inp)
        chain = exec_chain(argv[0], env.get("PATH"))
        if not chain:
            raise SweclError(f"the agent command {argv[0]!r} is not on PATH: give its full path, or install it")
        named_files, named_dirs = _named_paths(argv, inp.sandbox)
        return Probe(
            argv=["/bin/sh", "-c", _EXEC_CHECK, "sh", *chain], env=env, what=f"the agent command {argv[0]}",
            executables=chain, remedy="put the program (and its interpreter) outside that place, or name it by its path "
            "in the template so it is mounted", fix="put the program back, or fix --command",
            writable=[inp.scratch_dir, *named_dirs],
            readable=[*checkout_object_stores(inp.worktree), *named_files], shows_version=False,
        )

    def _env(self, inp: AgentInput) -> dict[str, str]:
        # No cache, results or dataset path reaches the agent, confined or not.
        return agent_environment({**os.environ, **self.extra_env}, inp.sandbox.hidden if inp.sandbox is not None else ())

    def run(self, inp: AgentInput) -> AgentResult:
        started = time.monotonic()
        base = inp.base_commit or _diff.head_commit(inp.worktree)
        scratch = inp.scratch_dir
        scratch.mkdir(parents=True, exist_ok=True)
        issue_file = scratch / "issue.md"
        issue_file.write_text(issue_text(inp), encoding="utf-8")
        hints_file = scratch / "hints.md"
        hints_file.write_text(inp.hints, encoding="utf-8")
        argv = self.argv(inp, str(issue_file), str(hints_file))
        full_env = {**os.environ, **self.extra_env}
        env = self._env(inp)
        out_path, err_path = scratch / "command-stdout.txt", scratch / "command-stderr.txt"
        named_files, named_dirs = _named_paths(argv, inp.sandbox)
        outcome = run_process(
            argv, cwd=inp.worktree, env=env, stdout=out_path, stderr=err_path, timeout_s=inp.budget.timeout_s,
            sandbox=inp.sandbox, writable=[scratch, *named_dirs],
            readable=[*checkout_object_stores(inp.worktree), *named_files],
            # Its model API is its own business: any of the vendors' endpoints, as its
            # environment names them (else their defaults), and --allow-host.
            egress=inp.egress, endpoints=endpoint_urls(env, API_ENDPOINTS),
        )
        scrubber = Scrubber(full_env)
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

        # A program that never ran (gone, or out of the sandbox's sight) left no patch: the
        # attempt is the run's failure, not the agent's 0.
        why = not_started(outcome.returncode, outcome.timed_out, stderr.decode("utf-8", "replace"))
        patch = scrubber.text(_diff.worktree_patch(inp.worktree, base))
        if why is not None and not patch:
            error = why = f"the agent command {argv[0]} did not run: {why}"
        else:
            why = None

        cost_usd, tokens, turns = read_usage(scratch / USAGE_FILE)
        transcript = b"".join(
            part for part in (b"--- stdout\n", stdout, b"\n--- stderr\n", stderr) if part
        )
        return AgentResult(
            patch=patch,
            exit=exit_kind,
            exit_code=outcome.returncode,
            duration_s=time.monotonic() - started,
            transcript=transcript,
            prompt=scrubber.text(issue_text(inp)),
            cost_usd=cost_usd,
            tokens=tokens,
            turns=turns,
            error=scrubber.optional(error),
            model=inp.model,
            not_started=scrubber.optional(why),
        )


USAGE_FILE = "usage.json"


def read_usage(path: Path) -> tuple[float | None, dict[str, int], int | None]:
    """(cost in USD, tokens, turns) a command wrote to its `{usage_file}`; (None, {}, None)
    for none. The command is the user's: anything but that JSON shape is ignored, never a
    failure."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, {}, None
    if not isinstance(raw, dict):
        return None, {}, None
    cost = raw.get("cost_usd")
    cost = float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost >= 0 else None
    tokens = raw.get("tokens")
    kept = {str(k): int(v) for k, v in tokens.items() if isinstance(v, int) and not isinstance(v, bool) and v >= 0} \
        if isinstance(tokens, dict) else {}
    turns = raw.get("turns")
    turns = turns if isinstance(turns, int) and not isinstance(turns, bool) and turns >= 0 else None
    return cost, kept, turns


# What the sandbox replaces by empty private trees.
_PRIVATE = ("/tmp/", "/var/tmp/", "/dev/shm/")


def _named_paths(argv: Sequence[str], sandbox: Sandbox | None) -> tuple[list[Path], list[Path]]:
    """(files, directories) the command line names outside what the sandbox hides: its
    script and config come back read-only, a directory it was given (a log dir, say)
    read-write. The template is the user's; a placeholder's value (the worktree, the
    scratch dir) is bound anyway, and nothing under a hidden path comes back."""
    if sandbox is None or not sandbox.confined:
        return [], []
    hidden = [h.rstrip("/") + "/" for h in sandbox.hidden]
    files: list[Path] = []
    dirs: list[Path] = []
    for arg in argv:
        value = arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg
        if not value.startswith("/") or "\0" in value:
            continue
        real = os.path.realpath(value)
        if any((real + "/").startswith(h) for h in hidden):
            continue
        if os.path.isfile(real):
            if real.startswith(_PRIVATE):  # elsewhere the read-only root shows it already
                files.append(Path(real))
        elif os.path.isdir(real) and real != "/":
            dirs.append(Path(real))
    return files, dirs


def from_run(run: RunSupplies) -> CommandAgent:
    if not run.command:
        raise SweclError("--agent command needs --command 'TEMPLATE with {workdir} {issue_file} {model}'")
    return CommandAgent(template=run.command)
