"""The run's options by concern: the memory, the budget and limits, the sandbox and network,
the execution. Each is a small typed object the CLI builds once and checks itself once
(`check`); `RunOptions` holds one of each. The ledger records them flat, under the names
the CLI's flags have (`run.started.config`: `memory_server`, `budget_usd`, `sandbox`,
`jobs` ...), as it always has: `FLAT` maps a recorded name to its group and field, so runs
already in a ledger read as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from agents import parse_allow_host
from graders.host import SANDBOX_MODES, sandbox_for
from ledger import SweclError

__all__ = ["EXECUTORS", "FLAT", "BudgetOptions", "ExecutionOptions", "MemoryOptions", "SandboxOptions", "flatten",
           "unflatten"]

EXECUTORS = ("local", "ray")


class MemoryOptions(msgspec.Struct, kw_only=True):
    """A user's MCP memory server in place of swecl's substrate (--memory-server, memory
    stages only; see `memory`). Recorded redacted: the spec without URL credentials, and of
    the mapped variables only their names (a value may be a token). And the full-history
    stage's token budget (--history-tokens, recorded as `history_tokens`)."""

    server: str | None = None
    env: list[str] = msgspec.field(default_factory=list)  # NAME=VALUE; never recorded
    env_names: list[str] = msgspec.field(default_factory=list)  # what the ledger keeps of them
    recall_tool: str | None = None
    recall_args: str | None = None  # JSON template; None: {"query": "{query}"}
    write_tool: str | None = None
    write_args: str | None = None  # JSON template; None: the write tool's default, if it has one
    # plugin-dreamed: the server's own consolidation tool, called once before the initial pass.
    dream_tool: str | None = None
    dream_args: str | None = None  # JSON template; None: {}
    call_timeout_s: float = 60.0
    # --memory-server NAME (a preset, `memory._presets`): its name and the version that ran;
    # `server` and the rest hold what it expanded to, as if typed.
    preset: str | None = None
    preset_version: str | None = None
    # Where the recall and write tools came from: None (the flags), preset, or discovered
    # (proposed from the server's tool list before the run, `memory._server_discover`).
    tools_from: str | None = None
    # The server's own model API (--memory-model-endpoint URL, OpenAI-compatible): what
    # swecl's recording gateway, `{model_gateway}` in a --memory-env value, forwards to.
    model_endpoint: str | None = None
    # What a confined server may reach beside the gateway (--memory-allow-host HOST[:PORT]).
    allow_hosts: list[str] = msgspec.field(default_factory=list)
    # --history-tokens: the full-history stage's budget for the earlier tasks in a prompt
    # (characters / 4); None: not given (8000).
    history_tokens: int | None = None


class BudgetOptions(msgspec.Struct, kw_only=True):
    """What a run may spend, and how long and far an attempt may go."""

    # --budget-usd: the run's cost budget, over its agents' reported costs across resumes
    # (see _budget.py); a resume may raise it (run.resumed.budget_usd). None: no budget.
    usd: float | None = None
    # --max-tokens-per-task: the CLI agents that stream their usage are ended past it
    # (exit max_tokens); an attempt whose reported input + output tokens pass it is
    # recorded as over the limit (agent.finished.over_limit); None: no limit.
    max_tokens_per_task: int | None = None
    max_turns: int | None = 50
    agent_timeout_s: float = 1800.0  # --task-timeout (alias --agent-timeout): seconds per agent attempt
    test_timeout_s: float = 1800.0

    def check(self) -> None:
        if self.usd is not None and not self.usd > 0:
            raise SweclError(f"--budget-usd {self.usd:g}: give a positive number of dollars")
        if self.max_tokens_per_task is not None and self.max_tokens_per_task < 1:
            raise SweclError(f"--max-tokens-per-task {self.max_tokens_per_task}: give a positive number of tokens")
        if not self.agent_timeout_s > 0:
            raise SweclError(f"--task-timeout {self.agent_timeout_s:g}: give a positive number of seconds")
        if self.max_turns is not None and self.max_turns < 1:
            raise SweclError(f"--max-turns {self.max_turns}: give at least 1")


