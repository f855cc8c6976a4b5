"""The graders that run tests: `swebench` (the task's environment, built once per repo,
version and spec), `local` (an interpreter the user names) and `auto` (swebench when an
environment is known, else local).

A grade: a worktree of the base commit, the patch through the apply chain, the task's test
files reverted, the test command run confined with the results channel beside it, and the
verdict from the log and the channel (`graders._decide`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from graders._apply import (
    apply_patch,
    apply_test_patch,
    normalize_patch,
    patch_paths,
    reset_to,
    revert_test_files,
    snapshot,
)
from graders._bytecode import PrivatePycache, env_pycache, remove_stray_bytecode
from graders._sandbox_home import sandbox_home
from graders._decide import Decision, blame, decide
from graders._env_info import EnvBuildError, EnvInfo
from graders._envs import Era, EnvBuild, build_env, env_lock, env_path, era_for, guard_env, touch_used
from graders._install import (
    ensure_repo_installed,
    install_environment,
    install_fingerprint,
    install_products,
    prepare_worktree,
    slot_claims,
)
from graders._interpreters import Interpreter, PythonNotFound, find_python
from graders._manifests import pre_install_plan
from graders._parsers import parse_log, parser_for_repo
from graders.host import (
    GitError, RepoCache, Sandbox, Worktree, avoided_slots, plan_lines, preferred_slot, sandbox_for,
)
from graders._results_plugin import ResultsChannel, channel_overrides, check_against_channel
from graders._run import (
    ProcessResult,
    TestCommand,
    build_test_command,
    parse_eval_commands,
    pytest_version,
    run_line,
    run_process,
    test_directives,
    test_environment,
)
from graders._specs import DEFAULT_TEST_CMD, EnvSpec, UnknownEnvSpec, has_spec, spec_for
from graders._tox import put_current_env_launchers
from ledger.errors import SweclError

from graders._grade import GradeOutcome, GradeRequest, _finish, _Notes

__all__ = ["AutoGrader", "LocalGrader", "SwebenchGrader"]


class _ExecutingGrader:
    """Shared steps of the graders that run tests (swebench and local)."""

    name = ""

    def __init__(self, *, cache_dir: Path | str | None, repo_sources: Mapping[str, str] | None, timeout_s: float,
                 sandbox: Sandbox | str | None = None) -> None:
        self.repos = RepoCache(cache_dir, repo_sources)
        self.cache_dir = self.repos.cache_dir
        self.timeout_s = timeout_s
        # Tests run confined by default; the cache (mirrors, other slots, other envs) is
        # hidden and only this grade's worktree and environment come back.
        chosen = sandbox if isinstance(sandbox, Sandbox) else sandbox_for(sandbox)
        self.sandbox = chosen.hiding(self.cache_dir, *(p for p in self.repos.repo_sources.values() if os.path.exists(p)))

    def grade(self, req: GradeRequest) -> GradeOutcome:
        start = time.monotonic()
        notes = _Notes(self.name, req)
        if not req.model_patch or not req.model_patch.strip():
            return _finish(self.name, notes, start, "empty_patch", error="the patch is empty")
        try:
            return self._grade(req, notes, start)
        except GitError as exc:
            return _finish(self.name, notes, start, "infra_error", error=str(exc))
        except (PythonNotFound, EnvBuildError, UnknownEnvSpec) as exc:
            return _finish(self.name, notes, start, "env_failed", error=str(exc))
        except SweclError as exc:
            return _finish(self.name, notes, start, "infra_error", error=str(exc))
        except Exception as exc:  # a harness bug must not become the agent's failure
            notes.add(traceback.format_exc())
            return _finish(self.name, notes, start, "infra_error", error=f"grader crashed: {exc!r}")

    def _grade(self, req: GradeRequest, notes: _Notes, start: float) -> GradeOutcome:
        raise NotImplementedError

    def _run_in(
        self,
        req: GradeRequest,
        spec: EnvSpec,
        wt: Worktree,
        notes: _Notes,
        start: float,
        *,
        python: Path,
        bin_dir: Path,
        env: EnvInfo | None,
        command_bin_dir: Path | None,
        env_warnings: list[str],
    ) -> GradeOutcome:
        grading = _Grading(self.name, req, spec, wt, notes, start, env, python=python, bin_dir=bin_dir,
                           env_warnings=env_warnings, model_paths=patch_paths(normalize_patch(req.model_patch)))
        test_paths = patch_paths(normalize_patch(req.test_patch)) if req.test_patch.strip() else []
        channel = ResultsChannel()  # pytest's own report of the run, outside the log
        # bytecode never comes from the worktree (graders._bytecode); the install's own
        # cache apart, so nothing compiled before the patch reaches the tests
        install_cache, pycache = PrivatePycache(), PrivatePycache()
        try:
            notes.phase("install")
            _install(grading, install_cache)
            notes.phase("apply")
            prepared = snapshot(wt.path)
            patched = _apply(grading, prepared)
            if isinstance(patched, GradeOutcome):
                return patched
            notes.phase("prepare")
            tests = self._prepare_tests(grading, patched, channel, pycache, command_bin_dir)
            if isinstance(tests, GradeOutcome):
                return tests
            notes.phase(None)
            with notes.timed("tests"):
                run = run_process(tests.cmd.argv, cwd=wt.path, env=tests.env, timeout_s=self.timeout_s,
                                  writable=tests.writable, sandbox=self.sandbox, readable=tests.readable,
                                  home=tests.home)
            notes.phase("parse")
            return self._judge(grading, patched, tests, run, prepared)
        finally:
            channel.close()
            install_cache.close()
            pycache.close()
            # next task starts clean: tracked files back, untracked and patch-made ignored files gone
            try:
                with notes.timed("reset"):
                    wt.reset(extra_paths=[*grading.model_paths, *test_paths])
            except GitError:
                pass

    def _prepare_tests(self, grading: _Grading, patched: _Patched, channel: ResultsChannel, pycache: PrivatePycache,
                       command_bin_dir: Path | None) -> _Tests | GradeOutcome:
        """The test command, its environment and what its sandbox shows; the stray bytecode
        removed. An outcome instead when the spec's command cannot be built."""
        req, spec, wt, notes, env = grading.req, grading.spec, grading.wt, grading.notes, grading.env
        eval_env, eval_skipped = parse_eval_commands(spec.eval_commands, wt.path)
        for line in eval_skipped:
            notes.add(f"[swecl] eval command not run (only `export` lines are used): {line}")
        try:
            cmd = build_test_command(
                spec.test_cmd or DEFAULT_TEST_CMD, test_directives(req.repo, req.test_patch),
                python=grading.python, bin_dir=command_bin_dir, worktree=wt.path, channel=channel,
                pytest_version=pytest_version(env.venv) if env is not None else None,
            )
        except ValueError as exc:
            return grading.finish("infra_error", applied_with=patched.applied_with,
                                  test_files_reverted=patched.reverted, error=str(exc))
        # Confined, the environment's own cache (read-only inside: env.path is mounted
        # so); unconfined a test could write into it, so a fresh empty one.
        shared = env_pycache(env) if env is not None and self.sandbox.confined else None
        run_env = test_environment(bin_dir=grading.bin_dir, venv=env.venv if env else None,
                                   extra={**eval_env, **cmd.env}, channel=cmd.channel, pycache=shared or pycache.path)
        stray = remove_stray_bytecode(wt.path, keep=install_products(env, wt.path) if env is not None else ())
        if stray:
            notes.add(f"[swecl] compiled modules removed before the tests (never loaded): {', '.join(stray[:10])}"
                      + (f" and {len(stray) - 10} more" if len(stray) > 10 else ""))
        for line in cmd.notes:
            notes.add(line)
        notes.add(f"[swecl] test command: {' '.join(cmd.argv)} (timeout {self.timeout_s}s)")
        _tox_launchers(cmd.argv, wt.path, env, notes)
        # the private cache read-only: nothing can be planted there either
        tests = _Tests(cmd, run_env, readable=[*([env.path] if env else []), *channel.paths(), *pycache.paths()],
                       writable=channel.paths(),
                       # matplotlib's font list, made once for the environment: not rebuilt in every run
                       home=sandbox_home(env) if env is not None and self.sandbox.confined else {})
        if self.sandbox.confined:  # exactly what this grade's test process could see
            notes.add("[swecl] the test sandbox shows: " + plan_lines(self.sandbox.plan(
                cmd.argv, cwd=wt.path, env=run_env, writable=tests.writable, readable=tests.readable,
                home=tests.home)))
        return tests

    def _judge(self, grading: _Grading, patched: _Patched, tests: _Tests, run: ProcessResult,
               prepared: str) -> GradeOutcome:
        """The outcome of a test run: its log parsed, checked against the results channel and
        decided; a run with no usable results goes to the control run (`_control_run`)."""
        req, notes = grading.req, grading.notes
        parser = grading.spec.log_parser
        if parser is None:
            try:
                parser = parser_for_repo(req.repo)
            except SweclError:
                parser = "pytest"
        common = dict(applied_with=patched.applied_with, test_files_reverted=patched.reverted,
                      test_cmd=tests.cmd.argv, parser=parser)
        if run.error:
            return grading.finish("env_failed" if grading.env_warnings else "infra_error", error=run.error, **common)
        output = run.output.decode("utf-8", "replace")
        from_log = parse_log(output, parser)
        statuses, channel_notes = check_against_channel(from_log, output, tests.cmd.channel, parser)
        for line in channel_notes:
            notes.add(line)
        decision = decide(statuses, req.fail_to_pass, req.pass_to_pass, test_exit_code=run.exit_code,
                          excluded=req.p2p_excluded)
        verdict = dict(tests=dict(decision.tests), f2p=dict(decision.f2p), p2p=dict(decision.p2p),
                       p2p_excluded=list(decision.p2p_excluded),
                       channel_overrides=channel_overrides(from_log, statuses))
        if run.timed_out:
            return grading.finish("timeout", test_output=output, exit_code=None,
                                  error=f"the tests ran past {self.timeout_s}s; the process group was killed",
                                  **common, **verdict)
        status, error = decision.status, decision.error
        if status == "infra_error" and grading.env_warnings:
            status = "env_failed"
            error = f"{error}; environment problems: {'; '.join(grading.env_warnings)}"
        elif status == "infra_error":
            notes.phase(None)  # the control run's test command counts as tests
            blamed = self._control_run(
                req, grading.wt.path, prepared, grading.model_paths, tests.cmd.argv, tests.env, parser, notes,
                decision, readable=tests.readable, writable=tests.writable, home=tests.home, env=grading.env,
            )
            notes.phase("parse")
            status, error = blamed.status, blamed.error
        return grading.finish(status, test_output=output, exit_code=run.exit_code, error=error, **common, **verdict)

    def _control_run(
        self,
        req: GradeRequest,
        worktree: Path,
        prepared: str,
        model_paths: list[str],
        argv: list[str],
        run_env: dict[str, str],
        parser: str,
        notes: _Notes,
        decision: Decision,
        *,
        readable: list[Path],
        writable: list[Path],
        home: dict[str, str] | None = None,
        env: EnvInfo | None = None,
    ) -> Decision:
        """Whose failure is a test run with no usable results, the patch's or ours: the
        same tests run once more without the model patch, and `blame` decides."""
        reset_to(worktree, prepared, model_paths)
        gold = apply_test_patch(worktree, req.test_patch)
        if not gold.ok:
            why = decision.error or "no usable test results"
            return replace(decision, error=f"{why}; the control run could not apply the test patch")
        _tox_launchers(argv, worktree, env, None)
        with notes.timed("tests"):
            control = run_process(argv, cwd=worktree, env=run_env, timeout_s=self.timeout_s, sandbox=self.sandbox,
                                  readable=readable, writable=writable, home=home)
        control_out = control.output.decode("utf-8", "replace")
        control_statuses = parse_log(control_out, parser) if not control.error else {}
        verdict = decide(control_statuses, req.fail_to_pass, req.pass_to_pass, test_exit_code=control.exit_code,
                         excluded=req.p2p_excluded)
        notes.add(
            f"[swecl] control run without the model patch: exit {control.exit_code}, "
            f"{len(control_statuses)} test results ({verdict.status})"
        )
        if control.timed_out or control.error or verdict.status == "infra_error":
            notes.add(control_out[-20000:])
        return blame(decision, None if control.timed_out or control.error else verdict)


