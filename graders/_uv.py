"""uv plumbing of the environment builds: running uv with a build log (`_Log`, `_uv_run`),
the era cut-off applied to every call (`_Cutoff`, `_uv_with_cutoff`, exact pins exempt),
and installing a batch of requirements with its fallbacks (`_uv_install`).

Why the cut-off and how packages are installed: see `graders._envs`.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from graders._interpreters import uv_bin
from graders._py_compat import normalise_name, requirement_names

__all__ = ["BUILD_BACKEND_FLOOR", "HISTORY_LOST", "IMAGE_ERA", "exact_pins"]


class _Log:
    """A build's log, and what its uv calls run with beyond `_uv_env()` (`env`: the
    compiler cache, `graders._compiler_cache.compiler_cache_environment`, so that a
    source the build compiles again, in a fallback or in another environment's build,
    comes from ccache's cache)."""

    def __init__(self, path: Path, env: Mapping[str, str] | None = None) -> None:
        self.path = path
        self.env = dict(env or {})
        self.fh = open(path, "a", encoding="utf-8")

    def write(self, text: str) -> None:
        self.fh.write(text if text.endswith("\n") else text + "\n")
        self.fh.flush()

    def close(self) -> None:
        self.fh.close()


def venv_python_version(python: Path) -> tuple[int, int] | None:
    """The (major, minor) of the venv `python` belongs to, from its pyvenv.cfg (uv writes
    `version_info`, the standard venv `version`); None when it cannot be read."""
    try:
        text = (python.parent.parent / "pyvenv.cfg").read_text(encoding="utf-8")
    except OSError:
        return None
    if m := re.search(r"^\s*version(?:_info)?\s*=\s*(\d+)\.(\d+)", text, re.MULTILINE):
        return int(m[1]), int(m[2])
    return None


def compile_flag(python: Path) -> list[str]:
    """`--compile-bytecode`, so an unconfined test run has no bytecode to write into the venv
    (see graders._integrity; files that do not compile, Python 2 leftovers, uv skips). Not
    below Python 3.7: uv compiles with a script that needs `py_compile.PycInvalidationMode`
    (3.7+), so on a 3.6 venv (astropy 1.3) every install would fail after installing. Such
    venvs compile lazily, and `guard_env` drops the caches tests write."""
    version = venv_python_version(python)
    return [] if version is not None and version < (3, 7) else ["--compile-bytecode"]


def _uv_env() -> dict[str, str]:
    # No PYTHONPYCACHEPREFIX: `--compile-bytecode` must write beside the env's files, where
    # the env's bytecode cache takes them from (graders._bytecode.env_pycache); a user's
    # prefix would send them elsewhere and leave every test run compiling them again.
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "CONDA_PREFIX", "PYTHONPYCACHEPREFIX")}
    env["UV_PYTHON_DOWNLOADS"] = "never"
    return env


