"""Environment cache: one uv venv per (repo, version, spec, era cut-off, Python minor), built once.

Layout under `<cache>/envs/OWNER__NAME/<version>/`:

    py3.9-<hash12>/          a complete environment
        venv/                `uv venv --relocatable --seed`, third-party packages installed
        env.json             what it is: repo, version, spec, cut-off, interpreter, warnings, time
        build.log            every command of the build and its output
        files.json           the venv's files (size, mtime) as the harness left them
        installed.json       where the repo itself is installed (see `ensure_repo_installed`)
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

Packages: `uv pip install` online first (offline, uv picks among the files it has cached,
so a spec would resolve differently from machine to machine), then `--offline` (no
network), then without build isolation. A batch that fails is retried package by package,
each held to the batch's exact pins (a later package never replaces an earlier pin);
exact pins are exempt from the era cut-off. Packages that still fail are
warnings in the build log (conda-only names in environment.yml, C libraries a host
lacks), not a failed build: whether the tests can run is decided when they run.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import re
import shlex
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

from graders._era_deps import project_requirements, self_install_extras
from graders._integrity import (
    diff_manifests,
    drop_added_caches,
    load_manifest,
    products_manifest,
    save_manifest,
    venv_manifest,
)
from graders._interpreters import Interpreter, find_python, uv_bin
from graders._py_compat import repair as repair_for_python
from graders._py_compat import normalise_name, requirement_names
from graders._repos import (
    GitError,
    RepoCache,
    Worktree,
    default_cache_dir,
    file_at,
    file_lock,
    git,
    repo_slug,
    untracked_files,
)
from graders._run import LineResult, run_line, skip_reason, split_line
from graders._specs import EnvSpec, environment_yml_paths, requirements_paths, spec_for
from ledger.errors import SweclError

__all__ = [
    "EnvBuild",
    "EnvBuildError",
    "EnvInfo",
    "Era",
    "InstallResult",
    "build_env",
    "check_env",
    "ensure_repo_installed",
    "era_for",
    "guard_env",
    "install_fingerprint",
    "prepare_worktree",
    "record_env_files",
    "env_lock",
    "install_environment",
    "list_envs",
    "pre_install_plan",
    "prune_envs",
    "touch_used",
]

MARKER = ".complete"
FILES = "files.json"  # the venv manifest (see graders._integrity)
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
    exclude_newer: str | None = None  # the era cut-off the packages were resolved at

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


def env_identity(spec: EnvSpec, exclude_newer: str | None) -> str:
    """What names an environment: the spec hash, and the era cut-off when there is one
    (no cut-off keeps the name environments had before cut-offs existed)."""
    if exclude_newer is None:
        return spec.spec_hash()
    # recipe 4: exact pins exempt from the cut-off, pip of 2024 (earlier recipes could not
    # install newer pins at all, and their era pip could not install the repository);
    # recipe 5: a batch whose pins need newer dependencies resolves as of the images;
    # recipe 6: the build's packages are recorded (BUILT), so a later install starts from them;
    # recipe 7: era releases that do not run on the interpreter are replaced (graders._py_compat)
    return hashlib.sha256(f"{spec.spec_hash()}\nexclude-newer={exclude_newer}\nrecipe=7".encode()).hexdigest()


def _env_dir(
    cache_dir: Path, repo: str, version: str, spec: EnvSpec, interpreter: Interpreter, exclude_newer: str | None = None
) -> Path:
    name = f"py{interpreter.minor}-{env_identity(spec, exclude_newer)[:12]}"
    return cache_dir / "envs" / repo_slug(repo) / _safe(version) / name


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


def _uv_run(args: list[str], log: _Log, *, timeout_s: float = 3600) -> tuple[bool, str]:
    argv = [uv_bin(), *args]
    log.write("$ " + shlex.join(argv))
    try:
        done = subprocess.run(argv, capture_output=True, env=_uv_env(), stdin=subprocess.DEVNULL, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.write(f"failed to run: {exc}")
        return False, str(exc)
    text = (done.stdout + done.stderr).decode("utf-8", "replace").rstrip()
    log.write(text + f"\n[exit {done.returncode}]")
    return done.returncode == 0, text


def _uv(args: list[str], log: _Log, *, timeout_s: float = 3600) -> bool:
    return _uv_run(args, log, timeout_s=timeout_s)[0]


# uv's words for a file whose index gives no upload time: under --exclude-newer it is dropped.
_NO_UPLOAD_TIME = "missing an upload date"


def _find_links_configured() -> bool:
    """Whether uv will read find-links (never filtered by --exclude-newer): from the
    environment or a uv.toml it reads."""
    if os.environ.get("UV_FIND_LINKS"):
        return True
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    for conf in (os.environ.get("UV_CONFIG_FILE"), os.path.join(xdg, "uv", "uv.toml"), "/etc/uv/uv.toml"):
        try:
            text = Path(conf).read_text(encoding="utf-8") if conf else ""
        except OSError:
            continue
        if re.search(r"^\s*find-links\s*=", text, re.MULTILINE):
            return True
    return False


# An exact pin (`name==1.2`, `name[extra]===1.2`, with or without a marker): the spec's
# own choice, which the era cut-off must not overrule.
_EXACT_PIN = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*===?\s*[^\s,;*]+\s*(?:;.*)?$")


def exact_pins(requirements: Iterable[str]) -> dict[str, str]:
    """{normalised name: requirement} of the exact pins among `requirements`."""
    out: dict[str, str] = {}
    for req in requirements:
        m = _EXACT_PIN.match(req)
        if m:
            out[normalise_name(m.group(1))] = req.strip()
    return out


# When SWE-bench's environment images were built: the specs' exact pins are of then.
IMAGE_ERA = "2024-12-31T00:00:00Z"


@dataclass(slots=True)
class _Cutoff:
    """The era cut-off of one build: applied to every uv call until an index shows it has
    no upload times, then dropped (once, with one warning) for the rest of the build.

    Exact pins are exempt: swebench's specs pin versions released after a task's era
    (pytest 4.5 pins attrs 23.1.0), and a pin is the spec's decision, so the cut-off only
    chooses what the spec leaves open (unpinned packages and every dependency)."""

    when: str | None
    warnings: list[str] = field(default_factory=list)
    applied: bool = True

    def args(self, requirements: Iterable[str] = (), exempt: Mapping[str, str] | None = None) -> list[str]:
        """uv's arguments; `exempt`: package -> its own cut-off (a later date)."""
        if not (self.when and self.applied):
            return []
        out = ["--exclude-newer", self.when]
        for name in exact_pins(requirements):
            out += ["--exclude-newer-package", f"{name}=false"]
        for name, when in (exempt or {}).items():
            out += ["--exclude-newer-package", f"{name}={max(when, self.when)}"]
        return out

    def drop(self, log: _Log, why: str) -> None:
        self.applied = False
        text = f"the era cut-off {self.when} cannot apply ({why}); packages resolve by the spec's pins alone"
        self.warnings.append(text)
        log.write(f"# {text}")


