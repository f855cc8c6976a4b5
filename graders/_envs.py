"""Environment cache: one uv venv per (repo, version, spec, era cut-off, Python minor), built once.

Layout under `<cache>/envs/OWNER__NAME/<version>/`:

    py3.9-<hash12>/          a complete environment
        venv/                `uv venv --relocatable --seed`, third-party packages installed
        env.json             what it is: repo, version, spec, cut-off, interpreter, warnings, time
        build.log            every command of the build and its output
        files.json           the venv's files (size, mtime) as the harness left them
        installed.json       where the repo itself is installed (see `ensure_repo_installed`)
        built.txt            the build's distributions at their exact versions (`uv pip freeze`)
        lock.txt             the same with the sha256 of their files (`graders._install.record_lock`):
                             `uv pip sync --require-hashes lock.txt` makes the same set elsewhere
        pycache/             the bytecode of the venv and its interpreter for confined test runs
        .complete            written last: a dir without it is not an environment
    py3.9-<hash12>.lock      flock: held while building, and while a grade uses the env
    .py3.9-<hash12>.tmp-*    a build in progress (renamed into place when complete)

`<hash12>` is the spec hash, or with an era cut-off the hash of (spec hash, cut-off).

Era: packages resolve as of the task's era, not today (setuptools 82 has no
`pkg_resources`, docutils 0.23 breaks old Sphinx): every uv call, the venv's seed
packages included, gets `--exclude-newer` at the committer date (UTC day) of the row's
`environment_setup_commit`, else of its base commit (`era_for`). Exempt: the spec's exact
pins (its own decision, often newer than the task) and the seed's pip (the installer, not
part of what is tested; an era pip cannot install from today's index): pip is of the end
of 2024, as in SWE-bench's images. An index that serves no
upload times (a simple index without `upload-time`; uv drops such files under a cut-off)
makes the build say so once and fall back to the spec's pins; find-links directories
are never filtered by uv, which the build also says. Requirement files and
environment.yml are read at `environment_setup_commit` from the mirror, as SWE-bench does.

Atomic: a build happens in a temp dir (relocatable venv, so the rename keeps it valid),
the marker is written last, then the dir is renamed into place under the lock; a crash
leaves only a temp dir that `prune_envs` removes.

What is cached is the expensive part, the third-party packages. The repo's own install
(`pip install -e .`) points into one worktree, so it is a separate step bound to that
worktree (`ensure_repo_installed`): re-run when a grade uses another worktree slot, when
the task's dependency manifests (setup.py, setup.cfg, pyproject.toml, requirements*.txt
at its base commit) differ from those of the last install, or at every base commit for
compiled repos (`install_per_task`). The install's products in the worktree are recorded
(size, SHA-256); before each use every other untracked or ignored file goes, and a
changed product means a clean slot and a new install (`prepare_worktree`). A grade holds
the env's lock while installing and testing, so two processes never see each other's
install.

Integrity: unconfined tests can write into the venv. `files.json` is recorded after the
build and after each install (the harness's own writes); `check_env` lists what changed
since, and `guard_env` removes new bytecode caches and rebuilds on anything else.

Packages: the repository's requirements first, each package they name that the spec's
pip_packages pin exactly taken at that pin right away (`spec_pins_named`: the pin
replaces it in the next step anyway, and an era release may not even build for the
interpreter), then pip_packages. Isolated source builds are held to the batch's exact
pins (`--build-constraints`, build backends excepted): an era sdist never compiles the
era's numpy in its build environment when the spec pins one with a wheel for the
interpreter. Each batch: `uv pip install` online first (offline, uv picks among the files it has cached,
so a spec would resolve differently from machine to machine), then `--offline` (no
network), then without build isolation. A batch that fails is retried package by package,
each held to the batch's exact pins (a later package never replaces an earlier pin);
exact pins are exempt from the era cut-off. Packages that still fail are
warnings in the build log (conda-only names in environment.yml, C libraries a host
lacks), not a failed build: whether the tests can run is decided when they run.

This module names, builds, lists and prunes environments; the parts live beside it:
`graders._env_info` (`EnvInfo`, the venv's files record), `graders._uv` (uv calls, the
era cut-off, installing packages), `graders._manifests` (requirement files,
environment.yml, pre_install) and `graders._install` (the repository's own install).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from graders._compiler_cache import compiler_cache_environment
from graders._env_info import FILES, EnvBuildError, EnvInfo, record_env_files
from graders._install import BUILT, LOCK, _record_built, record_lock
from graders._integrity import diff_manifests, drop_added_caches, load_manifest, save_manifest, venv_manifest
from graders._interpreters import Interpreter, find_python
from graders._manifests import FileReader, _dir_reader, _packages, pre_install_plan
from graders._py_compat import normalise_name, requirement_names
from graders._py_compat import repair as repair_for_python
from graders.host import GitError, RepoCache, default_cache_dir, file_at, repo_slug
from ledger.locks import file_lock
from graders._specs import EnvSpec, spec_for
from graders._uv import (
    BUILD_BACKEND_FLOOR,
    IMAGE_ERA,
    _Cutoff,
    _find_links_configured,
    _Log,
    _uv,
    _uv_env,
    _uv_install,
    _uv_with_cutoff,
    compile_flag,
    exact_pins,
)
from ledger.errors import SweclError

__all__ = [
    "EnvBuild",
    "Era",
    "build_env",
    "check_env",
    "era_for",
    "guard_env",
    "env_lock",
    "env_path",
    "list_envs",
    "prune_envs",
    "touch_used",
]

MARKER = ".complete"
_SCHEMA = 1


@dataclass(slots=True)
class EnvBuild:
    """What `build_env` did: `built` False means an existing environment was reused."""

    env: EnvInfo
    built: bool
    warnings: list[str] = field(default_factory=list)
    log_path: Path | None = None


def _safe(component: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", component) or "_"


def env_identity(spec: EnvSpec, exclude_newer: str | None) -> str:
    """What names an environment: the spec hash, and the era cut-off when there is one
    (no cut-off keeps the name environments had before cut-offs existed)."""
    if exclude_newer is None:
        return spec.spec_hash()
    # recipe 4: exact pins exempt from the cut-off, pip of 2024 (earlier recipes could not
    # install newer pins at all, and their era pip could not install the repository);
    # recipe 5: a batch whose pins need newer dependencies resolves as of the images;
    # recipe 6: the build's packages are recorded (BUILT), so a later install starts from them;
    # recipe 7: era releases that do not run on the interpreter are replaced (graders._py_compat);
    # recipe 8: and those that cannot load their native library here;
    # recipe 9: old sdists build with setuptools up to 40.8.0 (graders._uv.BUILD_BACKEND_FLOOR);
    # recipe 11: the packages stage installs the spec's pins of what it names first and holds
    # them (`spec_pins_named`);
    # recipe 12: isolated source builds are held to the batch's exact pins (`graders._uv._build_constraints`);
    # recipe 13: a fallback to the images' releases never replaces what is installed;
    # recipe 14: and comes after the stage's other requirements;
    # recipe 15: a package whose history PyPI lost resolves as of its re-upload (graders._uv.HISTORY_LOST)
    return hashlib.sha256(f"{spec.spec_hash()}\nexclude-newer={exclude_newer}\nrecipe=15".encode()).hexdigest()


def _env_dir(
    cache_dir: Path, repo: str, version: str, spec: EnvSpec, interpreter: Interpreter, exclude_newer: str | None = None
) -> Path:
    name = f"py{interpreter.minor}-{env_identity(spec, exclude_newer)[:12]}"
    return cache_dir / "envs" / repo_slug(repo) / _safe(version) / name


def env_path(cache_dir: Path, repo: str, version: str, spec: EnvSpec, interpreter: Interpreter,
             exclude_newer: str | None = None) -> Path:
    """Where the environment of these facts is (or will be) in the cache: nothing is built."""
    return _env_dir(cache_dir, repo, version, spec, interpreter, exclude_newer)


@dataclass(frozen=True, slots=True)
class Era:
    """When a task's environment is resolved as of, and where its manifests are read.

    commit: the row's environment_setup_commit, else its base commit. cutoff: that
    commit's committer date floored to the UTC day (`2019-07-01T00:00:00Z`): tasks of one
    day share an environment, and nothing uploaded after the commit gets in.
    read_file: the text of a file at the setup commit (None when the row has none: the
    worktree at the base commit is read instead, as before).
    """

    commit: str
    cutoff: str | None
    read_file: Callable[[str], str | None] | None = None
    notes: tuple[str, ...] = ()


def era_for(repos: RepoCache, repo: str, base_commit: str, setup_commit: str | None) -> Era:
    """The era of a task from the repository mirror. A setup commit the mirror cannot
    provide falls back to the base commit, with a note."""
    notes: list[str] = []
    if setup_commit:
        try:
            mirror = repos.ensure_commit(repo, setup_commit)
            stamp = repos.commit_date(repo, setup_commit)
            return Era(setup_commit, _day(stamp), lambda rel: file_at(mirror, setup_commit, rel))
        except (GitError, SweclError) as exc:
            notes.append(f"environment_setup_commit {setup_commit} unusable ({exc}); the era is the base commit's")
    stamp = repos.commit_date(repo, base_commit)
    # Without a setup commit (one per repo@version in SWE-bench) each task's base commit
    # would give its own day and its own environment; the start of its month keeps the
    # tasks of a version on one environment while staying before every one of them.
    return Era(base_commit, _month(stamp), None, tuple(notes))


def _day(stamp: str) -> str:
    return stamp[:10] + "T00:00:00Z"


def _month(stamp: str) -> str:
    return stamp[:7] + "-01T00:00:00Z"


def _read_info(path: Path, *, sizes: bool = False) -> EnvInfo | None:
    try:
        meta = json.loads((path / "env.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    used = path / "last_used"
    size = None
    if sizes:
        size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())
    return EnvInfo(
        key="/".join(path.parts[-3:]),
        repo=meta.get("repo", "?"),
        version=meta.get("version", "?"),
        spec_hash=meta.get("spec_hash", "?"),
        python_version=meta.get("python", {}).get("version", "?"),
        path=path,
        complete=(path / MARKER).is_file(),
        built_at=meta.get("built_at"),
        last_used=used.stat().st_mtime if used.exists() else None,
        size_bytes=size,
        warnings=tuple(meta.get("warnings", [])),
        exclude_newer=meta.get("exclude_newer"),
    )


def env_lock(env: EnvInfo, *, blocking: bool = True) -> AbstractContextManager[bool]:
    """The env's lock (held by builds and by grades using it)."""
    return file_lock(env.lock_path, blocking=blocking)


