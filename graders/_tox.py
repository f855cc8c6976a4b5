"""`tox --current-env` in a venv: the interpreter tox runs the commands with.

SWE-bench's sphinx specs test with `tox --current-env -epy39 -v --`. The tox-current-env
plugin does not build an environment: it links `.tox/py39/bin/python` to the interpreter
tox itself runs on, and tox puts `.tox/py39/bin` first on PATH, so the tox.ini's
`python -m pytest` starts through that link. In SWE-bench's images the interpreter is a
conda environment's own binary, which finds its packages from where the binary really is.
A venv's interpreter finds its packages from the path it was started by (its
`pyvenv.cfg` sits beside that path), so started through the link it is the bare base
interpreter: "No module named pytest", and every sphinx task from 3.4 on ends infra_error.

The plugin makes the link only where none exists. Before such a test command runs, swecl
puts a launcher at each of those paths (`exec <the env's python> "$@"`), so the
interpreter starts by its own path and is the venv's, as the conda binary is SWE-bench's.
The worktree's ignored files (`.tox/`) are removed after every grade.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path

__all__ = ["current_env_names", "pytest_args_at", "put_current_env_launchers"]


def _runs_tox(argv: Sequence[str]) -> int | None:
    """Index of the first tox argument, or None when `argv` does not run tox."""
    if argv and os.path.basename(argv[0]) == "tox":
        return 1
    if len(argv) >= 3 and argv[1:3] == ["-m", "tox"]:
        return 3
    return None


def current_env_names(argv: Sequence[str]) -> list[str]:
    """The environments a `tox --current-env -e NAMES` command runs ([] for any other)."""
    start = _runs_tox(argv)
    if start is None:
        return []
    args = list(argv[start:])
    if "--" in args:
        args = args[: args.index("--")]
    if "--current-env" not in args:
        return []
    names: list[str] = []
    for i, arg in enumerate(args):
        if arg in ("-e", "--env", "--envlist") and i + 1 < len(args):
            names += args[i + 1].split(",")
        elif arg.startswith("-e") and len(arg) > 2 and not arg.startswith("--"):
            names += arg[2:].split(",")
        elif arg.startswith(("--env=", "--envlist=")):
            names += arg.partition("=")[2].split(",")
    return [n.strip() for n in names if n.strip() and "/" not in n and n.strip() not in (".", "..")]


def pytest_args_at(words: Sequence[str]) -> int | None:
    """Where arguments for pytest go in a `tox --current-env ... -- ARGS` command: the index
    right after its `--` (None for any other command).

    tox hands what follows `--` to the tox.ini's commands as `{posargs}` (SWE-bench's sphinx:
    `pytest --durations 25 {posargs}`), and tox-current-env runs them with the calling
    process's whole environment, so a `-p PLUGIN` there loads a plugin found on PYTHONPATH.
    Plain tox builds its own environments and passes only its `passenv`: not this."""
    start = _runs_tox(words)
    if start is None or not current_env_names(words):
        return None
    args = list(words[start:])
    return start + args.index("--") + 1 if "--" in args else None


def put_current_env_launchers(argv: Sequence[str], worktree: Path, python: Path, version: str) -> list[str]:
    """Launchers of `python` where tox-current-env would link it; returns their paths
    (relative to the worktree). `version` is the interpreter's "3.9"."""
    made: list[str] = []
    script = f"#!/bin/sh\nexec {shlex.quote(os.fspath(python))} \"$@\"\n"
    for name in current_env_names(argv):
        bin_dir = worktree / ".tox" / name / "bin"
        # a patch may have put a link on the way: swecl writes only inside the worktree
        if any(p.is_symlink() for p in (bin_dir.parent.parent, bin_dir.parent, bin_dir)):
            continue
        bin_dir.mkdir(parents=True, exist_ok=True)
        for exe in dict.fromkeys(("python", f"python{version.split('.')[0]}", f"python{version}")):
            path = bin_dir / exe
            if path.is_symlink() or path.exists():
                path.unlink()
            path.write_text(script, encoding="utf-8")
            path.chmod(0o755)
            made.append(os.fspath(path.relative_to(worktree)))
    return made
