"""Find a Python interpreter by version, the ways users' machines provide one.

Order: an explicit mapping passed in, `$SWECL_PYTHON_3_9`-style variables, the
interpreter running swecl (when it matches), `python3.9` on PATH, pyenv's
`versions/3.9.*`, then uv's view (`uv python find`, downloads off: it also sees
uv-managed interpreters). Every candidate is *run* once to read its version: a
pyenv shim on PATH exists for every installed version but fails for the ones not
selected (`pyenv: python3.9: command not found`), so a file's existence proves nothing.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from ledger.errors import PythonNotFound, SweclError

__all__ = ["Interpreter", "PythonNotFound", "env_var_name", "find_python", "python_version_of", "uv_bin"]

_VERSION_RE = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?$")
_PROBE = "import sys; print('%d.%d.%d' % tuple(sys.version_info[:3]))"


@dataclass(frozen=True, slots=True)
class Interpreter:
    path: Path
    version: str  # full "3.9.18"
    source: str  # explicit | env | current | path | pyenv | uv

    @property
    def minor(self) -> str:
        return ".".join(self.version.split(".")[:2])


def env_var_name(version: str) -> str:
    """`3.9` -> `SWECL_PYTHON_3_9`."""
    return "SWECL_PYTHON_" + version.replace(".", "_")


def uv_bin() -> str:
    """The uv binary of the `uv` PyPI package (a swecl dependency), else `uv` on PATH."""
    try:
        import uv  # the PyPI package ships the binary and tells where it is

        return uv.find_uv_bin()
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv")
        if found is None:
            raise SweclError("uv not found: install swecl's dependencies (`pip install uv`)") from None
        return found


def python_version_of(path: str | os.PathLike[str], *, timeout_s: float = 20.0) -> str | None:
    """Run `path` and return its "X.Y.Z", or None when it does not run as a Python."""
    try:
        done = subprocess.run(
            [os.fspath(path), "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    out = done.stdout.strip()
    return out if done.returncode == 0 and re.fullmatch(r"\d+\.\d+\.\d+", out) else None


def _matches(found: str, wanted: str) -> bool:
    w = wanted.split(".")
    return found.split(".")[: len(w)] == w


def _pyenv_root(environ: Mapping[str, str]) -> Path | None:
    if environ.get("PYENV_ROOT"):
        return Path(environ["PYENV_ROOT"])
    pyenv = shutil.which("pyenv", path=environ.get("PATH"))
    if pyenv:
        try:
            done = subprocess.run([pyenv, "root"], capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)
            if done.returncode == 0 and done.stdout.strip():
                return Path(done.stdout.strip())
        except (OSError, subprocess.SubprocessError):
            pass
    default = Path.home() / ".pyenv"
    return default if default.is_dir() else None


def _patch_key(path: Path) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else -1 for p in re.split(r"[.\-]", path.name))


def _pyenv_candidates(wanted: str, environ: Mapping[str, str]) -> Iterator[Path]:
    root = _pyenv_root(environ)
    if root is None or not (root / "versions").is_dir():
        return
    major, minor = wanted.split(".")[:2]
    dirs = [d for d in (root / "versions").iterdir() if d.is_dir() and _matches(d.name.split("-")[0], wanted)]
    for d in sorted(dirs, key=_patch_key, reverse=True):  # newest patch release first
        for name in (f"python{major}.{minor}", f"python{major}", "python"):
            if (d / "bin" / name).exists():
                yield d / "bin" / name
                break


def _uv_candidate(wanted: str) -> Path | None:
    try:
        done = subprocess.run(
            # no --system: uv-managed installs must count; a venv's python of the right
            # version is a fine base for `uv venv` too
            [uv_bin(), "python", "find", "--no-python-downloads", wanted],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "UV_PYTHON_DOWNLOADS": "never"},
        )
    except (OSError, subprocess.SubprocessError, SweclError):
        return None
    out = done.stdout.strip().splitlines()
    return Path(out[-1]) if done.returncode == 0 and out else None


# find_python's answers in this process, by what they were found from: each grade looks its
# interpreter up, and running the candidates (a pyenv shim that fails, then pyenv's own
# binary) cost about 0.2 s a grade, a fifth of a warm grade's own cost.
_FOUND: dict[tuple, tuple[Interpreter, tuple[int, int, int, int]]] = {}
_FOUND_LOCK = threading.Lock()
# what the search reads besides the explicit mapping (SWECL_PYTHON_* are read by name)
_SEARCH_VARS = ("PATH", "PYENV_ROOT", "PYENV_VERSION", "UV_PYTHON_INSTALL_DIR")


def _identity(path: Path) -> tuple[int, int, int, int] | None:
    """The file an interpreter runs, as the kernel knows it: the same file at the same
    size and time runs the same Python."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _binary(path: Path) -> bool:
    """An executable file, not a script: a script (a pyenv shim) picks its Python from
    settings outside it, so its answer may change while the file stays the same."""
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def find_python(
    version: str | None,
    *,
    explicit: Mapping[str, str | os.PathLike[str]] | None = None,
    environ: Mapping[str, str] | None = None,
    use_current: bool = True,
) -> Interpreter:
    """An interpreter for `version` ("3.9" or "3.9.18"); None = the one running swecl.

    explicit: version -> interpreter path, checked first (a wrong path is an error, not
    skipped: the user asked for it). Raises `PythonNotFound` naming every way to provide
    the missing Python. An answer that is a binary is kept for the process, asked again
    when the same search would read other settings or the binary changed.
    """
    environ = os.environ if environ is None else environ
    key = (version, tuple(sorted((k, os.fspath(v)) for k, v in (explicit or {}).items())), use_current,
           tuple(environ.get(k) for k in _SEARCH_VARS),
           tuple(sorted((k, v) for k, v in environ.items() if k.startswith("SWECL_PYTHON_"))))
    with _FOUND_LOCK:
        kept = _FOUND.get(key)
    if kept is not None and _identity(kept[0].path) == kept[1]:
        return kept[0]
    found = _find_python(version, explicit=explicit, environ=environ, use_current=use_current)
    identity = _identity(found.path)
    if identity is not None and _binary(found.path):
        with _FOUND_LOCK:
            _FOUND[key] = (found, identity)
    return found


