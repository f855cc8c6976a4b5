"""Graders by name: swebench (default), local, auto, overlap, none.

Statuses and what `resolved` is for each:

| status        | resolved | meaning                                                        |
|---------------|----------|----------------------------------------------------------------|
| resolved      | True     | every FAIL_TO_PASS and PASS_TO_PASS test passes                |
| unresolved    | False    | the tests ran and some listed test did not pass                |
| empty_patch   | False    | the agent produced no patch                                    |
| patch_failed  | False    | the patch is unsafe or no strategy of the chain applied it     |
| timeout       | False    | the tests ran past the time limit (process group killed)       |
| env_failed    | None     | no usable environment (no interpreter, failed build or install)|
| infra_error   | None     | the harness failed (git, gold test patch, no results even without the patch) |
| ungraded      | None     | the `none` grader: recorded, not graded                        |

`None` means "no verdict": an infrastructure failure is never scored as the agent's.
The overlap grader's verdict is a proxy (no test runs); it says so in `error`.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import time
import traceback
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Protocol

import msgspec

from graders._apply import (
    apply_patch,
    apply_test_patch,
    is_test_path,
    normalize_patch,
    patch_paths,
    reset_to,
    revert_test_files,
    snapshot,
)
from graders._bytecode import PrivatePycache, env_pycache, remove_stray_bytecode
from graders._decide import Decision, blame, decide
from graders._env_info import EnvBuildError, EnvInfo
from graders._envs import build_env, env_lock, era_for, guard_env, touch_used
from graders._install import (
    ensure_repo_installed,
    install_environment,
    install_fingerprint,
    install_products,
    prepare_worktree,
)
from graders._interpreters import PythonNotFound, find_python
from graders._manifests import pre_install_plan
from graders._parsers import frame_test_output, parse_log, parser_for_repo
from graders._repos import GitError, RepoCache, Worktree
from graders._results_plugin import ResultsChannel, channel_overrides, check_against_channel
from graders._run import (
    build_test_command,
    parse_eval_commands,
    pytest_version,
    run_line,
    run_process,
    test_directives,
    test_environment,
)
from graders._sandbox import Sandbox, sandbox_for
from graders._specs import DEFAULT_TEST_CMD, EnvSpec, UnknownEnvSpec, has_spec, spec_for
from graders._tox import put_current_env_launchers
from ledger.errors import SweclError
from ledger.events import GradeStatus

__all__ = [
    "GRADER_NAMES",
    "GRADE_STATUSES",
    "OVERLAP_LINES_F1",
    "AutoGrader",
    "GradeOutcome",
    "GradeRequest",
    "Grader",
    "LocalGrader",
    "NoneGrader",
    "OverlapGrader",
    "SwebenchGrader",
    "get_grader",
    "patch_similarity",
]

GRADER_NAMES = ("swebench", "local", "auto", "overlap", "none")
# what a grader ends with (agent_error is the run's: the agent's process failed before a patch)
GRADE_STATUSES = tuple(s.value for s in GradeStatus if s is not GradeStatus.AGENT_ERROR)
# overlap: resolved iff every gold file is touched and the changed-line F1 reaches this.
OVERLAP_LINES_F1 = 0.5


class GradeRequest(msgspec.Struct, frozen=True, kw_only=True):
    """One patch to grade. gold_patch is read only by the overlap grader."""

    instance_id: str
    repo: str
    version: str | None
    base_commit: str
    model_patch: str
    test_patch: str = ""
    fail_to_pass: list[str] = []
    pass_to_pass: list[str] = []
    p2p_excluded: list[str] = []  # PASS_TO_PASS tests to leave out of the decision (see graders._decide)
    environment: EnvSpec | None = None
    gold_patch: str | None = None
    environment_setup_commit: str | None = None  # the era and manifests of the env (see graders._envs.Era)


class GradeOutcome(msgspec.Struct, kw_only=True):
    """The verdict and everything needed to audit it (see the module table)."""

    status: str
    resolved: bool | None
    applied_with: str | None = None
    test_files_reverted: list[str] = []
    tests: dict[str, str] = {}
    f2p: dict[str, str] = {}
    p2p: dict[str, str] = {}
    p2p_excluded: list[str] = []
    channel_overrides: dict[str, str] = {}  # see GradeFinished.channel_overrides
    log: bytes = b""
    test_exit_code: int | None = None
    test_cmd: list[str] = []
    duration_s: float = 0.0
    env_key: str | None = None
    error: str | None = None
    similarity: dict[str, float] | None = None
    grader: str = ""
    parser: str | None = None  # the log parser that read the test output (for regrades)
    # where the grade's time went, in seconds: "env" (building or finding the environment)
    # and "tests" (the test command, and the control run when there is one)
    timings: dict[str, float] = {}
    env_built: bool | None = None  # whether this grade built its environment (None: no environment)


class Grader(Protocol):
    name: str

    def grade(self, req: GradeRequest) -> GradeOutcome: ...


class _Notes:
    """The grader's own account of a grade, put before the test output in the log."""

    def __init__(self, grader: str, req: GradeRequest) -> None:
        self.lines = [f"[swecl] grader={grader} instance={req.instance_id} repo={req.repo} version={req.version} base={req.base_commit}"]
        self.timings: dict[str, float] = {}
        self.env_built: bool | None = None

    @contextlib.contextmanager
    def timed(self, key: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timings[key] = round(self.timings.get(key, 0.0) + time.perf_counter() - start, 3)

    def add(self, text: str) -> None:
        self.lines.append(text.rstrip("\n"))

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _finish(grader: str, notes: _Notes, start: float, status: str, *, test_output: str | None = None,
            exit_code: int | None = None, **fields: object) -> GradeOutcome:
    if "resolved" not in fields:
        fields["resolved"] = GradeStatus(status).resolved
    body = notes.text()
    if test_output is not None:
        body += frame_test_output(test_output, exit_code)
    return GradeOutcome(
        status=status, log=body.encode("utf-8", "replace"), test_exit_code=exit_code,
        duration_s=round(time.monotonic() - start, 3), grader=grader, timings=dict(notes.timings),
        env_built=notes.env_built, **fields,  # type: ignore[arg-type]
    )


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
        self.sandbox = chosen.hiding(self.cache_dir)

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
        model_paths = patch_paths(normalize_patch(req.model_patch))
        test_paths = patch_paths(normalize_patch(req.test_patch)) if req.test_patch.strip() else []
        env_key = env.key if env else None
        channel = ResultsChannel()  # pytest's own report of the run, outside the log
        # bytecode never comes from the worktree (graders._bytecode); the install's own
        # cache apart, so nothing compiled before the patch reaches the tests
        install_cache, pycache = PrivatePycache(), PrivatePycache()
        try:
            if env is not None and spec.install:
                notes.add("[swecl] " + prepare_worktree(env, spec, wt))  # keeps only the install's products
            setup_env = (install_environment(env, install_cache.environment()) if env
                         else test_environment(bin_dir=bin_dir, pycache=install_cache.path))
            runnable, skipped = pre_install_plan(spec)
            for line, reason in skipped:
                notes.add(f"[swecl] pre_install not run ({reason}): {line}")
            variables: dict[str, str] = {}
            for line in runnable:
                r = run_line(line, cwd=wt.path, env=setup_env, python=python, bin_dir=bin_dir, variables=variables)
                notes.add(f"[swecl] pre_install [{r.status}] {line}")
                if r.status != "ok":
                    notes.add(r.output)
                    env_warnings.append(f"pre_install failed: {line}")
            if env is not None and spec.install:
                inst = ensure_repo_installed(env, spec, wt.path, wt.commit, fingerprint=install_fingerprint(wt.path, wt.commit),
                                             extra_env=install_cache.environment())
                notes.add(f"[swecl] install: {'ran' if inst.ran else 'reused'} ({'ok' if inst.ok else 'FAILED'})")
                for line in inst.notes:
                    notes.add(line)
                if not inst.ok:
                    notes.add(inst.log[-20000:])
                    env_warnings.append(f"install failed: {spec.install}")
            prepared = snapshot(wt.path)

            applied = apply_patch(wt.path, req.model_patch, reset=lambda: reset_to(wt.path, prepared, model_paths))
            notes.add(applied.log or "")
            if not applied.ok:
                notes.add(f"[swecl] {applied.status}: {applied.error}")
                return _finish(self.name, notes, start, applied.status, error=applied.error, env_key=env_key)
            notes.add(f"[swecl] model patch applied with: {applied.applied_with}")
            reverted = revert_test_files(wt.path, prepared, req.test_patch, also=model_paths)
            if reverted:
                notes.add(f"[swecl] reverted agent edits to test files: {', '.join(reverted)}")
            gold = apply_test_patch(wt.path, req.test_patch)
            if not gold.ok:
                notes.add(gold.log)
                return _finish(
                    self.name, notes, start, "infra_error", applied_with=applied.applied_with,
                    test_files_reverted=reverted, env_key=env_key,
                    error=f"the gold test patch does not apply: {gold.error}",
                )

            eval_env, eval_skipped = parse_eval_commands(spec.eval_commands, wt.path)
            for line in eval_skipped:
                notes.add(f"[swecl] eval command not run (only `export` lines are used): {line}")
            try:
                cmd = build_test_command(
                    spec.test_cmd or DEFAULT_TEST_CMD, test_directives(req.repo, req.test_patch),
                    python=python, bin_dir=command_bin_dir, worktree=wt.path, channel=channel,
                    pytest_version=pytest_version(env.venv) if env is not None else None,
                )
            except ValueError as exc:
                return _finish(self.name, notes, start, "infra_error", applied_with=applied.applied_with,
                               test_files_reverted=reverted, env_key=env_key, error=str(exc))
            # Confined, the environment's own cache (read-only inside: env.path is mounted
            # so); unconfined a test could write into it, so a fresh empty one.
            shared = env_pycache(env) if env is not None and self.sandbox.confined else None
            run_env = test_environment(bin_dir=bin_dir, venv=env.venv if env else None, extra={**eval_env, **cmd.env},
                                       channel=cmd.channel, pycache=shared or pycache.path)
            stray = remove_stray_bytecode(wt.path, keep=install_products(env, wt.path) if env is not None else ())
            if stray:
                notes.add(f"[swecl] compiled modules removed before the tests (never loaded): {', '.join(stray[:10])}"
                          + (f" and {len(stray) - 10} more" if len(stray) > 10 else ""))
            for line in cmd.notes:
                notes.add(line)
            notes.add(f"[swecl] test command: {' '.join(cmd.argv)} (timeout {self.timeout_s}s)")
            _tox_launchers(cmd.argv, wt.path, env, notes)
            # the private cache read-only: nothing can be planted there either
            confined = dict(sandbox=self.sandbox, readable=[*([env.path] if env else []), *channel.paths(),
                                                            *pycache.paths()])
            with notes.timed("tests"):
                run = run_process(cmd.argv, cwd=wt.path, env=run_env, timeout_s=self.timeout_s, writable=channel.paths(),
                                  **confined)
            parser = spec.log_parser
            if parser is None:
                try:
                    parser = parser_for_repo(req.repo)
                except SweclError:
                    parser = "pytest"
            common = dict(
                applied_with=applied.applied_with, test_files_reverted=reverted, env_key=env_key, test_cmd=cmd.argv,
                parser=parser,
            )
            if run.error:
                return _finish(self.name, notes, start, "env_failed" if env_warnings else "infra_error", error=run.error, **common)
            output = run.output.decode("utf-8", "replace")
            from_log = parse_log(output, parser)
            statuses, channel_notes = check_against_channel(from_log, output, cmd.channel, parser)
            for line in channel_notes:
                notes.add(line)
            decision = decide(statuses, req.fail_to_pass, req.pass_to_pass, test_exit_code=run.exit_code,
                              excluded=req.p2p_excluded)
            verdict = dict(tests=dict(decision.tests), f2p=dict(decision.f2p), p2p=dict(decision.p2p),
                           p2p_excluded=list(decision.p2p_excluded),
                           channel_overrides=channel_overrides(from_log, statuses))
            if run.timed_out:
                return _finish(self.name, notes, start, "timeout", test_output=output, exit_code=None,
                               error=f"the tests ran past {self.timeout_s}s; the process group was killed",
                               **common, **verdict)
            status, error = decision.status, decision.error
            if status == "infra_error" and env_warnings:
                status = "env_failed"
                error = f"{error}; environment problems: {'; '.join(env_warnings)}"
            elif status == "infra_error":
                blamed = self._control_run(
                    req, wt.path, prepared, model_paths, cmd.argv, run_env, parser, notes, decision,
                    readable=confined["readable"], writable=channel.paths(), env=env,
                )
                status, error = blamed.status, blamed.error
            return _finish(self.name, notes, start, status, test_output=output, exit_code=run.exit_code,
                           error=error, **common, **verdict)
        finally:
            channel.close()
            install_cache.close()
            pycache.close()
            # next task starts clean: tracked files back, untracked and patch-made ignored files gone
            try:
                wt.reset(extra_paths=[*model_paths, *test_paths])
            except GitError:
                pass


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
                                  readable=readable, writable=writable)
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

    def _grade(self, req: GradeRequest, notes: _Notes, start: float) -> GradeOutcome:
        spec = spec_for(req.repo, req.version, req.environment)
        # with an install, ignored files stay until the env says which are its products
        with self.repos.worktree(req.repo, req.base_commit, clean_ignored=not spec.install) as wt:
            notes.add(f"[swecl] worktree {wt.path} (slot {wt.slot})")
            interp = find_python(spec.python, explicit=self.python_paths)
            era = era_for(self.repos, req.repo, req.base_commit, req.environment_setup_commit)
            for note in era.notes:
                notes.add(f"[swecl] {note}")
            make = functools.partial(
                build_env, req.repo, str(req.version), spec, cache_dir=self.cache_dir, worktree=wt.path,
                interpreter=interp, exclude_newer=era.cutoff, read_file=era.read_file,
                files_origin=f"commit {era.commit}" if era.read_file else None,
            )
            with notes.timed("env"):
                build = make()
            notes.env_built = build.built
            notes.add(f"[swecl] env {build.env.key}: {'built' if build.built else 'reused'} (Python {interp.version}, "
                      f"{interp.source}; packages as of {era.cutoff}, commit {era.commit[:12]})")
            for w in build.warnings:
                notes.add(f"[swecl] env warning: {w}")
            with env_lock(build.env):
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


