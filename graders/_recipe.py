"""An environment recipe run on a source tree: the install step and the spec's test
command, as grading runs them, with no patch (`swecl env verify`).

The same steps as a grade (`_executing`): the spec's pre-install lines, the repository's
install into the environment (`ensure_repo_installed`, with a private bytecode cache),
then the test command built by `build_test_command` on the given test modules, run in
the sandbox with the results channel, its log parsed by the repository's parser and
checked against the channel. What it finds is the recipe's doing: no gold patch is
applied, so it says nothing of any task's grade.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ledger import SweclError

from ._bytecode import PrivatePycache, env_pycache
from ._env_info import EnvInfo
from ._envs import touch_used
from ._install import ensure_repo_installed, install_environment, install_fingerprint, prepare_worktree
from ._manifests import pre_install_plan
from ._parsers import parse_log, parser_for_repo
from ._results_plugin import ResultsChannel, check_against_channel
from ._run import build_test_command, parse_eval_commands, pytest_version, run_line, run_process, test_environment
from .host import sandbox_for
from ._specs import DEFAULT_TEST_CMD, EnvSpec

__all__ = ["RecipeRun", "run_recipe"]


@dataclass
class RecipeRun:
    """What the install and the test run gave; `error` says where it stopped."""

    warnings: list[str] = field(default_factory=list)
    install_ok: bool | None = None  # None: the spec installs nothing
    statuses: dict[str, str] = field(default_factory=dict)  # test -> TestStatus value
    output: str = ""
    exit_code: int | None = None
    error: str | None = None


def run_recipe(repo: str, spec: EnvSpec, env: EnvInfo, src: Path, tests: Sequence[str], *, commit: str | None,
               worktree: object | None, sandbox: str, hide: Path, test_timeout: float,
               say: Callable[[str], None], install_only: bool = False) -> RecipeRun:
    """Install the repository at `src` into `env` and run `tests` with the spec's command
    (`worktree`: the repo cache's worktree `src` is, prepared as a grade's is; `hide`: a
    folder the confined run must not see, e.g. the cache; `install_only`: stop after the
    install step)."""
    done = RecipeRun()
    touch_used(env)
    install_cache, pycache, channel = PrivatePycache(), PrivatePycache(), ResultsChannel()
    try:
        if worktree is not None and spec.install:
            prepare_worktree(env, spec, worktree)  # type: ignore[arg-type]
        runnable, _ = pre_install_plan(spec)
        for line in runnable:
            r = run_line(line, cwd=src, env=install_environment(env, install_cache.environment()),
                         python=env.python, bin_dir=env.bin_dir, variables={})
            if r.status != "ok":
                done.warnings.append(f"pre_install failed: {line}")
        if spec.install:
            say(f"installing ({spec.install})")
            inst = ensure_repo_installed(env, spec, src, commit or "", extra_env=install_cache.environment(),
                                         fingerprint=install_fingerprint(src, commit) if commit else None)
            done.install_ok = inst.ok
            if not inst.ok:
                tail = [ln for ln in inst.log.splitlines() if ln.strip()][-3:]
                done.error = f"install failed: {' | '.join(tail)}"[:1000]
                return done
        if install_only:
            return done
        eval_env, _ = parse_eval_commands(spec.eval_commands, src)
        cmd = build_test_command(spec.test_cmd or DEFAULT_TEST_CMD, list(tests), python=env.python,
                                 bin_dir=env.bin_dir, worktree=src, channel=channel,
                                 pytest_version=pytest_version(env.venv))
        confined = sandbox_for(sandbox).hiding(hide)
        run_env = test_environment(bin_dir=env.bin_dir, venv=env.venv, extra={**eval_env, **cmd.env},
                                   channel=cmd.channel, pycache=(env_pycache(env) if confined.confined else None)
                                   or pycache.path)
        say(f"running {len(tests)} test module(s)")
        run = run_process(cmd.argv, cwd=src, env=run_env, timeout_s=test_timeout, sandbox=confined,
                          writable=channel.paths(), readable=[env.path, *channel.paths(), *pycache.paths()])
        if run.error:
            done.error = run.error
            return done
        parser = spec.log_parser
        if parser is None:
            try:
                parser = parser_for_repo(repo)
            except SweclError:
                parser = "pytest"
        done.output = run.output.decode("utf-8", "replace")
        done.statuses, _ = check_against_channel(parse_log(done.output, parser), done.output, cmd.channel, parser)
        done.exit_code = run.exit_code
        if run.timed_out:
            done.error = f"the tests ran past {test_timeout}s"
        elif not done.statuses:
            tail = [ln for ln in done.output.splitlines() if ln.strip()][-3:]
            done.error = f"no test results (exit {run.exit_code}): {' | '.join(tail)}"[:1000]
        return done
    finally:
        channel.close()
        install_cache.close()
        pycache.close()
