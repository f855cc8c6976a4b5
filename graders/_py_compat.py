"""Packages of the task's era that do not run on the environment's Python.

The era cut-off picks, for a package the repository leaves unpinned, the newest release
of the task's time; SWE-bench's images resolved the same names when they were built
(2024). Where the era's release uses a standard-library name the interpreter no longer
has, the two differ in kind, not degree: xarray 2022.06 on Python 3.10 gets pydap 3.2.2
(the newest of October 2022), whose `pydap.client` does `from collections import
Mapping`; xarray's backends import it at `import xarray`, so every test of the task
errors and the gold patch fails. The images had pydap 3.5.

So after a build, each package the repository asked for is imported module by module in
the venv, and a failure counts only when it is this Python's doing: an ImportError or
AttributeError whose missing name belongs to the standard library, or a ModuleNotFoundError
for a standard module that was removed (imp, distutils, asyncore, ...). An optional
dependency that is not installed (ModuleNotFoundError of a third-party name) is the
package's normal behaviour and does not count. A package that fails is resolved again
as of when SWE-bench's images were built, held to everything else as installed, and the
build records a warning naming the release, the failure and the replacement.

The same holds for a release whose native library came from conda in the images and is
absent here: xarray's environment.yml lists cfgrib, whose era dependency eccodes 1.4 is a
pure-Python binding to a C library conda installed beside it. On this host `import cfgrib`
raises `RuntimeError: Cannot find the ecCodes library`, which xarray's `_importorskip`
does not catch (it catches ImportError), so conftest fails to load and no test runs.
PyPI's eccodes 2.37 and later are wheels that bundle the library. So an error raised at
import whose message says a shared library cannot be found or opened counts too, charged
to the package whose code raised it (the innermost frame outside the standard library:
ctypes raises OSError from its own file on the package's behalf).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import NamedTuple

# Standard modules removed in 3.10-3.13: their absence is the interpreter's, not a
# missing optional dependency (PEP 594, PEP 632, imp in 3.12). Windows-only ones (msilib)
# are absent on every POSIX Python and say nothing.
REMOVED_STDLIB = frozenset({
    "imp", "distutils", "asynchat", "asyncore", "smtpd", "aifc", "audioop", "cgi", "cgitb", "chunk", "crypt",
    "imghdr", "mailcap", "nis", "nntplib", "ossaudiodev", "pipes", "sndhdr", "spwd", "sunau",
    "telnetlib", "uu", "xdrlib", "lib2to3", "formatter", "parser", "symbol", "binhex", "_bootlocale",
})

# Runs inside the venv's interpreter, which may be as old as 3.5: no f-strings, no walrus.
_PROBE = r'''
import importlib, json, os, re, sys, sysconfig, traceback
out_path, removed = sys.argv[1], set(sys.argv[2].split(","))
modules = json.loads(sys.stdin.read())
names = getattr(sys, "stdlib_module_names", None)
std_dirs = tuple(sorted(set(os.path.join(sysconfig.get_paths()[k], "") for k in ("stdlib", "platstdlib"))))
NATIVE = re.compile(r"cannot open shared object file|library not found|"
                    r"(cannot|can't|could not|couldn't|unable to|failed to) (find|load|locate|open)\b.{0,80}\blibrary",
                    re.I | re.S)
def native_missing(exc):
    """An error at import saying a shared library is not there (not a missing module)."""
    if type(exc).__name__ == "ModuleNotFoundError" or not isinstance(exc, (ImportError, OSError, RuntimeError)):
        return False
    return bool(NATIVE.search(str(exc)))
def raised_in(exc, skip_std):
    tb = traceback.extract_tb(exc.__traceback__)
    files = [frame[0] for frame in reversed(tb)]
    if skip_std:
        files = [f for f in files if not f.startswith(std_dirs) or "site-packages" in f]
    return files[0] if files else ""
def is_stdlib(name):
    top = (name or "").split(".")[0]
    if not top:
        return False
    if top in removed or top in sys.builtin_module_names:
        return True
    if names is not None:
        return top in names
    try:
        import importlib.util, sysconfig
        spec = importlib.util.find_spec(top)
    except Exception:
        return False
    origin = getattr(spec, "origin", None) or ""
    std = sysconfig.get_paths()["stdlib"]
    return origin.startswith(std) and "site-packages" not in origin
def missing_from(exc):
    if isinstance(exc, ImportError):
        if type(exc).__name__ == "ModuleNotFoundError":
            return exc.name if (exc.name or "").split(".")[0] in removed else None
        if exc.name:
            return exc.name
        tb = traceback.extract_tb(exc.__traceback__)
        line = tb[-1][3] if tb else ""
        m = re.match(r"\s*from\s+([\w.]+)\s+import", line or "")
        return m.group(1) if m else None
    if isinstance(exc, AttributeError):
        obj = getattr(exc, "obj", None)
        if obj is not None and hasattr(obj, "__name__") and type(obj).__name__ == "module":
            return obj.__name__
        m = re.match(r"module '([\w.]+)' has no attribute", str(exc))
        return m.group(1) if m else None
    return None
broken = {}
for dist, mods in modules.items():
    for mod in mods:
        try:
            importlib.import_module(mod)
        except BaseException as exc:
            why = "%s: %s: %s" % (mod, type(exc).__name__, " ".join(str(exc).split()))
            if isinstance(exc, Exception) and native_missing(exc):
                broken[dist] = [why, raised_in(exc, True), "native"]
                break
            name = missing_from(exc) if isinstance(exc, Exception) else None
            if name and is_stdlib(name):
                broken[dist] = [why, raised_in(exc, False), "stdlib"]
                break
with open(out_path, "w") as fh:
    json.dump(broken, fh)
'''

_SKIP_PARTS = frozenset({"tests", "test", "testing", "__pycache__", "benchmarks", "examples", "docs"})


def normalise_name(name: str) -> str:
    """A distribution name as PEP 503 compares them (`Py_Thing.x` -> `py-thing-x`)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def site_packages(venv: Path) -> Path | None:
    found = sorted(venv.glob("lib/python*/site-packages"))
    return found[0] if found else None


