"""Environment cache: one uv venv per (repo, version, spec hash, Python minor), built once.

Layout under `<cache>/envs/OWNER__NAME/<version>/`:

    py3.9-<hash12>/          a complete environment (never modified by a build again)
        venv/                `uv venv --relocatable --seed`, third-party packages installed
        env.json             what it is: repo, version, spec, interpreter, warnings, time
        build.log            every command of the build and its output
        installed.json       where the repo itself is installed (see `ensure_repo_installed`)
        .complete            written last: a dir without it is not an environment
    py3.9-<hash12>.lock      flock: held while building, and while a grade uses the env
    .py3.9-<hash12>.tmp-*    a build in progress (renamed into place when complete)

Atomic: a build happens in a temp dir (relocatable venv, so the rename keeps it valid),
the marker is written last, then the dir is renamed into place under the lock; a crash
leaves only a temp dir that `prune_envs` removes.

What is cached is the expensive part, the third-party packages. The repo's own install
(`pip install -e .`) points into one worktree, so it is a separate step bound to that
worktree (`ensure_repo_installed`): re-run when a grade uses another worktree slot, or
at every base commit for compiled repos (`install_per_task`). A grade holds the env's
lock while installing and testing, so two processes never see each other's install.

Packages: `uv pip install --offline` first (a warm uv cache needs no network), then
online. A batch that fails is retried package by package; packages that still fail are
warnings in the build log (conda-only names in environment.yml, C libraries a host
lacks), not a failed build: whether the tests can run is decided when they run.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Collection, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from graders._interpreters import Interpreter, find_python, uv_bin
from graders._repos import default_cache_dir, file_lock, repo_slug
from graders._run import LineResult, run_line, skip_reason, split_line
from graders._specs import EnvSpec, environment_yml_paths, requirements_paths, spec_for
from ledger._errors import SweclError

__all__ = [
    "EnvBuild",
    "EnvBuildError",
    "EnvInfo",
    "InstallResult",
    "build_env",
    "ensure_repo_installed",
    "env_lock",
    "install_environment",
    "list_envs",
    "pre_install_plan",
    "prune_envs",
    "touch_used",
]

MARKER = ".complete"
_SCHEMA = 1
_CONDA_ONLY = frozenset(
    {"python", "pip", "hdf5", "libnetcdf", "graphviz", "cairo", "pkg-config", "ffmpeg", "imagemagick",
     "c-compiler", "cxx-compiler", "compilers", "ccache", "make", "cmake", "git", "nodejs", "libgdal", "proj"}
)
_CONDA_TO_PIP = {"matplotlib-base": "matplotlib", "pytorch": "torch", "iris": "scitools-iris", "pyqt": "PyQt5", "pytables": "tables"}


class EnvBuildError(SweclError):
    """An environment could not be built (no interpreter, venv creation failed, ...)."""


@dataclass(frozen=True, slots=True)
class EnvInfo:
    """One cached environment."""

    key: str  # "OWNER__NAME/<version>/py3.9-<hash12>"
    repo: str
    version: str
    spec_hash: str
    python_version: str
    path: Path
    complete: bool
    built_at: str | None = None
    last_used: float | None = None
    size_bytes: int | None = None
    warnings: tuple[str, ...] = ()

    @property
    def venv(self) -> Path:
        return self.path / "venv"

    @property
    def bin_dir(self) -> Path:
        return self.venv / "bin"

    @property
    def python(self) -> Path:
        return self.bin_dir / "python"

    @property
    def lock_path(self) -> Path:
        return self.path.with_name(self.path.name + ".lock")


@dataclass(slots=True)
class EnvBuild:
    """What `build_env` did: `built` False means an existing environment was reused."""

    env: EnvInfo
    built: bool
    warnings: list[str] = field(default_factory=list)
    log_path: Path | None = None


@dataclass(slots=True)
class InstallResult:
    ran: bool
    ok: bool
    log: str = ""


def _safe(component: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", component) or "_"


def _env_dir(cache_dir: Path, repo: str, version: str, spec: EnvSpec, interpreter: Interpreter) -> Path:
    return cache_dir / "envs" / repo_slug(repo) / _safe(version) / f"py{interpreter.minor}-{spec.spec_hash()[:12]}"


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
    )


class _Log:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.fh = open(path, "a", encoding="utf-8")

    def write(self, text: str) -> None:
        self.fh.write(text if text.endswith("\n") else text + "\n")
        self.fh.flush()

    def close(self) -> None:
        self.fh.close()


def _uv_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "CONDA_PREFIX")}
    env["UV_PYTHON_DOWNLOADS"] = "never"
    return env


def _uv(args: list[str], log: _Log, *, timeout_s: float = 3600) -> bool:
    argv = [uv_bin(), *args]
    log.write("$ " + shlex.join(argv))
    try:
        done = subprocess.run(argv, capture_output=True, env=_uv_env(), stdin=subprocess.DEVNULL, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.write(f"failed to run: {exc}")
        return False
    log.write((done.stdout + done.stderr).decode("utf-8", "replace").rstrip() + f"\n[exit {done.returncode}]")
    return done.returncode == 0


def _uv_install(python: Path, requirements: list[str], log: _Log, what: str) -> list[str]:
    """Install with uv (offline, then online; then one by one). Returns warnings."""
    if not requirements:
        return []
    base = ["pip", "install", "--python", os.fspath(python)]
    for mode in (["--offline"], []):
        if _uv([*base, *mode, *requirements], log):
            return []
    log.write(f"# {what}: the batch failed; installing one by one")
    failed = [req for req in requirements if not any(_uv([*base, *mode, req], log) for mode in (["--offline"], []))]
    return [f"{what}: could not install {req}" for req in failed]


def _read_requirements(path: Path, seen: set[Path] | None = None) -> list[str]:
    seen = set() if seen is None else seen
    if path in seen or not path.is_file():
        return []
    seen.add(path)
    out: list[str] = []
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = re.sub(r"(^|\s)#.*$", "", raw).strip()
        if not line:
            continue
        if line.startswith(("-r ", "--requirement ", "--requirement=")):
            target = re.split(r"[=\s]", line, maxsplit=1)[1].strip()
            out += _read_requirements(path.parent / target, seen)
        elif line.startswith("-"):
            continue  # -e ., -c constraints, index options: not requirements of the env
        else:
            out.append(line)
    return out


def _conda_to_pip(dep: str) -> str | None:
    dep = dep.split("::")[-1].strip().strip("'\"")
    m = re.match(r"^([A-Za-z0-9_.\-]+)\s*(.*)$", dep)
    if not m:
        return None
    name, constraint = m.group(1), m.group(2).strip()
    if name.lower() in _CONDA_ONLY:
        return None
    name = _CONDA_TO_PIP.get(name.lower(), name)
    if re.match(r"^=[^=]", constraint):  # conda `=1.2` means 1.2.*; a second `=build` is dropped
        version = constraint[1:].split("=")[0]
        constraint = f"=={version}" + ("" if "*" in version else ".*")
    return name + constraint.replace(" ", "")


def _read_environment_yml(path: Path) -> list[str]:
    """The dependencies of a conda environment.yml as pip requirements (pip: section too)."""
    out: list[str] = []
    in_deps = False
    pip_indent: int | None = None  # indent of the `- pip:` item while inside its list
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = re.sub(r"\s+#.*$", "", raw).rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        indent = len(line) - len(line.lstrip())
        if indent == 0 and not line.startswith("-"):
            in_deps, pip_indent = line.strip() == "dependencies:", None
            continue
        item = line.strip()
        if not in_deps or not item.startswith("- "):
            continue
        value = item[2:].strip()
        if pip_indent is not None and indent <= pip_indent:
            pip_indent = None
        if value == "pip:":
            pip_indent = indent
            continue
        converted = value.strip("'\"") if pip_indent is not None else _conda_to_pip(value)
        if converted:
            out.append(converted)
    return out


def pre_install_plan(spec: EnvSpec) -> tuple[list[str], list[tuple[str, str]]]:
    """Split pre_install lines into (runnable in a worktree, [(skipped line, reason)])."""
    runnable: list[str] = []
    skipped: list[tuple[str, str]] = []
    for line in spec.pre_install:
        reason = skip_reason(split_line(line))
        if reason:
            skipped.append((line, reason))
        else:
            runnable.append(line)
    return runnable, skipped


def _packages(spec: EnvSpec, repo: str, worktree: Path | None, log: _Log) -> tuple[list[str], list[str]]:
    """(requirements, warnings) for spec.packages."""
    if not spec.packages:
        return [], []
    if spec.packages in ("requirements.txt", "environment.yml"):
        if worktree is None:
            raise EnvBuildError(
                f"{repo}: packages={spec.packages} is read from a checkout: build the environment with a worktree "
                "(grade a task, or pass worktree=)"
            )
        paths = requirements_paths(repo) if spec.packages == "requirements.txt" else environment_yml_paths(repo)
        for rel in paths:
            if (worktree / rel).is_file():
                log.write(f"# packages from {rel}")
                reader = _read_requirements if spec.packages == "requirements.txt" else _read_environment_yml
                return reader(worktree / rel), []
        return [], [f"packages: none of {', '.join(paths)} exists in the checkout"]
    return shlex.split(spec.packages), []


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
) -> EnvBuild:
    """The environment for repo@version (built now, or reused when complete).

    spec: defaults to the table's (`spec_for`). worktree: a checkout at the task's base
    commit, needed when packages are read from a requirements file. interpreter /
    python_paths: which Python to build on (default: `find_python(spec.python)`).
    Raises `EnvBuildError` (or `PythonNotFound`) when no usable venv can be made.
    """
    spec = spec if spec is not None else spec_for(repo, version)
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    interp = interpreter or find_python(spec.python, explicit=python_paths)
    final = _env_dir(cache, repo, version, spec, interp)
    final.parent.mkdir(parents=True, exist_ok=True)
    lock = final.with_name(final.name + ".lock")
    if not force and (final / MARKER).is_file():
        info = _read_info(final)
        if info is not None:
            return EnvBuild(info, built=False, warnings=list(info.warnings), log_path=final / "build.log")
    with file_lock(lock):
        if (final / MARKER).is_file() and not force:
            info = _read_info(final)
            if info is not None:
                return EnvBuild(info, built=False, warnings=list(info.warnings), log_path=final / "build.log")
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=final.parent))
        log = _Log(tmp / "build.log")
        try:
            warnings = _build_into(tmp, repo, version, spec, interp, worktree, log)
            meta = {
                "schema": _SCHEMA,
                "repo": repo,
                "version": version,
                "spec_hash": spec.spec_hash(),
                "spec": msgspec.to_builtins(spec),
                "python": {"path": os.fspath(interp.path), "version": interp.version, "source": interp.source},
                "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "warnings": warnings,
            }
            (tmp / "env.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
            log.write(f"# complete; {len(warnings)} warning(s)")
            log.close()
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
    info = _read_info(final)
    assert info is not None
    return EnvBuild(info, built=True, warnings=list(info.warnings), log_path=final / "build.log")


def _build_into(tmp: Path, repo: str, version: str, spec: EnvSpec, interp: Interpreter, worktree: Path | None, log: _Log) -> list[str]:
    log.write(f"# environment for {repo}@{version} on Python {interp.version} ({interp.source}: {interp.path})")
    log.write(f"# spec {spec.spec_hash()}: {json.dumps(msgspec.to_builtins(spec))}")
    venv = tmp / "venv"
    make_venv = ["venv", "--no-config", "--relocatable", "--seed", "--python", os.fspath(interp.path), os.fspath(venv)]
    # --seed needs pip (and setuptools/wheel before 3.12): from the uv cache if it has them
    if not (_uv([*make_venv, "--offline"], log) or _uv([*make_venv, "--clear"], log)):
        raise EnvBuildError(f"could not create a venv for {repo}@{version} with {interp.path}: see {log.path}")
    python = venv / "bin" / "python"
    warnings: list[str] = []
    _, skipped = pre_install_plan(spec)
    for line, reason in skipped:
        warnings.append(f"pre_install not run ({reason}): {line}")
        log.write(f"# SKIPPED pre_install line ({reason}): {line}")
    requirements, notes = _packages(spec, repo, worktree, log)
    warnings += notes
    # swebench's order: the repo's requirements first, then the pinned pip_packages win
    warnings += _uv_install(python, requirements, log, "packages")
    warnings += _uv_install(python, list(spec.pip_packages), log, "pip_packages")
    for w in warnings:
        log.write(f"# WARNING {w}")
    return warnings


def install_environment(env: EnvInfo, extra: Mapping[str, str] = ()) -> dict[str, str]:
    """Variables for setup commands run with the env: host env, env bin first, no PYTHONPATH."""
    out = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "CONDA_PREFIX", "PYTHONSTARTUP")}
    out["PATH"] = os.pathsep.join([os.fspath(env.bin_dir), os.environ.get("PATH", "")])
    out["VIRTUAL_ENV"] = os.fspath(env.venv)
    out.update(dict(extra))
    return out


def ensure_repo_installed(
    env: EnvInfo,
    spec: EnvSpec,
    worktree: Path,
    commit: str,
    *,
    timeout_s: float = 3600,
) -> InstallResult:
    """Run spec.install in `worktree` unless the env already has it installed from there.

    Call with the env's lock held (`env_lock`). Re-runs when the last install was made
    from another worktree, failed, or (install_per_task) at another commit.
    """
    if not spec.install:
        return InstallResult(ran=False, ok=True)
    state_file = env.path / "installed.json"
    try:
        state = json.loads(state_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        state = {}
    same_place = (
        state.get("worktree") == os.fspath(worktree) and state.get("ok") is True and state.get("install") == spec.install
    )
    if same_place and (not spec.install_per_task or state.get("commit") == commit):
        return InstallResult(ran=False, ok=True, log=f"(repo already installed from {worktree} at {state.get('commit')})\n")
    state_file.unlink(missing_ok=True)
    results: list[LineResult] = []
    variables: dict[str, str] = {}
    for line in [spec.install]:  # `a; b` lines are split by run_line itself
        results.append(
            run_line(line, cwd=worktree, env=install_environment(env), python=env.python,
                     bin_dir=env.bin_dir, variables=variables, timeout_s=timeout_s)
        )
    ok = all(r.status == "ok" for r in results)
    text = "".join(f"$ {r.line}\n{r.output}[{r.status}{': ' + r.reason if r.reason else ''}]\n" for r in results)
    state_file.write_text(
        json.dumps({"worktree": os.fspath(worktree), "commit": commit, "install": spec.install, "ok": ok, "at": time.time()}) + "\n",
        encoding="utf-8",
    )
    return InstallResult(ran=True, ok=ok, log=text)


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
