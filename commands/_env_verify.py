"""`swecl env verify`: a repository's environment recipe run on this host, per version,
before any task of it is graded.

For each version: the spec a task of that version gets (its own `environment`, else the
table's), the era cut-off grading would use (the day of the version's
environment_setup_commit, read from the mirror; `--cutoff` when no mirror can be had),
the environment built by `build_env` as grading builds it, the repository installed into
it by `ensure_repo_installed` (the same step), then the spec's test command run confined
on a sample of the version's test modules (those its tasks' test patches touch, where the
source has them). The source: a checkout (a worktree at the version's base commit when
the checkout's history has it, else the directory as it is), or the version's release
sdist from the package index (`graders._sdist`). One `env.verified` event per version,
stream `env/{repo}@{version}`.

It checks the recipe, not the tasks: no gold patch is applied, and nothing it finds
changes a grade or a validation.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from graders import (
    EnvBuildError,
    EnvInfo,
    EnvSpec,
    PythonNotFound,
    TestStatus,
    UnknownEnvSpec,
    build_env,
    download_sdist,
    env_lock,
    era_for,
    find_python,
    pick_sdist,
    project_sdists,
    run_recipe,
    spec_for,
    test_directives,
    unpack_sdist,
)
from graders.host import GitError, RepoCache, git, repo_slug
from ledger import SweclError
from ledger.events import EnvVerified, VerifiedFailure

from .inputs import Task

__all__ = ["failure_causes", "sample_tests", "verify_version"]

_MAX_FAILURES = 50
_CAUSE_CHARS = 300


@dataclass(slots=True)
class _Source:
    path: Path
    commit: str | None
    label: str
    worktree: object | None = None  # a RepoCache Worktree (cleaned around the install as grading does)


def sample_tests(repo: str, tasks: list[Task], root: Path, limit: int) -> list[str]:
    """The test modules the tasks' test patches touch, in task order, that exist under
    `root` (a test patch may add a module the release does not have yet); at most `limit`."""
    out: list[str] = []
    for task in tasks:
        for directive in test_directives(repo, task.test_patch or ""):
            if directive in out or not _exists(repo, root, directive):
                continue
            out.append(directive)
    return out[:limit]


def _exists(repo: str, root: Path, directive: str) -> bool:
    if repo == "django/django":  # module labels: `utils_tests.test_text` -> tests/utils_tests/test_text.py
        rel = root / "tests" / Path(*directive.split("."))
        return rel.with_name(rel.name + ".py").is_file() or rel.is_dir()
    return (root / directive.split("::")[0]).exists()


def failure_causes(output: str, statuses: Mapping[str, str]) -> list[VerifiedFailure]:
    """Each FAILED / ERROR test with the log's own words for why: pytest's short summary
    (`FAILED t.py::test - AssertionError: ...`), else the last line of its traceback
    (unittest and django: `FAIL: test (mod.Class)` then the traceback), else nothing."""
    summary: dict[str, str] = {}
    for m in re.finditer(r"^(?:FAILED|ERROR) (\S+) - (.+)$", output, re.M):
        summary.setdefault(m.group(1), m.group(2).strip())
    blocks: dict[str, str] = {}
    for m in re.finditer(r"^(?:FAIL|ERROR): (.+?)\n-{20,}\n(.*?)(?=\n={20,}|\n-{20,}\nRan |\Z)", output, re.M | re.S):
        lines = [ln.strip() for ln in m.group(2).strip().splitlines() if ln.strip()]
        if lines:
            blocks.setdefault(m.group(1).strip(), lines[-1])
    out = []
    for test, status in statuses.items():
        if status not in (TestStatus.FAILED, TestStatus.ERROR):
            continue
        cause = summary.get(test) or blocks.get(test) or next(
            (text for name, text in blocks.items() if name.split()[0] == test.split()[0]), "")
        if not cause:  # pytest without a message on its summary line: the traceback's `E   ` line
            m = re.search(rf"^_+ .*{re.escape(test.split('::')[-1])}.* _+$(.*?)^E\s+(.+)$", output, re.M | re.S)
            cause = m.group(2).strip() if m else ""
        out.append(VerifiedFailure(test=test, status=str(status), cause=cause[:_CAUSE_CHARS]))
    return out[:_MAX_FAILURES]


def _count(statuses: Mapping[str, str]) -> dict[str, int]:
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    for status in statuses.values():
        key = {TestStatus.PASSED: "passed", TestStatus.XFAIL: "passed", TestStatus.FAILED: "failed",
               TestStatus.ERROR: "errors", TestStatus.SKIPPED: "skipped"}.get(TestStatus(status))
        if key:
            counts[key] += 1
    return counts


@contextmanager
def _source(repo: str, version: str, tasks: list[Task], source: str, repos: RepoCache, scratch: Path,
            cutoff: str | None, spec: EnvSpec, say: Callable[[str], None]) -> Iterator[_Source]:
    """The repository's files for this version (see the module doc)."""
    if source != "sdist":
        directory = Path(source)
        base = tasks[0].base_commit
        if (directory / ".git").exists() and repos.has_commit_in_source(repo, base):
            with repos.worktree(repo, base, clean_ignored=not spec.install) as wt:
                yield _Source(wt.path, base, f"checkout at {base}", wt)
            return
        target = scratch / "src"
        shutil.copytree(directory, target, symlinks=True)
        commit = None
        if (target / ".git").exists():
            commit = git(["rev-parse", "HEAD"], cwd=target, check=False).stdout.decode().strip() or None
        yield _Source(target, commit, f"directory as it is{f' (HEAD {commit})' if commit else ''}")
        return
    name = repo.split("/")[1]
    chosen = pick_sdist(project_sdists(name), version, cutoff)
    if chosen is None:
        raise SweclError(f"no sdist of {name} {version}.x uploaded before {cutoff or 'today'} on the index")
    say(f"{repo}@{version}: sdist {chosen.filename} (uploaded {chosen.uploaded or 'at an unknown time'})")
    archive = download_sdist(chosen, repos.cache_dir / "sdists" / repo_slug(repo))
    yield _Source(unpack_sdist(archive, scratch / "src"), None, f"sdist {chosen.filename}")