def _tox_launchers(argv: list[str], worktree: Path, env: EnvInfo | None, notes: _Notes | None) -> None:
    if env is None:
        return
    made = put_current_env_launchers(argv, worktree, env.python, ".".join(env.python_version.split(".")[:2]))
    if made and notes is not None:
        notes.add(f"[swecl] tox --current-env: {', '.join(made)} launch the environment's interpreter "
                  "(a link to it, as tox-current-env makes, would lose the venv)")


@dataclass(slots=True)
class _Grading:
    """What the steps of one grade's run (`_ExecutingGrader._run_in`) share."""

    grader: str
    req: GradeRequest
    spec: EnvSpec
    wt: Worktree
    notes: _Notes
    start: float
    env: EnvInfo | None
    python: Path
    bin_dir: Path
    env_warnings: list[str]  # the build's, and the set-up's and install's failures as they come
    model_paths: list[str]

    def finish(self, status: str, **fields: Any) -> GradeOutcome:
        return _finish(self.grader, self.notes, self.start, status, env_key=self.env.key if self.env else None,
                       **fields)


@dataclass(frozen=True, slots=True)
class _Patched:
    """The model patch applied (how), the agent's test-file edits reverted, the test patch in."""

    applied_with: str | None
    reverted: list[str]


@dataclass(frozen=True, slots=True)
class _Tests:
    """The test command ready to run: its environment and what its sandbox shows."""

    cmd: TestCommand
    env: dict[str, str]
    readable: list[Path]
    writable: list[Path]
    home: dict[str, str] = field(default_factory=dict)  # files shown in the sandbox's home (graders._sandbox_home)