def _uv_with_cutoff(
    args: list[str], cutoff: _Cutoff, log: _Log, requirements: Iterable[str] = (), exempt: Mapping[str, str] | None = None
) -> bool:
    """One uv call under the cut-off; when the index has no upload times, again without."""
    with_cutoff = cutoff.args(requirements, exempt)
    ok, text = _uv_run([*args, *with_cutoff], log)
    if not ok and with_cutoff and _NO_UPLOAD_TIME in text:
        cutoff.drop(log, "the package index serves no upload times")
        ok, _ = _uv_run(args, log)
    return ok


def _uv_install(python: Path, requirements: list[str], log: _Log, what: str, cutoff: _Cutoff | None = None) -> list[str]:
    """Install with uv: the batch online, then offline, then online without build
    isolation (old sdists such as MarkupSafe 1.0 only build against the venv's own
    setuptools); then one by one, each held to the batch's exact pins by a constraints
    file, so a later package can never replace an earlier pin (trio pulled in by
    exceptiongroup must not upgrade astropy 1.3's attrs 17.3.0). Returns warnings."""
    if not requirements:
        return []
    cut = cutoff or _Cutoff(None)
    # Compiled now, so an unconfined test run has no bytecode to write into the venv (see
    # graders._integrity); files that do not compile (Python 2 leftovers) are skipped by uv.
    base = ["pip", "install", "--compile-bytecode", "--python", os.fspath(python)]
    # Online first: offline, uv resolves among the files it happens to have cached, so the
    # same spec could give another environment on another machine. Offline is the fallback.
    attempts = ([], ["--offline"], ["--no-build-isolation"])
    for mode in attempts:
        if _uv_with_cutoff([*base, *mode, *requirements], cut, log, requirements):
            return []
    pins = exact_pins(requirements)
    if pins and cut.when and cut.applied and cut.when < IMAGE_ERA:
        # The spec pins releases newer than the task (sphinx 3.0's tox 4.16.0, of 2024),
        # and their own dependencies (cachetools>=5.3.3) did not exist at the era: the
        # pins are of SWE-bench's images, so the batch resolves as of when they were built.
        log.write(f"# {what}: the spec's pins need packages newer than the era {cut.when}; "
                  f"resolving this batch as of {IMAGE_ERA}, when SWE-bench's images were built")
        images = _Cutoff(IMAGE_ERA)
        for mode in attempts:
            if _uv_with_cutoff([*base, *mode, *requirements], images, log, requirements):
                return []
    log.write(f"# {what}: the batch failed; installing one by one, held to its exact pins")
    constraints = python.parent.parent.parent / f".swecl-{what}-pins.txt"  # beside the venv, in the build dir
    failed = []
    for req in requirements:
        # Its own pin is left out, so a pin that cannot install fails alone.
        own = exact_pins([req])
        held = [line for name, line in pins.items() if name not in own]
        constraints.write_text("".join(f"{line}\n" for line in held), encoding="utf-8")
        extra = ["--constraint", os.fspath(constraints)] if held else []
        if not any(_uv_with_cutoff([*base, *mode, *extra, req], cut, log, [req, *held]) for mode in attempts):
            failed.append(req)
    constraints.unlink(missing_ok=True)
    return [f"{what}: could not install {req}" for req in failed]