def _uv_run(args: list[str], log: _Log, *, timeout_s: float = 3600) -> tuple[bool, str]:
    argv = [uv_bin(), *args]
    log.write("$ " + shlex.join(argv))
    started = time.monotonic()
    try:
        done = subprocess.run(argv, capture_output=True, env={**_uv_env(), **log.env}, stdin=subprocess.DEVNULL,
                              timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.write(f"failed to run: {exc}")
        return False, str(exc)
    text = (done.stdout + done.stderr).decode("utf-8", "replace").rstrip()
    # the seconds say which attempt or fallback a slow build spent its time in
    log.write(text + f"\n[exit {done.returncode}, {time.monotonic() - started:.1f} s]")
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


# Packages whose release history was deleted from PyPI, one release uploaded again later:
# under an earlier cut-off they have no release at all, and the resolver quietly steps
# around them. atomicwrites' author removed every file on 2022-07-08 and uploaded 1.4.1
# again; pytest 3.6 to 5.0 require it on every platform, so scikit-learn 0.21's era
# (2019-08) resolved to pytest 3.5.1, too old to print `-rA` PASSED lines. Such a package
# takes its re-upload as its cut-off: the nearest to the era the index can still give.
# Applied whatever the index: a private mirror that kept the lost files (atomicwrites
# 1.3.0 of 2019) still gives 1.4.1 under an earlier era, the same release PyPI gives,
# so an environment resolves alike on both.
HISTORY_LOST = {"atomicwrites": "2022-07-09T00:00:00Z"}


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
        pinned = exact_pins(requirements)
        for name in pinned:
            out += ["--exclude-newer-package", f"{name}=false"]
        for name, when in {**HISTORY_LOST, **(exempt or {})}.items():
            if normalise_name(name) not in pinned:  # a pin is already free of any cut-off
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
    return _uv_with_cutoff_text(args, cutoff, log, requirements, exempt)[0]


def _uv_with_cutoff_text(
    args: list[str], cutoff: _Cutoff, log: _Log, requirements: Iterable[str] = (), exempt: Mapping[str, str] | None = None
) -> tuple[bool, str]:
    with_cutoff = cutoff.args(requirements, exempt)
    ok, text = _uv_run([*args, *with_cutoff], log)
    if not ok and with_cutoff and _NO_UPLOAD_TIME in text:
        cutoff.drop(log, "the package index serves no upload times")
        ok, text = _uv_run(args, log)
    return ok, text


# uv's words when a source build itself failed (not the download): offline, the same
# files would build the same way, so that attempt is skipped. It matters for time: an
# era sdist with no wheel for the interpreter (bottleneck 1.3.2 on Python 3.10) compiles
# its numpy for minutes before it fails.
_BUILD_FAILED = "build backend returned an error"


def _install_attempts(
    base: list[str], args: list[str], cutoff: _Cutoff, log: _Log, requirements: Iterable[str],
    exempt: Mapping[str, str] | None = None,
) -> bool:
    """Online, then offline (unless the online attempt failed in a source build), then
    without build isolation (old sdists such as MarkupSafe 1.0 only build against the
    venv's own packages). Online first: offline, uv resolves among the files it happens to
    have cached, so the same spec could give another environment on another machine."""
    reqs = list(requirements)
    ok, text = _uv_with_cutoff_text([*base, *args], cutoff, log, reqs, exempt)
    if ok:
        return True
    if _BUILD_FAILED not in text and _uv_with_cutoff([*base, "--offline", *args], cutoff, log, reqs, exempt):
        return True
    ok, again = _uv_with_cutoff_text([*base, "--no-build-isolation", *args], cutoff, log, reqs, exempt)
    if not ok:
        _no_more_builds(base, text, again, log)
    return ok


_FAILED_BUILD = re.compile(r"Failed to build `([A-Za-z0-9][A-Za-z0-9._-]*)==[^`]+`")


def _no_more_builds(base: list[str], isolated: str, unisolated: str, log: _Log) -> None:
    """A package whose source failed to build with and without isolation is not built again
    by this install (`base` gains `--only-binary NAME`: its wheels only). Why: an era
    release with no wheel for a newer interpreter (pyzmq 22.3.0 on matplotlib 3.5's Python
    3.11, which ipywidgets, ipykernel and notebook all need) compiled for minutes in every
    later attempt and fallback, to fail the same way; its fallbacks then find a wheel."""
    for name in dict.fromkeys(_FAILED_BUILD.findall(unisolated)):
        if name in _FAILED_BUILD.findall(isolated) and name not in base:
            log.write(f"# {name}: its source failed to build with and without isolation; "
                      "from now on only its wheels (--only-binary)")
            base += ["--only-binary", name]


# uv builds a legacy sdist (setup.py, no pyproject.toml) with `setuptools>=40.8.0`, the
# first release with `build_meta.__legacy__`. Under an older cut-off (astropy 1.3's
# 2018-10-01) no such setuptools exists, so every old sdist (PyYAML 3.12, MarkupSafe 1.0)
# failed to build, and without build isolation the venv's era setuptools (38.2.4) has no
# legacy backend either. Build environments may take setuptools up to 40.8.0's release:
# the nearest to the era that uv can build with (it still has `Feature`, which 46 removed).
# The venv's own setuptools is installed already and stays the seed's (uv keeps what
# satisfies a requirement); only a requirement needing a newer one could move it.
BUILD_BACKEND_FLOOR = {"setuptools": "2019-02-06T00:00:00Z"}


def _uv_install(python: Path, requirements: list[str], log: _Log, what: str, cutoff: _Cutoff | None = None) -> list[str]:
    """Install with uv (the batch through `_install_attempts`); then one by one, each held
    to the batch's exact pins by a constraints file, so a later package can never replace
    an earlier pin (trio pulled in by exceptiongroup must not upgrade astropy 1.3's attrs
    17.3.0). A package no release of the era installs here (no wheel for this Python, and
    its source does not build) gets the newest wheel as of SWE-bench's images, with a
    warning. Returns warnings."""
    if not requirements:
        return []
    cut = cutoff or _Cutoff(None)
    base = ["pip", "install", *compile_flag(python), "--python", os.fspath(python)]
    pins = exact_pins(requirements)
    build_pins = _build_constraints(pins)
    build_file = python.parent.parent.parent / f".swecl-{what}-build-pins.txt"  # beside the venv, in the build dir
    if build_pins:
        build_file.write_text("".join(f"{line}\n" for line in build_pins), encoding="utf-8")
        base += ["--build-constraints", os.fspath(build_file)]
    try:
        return _uv_install_batch(python, requirements, log, what, cut, base, pins)
    finally:
        build_file.unlink(missing_ok=True)


def installed_pins(python: Path) -> dict[str, str]:
    """{normalised name: `name==version`} of the venv's packages from an index (`uv pip
    freeze`; editable and local installs left out); empty when uv cannot say."""
    try:
        done = subprocess.run([uv_bin(), "pip", "freeze", "--python", os.fspath(python)], capture_output=True,
                              env=_uv_env(), stdin=subprocess.DEVNULL, timeout=600)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    out = {}
    for line in done.stdout.decode("utf-8", "replace").splitlines() if done.returncode == 0 else []:
        name, sep, version = line.strip().partition("==")
        if sep and name and " " not in name:
            out[normalise_name(name)] = f"{name}=={version}"
    return out


def _build_constraints(pins: Mapping[str, str]) -> list[str]:
    """The batch's exact pins as constraints of every isolated source build, except the
    build backends (`BUILD_BACKEND_FLOOR` governs those). Why: an era sdist that builds
    against a package the spec pins (h5py 3.2.1 requires numpy==1.19.3 to build, bottleneck
    1.3.2 numpy 1.17.3) compiled that era release from source in its build environment,
    on an interpreter it never supported (Python 3.10 for xarray 0.12): minutes of compiling
    numpy per attempt, to fail; and where it built, the extension was built against another
    numpy than the one it runs with. With the pin (numpy 1.23.0, a wheel for the
    interpreter) a build needing `numpy>=1.x` builds against it, and one that needs
    another exact release fails at once, so the fallbacks come into play without the wait.
    Extras are dropped: a constraint names a distribution."""
    return [re.sub(r"\[[^\]]*\]", "", line, count=1) for name, line in pins.items() if name not in BUILD_BACKEND_FLOOR]


def _uv_install_batch(
    python: Path, requirements: list[str], log: _Log, what: str, cut: _Cutoff, base: list[str], pins: Mapping[str, str],
) -> list[str]:
    if _install_attempts(base, requirements, cut, log, requirements, BUILD_BACKEND_FLOOR):
        return []
    if pins and cut.when and cut.applied and cut.when < IMAGE_ERA:
        # The spec pins releases newer than the task (sphinx 3.0's tox 4.16.0, of 2024),
        # and their own dependencies (cachetools>=5.3.3) did not exist at the era: the
        # pins are of SWE-bench's images, so the batch resolves as of when they were built.
        log.write(f"# {what}: the spec's pins need packages newer than the era {cut.when}; "
                  f"resolving this batch as of {IMAGE_ERA}, when SWE-bench's images were built")
        if _install_attempts(base, requirements, _Cutoff(IMAGE_ERA), log, requirements):
            return []
    log.write(f"# {what}: the batch failed; installing one by one, held to its exact pins")
    constraints = python.parent.parent.parent / f".swecl-{what}-pins.txt"  # beside the venv, in the build dir
    failed, warnings, later = [], [], []
    for req in requirements:
        # Its own pin is left out, so a pin that cannot install fails alone.
        own = exact_pins([req])
        held = [line for name, line in pins.items() if name not in own]
        constraints.write_text("".join(f"{line}\n" for line in held), encoding="utf-8")
        extra = ["--constraint", os.fspath(constraints)] if held else []
        if _install_attempts(base, [*extra, req], cut, log, [req, *held], BUILD_BACKEND_FLOOR):
            continue
        name = next((normalise_name(n) for n in requirement_names([req])), None)
        if not own and name and cut.when and cut.applied and cut.when < IMAGE_ERA:
            # The interpreter is newer than the era (xarray 0.12's Python 3.10, cut-off
            # 2021-05): no era release of a compiled package has a wheel for it, and the
            # sources do not build. SWE-bench's images resolved such packages when they were
            # built, so this one comes as a wheel of then; its dependencies stay of the era.
            exempt = {**BUILD_BACKEND_FLOOR, name: IMAGE_ERA}
            if _uv_with_cutoff([*base, "--only-binary", name, *extra, req], cut, log, [req, *held], exempt):
                text = (f"{what}: no release of {req} as of {cut.when} installs on this Python (no wheel, "
                        f"its source does not build): installed its newest wheel as of {IMAGE_ERA} (SWE-bench's images)")
                log.write(f"# {text}")
                warnings.append(text)
                continue
            # Its dependencies are what fails: tried once every other requirement of the
            # stage is in (below), so that those are of the era or their own fallback.
            later.append((req, name, own))
            continue
        failed.append(req)
    for req, name, own in later:
        # The requirement with its dependencies as of SWE-bench's images (pytest-mpl of
        # 2019 needs a matplotlib of then, which has no wheel for Python 3.9 and does not
        # build). Never left to pip, which would take today's releases (pyparsing 3.3 turns
        # every camelCase call into a DeprecationWarning, which astropy 3.1's tests raise as
        # errors). What is installed stays as it is: this brings in releases newer than the
        # era for this requirement, never in place of another's (xarray 0.12: cartopy 0.24 of
        # the images needs matplotlib>=3.6 and, tried before matplotlib and seaborn were in,
        # took matplotlib 3.10, which seaborn 0.11 of the era cannot import: no test was
        # collected).
        held = [line for n, line in pins.items() if n not in own]
        kept = [line for dist, line in installed_pins(python).items() if dist != name and dist not in pins]
        constraints.write_text("".join(f"{line}\n" for line in [*held, *kept]), encoding="utf-8")
        extra = ["--constraint", os.fspath(constraints)] if held or kept else []
        if _uv_with_cutoff([*base, *extra, req], _Cutoff(IMAGE_ERA), log, [req, *held, *kept], BUILD_BACKEND_FLOOR):
            text = (f"{what}: no release of {req} as of {cut.when} installs on this Python with its dependencies "
                    f"of then: installed it and them as of {IMAGE_ERA} (SWE-bench's images)")
            log.write(f"# {text}")
            warnings.append(text)
            continue
        failed.append(req)
    constraints.unlink(missing_ok=True)
    return warnings + [f"{what}: could not install {req}" for req in failed]
