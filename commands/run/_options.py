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

from ledger import SweclError

from ._fork_spec import parse_fork
from ._option_groups import (
    EXECUTORS, FLAT, BudgetOptions, ExecutionOptions, MemoryOptions, SandboxOptions, flatten, unflatten,
)
from ._stages import get_stage, parse_passes

__all__ = ["EXECUTORS", "BudgetOptions", "ExecutionOptions", "MemoryOptions", "ResumeOverrides", "RunOptions",
           "SandboxOptions", "parse_fork"]

GROUPS = {"memory", "budget", "sandbox", "execution"}


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
    code_mode: str = "agentic"
    predictions: list[str] = msgspec.field(default_factory=list)  # [PASS=]FILE
    command: str | None = None  # the command agent's template
    repo_sources: dict[str, str] = msgspec.field(default_factory=dict)
    cache_dir: str | None = None
    python_paths: dict[str, str] = msgspec.field(default_factory=dict)
    # Another task order than the dataset's (--order permute:SEED | reverse | FILE; see _order.py);
    # None: the dataset's. `orders`: `--orders N`, the group of N seeded permutations this run is of.
    order: str | None = None
    orders: int | None = None
    # `--fork V@K`: the initial pass takes run V's tasks before order K as they were (see
    # _fork.py); `dream_at_fork`: a dream pass over the forked memory before task K.
    fork: str | None = None
    dream_at_fork: bool = False
    # The options by concern (`_option_groups`), each checked by itself.
    memory: MemoryOptions = msgspec.field(default_factory=MemoryOptions)
    budget: BudgetOptions = msgspec.field(default_factory=BudgetOptions)
    sandbox: SandboxOptions = msgspec.field(default_factory=SandboxOptions)
    execution: ExecutionOptions = msgspec.field(default_factory=ExecutionOptions)

    def validate(self) -> None:
        stage = get_stage(self.stage)
        parse_passes(",".join(self.passes) if self.passes else None, stage)
        if self.retest_every is not None and self.retest_every < 1:
            raise SweclError(f"--retest-every {self.retest_every}: give a positive number of tasks")
        if self.retest_every is not None and not stage.memory_on:
            raise SweclError(f"--retest-every needs memory: stage {self.stage!r} runs without it")
        self.execution.check()
        self.budget.check()
        self.sandbox.check()
        if self.code_mode not in ("agentic", "blind"):
            raise SweclError(f"--code-mode {self.code_mode!r}: agentic or blind")
        self._refuse_secrets()
        if self.retest_every is not None and self.instances:
            raise SweclError("--retest-every re-tests prefixes of whole sequences; it does not combine with --instance")
        if stage.seeds is False and self.source_memory:
            raise SweclError(f"--source-memory is for the seeded stages (plugin-accum, plugin-dreamed), not {self.stage!r}")
        self._check_memory(stage)
        if self.dream_at_fork and self.fork is None:
            raise SweclError("--dream-at-fork dreams at the fork point: add --fork V@K")
        if self.dream_at_fork and not stage.plugin:
            raise SweclError(f"--dream-at-fork dreams swecl's memory: stage {self.stage!r} has none")
        if self.dream_at_fork and self.memory.server is not None and not stage.dreams_before_eval:
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

    def _check_memory(self, stage: Any) -> None:
        """The memory's options (--memory-server and its kin): parsed now (one line)."""
        from .memory import check_memory  # lazy: the memory backends load the task loop's pieces

        check_memory(stage, self)

    def _refuse_secrets(self) -> None:
        """The options are recorded in run.started: nothing in them may be a credential."""
        from .._provenance import scrub  # lazy: provenance loads importlib.metadata (about 10 ms) at start-up

        for name, value in self.flat().items():
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
        raw = self.flat()
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
        return {**self.to_config(), "memory_server": self.memory.server, "memory_env": list(self.memory.env)}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> RunOptions:
        """Options as recorded (flat, `to_config`), or given by recorded name (a fork's)."""
        known = set(cls.__struct_fields__)
        nested = unflatten(config)
        return msgspec.convert({k: v for k, v in nested.items() if k in known}, cls)

    def flat(self) -> dict[str, Any]:
        """The options as built-in values under their recorded names (the groups flat), as
        given: nothing resolved or redacted (`to_config` does that)."""
        return flatten(msgspec.to_builtins(self))

    @classmethod
    def field_names(cls) -> set[str]:
        """Every option's recorded name (the groups' fields flat): what a command line sets."""
        return (set(cls.__struct_fields__) - GROUPS) | set(FLAT)


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
        replace = msgspec.structs.replace
        if self.budget_usd is not None:
            opts = replace(opts, budget=replace(opts.budget, usd=self.budget_usd))
            opts.budget.check()
        execution = opts.execution
        if self.jobs is not None:
            execution = replace(execution, jobs=self.jobs)
        if self.task_jobs is not None:
            execution = replace(execution, task_jobs=self.task_jobs)
        if self.executor:
            if self.executor.get("executor") == "local":
                execution = replace(execution, ray_address=None, shard_dir=None)
            execution = replace(execution, **self.executor)
        if execution != opts.execution:
            opts = replace(opts, execution=execution)
            execution.check()
            if self.task_jobs is not None:
                opts.validate()
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
