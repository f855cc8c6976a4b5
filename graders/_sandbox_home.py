"""What a confined test run finds in its home: matplotlib's font list, made once per
environment.

In the sandbox every test run starts with an empty home (`graders.host.SANDBOX_HOME`), so
matplotlib builds its font list at its first import in every run: it scans the system's
fonts, 1.8 s of each of xarray's test runs, which the same command run by a user finds
in `~/.cache/matplotlib`. The list depends on the fonts the system has and on
matplotlib's version, not on a task or a patch. So it is made once per environment by
swecl, before any patch: the environment's interpreter imports `matplotlib.font_manager`
with an empty home, as the sandbox gives (no user fonts), kept beside the venv
(`sandbox-home/`), and shown to each confined test run read-only at its place in the
home (`.cache/matplotlib/fontlist-vNNN.json`); the folder around it stays writable, so
matplotlib takes it for its cache. A list made for another matplotlib is passed over and
built in the run, as before, never written over. It is made again when the system's
fonts change (the list of their files, read once a process, is part of what it was made for).

Unconfined a test run has the user's own home; nothing is seeded there.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from graders._env_info import EnvInfo

__all__ = ["sandbox_home"]

ENV_HOME = "sandbox-home"  # beside the environment's venv
_DONE = ".swecl-home"
_FORMAT = 1
_WARM_TIMEOUT_S = 300
_MATPLOTLIB_CACHE = ".cache/matplotlib"
# Run by the environment's interpreter in an empty home: nothing where matplotlib is not
# installed.
_WARM = """\
import importlib.util, sys
if importlib.util.find_spec("matplotlib") is None:
    sys.exit(0)
import matplotlib.font_manager
"""
# Where matplotlib looks for fonts on Linux (font_manager.X11FontDirectories) and the
# fontconfig configuration it asks `fc-list` through: the list is made again when these change.
_FONT_PLACES = ("/usr/share/fonts", "/usr/local/share/fonts", "/usr/X11R6/lib/X11/fonts", "/usr/X11/lib/X11/fonts",
                "/usr/lib/openoffice/share/fonts/truetype", "/etc/fonts")


def sandbox_home(env: EnvInfo) -> dict[str, str]:
    """{path under the home: file} to show read-only to a confined test run of `env`
    (module doc); empty where there is nothing to show or it could not be made. Made on
    first use, under the environment's lock the grader holds."""
    target = env.path / ENV_HOME
    made_for = _made_for(env)
    try:
        if (target / _DONE).read_text(encoding="utf-8") == made_for:
            return _files(target)
    except OSError:
        pass
    if target.is_dir():
        shutil.rmtree(target, ignore_errors=True)
    work = Path(tempfile.mkdtemp(prefix=".home-", dir=env.path))
    try:
        home = work / "home"
        home.mkdir()
        environ = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.fspath(home), "PYTHONNOUSERSITE": "1",
                   "VIRTUAL_ENV": os.fspath(env.venv), "MPLBACKEND": "agg"}
        try:
            ok = subprocess.run([os.fspath(env.python), "-c", _WARM], cwd=home, env=environ, capture_output=True,
                                stdin=subprocess.DEVNULL, timeout=_WARM_TIMEOUT_S).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False  # nothing to show (a list cut short is no list), and recorded so: not tried at every grade
        for path in sorted(home.rglob("*"), reverse=True):  # only the font lists of a warm-up that ended well stay
            if path.is_file() and not (ok and _is_font_list(path.relative_to(home))):
                path.unlink()
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()
        (work / _DONE).write_text(made_for, encoding="utf-8")
        try:
            os.rename(work, target)
        except OSError:  # made meanwhile by another process: use that one
            if not target.is_dir():
                return {}
        return _files(target)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _is_font_list(rel: Path) -> bool:
    return rel.parent.as_posix() == _MATPLOTLIB_CACHE and rel.name.startswith("fontlist-") and rel.suffix == ".json"


def _files(target: Path) -> dict[str, str]:
    home = target / "home"
    return {p.relative_to(home).as_posix(): os.fspath(p) for p in sorted(home.rglob("fontlist-*.json"))
            if _is_font_list(p.relative_to(home))}


def _made_for(env: EnvInfo) -> str:
    """The venv and interpreter it was made with, and the system's font files."""
    return (f"{os.fspath(env.venv)}\n{os.path.realpath(env.python)}\nfonts {_fonts_digest()}\n"
            f"format {_FORMAT}\n")


@functools.lru_cache(maxsize=1)
def _fonts_digest() -> str:
    """The system's font files (paths and sizes), read once a process: every grade asks."""
    fonts = hashlib.sha256()
    for place in _FONT_PLACES:
        for dirpath, dirs, files in os.walk(place):
            dirs.sort()
            for name in sorted(files):
                try:
                    size = os.stat(os.path.join(dirpath, name)).st_size
                except OSError:
                    continue
                fonts.update(f"{dirpath}/{name} {size}\n".encode("utf-8", "surrogateescape"))
    return fonts.hexdigest()