FileReader = Callable[[str], "str | None"]


def _dir_reader(root: Path) -> FileReader:
    def read(rel: str) -> str | None:
        path = root / rel
        return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None

    return read


def _requirements_from(read: FileReader, rel: str, seen: set[str]) -> list[str]:
    rel = posixpath.normpath(rel)
    if rel in seen:
        return []
    seen.add(rel)
    text = read(rel)
    if text is None:
        return []
    out: list[str] = []
    for raw in text.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", raw).strip()
        if not line:
            continue
        if line.startswith(("-r ", "--requirement ", "--requirement=")):
            target = re.split(r"[=\s]", line, maxsplit=1)[1].strip()
            out += _requirements_from(read, posixpath.join(posixpath.dirname(rel), target), seen)
        elif line.startswith("-"):
            continue  # -e ., -c constraints, index options: not requirements of the env
        else:
            out.append(line)
    return out


def _read_requirements(path: Path) -> list[str]:
    """The requirements of a file as pip reads them (`-r` includes followed)."""
    return _requirements_from(_dir_reader(path.parent), path.name, set())


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
    return _environment_yml_deps(path.read_text(encoding="utf-8", errors="replace"))


def _environment_yml_deps(text: str) -> list[str]:
    out: list[str] = []
    in_deps = False
    pip_indent: int | None = None  # indent of the `- pip:` item while inside its list
    for raw in text.splitlines():
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


