"""Environment specs: how to build and test one repo@version, from swebench 4.1.0's table.

The table (`data/env_specs.json`, see `data/README.md`) covers the 8 SWE-Bench-CL repos.
A task may bring its own `environment`; when it does, that spec is used *whole* instead
of the table's entry (see `spec_for`). Whole, not field by field: a spec is a recipe whose
parts depend on each other (the Python version decides which pins install, the install
command decides which files the test command finds), so mixing a task's half-recipe
with the table's other half would build environments nobody specified.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from importlib import resources
from typing import Any

import msgspec

from ledger.errors import UnknownEnvSpec

__all__ = [
    "DEFAULT_TEST_CMD",
    "EnvSpec",
    "UnknownEnvSpec",
    "environment_yml_paths",
    "has_spec",
    "known_specs",
    "requirements_paths",
    "spec_for",
]

# What a spec without a test command runs: pytest with the summary the pytest parser reads.
DEFAULT_TEST_CMD = "pytest -rA"

# Bump when the meaning of a field changes, so old environments are not reused wrongly.
_HASH_SCHEMA = "swecl-envspec-v1"


class EnvSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How to build a test environment for one repo@version and how to run its tests.

    python: "3.9" (major.minor, or an exact "3.9.18"); None = the interpreter running swecl.
    pip_packages: pinned requirements installed first.
    packages: "requirements.txt" / "environment.yml" (read from the checkout at the
        repo's swebench paths) or a space-separated requirement list, as in swebench.
    pre_install: command lines run in the checkout before install (text edits such as
        `sed -i ...`); system ones (`apt-get ...`) cannot run without root and are
        reported in the build log instead.
    install: the command that installs the repo itself (`python -m pip install -e .`).
    eval_commands: lines run before the tests; only `export NAME=value` lines take
        effect (as environment variables), the others are reported.
    test_cmd: the test command, to which the test files of the test patch are appended.
    log_parser: parser family for the test output; None = the repo's usual parser.
    install_per_task: re-run `install` at every task's base commit (compiled extensions
        built in place, or a non-editable install that copies the package).
    """

    python: str | None = None
    pip_packages: list[str] = []
    packages: str | None = None
    pre_install: list[str] = []
    install: str | None = None
    eval_commands: list[str] = []
    test_cmd: str | None = None
    log_parser: str | None = None
    install_per_task: bool = False

    def spec_hash(self) -> str:
        """SHA-256 (hex) of the fields that shape the built environment.

        Stable across processes and releases (sorted-key JSON of plain values). The
        test-time fields (`eval_commands`, `test_cmd`, `log_parser`) are left out on
        purpose: changing how tests are run must not throw away a built environment.
        """
        shaping = {
            "schema": _HASH_SCHEMA,
            "python": self.python,
            "pip_packages": list(self.pip_packages),
            "packages": self.packages,
            "pre_install": list(self.pre_install),
            "install": self.install,
            "install_per_task": self.install_per_task,
        }
        text = json.dumps(shaping, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        return msgspec.to_builtins(self)


@cache
def _table() -> dict[str, Any]:
    raw = resources.files("graders").joinpath("data", "env_specs.json").read_bytes()
    return json.loads(raw)


@cache
def _specs() -> dict[str, dict[str, EnvSpec]]:
    return {
        repo: {version: msgspec.convert(spec, EnvSpec) for version, spec in versions.items()}
        for repo, versions in _table()["specs"].items()
    }


def known_specs() -> dict[str, tuple[str, ...]]:
    """repo -> the versions the table has a spec for."""
    return {repo: tuple(versions) for repo, versions in _specs().items()}


def has_spec(repo: str, version: str | None) -> bool:
    return version is not None and str(version) in _specs().get(repo, {})


def spec_for(repo: str, version: str | None, override: EnvSpec | None = None) -> EnvSpec:
    """The spec to build and test repo@version with.

    `override` (a task's own `environment`) wins whole when given. Otherwise the table's
    entry; a repo@version the table lacks is a `UnknownEnvSpec` naming what to do.
    """
    if override is not None:
        return override
    versions = _specs().get(repo)
    if versions is None:
        raise UnknownEnvSpec(
            f"no environment spec for repo {repo!r}: give the task an `environment` "
            f"(python, pip_packages, install, test_cmd) or use the `local` grader"
        )
    key = str(version) if version is not None else None
    if key is None or key not in versions:
        raise UnknownEnvSpec(
            f"no environment spec for {repo}@{version}: known versions are "
            f"{', '.join(versions)}; fix the task's `version` or give it an `environment`"
        )
    return versions[key]


def requirements_paths(repo: str) -> tuple[str, ...]:
    """Where swebench looks for `packages: requirements.txt` in a checkout of `repo`."""
    return tuple(_table()["requirements_paths"].get(repo, ["requirements.txt"]))


def environment_yml_paths(repo: str) -> tuple[str, ...]:
    """Where swebench looks for `packages: environment.yml` in a checkout of `repo`."""
    return tuple(_table()["environment_yml_paths"].get(repo, ["environment.yml"]))
