"""Debian packages the specs' set-up lines name (`apt-get install -y graphviz`), and which
of them this host lacks.

The specs' `pre_install` lines are SWE-bench's Dockerfile steps; the system ones never run
here (`graders._run.skip_reason`: they need root and a package manager). What they would
have installed decides whether some tasks are gradeable here (sphinx 7.x's inheritance
diagrams skip without Graphviz; matplotlib 3.0-3.4 builds against FreeType with
pkg-config), so `swecl env system-deps` lists them, says which are missing, and installs
them once as root; `swecl validate` names a missing one as a task's reason.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Iterable

from graders._build_settings import build_system_packages
from graders._run import split_line
from graders._specs import EnvSpec

__all__ = ["apt_packages", "install_command", "missing_packages", "spec_system_packages"]

_APT_PROGRAMS = frozenset({"apt-get", "apt", "aptitude"})
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# a Debian package name (policy 5.6.1), optionally with an architecture or version
_PACKAGE = re.compile(r"^[a-z0-9][a-z0-9+.-]+(?::[a-z0-9-]+)?(?:=\S+)?$")


def apt_packages(line: str) -> list[str]:
    """The packages `apt-get install` (or apt, aptitude; after sudo or VAR=value words)
    installs in one set-up line, in order. Options (`-y`, `--no-install-recommends`) and
    other commands of the line are left out."""
    parts = split_line(line)
    if isinstance(parts, str):  # a shell construct split_line refuses: words are enough here
        words_of = [w for w in re.split(r"&&|\|\||;", line)]
        segments = [shlex.split(seg, posix=True) if seg.strip() else [] for seg in words_of]
    else:
        segments = [words for _, words in parts]
    out: list[str] = []
    for words in segments:
        words = [w for w in words if not _ASSIGN.match(w)]
        while words and words[0] in ("sudo", "env"):
            words = words[1:]
        if not words or words[0] not in _APT_PROGRAMS:
            continue
        rest = [w for w in words[1:] if not w.startswith("-")]
        if not rest or rest[0] != "install":
            continue
        for word in rest[1:]:
            name = word.split("=")[0]
            if _PACKAGE.match(word) and name not in out:
                out.append(name)
    return out


def spec_system_packages(spec: EnvSpec, repo: str | None = None) -> list[str]:
    """Every package the spec's set-up lines install with apt, then those the repository's
    build settings need here (`graders._build_settings`), de-duplicated, in order."""
    out: list[str] = []
    for line in [*spec.pre_install, *spec.eval_commands]:
        out += [p for p in apt_packages(line) if p not in out]
    return out + [p for p in build_system_packages(repo or "") if p not in out]


def missing_packages(names: Iterable[str]) -> list[str] | None:
    """The packages of `names` that dpkg does not have installed (`dpkg-query -W`), nor
    any installed package provides (Debian 12's libfreetype-dev provides the specs'
    libfreetype6-dev), in the order given; None when this host has no dpkg (not
    Debian-based: nothing to say)."""
    wanted = list(dict.fromkeys(names))
    if not wanted:
        return []
    query = shutil.which("dpkg-query")
    if query is None:
        return None
    # one call for all: a name dpkg never heard of only goes to stderr (exit 1)
    done = subprocess.run([query, "-W", "-f=${Package}\t${Status}\n", *wanted], capture_output=True,
                          stdin=subprocess.DEVNULL, timeout=120, check=False)
    installed = set()
    for row in done.stdout.decode("utf-8", "replace").splitlines():
        name, _, status = row.partition("\t")
        if status.split()[-1:] == ["installed"]:
            installed.add(name.split(":")[0])
    lacking = [name for name in wanted if name.split(":")[0] not in installed]
    return [name for name in lacking if name.split(":")[0] not in (_provided(query) if lacking else set())]


def _provided(query: str) -> set[str]:
    """The names installed packages provide (their `Provides:` fields)."""
    done = subprocess.run([query, "-W", "-f=${Status}\t${Provides}\n"], capture_output=True,
                          stdin=subprocess.DEVNULL, timeout=120, check=False)
    out: set[str] = set()
    for row in done.stdout.decode("utf-8", "replace").splitlines():
        status, _, provides = row.partition("\t")
        if status.split()[-1:] != ["installed"]:
            continue
        for item in provides.split(","):
            if name := item.strip().split(" ")[0].split(":")[0]:
                out.add(name)
    return out


def install_command(missing: list[str], euid: int | None = None) -> list[str]:
    """The apt-get command that installs `missing` here, or ValueError saying why it
    cannot be run (not root). `euid` defaults to this process's."""
    command = ["apt-get", "install", "-y", *missing]
    uid = os.geteuid() if euid is None else euid
    if uid != 0:
        raise ValueError(f"not root: run `swecl env system-deps --install` as root, or install them by hand: "
                         f"sudo {shlex.join(command)}")
    return command
