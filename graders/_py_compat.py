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
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from collections.abc import Callable, Collection, Iterable
from pathlib import Path

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
import importlib, json, re, sys, traceback
out_path, removed = sys.argv[1], set(sys.argv[2].split(","))
modules = json.loads(sys.stdin.read())
names = getattr(sys, "stdlib_module_names", None)
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
            name = missing_from(exc) if isinstance(exc, Exception) else None
            if name and is_stdlib(name):
                tb = traceback.extract_tb(exc.__traceback__)
                where = tb[-1][0] if tb else ""
                broken[dist] = ["%s: %s: %s" % (mod, type(exc).__name__, exc), where]
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


def stdlib_breakages(python: Path, dists: Iterable[str], *, timeout_s: float = 600) -> dict[str, str]:
    """{normalised dist name: first failure} of installed packages whose code does not
    run on this interpreter for want of a standard-library name, found by importing the
    modules of `dists`. The failure is charged to the package whose file raised it: flox
    importing an xarray that imports a broken pydap names pydap. Names not installed
    are skipped."""
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
    charged: dict[str, str] = {}
    # A package's own failure first, so the reason names its own module where it has one.
    for dist, (why, where) in sorted(found.items(), key=lambda item: owners.get(os.path.normpath(str(item[1][1]))) != item[0]):
        owner = owners.get(os.path.normpath(str(where)))
        if owner is not None:  # else the repository's own code, or the interpreter's
            charged.setdefault(owner, str(why))
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
    packages), do not run on this Python and resolve each again with `install`, newer
    than the installed release: first held to everything else as installed, then to
    `held` (the spec's pins) alone. A package in `pinned` (normalised names) is a pin's
    choice: it is named in a warning, never replaced. Returns warnings."""
    broken = stdlib_breakages(python, names)
    if not broken:
        return []
    site = site_packages(python.parent.parent)
    assert site is not None
    warnings = []
    for dist, why in sorted(broken.items()):
        old = installed(site)[dist][0]
        if dist in pinned:
            warnings.append(f"{dist} {old} does not run on Python {interpreter_version} ({why}); it is pinned, so it stays")
            continue
        note(f"# {dist} {old} does not run on Python {interpreter_version} ({why}): resolving a later release")
        frozen = [f"{name}=={version}" for name, (version, _) in sorted(installed(site).items()) if name != dist]
        ok = install(dist, f"{dist}>{old}", frozen) or install(dist, f"{dist}>{old}", held)
        now = installed(site).get(dist, (old, Path()))[0]
        still = stdlib_breakages(python, [dist]).get(dist)
        if ok and now != old and still is None:
            warnings.append(f"{dist} {old} (of the era) does not run on Python {interpreter_version} ({why}): "
                            f"installed {dist} {now}, a later release, as SWE-bench's images had")
        else:
            warnings.append(f"{dist} {now} does not run on Python {interpreter_version} ({still or why}) "
                            "and no later release installs in its place")
    return warnings