def verify_version(
    repo: str, version: str, tasks: list[Task], *, source: str, cache_dir: Path, repo_sources: Mapping[str, str],
    python_paths: Mapping[str, str], cutoff: str | None, sandbox: str, test_timeout: float, max_tests: int,
    extra_tests: list[str], say: Callable[[str], None],
) -> EnvVerified:
    """One version checked (see the module doc); never raises for what the host cannot do:
    the event says where it stopped and why."""
    from .run import environment_spec  # lazy: the run machinery

    start = time.monotonic()
    fields: dict = {"repo": repo, "version": version, "cutoff": cutoff, "cutoff_from": "--cutoff" if cutoff else ""}

    def stop(error: str) -> EnvVerified:
        return EnvVerified(**fields, error=error, duration_s=round(time.monotonic() - start, 3))

    try:
        spec = spec_for(repo, version, environment_spec(tasks[0]))
    except UnknownEnvSpec as exc:
        return stop(str(exc))
    sources = dict(repo_sources)
    if source != "sdist" and (Path(source) / ".git").exists():
        sources[repo] = source
    repos = _VerifyRepos(cache_dir, sources)
    era = None
    if cutoff is None:
        task = tasks[0]
        if repo not in sources and not (repos.mirror_path(repo) / "HEAD").is_file():
            return stop(f"no era cut-off: no mirror of {repo} here; give --repo-source {repo}=PATH, a checkout with "
                        "the version's commits as --source, or --cutoff DATE")
        try:
            era = era_for(repos, repo, task.base_commit, task.environment_setup_commit)
        except (GitError, SweclError) as exc:
            return stop(f"no era cut-off ({exc}); give --cutoff DATE")
        fields.update(cutoff=era.cutoff, cutoff_from=f"commit {era.commit}")
    scratch = Path(tempfile.mkdtemp(prefix=f"verify-{repo_slug(repo)}-{version}-", dir=_mkdir(cache_dir / "verify")))
    try:
        with _source(repo, version, tasks, source, repos, scratch, fields["cutoff"], spec, say) as src:
            fields["source"] = src.label
            say(f"{repo}@{version}: building the environment (spec {spec.spec_hash()[:12]}, packages as of "
                f"{fields['cutoff']})")
            built_at = time.monotonic()
            try:
                interp = find_python(spec.python, explicit=python_paths)
                read = era.read_file if era is not None else None
                build = build_env(repo, version, spec, cache_dir=cache_dir, worktree=src.path, interpreter=interp,
                                  exclude_newer=fields["cutoff"], read_file=read,
                                  files_origin=f"commit {era.commit}" if read and era else None)
            except (EnvBuildError, PythonNotFound) as exc:
                fields["build_s"] = round(time.monotonic() - built_at, 3)
                return stop(f"build failed: {exc}")
            fields.update(build_s=round(time.monotonic() - built_at, 3), build_ok=True, built=build.built,
                          env_key=build.env.key, python=interp.version, warnings=list(build.warnings))
            if source == "sdist" and (absent := [w for w in build.warnings if w.startswith("packages: none of ")]):
                # matplotlib 3.0's spec reads requirements/testing/travis_all.txt, which only
                # the repository has: without it no numpy, and setup.py's setup_requires
                # fetched today's numpy through easy_install and failed (an install error
                # that hid the cause)
                return stop(f"the sdist lacks the spec's package list ({absent[0].removeprefix('packages: ')}): "
                            "this version's recipe needs a checkout (--source DIR)")
            with env_lock(build.env):
                return _install_and_test(repo, spec, build.env, src, tasks, fields, sandbox=sandbox,
                                         cache_dir=cache_dir, test_timeout=test_timeout, max_tests=max_tests,
                                         extra_tests=extra_tests, say=say, start=start)
    except SweclError as exc:
        return stop(str(exc))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _install_and_test(repo: str, spec: EnvSpec, env: EnvInfo, src: _Source, tasks: list[Task], fields: dict, *,
                      sandbox: str, cache_dir: Path, test_timeout: float, max_tests: int, extra_tests: list[str],
                      say: Callable[[str], None], start: float) -> EnvVerified:
    def done(**more: object) -> EnvVerified:
        return EnvVerified(**{**fields, **more}, duration_s=round(time.monotonic() - start, 3))

    tests = [*sample_tests(repo, tasks, src.path, max_tests), *extra_tests]
    where = f"{repo}@{fields['version']}"
    if not tests:
        # Installed all the same: an install that fails is the first thing a recipe can get wrong.
        ran = run_recipe(repo, spec, env, src.path, [], commit=src.commit, worktree=src.worktree, sandbox=sandbox,
                         hide=cache_dir, test_timeout=test_timeout, say=lambda line: say(f"{where}: {line}"),
                         install_only=True)
        fields.update(warnings=[*fields.get("warnings", []), *ran.warnings], tests=[])
        if ran.install_ok is not None:
            fields["install_ok"] = ran.install_ok
        return done(error=ran.error or "no test sample: none of the version's tasks has a test patch naming a module "
                                       "this source has; name some with --test")
    fields["tests"] = tests
    ran = run_recipe(repo, spec, env, src.path, tests, commit=src.commit, worktree=src.worktree, sandbox=sandbox,
                     hide=cache_dir, test_timeout=test_timeout, say=lambda line: say(f"{where}: {line}"))
    fields["warnings"] = [*fields.get("warnings", []), *ran.warnings]
    if ran.install_ok is not None:
        fields["install_ok"] = ran.install_ok
    if not ran.statuses and ran.error:
        return done(error=ran.error)
    return done(collected=len(ran.statuses), **_count(ran.statuses), failures=failure_causes(ran.output, ran.statuses),
                exit_code=ran.exit_code, error=ran.error)


class _VerifyRepos(RepoCache):
    def has_commit_in_source(self, repo: str, commit: str) -> bool:
        """Whether the mirror (cloned from the source on first use) holds `commit`."""
        try:
            self.ensure_commit(repo, commit)
        except (GitError, SweclError):
            return False
        return True


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def versions_of(tasks: list[Task], repo: str) -> list[str]:
    """The versions of `repo` among the tasks, oldest first."""
    from packaging.version import InvalidVersion, Version

    found = sorted({str(t.version) for t in tasks if t.repo == repo and t.version is not None})

    def key(v: str) -> tuple[int, object]:
        try:
            return 0, Version(v)
        except InvalidVersion:
            return 1, v

    return sorted(found, key=key)


def check_cutoff(text: str | None) -> str | None:
    """`2019-12-01` or `2019-12-01T00:00:00Z` -> the latter; else a one-line error."""
    if text is None:
        return None
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        return f"{text}T00:00:00Z"
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", text):
        return text
    raise SweclError(f"--cutoff {text!r}: give a UTC date, 2019-12-01 or 2019-12-01T00:00:00Z")