class SandboxOptions(msgspec.Struct, kw_only=True):
    """Where agents and tests run, and what a sandboxed agent may see and reach."""

    # bwrap (confined, the default) or none (unconfined, recorded so every report says so).
    mode: str = "bwrap"
    # What a sandboxed agent may reach beside its model API (--allow-host HOST[:PORT]), and
    # whether its own web tools stay on (--allow-web).
    allow_hosts: list[str] = msgspec.field(default_factory=list)
    allow_web: bool = False
    # What a sandboxed agent sees besides the system, its own install and its checkout
    # (--expose PATH, read-only; absolute): a tool it calls.
    expose: list[str] = msgspec.field(default_factory=list)

    def check(self) -> None:
        if self.mode not in SANDBOX_MODES:
            raise SweclError(f"--sandbox {self.mode!r}: one of {', '.join(SANDBOX_MODES)}")
        sandbox_for(self.mode)  # refused now, in one line, not at the first task
        for host in self.allow_hosts:
            try:
                parse_allow_host(host)
            except ValueError as exc:
                raise SweclError(str(exc)) from None
        for path in self.expose:
            if not Path(path).exists():
                raise SweclError(f"--expose {path}: no such file or folder")


class ExecutionOptions(msgspec.Struct, kw_only=True):
    """Where and how many at once: nothing recorded depends on it, so a resume may change it."""

    jobs: int = 1  # sequences at once, each in a worker process
    # Workers for the tasks of one sequence that may run at once (every pass but a memory
    # stage's initial one): `swecl run --task-jobs`, `swecl grade --jobs`, `swecl validate --jobs`.
    task_jobs: int = 1
    executor: str = "local"  # local | ray (see _ray.py)
    ray_address: str | None = None  # None: RAY_ADDRESS, else the cluster on this node, else a new local one
    shard_dir: str | None = None  # shared folder for snapshots and shards; None: Ray's object store
    ray_num_cpus: float = 1.0  # CPUs each sequence job asks Ray for
    max_retries: int = 2  # extra attempts of a failed sequence job (ray executor)

    def check(self) -> None:
        if self.jobs < 1:
            raise SweclError(f"--jobs {self.jobs}: give at least 1")
        if self.task_jobs < 1:
            raise SweclError(f"--task-jobs {self.task_jobs}: give at least 1")
        self.check_executor()

    def check_executor(self) -> None:
        if self.executor not in EXECUTORS:
            raise SweclError(f"--executor {self.executor!r}: one of {', '.join(EXECUTORS)}")
        if self.executor != "ray":
            given = [flag for flag, value in (("--ray-address", self.ray_address), ("--shard-dir", self.shard_dir))
                     if value is not None]
            if given:
                raise SweclError(f"{given[0]} is for --executor ray; add --executor ray or drop {given[0]}")
        if self.max_retries < 0:
            raise SweclError(f"--max-retries {self.max_retries}: give 0 or more")
        if not self.ray_num_cpus > 0:
            raise SweclError(f"--ray-cpus {self.ray_num_cpus}: give a positive number of CPUs per sequence job")


# The recorded (flat) name of each grouped option: group -> {field: recorded name}.
_RECORDED: dict[str, dict[str, str]] = {
    "memory": {f: f if f == "history_tokens" else f"memory_{f}" for f in MemoryOptions.__struct_fields__},
    "budget": {"usd": "budget_usd", **{f: f for f in BudgetOptions.__struct_fields__ if f != "usd"}},
    "sandbox": {"mode": "sandbox", **{f: f for f in SandboxOptions.__struct_fields__ if f != "mode"}},
    "execution": {f: f for f in ExecutionOptions.__struct_fields__},
}
FLAT: dict[str, tuple[str, str]] = {name: (group, field) for group, fields in _RECORDED.items()
                                    for field, name in fields.items()}


def flatten(raw: dict[str, Any]) -> dict[str, Any]:
    """Built-in options (groups nested) as recorded: every grouped field under its flat name."""
    flat = {k: v for k, v in raw.items() if k not in _RECORDED}
    for group, fields in _RECORDED.items():
        for field, value in (raw.get(group) or {}).items():
            flat[fields[field]] = value
    return flat


def unflatten(config: dict[str, Any]) -> dict[str, Any]:
    """Recorded (flat) options with the grouped ones nested again; unknown names are dropped
    by the caller, as a newer swecl's would be."""
    nested: dict[str, Any] = {group: {} for group in _RECORDED}
    for key, value in config.items():
        if key in FLAT:
            group, field = FLAT[key]
            nested[group][field] = value
        elif key not in _RECORDED:
            nested[key] = value
    return nested