def _packages(spec: EnvSpec, repo: str, read: FileReader | None, origin: str, log: _Log) -> tuple[list[str], list[str]]:
    """(requirements, warnings) for spec.packages; files come from `read` (`origin` says where)."""
    if not spec.packages:
        return [], []
    if spec.packages in ("requirements.txt", "environment.yml"):
        if read is None:
            raise EnvBuildError(
                f"{repo}: packages={spec.packages} is read from a checkout: build the environment with a worktree "
                "(grade a task, or pass worktree=)"
            )
        paths = requirements_paths(repo) if spec.packages == "requirements.txt" else environment_yml_paths(repo)
        for rel in paths:
            text = read(rel)
            if text is None:
                continue
            log.write(f"# packages from {rel} ({origin})")
            if spec.packages == "requirements.txt":
                return _requirements_from(read, rel, set()), []
            return _environment_yml_deps(text), []
        return [], [f"packages: none of {', '.join(paths)} exists in {origin}"]
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
    if not force and (final / MARKER).is_file():
        info = _read_info(final)
        if info is not None:
            return EnvBuild(info, built=False, warnings=list(info.warnings), log_path=final / "build.log")
    with nullcontext() if locked else file_lock(lock):
        if (final / MARKER).is_file() and not force:
            info = _read_info(final)
            if info is not None:
                return EnvBuild(info, built=False, warnings=list(info.warnings), log_path=final / "build.log")
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=final.parent))
        log = _Log(tmp / "build.log")
        try:
            cutoff = _Cutoff(exclude_newer)
            warnings = _build_into(tmp, repo, version, spec, interp, read_file, files_origin or "", cutoff, log)
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
    info = _read_info(final)
    assert info is not None
    return EnvBuild(info, built=True, warnings=list(info.warnings), log_path=final / "build.log")


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
    warnings += _uv_install(python, requirements, log, "packages", cutoff)
    warnings += _uv_install(python, list(spec.pip_packages), log, "pip_packages", cutoff)
    warnings += _repair_for_python(python, requirements, spec, interp, cutoff, log)
    warnings = cutoff.warnings + warnings
    for w in warnings:
        log.write(f"# WARNING {w}")
    return warnings


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
        args = ["pip", "install", "--compile-bytecode", "--python", os.fspath(python),
                "--constraint", os.fspath(constraints), requirement]
        return _uv_with_cutoff(args, cutoff, log, [requirement, *held], exempt={dist: IMAGE_ERA})

    try:
        return repair_for_python(python, requirement_names(requirements), set(pinned),
                                 list(exact_pins(spec.pip_packages).values()), install, log.write, interp.version)
    finally:
        constraints.unlink(missing_ok=True)


def install_environment(env: EnvInfo, extra: Mapping[str, str] = ()) -> dict[str, str]:
    """Variables for setup commands run with the env: host env, env bin first, no PYTHONPATH."""
    out = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "CONDA_PREFIX", "PYTHONSTARTUP")}
    out["PATH"] = os.pathsep.join([os.fspath(env.bin_dir), os.environ.get("PATH", "")])
    out["VIRTUAL_ENV"] = os.fspath(env.venv)
    out.update(dict(extra))
    return out


_MANIFEST_NAMES = frozenset({"setup.py", "setup.cfg", "pyproject.toml"})