def _find_python(version: str | None, *, explicit: Mapping[str, str | os.PathLike[str]] | None,
                 environ: Mapping[str, str], use_current: bool) -> Interpreter:
    current = "%d.%d.%d" % sys.version_info[:3]
    if version is None:
        return Interpreter(Path(sys.executable), current, "current")
    wanted = str(version).strip()
    if not _VERSION_RE.match(wanted):
        raise PythonNotFound(f"python version {version!r} is not of the form 3.9 or 3.9.18: fix the environment spec")
    minor = ".".join(wanted.split(".")[:2])

    pinned: list[tuple[str, str]] = []
    for key in (wanted, minor):
        if explicit and key in explicit:
            pinned.append((os.fspath(explicit[key]), "explicit"))
        if environ.get(env_var_name(key)):
            pinned.append((environ[env_var_name(key)], "env"))
    for path, source in pinned:
        found = python_version_of(path)
        if found is None or not _matches(found, wanted):
            what = f"Python {found}" if found else "not a runnable Python"
            raise PythonNotFound(
                f"the interpreter given for Python {wanted} ({source}: {path}) is {what}: "
                f"fix {env_var_name(minor)} or the python mapping"
            )
        return Interpreter(Path(path), found, source)

    if use_current and _matches(current, wanted):
        return Interpreter(Path(sys.executable), current, "current")

    major = wanted.split(".")[0]
    for name in (f"python{minor}", f"python{major}"):
        path = shutil.which(name, path=environ.get("PATH"))
        if path:
            found = python_version_of(path)
            if found and _matches(found, wanted):
                return Interpreter(Path(path), found, "path")
    for path in _pyenv_candidates(wanted, environ):
        found = python_version_of(path)
        if found and _matches(found, wanted):
            return Interpreter(path, found, "pyenv")
    uv_path = _uv_candidate(wanted)
    if uv_path is not None:
        found = python_version_of(uv_path)
        if found and _matches(found, wanted):
            return Interpreter(uv_path, found, "uv")
    # uv refuses versions before 3.6 ("Python <3.6 is not supported"): django 2.2's 3.5
    by_uv = (f" or `uv python install {minor}`" if _version_tuple(minor) >= (3, 6)
             else f" (uv provides no Python before 3.6)")
    raise PythonNotFound(
        f"Python {wanted} not found (looked at {env_var_name(minor)}, python{minor} on PATH, "
        f"pyenv versions, uv-managed interpreters): set {env_var_name(minor)}=/path/to/python{minor}, "
        f"put python{minor} on PATH, run `pyenv install {minor}`{by_uv}"
    )


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".") if p.isdigit())
