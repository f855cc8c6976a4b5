"""`swecl env system-deps`: the Debian packages the specs' set-up lines install with apt,
which of them this host lacks, and their install (as root, said before it runs).

Whose specs: a dataset's (each task's spec, its own `environment` or the table's entry),
else every repo@version of the shipped spec table (`graders.known_specs`)."""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from graders import UnknownEnvSpec, install_command, known_specs, missing_packages, spec_for, spec_system_packages
from ledger import SweclError

__all__ = ["SpecDeps", "SystemDeps", "install_system_deps", "system_deps"]


@dataclass(slots=True)
class SpecDeps:
    repo: str
    version: str
    packages: list[str]
    missing: list[str]


@dataclass(slots=True)
class SystemDeps:
    """Per repo@version: the packages its set-up installs and those missing here.
    `checked` False: this host has no dpkg-query, so nothing is known to be missing."""

    source: str
    specs: list[SpecDeps] = field(default_factory=list)
    checked: bool = True

    @property
    def packages(self) -> list[str]:
        return sorted({p for s in self.specs for p in s.packages})

    @property
    def missing(self) -> list[str]:
        return sorted({p for s in self.specs for p in s.missing})

    def document(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "checked": self.checked,
            "packages": self.packages,
            "missing": self.missing,
            "install": shlex.join(["apt-get", "install", "-y", *self.missing]) if self.missing else None,
            "specs": [{"repo": s.repo, "version": s.version, "packages": s.packages, "missing": s.missing}
                      for s in self.specs],
        }


def _dataset_specs(dataset: str, rows: str | None) -> dict[tuple[str, str], Any]:
    from .run import RunOptions, environment_spec, open_benchmark  # lazy: the loaders cost at start-up

    out: dict[tuple[str, str], Any] = {}
    for task in open_benchmark(RunOptions(stage="base", dataset=dataset, rows=rows)).tasks():
        key = (task.repo, str(task.version))
        if key in out:
            continue
        try:
            out[key] = spec_for(task.repo, task.version, environment_spec(task))
        except UnknownEnvSpec:
            continue  # no environment to build: no set-up either
    return out


def system_deps(*, dataset: str | None = None, rows: str | None = None, repo: str | None = None) -> SystemDeps:
    if dataset is not None:
        specs = _dataset_specs(dataset, rows)
    else:
        specs = {(r, v): spec_for(r, v) for r, versions in known_specs().items() for v in versions}
    if repo is not None:
        if repo not in {r for r, _ in specs}:
            raise SweclError(f"--repo {repo}: no spec of {dataset or 'the spec table'} is for that repository")
        specs = {k: s for k, s in specs.items() if k[0] == repo}
    named = {key: spec_system_packages(spec, key[0]) for key, spec in sorted(specs.items())}
    everything = sorted({p for names in named.values() for p in names})
    missing = missing_packages(everything)
    lacking = set(missing or ())
    report = SystemDeps(source=dataset or "the spec table", checked=missing is not None)
    for (r, v), names in named.items():
        if names:
            report.specs.append(SpecDeps(r, v, names, [p for p in names if p in lacking]))
    return report


def install_system_deps(missing: list[str], say: Callable[[str], None], *, euid: int | None = None) -> list[str]:
    """apt-get install -y the missing packages (said first; output to the terminal), once
    more after `apt-get update` when the package lists are stale. Returns what is still
    missing. Not root: SweclError with the command to run by hand."""
    try:
        command = install_command(missing, euid)
    except ValueError as exc:
        raise SweclError(str(exc)) from None
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    say(f"running: {shlex.join(command)}")
    if subprocess.run(command, env=env, stdin=subprocess.DEVNULL, check=False).returncode != 0:
        say("running: apt-get update (then the install again)")
        subprocess.run(["apt-get", "update"], env=env, stdin=subprocess.DEVNULL, check=False)
        subprocess.run(command, env=env, stdin=subprocess.DEVNULL, check=False)
    return missing_packages(missing) or []