def _is_dependency_manifest(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    if rel in _MANIFEST_NAMES:
        return True
    return name.endswith(".txt") and (name.startswith("requirements") or "/requirements/" in f"/{rel}")


def install_fingerprint(worktree: Path, commit: str) -> str | None:
    """SHA-256 over the dependency manifests at `commit` (root setup.py, setup.cfg,
    pyproject.toml; every requirements*.txt and requirements/*.txt), from git's blob ids:
    no file is read. None when `worktree` is not a git checkout."""
    if not (worktree / ".git").exists():
        return None
    listing = git(["ls-tree", "-r", "-z", "--full-tree", commit], cwd=worktree).stdout.decode("utf-8", "surrogateescape")
    lines = []
    for entry in listing.split("\0"):
        if not entry:
            continue
        meta, _, rel = entry.partition("\t")
        if _is_dependency_manifest(rel):
            lines.append(f"{meta.split()[-1]} {rel}")
    return hashlib.sha256("\n".join(sorted(lines)).encode("utf-8", "surrogateescape")).hexdigest()


def _install_state(env: EnvInfo) -> dict:
    try:
        state = json.loads((env.path / "installed.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def prepare_worktree(env: EnvInfo, spec: EnvSpec, wt: Worktree) -> str:
    """Clean the slot before a grade: every untracked and ignored file goes except the
    products of the env's install from this slot, which must be as the install left them
    (size and SHA-256); if one is missing or changed, everything goes and the install is
    forgotten so it runs again. Call with the env's lock held. Returns a note for the log."""
    state = _install_state(env)
    products = state.get("products")
    if not spec.install or state.get("worktree") != os.fspath(wt.path) or not state.get("ok") or not isinstance(products, dict):
        wt.clean()
        return "worktree cleaned (untracked and ignored files removed)"
    removed = wt.clean(keep=products)
    now = products_manifest(wt.path, products)
    damaged = sorted(p for p in products if now.get(p) != products[p])
    if damaged:
        wt.clean()
        (env.path / "installed.json").unlink(missing_ok=True)
        return (f"worktree cleaned; {len(damaged)} install product(s) changed since the install "
                f"({', '.join(damaged[:3])}): removed all, the install runs again")
    return f"worktree cleaned: {len(removed)} untracked/ignored file(s) removed, {len(products)} install product(s) kept"


def ensure_repo_installed(
    env: EnvInfo,
    spec: EnvSpec,
    worktree: Path,
    commit: str,
    *,
    fingerprint: str | None = None,
    timeout_s: float = 3600,
) -> InstallResult:
    """Run spec.install in `worktree` unless the env already has it installed from there.

    Call with the env's lock held (`env_lock`). Re-runs when the last install was made
    from another worktree, failed, had other dependency manifests (`fingerprint`, see
    `install_fingerprint`), or (install_per_task) at another commit. After an install
    its products in the worktree and the venv's files are recorded.
    """
    if not spec.install:
        return InstallResult(ran=False, ok=True)
    state_file = env.path / "installed.json"
    state = _install_state(env)
    same_place = (
        state.get("worktree") == os.fspath(worktree) and state.get("ok") is True and state.get("install") == spec.install
        and state.get("fingerprint") == fingerprint and state.get("recipe") == INSTALL_RECIPE
    )
    if same_place and (not spec.install_per_task or state.get("commit") == commit):
        return InstallResult(ran=False, ok=True, log=f"(repo already installed from {worktree} at {state.get('commit')})\n")
    state_file.unlink(missing_ok=True)
    results: list[LineResult] = []
    variables: dict[str, str] = {}
    era_note = _back_to_built(env, timeout_s=timeout_s)
    era_note += _era_dependencies(env, spec.install, worktree, timeout_s=timeout_s)
    for line in [spec.install]:  # `a; b` lines are split by run_line itself
        results.append(
            run_line(line, cwd=worktree, env=install_environment(env), python=env.python,
                     bin_dir=env.bin_dir, variables=variables, timeout_s=timeout_s)
        )
    ok = all(r.status == "ok" for r in results)
    text = era_note + "".join(f"$ {r.line}\n{r.output}[{r.status}{': ' + r.reason if r.reason else ''}]\n" for r in results)
    products: dict = {}
    if (worktree / ".git").exists():
        products = products_manifest(worktree, untracked_files(worktree))
    # installing writes into the venv too (the editable finder, scripts): the harness's own act
    record_env_files(env)
    state_file.write_text(
        json.dumps({"worktree": os.fspath(worktree), "commit": commit, "install": spec.install, "ok": ok,
                    "recipe": INSTALL_RECIPE,
                    "fingerprint": fingerprint, "products": products, "at": time.time()}) + "\n",
        encoding="utf-8",
    )
    return InstallResult(ran=True, ok=ok, log=text)


# 2: the repository's own requirements are installed under the era cut-off first
INSTALL_RECIPE = 2

# The env's packages as its build left them (`uv pip freeze`), so that every install of
# the repository starts from them: an install for other dependency manifests (another
# task's setup.py) leaves packages behind, and the next install keeps whatever already
# satisfies it (pytest 8 from an unpinned install stays where the era has pytest 6).
# SWE-bench builds each instance's image from the environment image the same way.
BUILT = "built.txt"


def _record_built(python: Path, path: Path, log: _Log) -> None:
    argv = [uv_bin(), "pip", "freeze", "--python", os.fspath(python)]
    log.write("$ " + shlex.join(argv))
    try:
        done = subprocess.run(argv, capture_output=True, env=_uv_env(), stdin=subprocess.DEVNULL, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.write(f"failed to run: {exc}; installs will not start from the build's packages")
        return
    log.write((done.stdout + done.stderr).decode("utf-8", "replace").rstrip() + f"\n[exit {done.returncode}]")
    if done.returncode == 0:
        path.write_bytes(done.stdout)


def _back_to_built(env: EnvInfo, *, timeout_s: float) -> str:
    """The venv's packages back to the build's (`uv pip sync`, from uv's cache); lines
    for the install log. An env built before builds were recorded is left as it is."""
    built = env.path / BUILT
    if not built.is_file():
        return ""
    return _uv_install_log(["pip", "sync", "--python", os.fspath(env.python), os.fspath(built)], timeout_s=timeout_s,
                           failed="the env's packages could not be put back to its build's")


def _uv_install_log(args: list[str], *, timeout_s: float, failed: str, cwd: Path | None = None) -> str:
    """One uv call of the repository's install step, as lines for its install log (which
    is text the grade keeps, not the build's `_Log`); `failed` says what a failure means."""
    argv = [uv_bin(), *args]
    try:
        done = subprocess.run(argv, cwd=cwd, capture_output=True, env=_uv_env(), stdin=subprocess.DEVNULL,
                              timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"[swecl] {failed} ({exc})\n"
    out = (done.stdout + done.stderr).decode("utf-8", "replace")
    verdict = "ok" if done.returncode == 0 else f"exit {done.returncode}: {failed}"
    return f"$ {shlex.join(argv)}\n{out}[{verdict}]\n"


def _era_dependencies(env: EnvInfo, install: str, worktree: Path, *, timeout_s: float) -> str:
    """Before `pip install -e .[extras]`: the checkout's requirements installed with uv as
    of the env's era (see `graders._era_deps`). Returns the lines for the install log;
    when anything fails, pip resolves as it would have, and the log says so."""
    extras = self_install_extras(install)
    if extras is None or not env.exclude_newer:
        return ""
    reqs, how = project_requirements(worktree, env.python, extras, timeout_s=min(timeout_s, 600))
    head = f"[swecl] the repository's requirements as of {env.exclude_newer}: {how}\n"
    if not reqs:
        return head
    args = ["pip", "install", "--python", os.fspath(env.python), "--exclude-newer", env.exclude_newer, *reqs]
    return head + _uv_install_log(args, cwd=worktree, timeout_s=timeout_s, failed="not installed: pip resolves them instead")


# -- integrity of the venv ------------------------------------------------------------------


def record_env_files(env: EnvInfo) -> None:
    """Record the venv's files as they are now (after a build or the harness's install)."""
    save_manifest(env.path / FILES, venv_manifest(env.venv))


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