def _install(grading: _Grading, install_cache: PrivatePycache) -> None:
    """The worktree cleaned but for the install's products, the spec's `pre_install` lines
    run and the repository installed; a failure is a warning the verdict may name."""
    spec, wt, notes, env = grading.spec, grading.wt, grading.notes, grading.env
    if env is not None and spec.install:
        notes.add("[swecl] " + prepare_worktree(env, spec, wt))  # keeps only the install's products
    setup_env = (install_environment(env, install_cache.environment()) if env
                 else test_environment(bin_dir=grading.bin_dir, pycache=install_cache.path))
    runnable, skipped = pre_install_plan(spec)
    for line, reason in skipped:
        notes.add(f"[swecl] pre_install not run ({reason}): {line}")
    variables: dict[str, str] = {}
    for line in runnable:
        r = run_line(line, cwd=wt.path, env=setup_env, python=grading.python, bin_dir=grading.bin_dir,
                     variables=variables)
        notes.add(f"[swecl] pre_install [{r.status}] {line}")
        if r.status != "ok":
            notes.add(r.output)
            grading.env_warnings.append(f"pre_install failed: {line}")
    if env is not None and spec.install:
        inst = ensure_repo_installed(env, spec, wt.path, wt.commit, fingerprint=install_fingerprint(wt.path, wt.commit),
                                     extra_env=install_cache.environment())
        notes.add(f"[swecl] install: {inst.how} ({'ok' if inst.ok else 'FAILED'})")
        for line in inst.notes:
            notes.add(line)
        if not inst.ok:
            notes.add(inst.log[-20000:])
            grading.env_warnings.append(f"install failed: {spec.install}")


