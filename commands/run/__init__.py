"""The main job: run stages of the stage matrix over sequences, resumably.

Names resolve lazily so that `swecl --help` and the other commands do not pay for
importing agents, graders and the memory substrate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ledger.lazy import lazy_exports

_EXPORTS = {
    "continue_invocation": "_demo_suite",
    "run_demo_suite": "_demo_suite",
    "run_repeats": "_demo_suite",
    "usable_cores": "_demo_suite",
    "with_default_workers": "_demo_suite",
    "EXECUTORS": "_options",
    "BudgetOptions": "_options",
    "ExecutionOptions": "_options",
    "MemoryOptions": "_options",
    "SandboxOptions": "_options",
    "ResumeOverrides": "_options",
    "RunOptions": "_options",
    "open_benchmark": "_context",
    "build_agent": "_context",
    "table_rate": "_estimate_table",
    "next_version": "_orchestrate",
    "select_sequences": "_orchestrate",
    "ordered": "_order",
    "plan_passes": "_sequence",
    "sequence_context": "_context",
    "Repeat": "_orchestrate",
    "RunReport": "_orchestrate",
    "execute": "_orchestrate",
    "resume_run": "_orchestrate",
    "start_run": "_orchestrate",
    "fork_options": "_fork",
    "parse_fork": "_options",
    "JsonReporter": "_progress",
    "LineReporter": "_progress",
    "QuietReporter": "_progress",
    "Reporter": "_progress",
    "RichReporter": "_progress",
    "make_reporter": "_progress",
    "DEMO_SUITE": "_stages",
    "PASSES": "_stages",
    "STAGES": "_stages",
    "Stage": "_stages",
    "get_stage": "_stages",
    "environment_spec": "_task",
    "run_attempt": "_task",
    "ray_session": "_ray_session",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from ._demo_suite import continue_invocation, run_demo_suite, run_repeats, usable_cores, with_default_workers
    from ._options import (
        EXECUTORS, BudgetOptions, ExecutionOptions, MemoryOptions, ResumeOverrides, RunOptions, SandboxOptions,
        parse_fork,
    )
    from ._context import build_agent, open_benchmark, sequence_context
    from ._estimate_table import table_rate
    from ._order import ordered
    from ._sequence import plan_passes
    from ._fork import fork_options
    from ._orchestrate import Repeat, RunReport, execute, next_version, resume_run, select_sequences, start_run
    from ._ray_session import ray_session
    from ._progress import JsonReporter, LineReporter, QuietReporter, Reporter, RichReporter, make_reporter
    from ._stages import DEMO_SUITE, PASSES, STAGES, Stage, get_stage
    from ._task import environment_spec, run_attempt


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