def installed(site: Path) -> dict[str, tuple[str, Path]]:
    """{normalised name: (version, dist-info dir)} of the wheels installed in `site`."""
    out: dict[str, tuple[str, Path]] = {}
    for info in site.glob("*.dist-info"):
        name, _, version = info.name[: -len(".dist-info")].partition("-")
        out[normalise_name(name)] = (version, info)
    return out


def modules_of(info: Path) -> list[str]:
    """The public Python modules a distribution installed (from its RECORD), tests left out."""
    try:
        lines = (info / "RECORD").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    out: set[str] = set()
    for line in lines:
        path = line.split(",", 1)[0]
        if not path.endswith(".py") or path.startswith(("..", "/")) or ".dist-info/" in path or ".data/" in path:
            continue
        parts = path[:-3].split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
        # Private modules are reached through the public ones that use them; on their own
        # they hold platform branches (setuptools' bdist_msi) that were never imported here.
        if not parts or any(p in _SKIP_PARTS or not p.isidentifier() or p.startswith("_") for p in parts):
            continue
        if parts[-1] in ("__main__", "setup", "conftest") or parts[0].startswith("_distutils_hack"):
            continue
        out.add(".".join(parts))
    return sorted(out, key=lambda m: (m.count("."), m))


def _owners(site: Path, have: dict[str, tuple[str, Path]]) -> dict[str, str]:
    """{resolved file path: normalised dist name} of every file the dists installed."""
    out: dict[str, str] = {}
    for dist, (_, info) in have.items():
        try:
            lines = (info / "RECORD").read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            rel = line.split(",", 1)[0]
            if rel.endswith(".py"):
                out[os.path.normpath(os.fspath(site / rel))] = dist
    return out


class Breakage(NamedTuple):
    """Why an installed package does not import here: `kind` is "stdlib" (a standard
    name this Python no longer has) or "native" (a shared library that is not there)."""

    why: str
    kind: str

    def says(self, interpreter_version: str) -> str:
        if self.kind == "native":
            return f"cannot load its native library on this host ({self.why})"
        return f"does not run on Python {interpreter_version} ({self.why})"