def _apply(grading: _Grading, prepared: str) -> _Patched | GradeOutcome:
    """The model patch through the apply chain, the agent's edits to test files reverted,
    the gold test patch applied; the outcome instead when a patch does not apply."""
    req, wt, notes = grading.req, grading.wt, grading.notes
    applied = apply_patch(wt.path, req.model_patch, reset=lambda: reset_to(wt.path, prepared, grading.model_paths))
    notes.add(applied.log or "")
    if not applied.ok:
        notes.add(f"[swecl] {applied.status}: {applied.error}")
        return grading.finish(applied.status, error=applied.error)
    notes.add(f"[swecl] model patch applied with: {applied.applied_with}")
    reverted = revert_test_files(wt.path, prepared, req.test_patch, also=grading.model_paths)
    if reverted:
        notes.add(f"[swecl] reverted agent edits to test files: {', '.join(reverted)}")
    gold = apply_test_patch(wt.path, req.test_patch)
    if not gold.ok:
        notes.add(gold.log)
        return grading.finish("infra_error", applied_with=applied.applied_with, test_files_reverted=reverted,
                              error=f"the gold test patch does not apply: {gold.error}")
    return _Patched(applied.applied_with, reverted)


class SwebenchGrader(_ExecutingGrader):
    """Repo cache + environment cache + apply + run + parse + decide (Docker-free)."""

    name = "swebench"

    def __init__(self, *, cache_dir: Path | str | None = None, repo_sources: Mapping[str, str] | None = None,
                 timeout_s: float = 1800, python_paths: Mapping[str, str] | None = None,
                 sandbox: Sandbox | str | None = None, check_env_integrity: bool = True) -> None:
        super().__init__(cache_dir=cache_dir, repo_sources=repo_sources, timeout_s=timeout_s, sandbox=sandbox)
        self.python_paths = dict(python_paths or {})
        # unconfined tests can write into the venv: check it before each grade (graders._envs.guard_env)
        self.check_env_integrity = check_env_integrity

    def _env_inputs(self, req: GradeRequest) -> tuple[EnvSpec, Interpreter, Era]:
        spec = spec_for(req.repo, req.version, req.environment)
        interp = find_python(spec.python, explicit=self.python_paths)
        return spec, interp, era_for(self.repos, req.repo, req.base_commit, req.environment_setup_commit)

    def build_env_ahead(self, req: GradeRequest) -> bool:
        """Build the environment a grade of `req` takes before the grade, by the grade's own
        call, so the grade finds it complete (`swecl validate` builds the next ones while
        tasks are graded: a cold environment is mostly downloads and source builds, minutes
        for xarray's). False, nothing built, when its requirement files would come from the
        grade's checkout (no setup commit in the mirror): the grade builds it."""
        spec, interp, era = self._env_inputs(req)
        if era.read_file is None:
            return False
        self._env_maker(req, spec, interp, era)()
        return True

    def _env_maker(self, req: GradeRequest, spec: EnvSpec, interp: Interpreter, era: Era,
                   worktree: Path | None = None) -> functools.partial[EnvBuild]:
        """The one call that builds (or reuses) a task's environment, for the grade and for
        `build_env_ahead` alike (`worktree` is read only when the era has no files)."""
        return functools.partial(
            build_env, req.repo, str(req.version), spec, cache_dir=self.cache_dir, worktree=worktree,
            interpreter=interp, exclude_newer=era.cutoff, read_file=era.read_file,
            files_origin=f"commit {era.commit}" if era.read_file else None,
        )

    def _grade(self, req: GradeRequest, notes: _Notes, start: float) -> GradeOutcome:
        notes.phase("checkout")
        spec, interp, era = self._env_inputs(req)
        # The slot the environment's install was made in, tried first: another slot means
        # installing the repository again (tens of seconds for pytest), and which worker
        # grades a task, so which slot it would prefer, changes from task to task.
        env_dir = env_path(self.cache_dir, req.repo, str(req.version), spec, interp, era.cutoff)
        # ... and the slots of the other environments' installs last (their products stay)
        installed, others = slot_claims(env_dir, self.repos, req.repo) if spec.install else (None, set())
        # with an install, ignored files stay until the env says which are its products
        with (preferred_slot(installed) if installed is not None else contextlib.nullcontext()), \
                avoided_slots(others), \
                self.repos.worktree(req.repo, req.base_commit, clean_ignored=not spec.install) as wt:
            notes.add(f"[swecl] worktree {wt.path} (slot {wt.slot})")
            notes.phase(None)
            for note in era.notes:
                notes.add(f"[swecl] {note}")
            make = self._env_maker(req, spec, interp, era, wt.path)
            with notes.timed("env"):
                build = make()
            notes.env_built = build.built
            notes.add(f"[swecl] env {build.env.key}: {'built' if build.built else 'reused'} (Python {interp.version}, "
                      f"{interp.source}; packages as of {era.cutoff}, commit {era.commit[:12]})")
            for w in build.warnings:
                notes.add(f"[swecl] env warning: {w}")
            notes.phase("lock")  # another grade using this environment holds it
            with env_lock(build.env):
                notes.phase(None)
                env = build.env
                if self.check_env_integrity and not self.sandbox.confined:
                    def rebuild() -> EnvInfo:
                        with notes.timed("env"):
                            return make(force=True, locked=True).env

                    env, note = guard_env(env, rebuild)
                    if note:
                        notes.add(f"[swecl] {note}")
                touch_used(env)
                return self._run_in(
                    req, spec, wt, notes, start, python=env.python, bin_dir=env.bin_dir,
                    env=env, command_bin_dir=env.bin_dir, env_warnings=list(build.warnings),
                )


