"""Graders by name (`get_grader`), and `none`, which records a patch without grading it."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path

from graders._executing import AutoGrader, LocalGrader, SwebenchGrader
from graders._grade import GRADER_NAMES, GradeOutcome, GradeRequest, Grader, _finish, _Notes
from graders._overlap import OverlapGrader
from graders.host import Sandbox, sandbox_for
from ledger.errors import SweclError

__all__ = ["NoneGrader", "get_grader"]


class NoneGrader:
    """Records the patch only: status `ungraded`, resolved None."""

    name = "none"

    def grade(self, req: GradeRequest) -> GradeOutcome:
        notes = _Notes(self.name, req)
        notes.add("[swecl] not graded (grader `none`): the patch is recorded only")
        return _finish(self.name, notes, time.monotonic(), "ungraded")


def get_grader(
    name: str = "swebench",
    *,
    cache_dir: Path | str | None = None,
    repo_sources: Mapping[str, str] | None = None,
    timeout_s: float = 1800,
    python: str | os.PathLike[str] | Mapping[str, str] | None = None,
    sandbox: Sandbox | str | None = None,
) -> Grader:
    """A grader by name (`GRADER_NAMES`).

    python: for `local` (and auto's local side) the interpreter to run in; a mapping
    version -> interpreter path ("3.9": "/opt/py39/bin/python") pins the interpreters
    `swebench` builds environments on. sandbox: where tests run (`_sandbox`; default
    $SWECL_SANDBOX, else bwrap); the graders that run nothing ignore it.
    """
    if name in ("swebench", "local", "auto") and not isinstance(sandbox, Sandbox):
        sandbox = sandbox_for(sandbox)  # refused once here, not once per grader
    paths = dict(python) if isinstance(python, Mapping) else None
    local_python = None if isinstance(python, Mapping) else python
    if name == "swebench":
        return SwebenchGrader(cache_dir=cache_dir, repo_sources=repo_sources, timeout_s=timeout_s, python_paths=paths,
                              sandbox=sandbox)
    if name == "local":
        return LocalGrader(cache_dir=cache_dir, repo_sources=repo_sources, timeout_s=timeout_s, python=local_python,
                           sandbox=sandbox)
    if name == "auto":
        return AutoGrader(
            SwebenchGrader(cache_dir=cache_dir, repo_sources=repo_sources, timeout_s=timeout_s, python_paths=paths,
                           sandbox=sandbox),
            LocalGrader(cache_dir=cache_dir, repo_sources=repo_sources, timeout_s=timeout_s, python=local_python,
                        sandbox=sandbox),
        )
    if name == "overlap":
        return OverlapGrader()
    if name == "none":
        return NoneGrader()
    raise SweclError(f"unknown grader {name!r}: use one of {', '.join(GRADER_NAMES)}")
