"""The host's infrastructure: what a grade and an agent's run both need of this machine.

- the sandbox (`Sandbox`, `sandbox_for`): bubblewrap, deny by default; what a sandboxed
  process sees is a plan of `Mount`s (`shown_by`, `tests_view`, `plan_lines`);
- process sessions and reaping (`run_in_session`, `kill_group`, `reap_orphans`, ...): one
  process in a session of its own, ended whole with whatever it started;
- the repository cache (`RepoCache`): bare mirrors, the grader's worktree slots and the
  agents' checkouts, and git as swecl runs it (`git`, `git_env`).

It sits below the graders and the agents alike and imports neither (only `ledger`), so
an agent confines its CLI with the sandbox the tests run in without importing a grader.

Names resolve lazily, as in `agents`: each is imported from its module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ledger.lazy import lazy_exports

_EXPORTS = {
    # the sandbox
    "SANDBOX_MODES": "_sandbox",
    "Sandbox": "_sandbox",
    "SandboxUnavailable": "_sandbox",
    "sandbox_for": "_sandbox",
    "Mount": "_visible",
    "as_records": "_visible",
    "plan_lines": "_visible",
    "shown_by": "_visible",
    "tests_view": "_visible",
    "under": "_visible",
    # process sessions and reaping
    "ProcessOutcome": "_session",
    "kill_group": "_session",
    "run_in_session": "_session",
    "PROCESS_VARS": "_reaper",
    "descendants": "_reaper",
    "owned_processes": "_reaper",
    "parallel_runs": "_reaper",
    "proc_pids": "_reaper",
    "reap_orphans": "_reaper",
    "reap_zombies": "_reaper",
    "session_leader_reaped": "_reaper",
    "starting_session_leader": "_reaper",
    "wait_for_exit": "_reaper",
    # the repository cache, and git as swecl runs it
    "RepoCache": "_repos",
    "Worktree": "_repos",
    "preferred_slot": "_repos",
    "avoided_slots": "_repos",
    "default_cache_dir": "_mirrors",
    "repo_slug": "_mirrors",
    "GitError": "_git",
    "cleanable_paths": "_git",
    "file_at": "_git",
    "git": "_git",
    "git_env": "_git",
    "untracked_files": "_git",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from ._git import GitError, cleanable_paths, file_at, git, git_env, untracked_files
    from ._mirrors import default_cache_dir, repo_slug
    from ._reaper import (
        PROCESS_VARS,
        descendants,
        owned_processes,
        parallel_runs,
        proc_pids,
        reap_orphans,
        reap_zombies,
        session_leader_reaped,
        starting_session_leader,
        wait_for_exit,
    )
    from ._repos import RepoCache, Worktree, avoided_slots, preferred_slot
    from ._sandbox import SANDBOX_MODES, Sandbox, SandboxUnavailable, sandbox_for
    from ._session import ProcessOutcome, kill_group, run_in_session
    from ._visible import Mount, as_records, plan_lines, shown_by, tests_view, under


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