def _changed_lines(patch: str) -> tuple[dict[str, list[tuple[int, int]]], Counter[tuple[str, str, str]]]:
    """(file -> hunk source ranges, multiset of (file, +/-, stripped line)), test files left out."""
    from unidiff import PatchSet  # a dependency of swecl; imported here to keep import time low

    hunks: dict[str, list[tuple[int, int]]] = {}
    lines: Counter[tuple[str, str, str]] = Counter()
    for pf in PatchSet(normalize_patch(patch)):
        path = pf.path
        if is_test_path(path):
            continue
        hunks.setdefault(path, [])
        for h in pf:
            hunks[path].append((h.source_start, h.source_start + max(h.source_length, 1)))
            for ln in h:
                if (ln.is_added or ln.is_removed) and ln.value.strip():
                    lines[(path, "+" if ln.is_added else "-", ln.value.strip())] += 1
    return hunks, lines


def patch_similarity(model_patch: str, gold_patch: str) -> dict[str, float]:
    """How much a model patch looks like the gold patch (files, hunks, changed lines).

    Test files are left out of both sides (a model's own new tests are not part of the
    fix). files_*: over the sets of files; hunks_recall: gold hunks whose source range
    overlaps a model hunk of the same file; lines_*: over the multisets of changed
    (file, +/-, stripped text) lines.
    """
    mh, ml = _changed_lines(model_patch)
    gh, gl = _changed_lines(gold_patch)
    mf, gf = set(mh), set(gh)
    both = mf & gf
    hit = sum(
        1 for f, ranges in gh.items() for (a, b) in ranges
        if any(a < d and c < b for (c, d) in mh.get(f, []))
    )
    total_hunks = sum(len(r) for r in gh.values())
    common = sum((ml & gl).values())
    lp = common / sum(ml.values()) if ml else 0.0
    lr = common / sum(gl.values()) if gl else 0.0
    return {
        "files_precision": len(both) / len(mf) if mf else 0.0,
        "files_recall": len(both) / len(gf) if gf else 0.0,
        "files_jaccard": len(both) / len(mf | gf) if mf | gf else 0.0,
        "hunks_recall": hit / total_hunks if total_hunks else 0.0,
        "lines_precision": lp,
        "lines_recall": lr,
        "lines_f1": 2 * lp * lr / (lp + lr) if lp + lr else 0.0,
    }


