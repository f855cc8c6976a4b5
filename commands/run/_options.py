"""What a run was asked to do: validated options, recorded in `run.started.config`.

Everything a resumed run needs to carry on exactly as it started is here, so
`swecl run --resume V` reads it back from the ledger instead of asking again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from agents import parse_allow_host
from graders import SANDBOX_MODES, sandbox_for
from ledger import SweclError

from ._fork_spec import parse_fork
from ._stages import get_stage, parse_passes

EXECUTORS = ("local", "ray")


class RunOptions(msgspec.Struct, kw_only=True):
    stage: str
    dataset: str | None = None  # None: the built-in demo benchmark
    rows: str | None = None
    sequences: list[str] = msgspec.field(default_factory=list)  # empty: every sequence
    instances: list[str] = msgspec.field(default_factory=list)  # empty: every task
    agent: str = "demo"
    model: str | None = None
    grader: str = "swebench"
    version: str | None = None
    source_memory: str | None = None
    passes: list[str] = msgspec.field(default_factory=list)  # empty: the stage's default
    retest_every: int | None = None
    jobs: int = 1
    # Workers for the tasks of one sequence that may run at once (every pass but a memory
    # stage's initial one): `swecl run --task-jobs`, `swecl grade --jobs`, `swecl validate --jobs`.
    task_jobs: int = 1
    max_turns: int | None = 50
    agent_timeout_s: float = 1800.0  # --task-timeout (alias --agent-timeout): seconds per agent attempt
    # --budget-usd: the run's cost budget, over its agents' reported costs across resumes
    # (see _budget.py); a resume may raise it (run.resumed.budget_usd). None: no budget.
    budget_usd: float | None = None
    # --max-tokens-per-task: the CLI agents that stream their usage are ended past it
    # (exit max_tokens); an attempt whose reported input + output tokens pass it is
    # recorded as over the limit (agent.finished.over_limit); None: no limit.
    max_tokens_per_task: int | None = None
    test_timeout_s: float = 1800.0
    code_mode: str = "agentic"
    predictions: list[str] = msgspec.field(default_factory=list)  # [PASS=]FILE
    command: str | None = None  # the command agent's template
    repo_sources: dict[str, str] = msgspec.field(default_factory=dict)
    cache_dir: str | None = None
    python_paths: dict[str, str] = msgspec.field(default_factory=dict)
    # Where agents and tests run: bwrap (confined, the default) or none (unconfined,
    # recorded here so every report of the run says so).
    sandbox: str = "bwrap"
    # What a sandboxed agent may reach beside its model API (--allow-host HOST[:PORT]), and
    # whether its own web tools stay on (--allow-web); recorded so each report can say so.
    allow_hosts: list[str] = msgspec.field(default_factory=list)
    allow_web: bool = False
    # What a sandboxed agent sees besides the system, its own install and its checkout
    # (--expose PATH, read-only; absolute): a tool it calls. Recorded like the rest.
    expose: list[str] = msgspec.field(default_factory=list)
    # Where sequences run (see _ray.py). Recorded like the rest; a resume may override them.
    executor: str = "local"  # local | ray
    ray_address: str | None = None  # None: RAY_ADDRESS, else the cluster on this node, else a new local one
    shard_dir: str | None = None  # shared folder for snapshots and shards; None: Ray's object store
    ray_num_cpus: float = 1.0  # CPUs each sequence job asks Ray for
    max_retries: int = 2  # extra attempts of a failed sequence job (ray executor)
    # A user's MCP memory server in place of swecl's substrate (--memory-server, memory
    # stages only; see _provider_memory.py). Recorded redacted: the spec without URL
    # credentials, and of the mapped variables only their names (a value may be a token).
    memory_server: str | None = None
    memory_env: list[str] = msgspec.field(default_factory=list)  # NAME=VALUE; never recorded
    memory_env_names: list[str] = msgspec.field(default_factory=list)  # what the ledger keeps of them
    memory_recall_tool: str | None = None
    memory_recall_args: str | None = None  # JSON template; None: {"query": "{query}"}
    memory_write_tool: str | None = None
    memory_write_args: str | None = None  # JSON template; None: the write tool's default, if it has one
    # plugin-dreamed: the server's own consolidation tool, called once before the initial pass.
    memory_dream_tool: str | None = None
    memory_dream_args: str | None = None  # JSON template; None: {}
    memory_call_timeout_s: float = 60.0
    # Another task order than the dataset's (--order permute:SEED | reverse | FILE; see _order.py);
    # None: the dataset's. `orders`: `--orders N`, the group of N seeded permutations this run is of.
    order: str | None = None
    orders: int | None = None
    # `--fork V@K`: the initial pass takes run V's tasks before order K as they were (see
    # _fork.py); `dream_at_fork`: a dream pass over the forked memory before task K.
    fork: str | None = None
    dream_at_fork: bool = False

    def validate(self) -> None:
        stage = get_stage(self.stage)
        parse_passes(",".join(self.passes) if self.passes else None, stage)
        if self.retest_every is not None and self.retest_every < 1:
            raise SweclError(f"--retest-every {self.retest_every}: give a positive number of tasks")
        if self.retest_every is not None and not stage.memory_on:
            raise SweclError(f"--retest-every needs memory: stage {self.stage!r} runs without it")
        if self.jobs < 1:
            raise SweclError(f"--jobs {self.jobs}: give at least 1")
        if self.task_jobs < 1:
            raise SweclError(f"--task-jobs {self.task_jobs}: give at least 1")
        self.validate_limits()
        self.validate_executor()
        if self.sandbox not in SANDBOX_MODES:
            raise SweclError(f"--sandbox {self.sandbox!r}: one of {', '.join(SANDBOX_MODES)}")
        sandbox_for(self.sandbox)  # refused now, in one line, not at the first task
        for host in self.allow_hosts:
            try:
                parse_allow_host(host)
            except ValueError as exc:
                raise SweclError(str(exc)) from None
        for path in self.expose:
            if not Path(path).exists():
                raise SweclError(f"--expose {path}: no such file or folder")
        if self.code_mode not in ("agentic", "blind"):
            raise SweclError(f"--code-mode {self.code_mode!r}: agentic or blind")
        self._refuse_secrets()
        if self.retest_every is not None and self.instances:
            raise SweclError("--retest-every re-tests prefixes of whole sequences; it does not combine with --instance")
        if stage.seeds is False and self.source_memory:
            raise SweclError(f"--source-memory is for the seeded stages (plugin-accum, plugin-dreamed), not {self.stage!r}")
        self._validate_memory_server(stage)
        if self.dream_at_fork and self.fork is None:
            raise SweclError("--dream-at-fork dreams at the fork point: add --fork V@K")
        if self.dream_at_fork and not stage.plugin:
            raise SweclError(f"--dream-at-fork dreams swecl's memory: stage {self.stage!r} has none")
        if self.dream_at_fork and self.memory_server is not None and not stage.dreams_before_eval:
            raise SweclError("--dream-at-fork with --memory-server calls the server's --memory-dream-tool, which only "
                             "plugin-dreamed has: fork into --stage plugin-dreamed or drop --dream-at-fork")
        if self.fork is not None:
            parse_fork(self.fork)
        if self.order is not None:
            from ._order import check_order_spec  # lazy: as the memory options

            check_order_spec(self.order)
        if self.version is not None:
            _check_slug(self.version)
            if self.source_memory == self.version:
                raise SweclError(
                    f"run version {self.version!r} cannot be seeded from itself: a run writes to a different "
                    "version than its source"
                )

    def validate_limits(self) -> None:
        if self.budget_usd is not None and not self.budget_usd > 0:
            raise SweclError(f"--budget-usd {self.budget_usd:g}: give a positive number of dollars")
        if self.max_tokens_per_task is not None and self.max_tokens_per_task < 1:
            raise SweclError(f"--max-tokens-per-task {self.max_tokens_per_task}: give a positive number of tokens")
        if not self.agent_timeout_s > 0:
            raise SweclError(f"--task-timeout {self.agent_timeout_s:g}: give a positive number of seconds")
        if self.max_turns is not None and self.max_turns < 1:
            raise SweclError(f"--max-turns {self.max_turns}: give at least 1")

    def _validate_memory_server(self, stage: Any) -> None:
        """The memory's options (--memory-server and its kin): parsed now (one line)."""
        from .memory import check_memory  # lazy: the memory backends load the task loop's pieces

        check_memory(stage, self)

    def validate_executor(self) -> None:
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

    def _refuse_secrets(self) -> None:
        """The options are recorded in run.started: nothing in them may be a credential."""
        from .._provenance import scrub  # lazy: provenance loads importlib.metadata (about 10 ms) at start-up

        for name, value in msgspec.structs.asdict(self).items():
            if name == "memory_env":
                continue  # never recorded (only the names are)
            texts = [value] if isinstance(value, str) else [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
            if any(scrub(text) != text for text in texts):
                hint = " (the command agent expands ${NAME} from the environment)" if name == "command" else ""
                raise SweclError(
                    f"--{name.replace('_', '-')} holds what looks like a secret, and run options are recorded "
                    f"in the ledger: pass it through an environment variable instead{hint}"
                )

    @property
    def pass_list(self) -> tuple[str, ...]:
        return parse_passes(",".join(self.passes) if self.passes else None, get_stage(self.stage))

    def to_config(self) -> dict[str, Any]:
        """The options as recorded in run.started (paths made absolute, so a resume
        from another directory finds the same files)."""
        raw = msgspec.to_builtins(self)
        if self.order is not None and not self.order.startswith("permute:") and self.order != "reverse":
            raw["order"] = str(Path(self.order).resolve()) if Path(self.order).exists() else self.order
        for key in ("dataset", "rows", "cache_dir", "shard_dir"):
            value = raw.get(key)
            if value and not str(value).startswith("hf:") and Path(value).exists():
                raw[key] = str(Path(value).resolve())
        raw["predictions"] = [_absolute_prediction(p) for p in self.predictions]
        from .memory import recorded_memory_options  # lazy, as in validate

        raw.update(recorded_memory_options(self))
        raw.pop("memory_env")
        return raw

    def to_wire(self) -> dict[str, Any]:
        """The options as a process of this run needs them (a --jobs worker, a Ray job):
        the recorded form with what is never recorded (the memory server's mapped values,
        its URL's credentials). Handed to the run's own processes, never appended."""
        return {**self.to_config(), "memory_server": self.memory_server, "memory_env": list(self.memory_env)}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> RunOptions:
        known = {f for f in cls.__struct_fields__}
        return msgspec.convert({k: v for k, v in config.items() if k in known}, cls)


@dataclass(frozen=True)
class ResumeOverrides:
    """What a resuming command line (`swecl run --resume V`) gives instead of what run V
    recorded: how many workers and where they run (nothing recorded depends on it), the
    cost budget from here on (recorded in run.resumed), and a memory server's values that
    were never recorded (its mapped variables, a URL's credentials)."""

    jobs: int | None = None
    task_jobs: int | None = None
    executor: dict[str, Any] | None = None  # RunOptions' executor fields given on this command line
    budget_usd: float | None = None
    memory_server: str | None = None
    memory_env: tuple[str, ...] = ()

    def apply(self, opts: RunOptions) -> RunOptions:
        """`opts` as recorded, with these instead (each checked as a new run's would be)."""
        if self.budget_usd is not None:
            opts = msgspec.structs.replace(opts, budget_usd=self.budget_usd)
            opts.validate_limits()
        if self.jobs is not None:
            opts = msgspec.structs.replace(opts, jobs=self.jobs)
        if self.task_jobs is not None:
            opts = msgspec.structs.replace(opts, task_jobs=self.task_jobs)
            opts.validate()
        if self.executor:
            if self.executor.get("executor") == "local":
                opts = msgspec.structs.replace(opts, ray_address=None, shard_dir=None)
            opts = msgspec.structs.replace(opts, **self.executor)
            opts.validate_executor()
        return opts


def _absolute_prediction(spec: str) -> str:
    label, sep, path = spec.rpartition("=")
    target = path if sep else spec
    resolved = str(Path(target).resolve()) if Path(target).exists() else target
    return f"{label}={resolved}" if sep else resolved


def _check_slug(slug: str) -> None:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", slug):
        raise SweclError(
            f"--version {slug!r}: use letters, digits, '.', '_' or '-' (at most 64, not starting with a symbol)"
        )
