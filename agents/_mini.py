"""mini-swe-agent (PyPI `mini-swe-agent`, its `mini` CLI) as a swecl agent.

One task = one `mini --agent-class default` process in the task's worktree: the default
agent never asks anything (no confirmation, no exit prompt), and the task text comes in a
config file we write, never on the command line. Its home is `mini-home` in the task's
scratch dir: the config (`swecl.yaml`, merged over the package's own `mini.yaml`), its
global config dir (`MSWEA_GLOBAL_CONFIG_DIR`, so no setup prompt and no user `.env`) and
the XDG cache and config dirs; the trajectory (`trajectory.json`) is beside it.

- model API: any LiteLLM model name (`--model openai/gpt-4o-mini`, `anthropic/...`,
  `gemini/...`); LiteLLM reads the provider's key from the environment itself (the key is
  never written anywhere, and nothing we keep holds it: see `_scrub`). The endpoint is the
  adapter's `base_url` option (LiteLLM's `api_base`), else the provider's own variable
  (`OPENAI_BASE_URL`, `ANTHROPIC_API_BASE`/`ANTHROPIC_BASE_URL`, `GEMINI_API_BASE`), else
  the provider's default; sandboxed, the egress proxy lets it reach that host only (another
  LiteLLM provider: name its host with --allow-host). LiteLLM's cost map is its bundled
  one (`LITELLM_LOCAL_MODEL_COST_MAP`: no fetch at start); a model it has no price for runs
  anyway (`cost_tracking: ignore_errors`) and reports no cost. The commands the model runs
  see every credential-named variable (*KEY*, *SECRET*, *TOKEN*, *PASSWORD*) emptied, so
  none can print the key;
- memory: mini-swe-agent has no MCP client. In plugin stages swecl recalls once with the
  issue before the task (an inproc `memory.recalled`) and the notes open the prompt, the
  primed prompt of the other CLI agents without the recall tool. The builtin stage is
  refused: mini-swe-agent has no memory of its own;
- limits: `Budget.max_turns` is its `step_limit`, `max_cost_usd` its `cost_limit` (LiteLLM's
  prices); the wall-clock limit applies as for every agent;
- result: turns (billed completions), tool calls (`bash`, an error when its exit code is
  not 0), tokens and cost, all from the trajectory, which is also the transcript (one JSON
  line);
- `code_mode` blind: the model never sees the repository. mini runs in an empty
  `blind-workdir` of the scratch dir, where its commands run too; a confined run hides the
  worktree (an empty tmpfs over it, none of its object stores bound), and the prompt never
  names it (unconfined, nothing stops a command that guesses the path: `--sandbox none`
  trusts the agent, as it does for every other file). Its config's instance template says
  so and asks for the fix as one unified diff against the repository root, submitted as
  its final output (`echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat fix.diff`: what
  follows the marker is the trajectory's `info.submission`). swecl applies that diff to
  the worktree as claude's blind answer (`_diff.apply_answer`: kept as written, with a
  note, when git apply refuses it). Recall is primed into the prompt as in agentic mode.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ledger import SweclError

from . import _diff
from ._claude import build_prompt
from ._cli_agent import CliAgent, CliInvocation, find_cli, last_line, recalled_notes
from ._mini_trajectory import Trajectory, read_trajectory
from ._protocol import AgentInput, AgentResult, ExitKind, RunSupplies
from ._startup import Probe

__all__ = ["MiniSweAgent", "MiniInvocation", "find_mini", "provider_endpoint"]

# Set by a user's shell or a parent run: each would change what the child reads or does.
_DROPPED_ENV = (
    "MSWEA_GLOBAL_CONFIG_DIR", "MSWEA_MINI_CONFIG_PATH", "MSWEA_CONFIG_DIR", "MSWEA_MODEL_NAME",
    "MSWEA_COST_TRACKING", "MSWEA_GLOBAL_COST_LIMIT", "MSWEA_GLOBAL_CALL_LIMIT", "MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT",
    "MSWEA_MULTIMODAL_CONTENT", "LITELLM_MODEL_REGISTRY_PATH", "LITELLM_MODEL_COST_MAP_URL",
)
_QUIET_ENV = {
    "MSWEA_CONFIGURED": "true",  # no first-run setup prompt
    "MSWEA_SILENT_STARTUP": "1",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # LiteLLM's bundled prices: no fetch from GitHub at import
    "NO_COLOR": "1",
    # mini's CLI (typer) prints an uncaught error (a refused key, say) as a plain traceback:
    # rich's syntax-highlighted one costs seconds of CPU and draws boxes into the stderr file.
    "_TYPER_STANDARD_TRACEBACK": "1",
}
# LiteLLM provider -> (its endpoint variables in the order LiteLLM reads them, its default).
_PROVIDERS: dict[str, tuple[tuple[str, ...], str]] = {
    "openai": (("OPENAI_BASE_URL", "OPENAI_API_BASE"), "https://api.openai.com/v1"),
    "anthropic": (("ANTHROPIC_API_BASE", "ANTHROPIC_BASE_URL"), "https://api.anthropic.com"),
    "gemini": (("GEMINI_API_BASE",), "https://generativelanguage.googleapis.com"),
}
_CREDENTIAL = re.compile(r"KEY|SECRET|TOKEN|PASSWORD", re.IGNORECASE)
# The blind mode's instance template (mini renders it with Jinja: `{{task}}` is our prompt).
# In place of the package's, whose workflow reads and edits the repository's files.
_BLIND_TEMPLATE = """{{task}}