class OverlapGrader:
    """No execution: similarity of the model patch to the gold patch (a proxy verdict)."""

    name = "overlap"

    def grade(self, req: GradeRequest) -> GradeOutcome:
        start = time.monotonic()
        notes = _Notes(self.name, req)
        proxy = (f"proxy verdict, no tests were run: resolved iff the patch touches every gold file and its "
                 f"changed lines reach F1 >= {OVERLAP_LINES_F1} against the gold patch")
        if not req.model_patch or not req.model_patch.strip():
            return _finish(self.name, notes, start, "empty_patch", error="the patch is empty")
        if not req.gold_patch or not req.gold_patch.strip():
            return _finish(self.name, notes, start, "infra_error", error="the overlap grader needs the task's gold patch")
        try:
            sim = patch_similarity(req.model_patch, req.gold_patch)
        except Exception as exc:  # unidiff: a patch that does not parse
            notes.add(f"[swecl] the model patch does not parse as a diff: {exc}")
            return _finish(self.name, notes, start, "patch_failed", error=f"not a unified diff: {exc}",
                           similarity={})
        resolved = sim["files_recall"] == 1.0 and sim["lines_f1"] >= OVERLAP_LINES_F1
        notes.add("[swecl] " + proxy)
        notes.add("[swecl] similarity: " + ", ".join(f"{k}={v:.3f}" for k, v in sim.items()))
        return _finish(self.name, notes, start, "resolved" if resolved else "unresolved", error=proxy, similarity=sim)


