"""What a cached environment is: `EnvInfo` (its directory, venv, interpreter and lock),
`EnvBuildError`, and the record of its venv's files (`files.json`, see `graders._integrity`).

The layout, the build and the integrity checks are described in `graders._envs`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from graders._integrity import save_manifest, venv_manifest
from ledger.errors import EnvBuildError

__all__ = ["FILES", "EnvBuildError", "EnvInfo", "record_env_files"]

FILES = "files.json"  # the venv manifest (see graders._integrity)


@dataclass(frozen=True, slots=True)
class EnvInfo:
    """One cached environment."""

    key: str  # "OWNER__NAME/<version>/py3.9-<hash12>"
    repo: str
    version: str
    spec_hash: str
    python_version: str
    path: Path
    complete: bool
    built_at: str | None = None
    last_used: float | None = None
    size_bytes: int | None = None
    warnings: tuple[str, ...] = ()
    exclude_newer: str | None = None  # the era cut-off the packages were resolved at

    @property
    def venv(self) -> Path:
        return self.path / "venv"

    @property
    def bin_dir(self) -> Path:
        return self.venv / "bin"

    @property
    def python(self) -> Path:
        return self.bin_dir / "python"

    @property
    def lock_path(self) -> Path:
        return self.path.with_name(self.path.name + ".lock")


def record_env_files(env: EnvInfo) -> None:
    """Record the venv's files as they are now (after a build or the harness's install)."""
    save_manifest(env.path / FILES, venv_manifest(env.venv))