## Command Execution Rules

Each response must hold your reasoning and at least one call of the bash tool. Every
command runs in a new subshell, in an empty scratch directory: the repository is not
there, and no file of it can be read anywhere. You may write and run files of your own
there (to try out code, or to write the diff).

When the diff is ready, write it to a file (say `fix.diff`) and submit it as your final
output with this command, on its own: `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat fix.diff`.
<important>After this command, you cannot continue working on this task.</important>
"""
_BLIND_RULES = ("The repository is not available to you: your commands run in an empty scratch directory, and no "
                "file of the repository can be read or edited. Work out the fix from the issue. Submit it as one "
                "unified diff against the repository root (paths a/... and b/..., as `git diff` prints them), "
                "printed after the line COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT as your final output.")
# What LiteLLM says of a key the API refused, or of none at all (it retries the latter).
_AUTH_WORDS = ("AuthenticationError", "Missing credentials", "api_key client option must be set")


def find_mini(explicit: str | os.PathLike[str] | None = None) -> str:
    """The `mini` executable: `explicit`, else $SWECL_MINI_BIN, else PATH."""
    return find_cli(MiniSweAgent.command, MiniSweAgent.env_var, MiniSweAgent.package, explicit,
                    install=MiniSweAgent.install)


def _provider(model: str) -> str | None:
    if "/" in model:
        prefix = model.split("/", 1)[0]
        return prefix if prefix in _PROVIDERS else None
    # LiteLLM's own guess for a bare name
    return "anthropic" if "claude" in model else "gemini" if "gemini" in model else "openai"


def provider_endpoint(model: str, env: dict[str, str]) -> str | None:
    """The URL LiteLLM calls for `model` given `env` (None: a provider we do not know)."""
    provider = _provider(model)
    if provider is None:
        return None
    names, default = _PROVIDERS[provider]
    return next((env[n] for n in names if env.get(n)), default)


@dataclass(frozen=True, kw_only=True)
class MiniInvocation(CliInvocation):
    mini_home: Path
    config: dict[str, Any]  # what swecl.yaml holds (JSON is YAML)
    trajectory_path: Path


class MiniSweAgent(CliAgent[MiniInvocation]):
    """`mini` on one task. Options: executable, base_url, max_retries, extra_args, env."""

    name = "mini-swe-agent"
    command = "mini"
    env_var = "SWECL_MINI_BIN"
    package = "mini-swe-agent"
    install = "pip install mini-swe-agent"
    dropped_env = _DROPPED_ENV

    def __init__(self, *, base_url: str | None = None, **options: Any) -> None:
        super().__init__(**options)
        self.base_url = base_url

    def probe(self, inp: AgentInput) -> Probe:
        """`mini` has no --version (any unknown option is an error): its script's Python
        prints the package's version instead, else `mini --help` shows that it starts."""
        probe = super().probe(replace(inp, model=inp.model or "openai/preflight"))
        python = probe.executables[1] if len(probe.executables) == 2 else ""
        if os.path.basename(python).startswith("python"):
            code = "import minisweagent; print('mini-swe-agent', minisweagent.__version__)"
            return replace(probe, argv=[python, "-c", code])
        return replace(probe, argv=[probe.argv[0], "--help"], shows_version=False)

    def endpoints(self, inp: AgentInput, inv: MiniInvocation) -> list[str]:
        url = self.base_url or provider_endpoint(inp.model or "", inv.env)
        return [url] if url else []

    # -- preparing -------------------------------------------------------------------------

    def prepare(self, inp: AgentInput) -> MiniInvocation:
        if inp.memory_dir is not None:
            raise SweclError("the mini-swe-agent agent has no memory of its own: the builtin stage does not apply to it")
        if not inp.model:
            raise SweclError("the mini-swe-agent agent needs --model (a LiteLLM model name, e.g. openai/gpt-4o-mini)")
        scratch = inp.scratch_dir
        scratch.mkdir(parents=True, exist_ok=True)
        mini_home = scratch / "mini-home"
        shutil.rmtree(mini_home, ignore_errors=True)  # a fresh home every task
        (mini_home / "config").mkdir(parents=True)
        trajectory = scratch / "mini-trajectory.json"
        trajectory.unlink(missing_ok=True)

        # No MCP client: plugin stages get their recall in the prompt, every time.
        primed = inp.recall is not None
        blind = inp.code_mode == "blind"
        prompt = build_prompt(replace(inp, prompt_style="natural") if primed else inp,
                              recalled_notes(inp) if primed else (), recall_tool=False,
                              blind_rules=_BLIND_RULES if blind else None)
        workdir = scratch / "blind-workdir" if blind else None
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)
            workdir.mkdir()

        env = self.base_env(inp)
        env.update(_QUIET_ENV)
        env["MSWEA_GLOBAL_CONFIG_DIR"] = str(mini_home / "config")
        env["XDG_CONFIG_HOME"] = str(mini_home / "xdg-config")
        env["XDG_CACHE_HOME"] = str(mini_home / "xdg-cache")
        if self.max_retries is not None:
            env["MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT"] = str(self.max_retries + 1)

        model_kwargs: dict[str, Any] = {"drop_params": True}
        if self.base_url:
            model_kwargs["api_base"] = self.base_url
        agent: dict[str, Any] = {"step_limit": inp.budget.max_turns or 0, "cost_limit": inp.budget.max_cost_usd or 0}
        if blind:
            agent["instance_template"] = _BLIND_TEMPLATE
        config: dict[str, Any] = {
            "run": {"task": prompt},
            "agent": agent,
            "model": {"model_kwargs": model_kwargs, "cost_tracking": "ignore_errors"},
            # The commands' environment is mini's own plus these: credentials emptied.
            "environment": {"cwd": str(workdir or inp.worktree),
                            "env": {k: "" for k in {**env, **self.extra_env} if _CREDENTIAL.search(k)}},
        }
        config_path = mini_home / "swecl.yaml"
        config_path.write_text(json.dumps(config, indent=1), encoding="utf-8")

        argv = [
            self.executable,
            "--agent-class", "default",  # the non-interactive agent: no prompt ever
            "-c", "mini.yaml",  # the package's own prompts and tool, then ours over them
            "-c", str(config_path),
            "-o", str(trajectory),
            "--model", inp.model,
            *self.extra_args,
        ]
        return self.invocation(MiniInvocation, inp, argv=argv, env=env, prompt=prompt, server=None, stdin=b"",
                               mini_home=mini_home, config=config, trajectory_path=trajectory, workdir=workdir)

    # -- running ---------------------------------------------------------------------------

    def run(self, inp: AgentInput) -> AgentResult:
        inv, ran = self.launch(inp)
        scrubber = ran.scrubber
        # Its files (the trajectory holds every command output the model saw) are scrubbed
        # in place before anything is read from them.
        scrubber.tree(inv.mini_home)
        raw = inv.trajectory_path.read_bytes() if inv.trajectory_path.is_file() else b""
        if raw:
            raw = scrubber.bytes(raw)
            inv.trajectory_path.write_bytes(raw)
        facts = read_trajectory(raw) if raw else None
        exit_kind, error = _classify(facts, inv, inp, ran.outcome.returncode, ran.outcome.timed_out, ran.stderr)
        patch = ""
        if inp.code_mode == "blind" and facts is not None and facts.exit_status == "Submitted":
            patch, patch_error = _diff.apply_answer(inp.worktree, ran.base, facts.submission, "the submission")
            error = "; ".join(e for e in (error, patch_error) if e) or None
        if not patch:
            patch = _diff.worktree_patch(inp.worktree, ran.base)
        return self.judged(ran, AgentResult(
            # A key the agent wrote into the worktree must not travel on in the patch either.
            patch=scrubber.text(patch),
            exit=exit_kind,
            exit_code=ran.outcome.returncode,
            turns=facts.turns if facts else None,
            tool_calls=facts.tool_calls if facts else [],
            tokens=facts.tokens if facts else {},
            cost_usd=facts.cost_usd if facts else None,
            duration_s=time.monotonic() - ran.started,
            transcript=facts.compact if facts else ran.stream,
            prompt=scrubber.text(inv.prompt),
            session_id=None,  # mini-swe-agent names no session
            error=scrubber.optional(error),
            model=inp.model,
            memory_files={},
        ))


