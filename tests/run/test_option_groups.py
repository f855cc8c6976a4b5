"""The run's options by concern, and the flat record every run before them left in the
ledger: a recorded config reads into the groups and is recorded again exactly."""

from __future__ import annotations

import msgspec
import pytest

from commands.run import BudgetOptions, ExecutionOptions, MemoryOptions, ResumeOverrides, RunOptions, SandboxOptions
from ledger import SweclError

# `run.started.config` as swecl recorded it before the options were grouped (every name,
# flat, with values that are not the defaults), from a real run's record.
RECORDED = {
    "stage": "plugin-accum", "dataset": None, "rows": None, "sequences": ["swecl-demo_spans_sequence"],
    "instances": [], "agent": "demo", "model": "m", "grader": "swebench", "version": "7", "source_memory": "3",
    "passes": ["initial", "retest"], "retest_every": 2, "jobs": 2, "task_jobs": 3, "max_turns": 9,
    "agent_timeout_s": 99.0, "budget_usd": 1.5, "max_tokens_per_task": 1000, "test_timeout_s": 77.0,
    "code_mode": "blind", "predictions": [], "command": None, "repo_sources": {"o/r": "/src/r"}, "cache_dir": None,
    "python_paths": {"3.9": "/py/3.9"}, "sandbox": "none", "allow_hosts": ["pypi.org"], "allow_web": True,
    "expose": ["/opt/tool"], "executor": "ray", "ray_address": "auto", "shard_dir": None, "ray_num_cpus": 2.0,
    "max_retries": 4, "memory_server": "srv --flag", "memory_env_names": ["TOKEN"], "memory_recall_tool": "search",
    "memory_recall_args": '{"q": "{query}"}', "memory_write_tool": "add", "memory_write_args": '{"t": "{summary}"}',
    "memory_dream_tool": None, "memory_dream_args": None, "memory_call_timeout_s": 30.0, "memory_preset": None,
    "memory_preset_version": None, "memory_tools_from": None, "memory_model_endpoint": None,
    "memory_allow_hosts": [], "order": None,
    "orders": None, "fork": None, "dream_at_fork": False,
    "history_tokens": None,  # recorded since the full-history stage (a run before it reads as not given)
}


def test_a_recorded_config_reads_into_the_groups_and_records_back_the_same() -> None:
    opts = RunOptions.from_config(RECORDED)
    assert opts.memory == MemoryOptions(server="srv --flag", env_names=["TOKEN"], recall_tool="search",
                                        recall_args='{"q": "{query}"}', write_tool="add",
                                        write_args='{"t": "{summary}"}', call_timeout_s=30.0)
    assert opts.budget == BudgetOptions(usd=1.5, max_tokens_per_task=1000, max_turns=9, agent_timeout_s=99.0,
                                        test_timeout_s=77.0)
    assert opts.sandbox == SandboxOptions(mode="none", allow_hosts=["pypi.org"], allow_web=True, expose=["/opt/tool"])
    assert opts.execution == ExecutionOptions(jobs=2, task_jobs=3, executor="ray", ray_address="auto",
                                              ray_num_cpus=2.0, max_retries=4)
    flat = opts.flat()
    flat.pop("memory_env")  # never recorded
    assert flat == RECORDED
    assert RunOptions.field_names() == set(RECORDED) | {"memory_env"}


def test_a_name_this_swecl_does_not_know_is_dropped_as_before() -> None:
    opts = RunOptions.from_config({"stage": "base", "jobs": 2, "a_later_option": 1})
    assert opts.execution.jobs == 2 and "a_later_option" not in opts.flat()


@pytest.mark.parametrize(("group", "says"), [
    (BudgetOptions(usd=0), "--budget-usd 0: give a positive number of dollars"),
    (BudgetOptions(max_turns=0), "--max-turns 0: give at least 1"),
    (ExecutionOptions(jobs=0), "--jobs 0: give at least 1"),
    (ExecutionOptions(ray_address="auto"), "--ray-address is for --executor ray"),
    (SandboxOptions(mode="docker"), "--sandbox 'docker': one of"),
    (SandboxOptions(mode="none", allow_hosts=["https://x.org"]), "--allow-host"),
])
def test_each_group_checks_itself_in_one_line(group: msgspec.Struct, says: str) -> None:
    with pytest.raises(SweclError) as caught:
        group.check()  # type: ignore[attr-defined]
    assert says in str(caught.value) and "\n" not in str(caught.value)


def test_resume_overrides_change_only_what_they_name_and_are_checked() -> None:
    opts = RunOptions.from_config(RECORDED)
    local = ResumeOverrides(jobs=1, executor={"executor": "local"}, budget_usd=3.0).apply(opts)
    assert local.execution == ExecutionOptions(jobs=1, task_jobs=3, executor="local", ray_num_cpus=2.0,
                                               max_retries=4)
    assert local.budget.usd == 3.0 and local.memory == opts.memory and local.sandbox == opts.sandbox
    assert ResumeOverrides().apply(opts) == opts
    with pytest.raises(SweclError, match="--budget-usd -1"):
        ResumeOverrides(budget_usd=-1).apply(opts)