class LocalGrader(_ExecutingGrader):
    """Run in an existing interpreter (`python=`, default: the one running swecl); no env build.

    Tests run as `python -m pytest` (and `-m tox`), which puts the worktree first on
    sys.path: the checkout under test shadows any installed copy of the repo.
    """

    name = "local"

    def __init__(self, *, cache_dir: Path | str | None = None, repo_sources: Mapping[str, str] | None = None,
                 timeout_s: float = 1800, python: str | os.PathLike[str] | None = None,
                 sandbox: Sandbox | str | None = None) -> None:
        super().__init__(cache_dir=cache_dir, repo_sources=repo_sources, timeout_s=timeout_s, sandbox=sandbox)
        self.python = Path(python) if python is not None else Path(sys.executable)

    def _grade(self, req: GradeRequest, notes: _Notes, start: float) -> GradeOutcome:
        if req.environment is not None or has_spec(req.repo, req.version):
            spec = spec_for(req.repo, req.version, req.environment)
        else:
            spec = EnvSpec()
        if not self.python.exists():
            raise PythonNotFound(f"the local grader's interpreter {self.python} does not exist: pass python=/path/to/python")
        interp_bin = self.python.parent
        with self.repos.worktree(req.repo, req.base_commit) as wt:
            notes.add(f"[swecl] worktree {wt.path} (slot {wt.slot}); interpreter {self.python}")
            return self._run_in(req, spec, wt, notes, start, python=self.python, bin_dir=interp_bin,
                                env=None, command_bin_dir=None, env_warnings=[])


class AutoGrader:
    """swebench when an environment is known (the table or the task's own), else local."""

    name = "auto"

    def __init__(self, swebench: SwebenchGrader, local: LocalGrader) -> None:
        self.swebench, self.local = swebench, local

    def grade(self, req: GradeRequest) -> GradeOutcome:
        chosen = self.swebench if (req.environment is not None or has_spec(req.repo, req.version)) else self.local
        return chosen.grade(req)