def _classify(facts: Trajectory | None, inv: MiniInvocation, inp: AgentInput, returncode: int | None,
              timed_out: bool, stderr: str) -> tuple[ExitKind, str | None]:
    if timed_out:
        return "timeout", f"mini did not finish within {inp.budget.timeout_s}s"
    if returncode is not None and returncode < 0:
        return "crashed", f"mini was killed by signal {-returncode}; stderr: {last_line(stderr)}"
    status = facts.exit_status if facts else ""
    if status == "Submitted":
        return "completed", None
    if status == "LimitsExceeded":
        cap = inp.budget.max_cost_usd
        if cap and facts is not None and (facts.cost_usd or 0) >= cap:
            return "budget", f"the run's cost reached its limit of ${cap:g}"
        return "max_turns", f"the run reached its limit of {inp.budget.max_turns} model calls"
    said = (facts.exception if facts else None) or ""
    if any(word in f"{status} {said}" for word in _AUTH_WORDS):
        return "auth_failed", f"{status or 'mini'}: {_one_line(said) or last_line(stderr)}"
    if status == "RepeatedFormatError":
        return "error", "the model answered without a bash tool call too many times in a row"
    if status:
        return "error", f"{status}: {_one_line(said) or last_line(stderr)}"
    if returncode == 0:
        return "crashed", f"mini exited 0 without a trajectory in {inv.trajectory_path.name}"
    return "crashed", f"mini exited {returncode} before any step; stderr: {last_line(stderr)}"


def _one_line(text: str) -> str:
    return " ".join(text.split())[:500]


def from_run(run: RunSupplies) -> MiniSweAgent:
    if run.runs_here:
        find_mini()  # a missing CLI is said before the run starts, not once per task
    return MiniSweAgent()