def import_breakages(python: Path, dists: Iterable[str], *, timeout_s: float = 600) -> dict[str, Breakage]:
    """{normalised dist name: first failure} of installed packages whose code does not
    import on this interpreter, for want of a standard-library name or of a native
    library, found by importing the modules of `dists`. The failure is charged to the
    package whose file raised it: flox importing an xarray that imports a broken pydap
    names pydap. Names not installed are skipped."""
    site = site_packages(python.parent.parent)
    if site is None:
        return {}
    have = installed(site)
    wanted = {normalise_name(d): modules_of(have[normalise_name(d)][1]) for d in dists if normalise_name(d) in have}
    wanted = {d: mods for d, mods in wanted.items() if mods}
    if not wanted:
        return {}
    with tempfile.TemporaryDirectory(prefix="swecl-probe-") as tmp:
        out = Path(tmp) / "broken.json"
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
        env.update(MPLBACKEND="Agg", PYTHONDONTWRITEBYTECODE="1", PYTHONWARNINGS="ignore")
        try:
            subprocess.run(
                [os.fspath(python), "-c", _PROBE, os.fspath(out), ",".join(sorted(REMOVED_STDLIB))],
                input=json.dumps(wanted).encode(), capture_output=True, cwd=tmp, env=env, timeout=timeout_s,
            )
        except (OSError, subprocess.TimeoutExpired):
            return {}
        try:
            found = json.loads(out.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
    if not isinstance(found, dict):
        return {}
    owners = _owners(site, have)
    charged: dict[str, Breakage] = {}

    def where(item: tuple[str, list[str]]) -> str:
        return os.path.normpath(str(item[1][1]))

    # A package's own failure first, so the reason names its own module where it has one.
    for _, (why, raised, kind, *_) in sorted(found.items(), key=lambda item: owners.get(where(item)) != item[0]):
        owner = owners.get(os.path.normpath(str(raised)))
        if owner is not None:  # else the repository's own code, or the interpreter's
            charged.setdefault(owner, Breakage(str(why), str(kind)))
    return charged


def requirement_names(requirements: Iterable[str]) -> list[str]:
    """The distribution names of requirement lines (`name[extra]>=1; marker` -> name)."""
    out = []
    for req in requirements:
        m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
        if m and "://" not in req and not req.lstrip().startswith("-"):
            out.append(m.group(1))
    return out


Installer = Callable[[str, str, list[str]], bool]  # (dist, requirement, constraint lines) -> ok


def repair(python: Path, names: Iterable[str], pinned: Collection[str], held: list[str], install: Installer,
           note: Callable[[str], None], interpreter_version: str) -> list[str]:
    """Find which installed packages, reached by importing `names` (the repository's
    packages), do not import here (this Python lacks a standard name they use, or their
    native library is absent) and resolve each again with `install`, newer than the
    installed release: first held to everything else as installed, then to `held` (the
    spec's pins) alone. A package in `pinned` (normalised names) is a pin's choice: it is
    named in a warning, never replaced. Returns warnings."""
    broken = import_breakages(python, names)
    if not broken:
        return []
    site = site_packages(python.parent.parent)
    assert site is not None
    warnings = []
    for dist, found in sorted(broken.items()):
        old = installed(site)[dist][0]
        says = found.says(interpreter_version)
        if dist in pinned:
            warnings.append(f"{dist} {old} {says}; it is pinned, so it stays")
            continue
        note(f"# {dist} {old} {says}: resolving a later release")
        frozen = [f"{name}=={version}" for name, (version, _) in sorted(installed(site).items()) if name != dist]
        ok = install(dist, f"{dist}>{old}", frozen) or install(dist, f"{dist}>{old}", held)
        now = installed(site).get(dist, (old, Path()))[0]
        still = import_breakages(python, [dist]).get(dist)
        if ok and now != old and still is None:
            like = "as SWE-bench's images had" if found.kind == "stdlib" else "that imports here"
            warnings.append(f"{dist} {old} (of the era) {says}: installed {dist} {now}, a later release, {like}")
        else:
            warnings.append(f"{dist} {now} {(still or found).says(interpreter_version)} "
                            "and no later release installs in its place")
    return warnings
