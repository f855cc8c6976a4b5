"""Reading a task's dependency manifests for an environment build: requirements files
(`-r` includes followed), conda environment.yml (conda names mapped to pip), which
pre_install lines can run (`pre_install_plan`), and the requirements of `spec.packages`
(`_packages`), from a checkout (`_dir_reader`) or the setup commit.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Callable
from pathlib import Path

from graders._env_info import EnvBuildError
from graders._run import skip_reason, split_line
from graders._specs import EnvSpec, environment_yml_paths, requirements_paths
from graders._uv import _Log

__all__ = ["FileReader", "pre_install_plan"]

_CONDA_ONLY = frozenset(
    {"python", "pip", "hdf5", "libnetcdf", "graphviz", "cairo", "pkg-config", "ffmpeg", "imagemagick",
     "c-compiler", "cxx-compiler", "compilers", "ccache", "make", "cmake", "git", "nodejs", "libgdal", "proj"}
)
# conda-forge names whose PyPI distribution is named otherwise (dask-core is dask without its extras)
_CONDA_TO_PIP = {
    "matplotlib-base": "matplotlib", "dask-core": "dask", "pytorch": "torch", "iris": "scitools-iris", "pyqt": "PyQt5",
    "pytables": "tables",
}


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
