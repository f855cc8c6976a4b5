"""The repository's own dependencies, resolved as of the task's era before its install.

SWE-bench installs a repository with `python -m pip install -e .[test]`. pip knows no
cut-off date, so whatever the repository leaves unpinned resolves to today's release:
sphinx 3.0 requires `docutils>=0.12`, pip takes docutils 0.21, which has no
`docutils.utils.roman`, and every sphinx 3.x test run dies on import. Before such an
install line runs, swecl reads the repository's requirements (static `[project]` tables
of pyproject.toml, else `setup.py egg_info`) and installs them with uv under the era
cut-off; pip then finds them satisfied and leaves them as they are. What is installed
already and satisfies a requirement (the spec's pins) is kept, as pip would keep it.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tempfile
from pathlib import Path

__all__ = ["parse_requires_txt", "project_requirements", "self_install_extras"]

# `python -m pip install -e .[test]`, `pip install .`, `python3.9 -m pip install --editable .`
_SELF_INSTALL = re.compile(r"^(?:\S*python[\d.]*\s+-m\s+)?pip\s+install\s+(?P<args>.*)$")
_TARGET = re.compile(r"^\.(?:\[(?P<extras>[^\]]*)\])?$")
# Options of pip install that change neither what is installed nor where it comes from:
# SWE-bench's own lines carry them (astropy `-e .[test] --verbose`, scikit-learn `-v
# --no-use-pep517 --no-build-isolation -e .`, matplotlib `--no-build-isolation -e ".[dev]"`).
# Any other option (an index, find-links, constraints, --no-deps, --upgrade) leaves the line
# to pip alone: swecl does not second-guess it.
_NEUTRAL_OPTIONS = frozenset({
    "-v", "-vv", "-vvv", "--verbose", "-q", "--quiet", "--no-build-isolation", "--no-use-pep517", "--use-pep517",
    "--no-cache-dir", "--disable-pip-version-check", "--no-input", "--no-color",
})


def self_install_extras(line: str) -> list[str] | None:
    """The extras of an install line that pip-installs the checkout itself (editable or
    not, with options that do not change what pip installs); None for any other line (a
    command swecl does not second-guess)."""
    m = _SELF_INSTALL.match(line.strip())
    if m is None:
        return None
    try:
        words = shlex.split(m.group("args"))
    except ValueError:
        return None
    targets = []
    for word in words:
        if word in ("-e", "--editable"):
            continue
        if word.startswith("-"):
            if word not in _NEUTRAL_OPTIONS:
                return None
            continue
        targets.append(word)
    if len(targets) != 1 or (t := _TARGET.match(targets[0])) is None:
        return None
    return [e.strip() for e in (t.group("extras") or "").split(",") if e.strip()]


def parse_requires_txt(text: str, extras: list[str]) -> list[str]:
    """An egg-info `requires.txt` -> the requirements of the core and of `extras`, each
    with its section's marker (`[test:python_version<"3.8"]`)."""
    out: list[str] = []
    wanted = {e.lower() for e in extras}
    include, marker = True, ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            extra, _, marker = line[1:-1].partition(":")
            include = extra == "" or extra.lower() in wanted
            continue
        if include:
            out.append(f"{line} ; {marker}" if marker else line)
    return out


def _pyproject_requirements(worktree: Path, extras: list[str]) -> list[str] | None:
    path = worktree / "pyproject.toml"
    if not path.is_file():
        return None
    import tomllib

    try:
        project = tomllib.loads(path.read_text(encoding="utf-8")).get("project")
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(project, dict) or "dependencies" in project.get("dynamic", []):
        return None
    reqs = [r for r in project.get("dependencies", []) if isinstance(r, str)]
    optional = project.get("optional-dependencies", {})
    for extra in extras:
        reqs += [r for r in optional.get(extra, []) if isinstance(r, str)]
    return reqs


def project_requirements(worktree: Path, python: Path, extras: list[str], *, timeout_s: float = 600) -> tuple[list[str] | None, str]:
    """(the checkout's requirements, or None when they cannot be read; a note for the log)."""
    static = _pyproject_requirements(worktree, extras)
    if static is not None:
        return static, "requirements from pyproject.toml [project]"
    if not (worktree / "setup.py").is_file():
        return None, "no setup.py and no static [project] table: requirements not read"
    with tempfile.TemporaryDirectory(prefix="swecl-egg-info-") as base:
        try:
            done = subprocess.run(
                [os.fspath(python), "setup.py", "-q", "egg_info", "--egg-base", base], cwd=worktree,
                capture_output=True, stdin=subprocess.DEVNULL, timeout=timeout_s,
                env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return None, f"setup.py egg_info failed to run: {exc}"
        found = list(Path(base).glob("*.egg-info/requires.txt"))
        if done.returncode != 0:
            tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
            return None, f"setup.py egg_info exited {done.returncode}: {tail[0]}"
        if not found:
            return [], "setup.py declares no requirements"
        return parse_requires_txt(found[0].read_text(encoding="utf-8", errors="replace"), extras), \
            "requirements from setup.py egg_info"