def build_env(
    repo: str,
    version: str,
    spec: EnvSpec | None = None,
    *,
    cache_dir: Path | str | None = None,
    worktree: Path | None = None,
    interpreter: Interpreter | None = None,
    python_paths: Mapping[str, str] | None = None,
    force: bool = False,
    exclude_newer: str | None = None,
    read_file: FileReader | None = None,
    files_origin: str | None = None,
    locked: bool = False,
) -> EnvBuild:
    """The environment for repo@version (built now, or reused when complete).

    spec: defaults to the table's (`spec_for`). worktree: a checkout at the task's base
    commit, read for requirement files unless `read_file` (files at the setup commit,
    `files_origin` naming it) is given. interpreter / python_paths: which Python to
    build on (default: `find_python(spec.python)`). exclude_newer: the era cut-off (see
    `Era`), part of the environment's identity. locked: the caller holds the env's lock
    (a rebuild from inside a grade). Raises `EnvBuildError` (or `PythonNotFound`) when
    no usable venv can be made.
    """
    spec = spec if spec is not None else spec_for(repo, version)
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    interp = interpreter or find_python(spec.python, explicit=python_paths)
    final = _env_dir(cache, repo, version, spec, interp, exclude_newer)
    final.parent.mkdir(parents=True, exist_ok=True)
    lock = final.with_name(final.name + ".lock")
    if read_file is None and worktree is not None:
        read_file, files_origin = _dir_reader(worktree), files_origin or "the checkout"
    if not force and (reused := _reused(final)) is not None:
        return reused
    with nullcontext() if locked else file_lock(lock):
        if not force and (reused := _reused(final)) is not None:
            return reused
        _build_in_place(final, repo, version, spec, interp, read_file, files_origin or "", exclude_newer, cache)
    info = _read_info(final)
    assert info is not None
    return EnvBuild(info, built=True, warnings=list(info.warnings), log_path=final / "build.log")