class NoneGrader:
    """Records the patch only: status `ungraded`, resolved None."""

    name = "none"

    def grade(self, req: GradeRequest) -> GradeOutcome:
        notes = _Notes(self.name, req)
        notes.add("[swecl] not graded (grader `none`): the patch is recorded only")
        return _finish(self.name, notes, time.monotonic(), "ungraded")


def get_grader(
    name: str = "swebench",
    *,
    cache_dir: Path | str | None = None,
    repo_sources: Mapping[str, str] | None = None,
    timeout_s: float = 1800,
    python: str | os.PathLike[str] | Mapping[str, str] | None = None,
    sandbox: Sandbox | str | None = None,
) -> Grader:
    """A grader by name (`GRADER_NAMES`).

    python: for `local` (and auto's local side) the interpreter to run in; a mapping
    version -> interpreter path ("3.9": "/opt/py39/bin/python") pins the interpreters
    `swebench` builds environments on. sandbox: where tests run (`_sandbox`; default
    $SWECL_SANDBOX, else bwrap); the graders that run nothing ignore it.
    """
    if name in ("swebench", "local", "auto") and not isinstance(sandbox, Sandbox):
        sandbox = sandbox_for(sandbox)  # refused once here, not once per grader
    paths = dict(python) if isinstance(python, Mapping) else None
    local_python = None if isinstance(python, Mapping) else python
    if name == "swebench":
        return SwebenchGrader(cache_dir=cache_dir, repo_sources=repo_sources, timeout_s=timeout_s, python_paths=paths,
                              sandbox=sandbox)
    if name == "local":
        return LocalGrader(cache_dir=cache_dir, repo_sources=repo_sources, timeout_s=timeout_s, python=local_python,
                           sandbox=sandbox)
    if name == "auto":
        return AutoGrader(
            SwebenchGrader(cache_dir=cache_dir, repo_sources=repo_sources, timeout_s=timeout_s, python_paths=paths,
                           sandbox=sandbox),
            LocalGrader(cache_dir=cache_dir, repo_sources=repo_sources, timeout_s=timeout_s, python=local_python,
                        sandbox=sandbox),
        )
    if name == "overlap":
        return OverlapGrader()
    if name == "none":
        return NoneGrader()
    raise SweclError(f"unknown grader {name!r}: use one of {', '.join(GRADER_NAMES)}")