def _reused(final: Path) -> EnvBuild | None:
    """The complete environment at `final`, when its interpreter is there (`_runs`)."""
    if not (final / MARKER).is_file():
        return None
    info = _read_info(final)
    if info is None or not _runs(info):
        return None
    return EnvBuild(info, built=False, warnings=list(info.warnings), log_path=final / "build.log")


def _build_in_place(final: Path, repo: str, version: str, spec: EnvSpec, interp: Interpreter,
                    read_file: FileReader | None, files_origin: str, exclude_newer: str | None, cache: Path) -> None:
    """Build the environment in a temporary dir beside `final`, the marker written last,
    then renamed over it (module doc: atomic). A failed build leaves only its log, as
    `NAME.failed.log`."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=final.parent))
    # the sdists it compiles through the cache's ccache, as installs do: a fallback that
    # builds the same sdist again (numcodecs' c-blosc, three times in xarray 0.12's build)
    # and the next environment's build of it find the objects made the first time
    log = _Log(tmp / "build.log", compiler_cache_environment(cache, os.environ.get("PATH", "")))
    try:
        cutoff = _Cutoff(exclude_newer)
        warnings = _build_into(tmp, repo, version, spec, interp, read_file, files_origin, cutoff, log)
        meta = {
            "schema": _SCHEMA,
            "repo": repo,
            "version": version,
            "spec_hash": spec.spec_hash(),
            "spec": msgspec.to_builtins(spec),
            "exclude_newer": exclude_newer,
            "exclude_newer_applied": bool(exclude_newer) and cutoff.applied,
            "python": {"path": os.fspath(interp.path), "version": interp.version, "source": interp.source},
            "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "warnings": warnings,
        }
        (tmp / "env.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
        _record_built(tmp / "venv" / "bin" / "python", tmp / BUILT, log)
        if (tmp / BUILT).is_file():
            record_lock(tmp / "venv" / "bin" / "python", tmp / BUILT, tmp / LOCK, log)
        log.write(f"# complete; {len(warnings)} warning(s)")
        log.close()
        save_manifest(tmp / FILES, venv_manifest(tmp / "venv"))
        (tmp / MARKER).write_text(meta["built_at"] + "\n", encoding="utf-8")
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
    except BaseException:
        log.close()
        failed_log = final.parent / f"{final.name}.failed.log"
        try:
            shutil.copyfile(tmp / "build.log", failed_log)
        except OSError:
            pass
        shutil.rmtree(tmp, ignore_errors=True)
        raise

def _runs(env: EnvInfo) -> bool:
    """Is the venv's interpreter there? It is a link to the interpreter it was made with
    (pyvenv.cfg's `home`): a cache folder copied to a machine without that interpreter at
    that path holds environments that cannot start, which are built again."""
    return env.python.exists()


# The installer is not part of the environment under test: an era pip (19.x) cannot
# backtrack, so an index without Requires-Python data hands its build isolation today's
# setuptools and `pip install -e .` fails (pytest 4.5 on Python 3.9). pip is seeded as of
# the end of 2024, as SWE-bench's images had it (24.x: still `setup.py develop` for a
# project without pyproject.toml, where today's pip builds a PEP 660 wheel), or of the
# era when that is later; setuptools and wheel stay of the era (pkg_resources).
_SEED_EXEMPT = {"pip": IMAGE_ERA}


def _make_venv(venv: Path, interp: Interpreter, cutoff: _Cutoff, log: _Log) -> None:
    """`uv venv --seed`: setuptools/wheel (before 3.12) of the era and pip of 2024 (the
    newest then that runs on the interpreter), from the uv cache if it has them. Seed packages of an era older than
    the interpreter may not run on it; then the newest ones are seeded, with a warning."""
    make = ["venv", "--no-config", "--relocatable", "--seed", "--python", os.fspath(interp.path), os.fspath(venv)]
    ex = _SEED_EXEMPT
    if not (_uv_with_cutoff(make, cutoff, log, exempt=ex)
            or _uv_with_cutoff([*make, "--clear", "--offline"], cutoff, log, exempt=ex)):
        raise EnvBuildError(f"could not create a venv with {interp.path}: see {log.path}")
    if not cutoff.args():
        return
    probe = subprocess.run([os.fspath(venv / "bin" / "python"), "-m", "pip", "--version"],
                           capture_output=True, stdin=subprocess.DEVNULL, env=_uv_env(), timeout=120)
    log.write(f"$ python -m pip --version\n{(probe.stdout + probe.stderr).decode('utf-8', 'replace').rstrip()}")
    if probe.returncode == 0:
        return
    text = f"the seed packages of {cutoff.when} do not run on Python {interp.version}: seeded with today's instead"
    cutoff.warnings.append(text)
    log.write(f"# {text}")
    if not (_uv([*make, "--clear"], log) or _uv([*make, "--clear", "--offline"], log)):
        raise EnvBuildError(f"could not create a venv with {interp.path}: see {log.path}")


def _build_into(
    tmp: Path, repo: str, version: str, spec: EnvSpec, interp: Interpreter, read: FileReader | None,
    origin: str, cutoff: _Cutoff, log: _Log,
) -> list[str]:
    log.write(f"# environment for {repo}@{version} on Python {interp.version} ({interp.source}: {interp.path})")
    log.write(f"# spec {spec.spec_hash()}: {json.dumps(msgspec.to_builtins(spec))}")
    if cutoff.when:
        log.write(f"# era cut-off: packages uploaded before {cutoff.when} (uv --exclude-newer)")
        if _find_links_configured():
            cutoff.warnings.append(f"find-links packages carry no upload times: uv does not hold them to {cutoff.when}")
    venv = tmp / "venv"
    try:
        _make_venv(venv, interp, cutoff, log)
    except EnvBuildError as exc:
        raise EnvBuildError(f"{repo}@{version}: {exc}") from None
    python = venv / "bin" / "python"
    warnings: list[str] = []
    _, skipped = pre_install_plan(spec)
    for line, reason in skipped:
        warnings.append(f"pre_install not run ({reason}): {line}")
        log.write(f"# SKIPPED pre_install line ({reason}): {line}")
    requirements, notes = _packages(spec, repo, read, origin, log)
    warnings += notes
    # swebench's order: the repo's requirements first, then the pinned pip_packages win
    held = spec_pins_named(requirements, spec.pip_packages)
    if held:
        # First alone, with the pip_packages step's own fallback (a pin's dependencies may
        # postdate the era: pytest 7.4.0 needs exceptiongroup, first released after xarray
        # 0.12's 2021-05); then the stage resolves against them as installed (uv keeps an
        # installed release that satisfies, whatever its date): xdist of the era, not one
        # of 2013 that declares no pytest at all.
        log.write(f"# packages: the spec's pip_packages pins of what they name, first: {' '.join(held)}")
        warnings += _uv_install(python, held, log, "spec-pins", cutoff)
        requirements = [*held, *requirements]
    warnings += _uv_install(python, requirements, log, "packages", cutoff)
    warnings += _uv_install(python, list(spec.pip_packages), log, "pip_packages", cutoff)
    warnings += _repair_for_python(python, requirements, spec, interp, cutoff, log)
    warnings = cutoff.warnings + warnings
    for w in warnings:
        log.write(f"# WARNING {w}")
    return warnings


def spec_pins_named(requirements: list[str], pip_packages: Iterable[str]) -> list[str]:
    """The spec's exact pip_packages pin of each package the packages stage names itself
    (and does not pin itself), installed before the stage and held in it.

    Why: the pip_packages step replaces those packages with the pin anyway (swebench's
    order), so resolving them as of the era first only costs, and can break the stage:
    xarray 0.12 names numpy on Python 3.10 with a 2021-05 cut-off, when no numpy had a
    cp310 wheel, so numpy compiled from source for minutes before the pin (1.23.0, with
    wheels) replaced it; and every package of the stage resolved against that numpy. With
    the pin in the stage, the rest resolves against the numpy the tests will import. A pin
    is exempt from the cut-off (`_Cutoff`); extras and markers of the stage's own line stay.
    """
    pins = exact_pins(pip_packages)
    own = exact_pins(requirements)
    named = {normalise_name(n) for n in requirement_names(requirements)}
    return [line for name, line in pins.items() if name in named and name not in own]


def _repair_for_python(
    python: Path, requirements: list[str], spec: EnvSpec, interp: Interpreter, cutoff: _Cutoff, log: _Log
) -> list[str]:
    """The era's releases of the repository's unpinned packages that do not run on this
    Python, replaced by later ones (see graders._py_compat). Only under a cut-off: without
    one every package is already of today."""
    if not (cutoff.when and cutoff.applied and requirements):
        return []
    pinned = exact_pins([*requirements, *spec.pip_packages])
    constraints = python.parent.parent.parent / ".swecl-repair-constraints.txt"  # in the build dir

    def install(dist: str, requirement: str, held: list[str]) -> bool:
        constraints.write_text("".join(f"{line}\n" for line in held), encoding="utf-8")
        args = ["pip", "install", *compile_flag(python), "--python", os.fspath(python),
                "--constraint", os.fspath(constraints), requirement]
        return _uv_with_cutoff(args, cutoff, log, [requirement, *held], exempt={**BUILD_BACKEND_FLOOR, dist: IMAGE_ERA})

    try:
        return repair_for_python(python, requirement_names(requirements), set(pinned),
                                 list(exact_pins(spec.pip_packages).values()), install, log.write, interp.version)
    finally:
        constraints.unlink(missing_ok=True)


# -- integrity of the venv ------------------------------------------------------------------


def check_env(env: EnvInfo) -> list[str]:
    """What changed in the venv since it was recorded: `added PATH`, `removed PATH`,
    `changed PATH` (paths relative to the venv). An env without a record is all `added`."""
    recorded = load_manifest(env.path / FILES) or {}
    return diff_manifests(recorded, venv_manifest(env.venv)).lines()


def guard_env(env: EnvInfo, rebuild: Callable[[], EnvInfo]) -> tuple[EnvInfo, str | None]:
    """Before a grade in an unconfined run: new bytecode caches are removed, any other
    change to the venv means `rebuild()` (with the env's lock held). Returns the env to
    use and a note saying what was done (None when nothing had changed)."""
    recorded = load_manifest(env.path / FILES)
    if recorded is None:
        record_env_files(env)  # an env built before manifests existed: trusted once
        return env, "env files recorded (no earlier record)"
    diff = diff_manifests(recorded, venv_manifest(env.venv))
    dropped = drop_added_caches(env.venv, diff)
    if not diff:
        return env, (f"env restored: {len(dropped)} bytecode cache(s) written by earlier tests removed" if dropped else None)
    shown = diff.lines()
    fresh = rebuild()
    return fresh, (f"env rebuilt: {len(shown)} file(s) changed since the harness left it "
                   f"({'; '.join(shown[:5])}{'; ...' if len(shown) > 5 else ''})")


def touch_used(env: EnvInfo) -> None:
    (env.path / "last_used").write_text(f"{time.time()}\n", encoding="utf-8")


def _env_dirs(cache: Path) -> Iterator[Path]:
    root = cache / "envs"
    if not root.is_dir():
        return
    for repo_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        for version_dir in sorted(p for p in repo_dir.iterdir() if p.is_dir()):
            for env_dir in sorted(p for p in version_dir.iterdir() if p.is_dir()):
                yield env_dir


def list_envs(cache_dir: Path | str | None = None, *, sizes: bool = False) -> list[EnvInfo]:
    """Every environment under the cache (complete ones, and finished-but-unmarked dirs)."""
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    out = []
    for path in _env_dirs(cache):
        if path.name.startswith("."):
            continue
        info = _read_info(path, sizes=sizes)
        if info is not None:
            out.append(info)
    return out


def prune_envs(
    cache_dir: Path | str | None = None,
    *,
    keep: Collection[str] = (),
    keep_recent: int = 0,
    dry_run: bool = False,
) -> list[Path]:
    """Remove environments except those in `keep` (keys) and the `keep_recent` most
    recently used; leftovers of interrupted builds always go. Envs in use (locked) are
    skipped. Returns the removed (or, with dry_run, removable) directories."""
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    envs = list_envs(cache)
    by_use = sorted(envs, key=lambda e: e.last_used or 0.0, reverse=True)
    protected = set(keep) | {e.key for e in by_use[: max(keep_recent, 0)]}
    removed: list[Path] = []
    for path in _env_dirs(cache):
        if path.name.startswith("."):
            lock = path.with_name(path.name[1:].split(".tmp-")[0] + ".lock")
        else:
            info = _read_info(path)
            if info is not None and info.complete and info.key in protected:
                continue
            lock = path.with_name(path.name + ".lock")
        with file_lock(lock, blocking=False) as free:
            if not free:
                continue  # being built or used right now
            if not dry_run:
                shutil.rmtree(path, ignore_errors=True)
                lock.unlink(missing_ok=True)
            removed.append(path)
    return removed
