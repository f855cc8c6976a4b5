"""Docker-free SWE-bench grading: apply a patch, run the gold tests, parse, decide.

Graders by name (`get_grader`): `swebench` (host, Docker-free, the default), `local`
(an existing interpreter/venv), `auto` (swebench when an environment spec is known, else
local), `overlap` (no execution: similarity to the gold patch) and `none` (record only).
Decisions follow swebench 5.x; `verdict_lines` decides recorded logs without running.
"""

from __future__ import annotations

from ._apply import ApplyResult, apply_check, apply_patch, is_test_path, normalize_patch, patch_paths, unsafe_reason
from ._decide import Decision, decide, grade_log, match_test
from ._envs import EnvBuild, EnvBuildError, EnvInfo, build_env, list_envs, prune_envs
from ._graders import (
    GRADE_STATUSES,
    GRADER_NAMES,
    OVERLAP_LINES_F1,
    GradeOutcome,
    Grader,
    GradeRequest,
    get_grader,
    patch_similarity,
)
from ._interpreters import Interpreter, PythonNotFound, find_python
from ._parsers import (
    TestStatus,
    canonical_parser,
    find_test_output,
    frame_test_output,
    parse_log,
    parse_test_log,
    parser_for_repo,
    parser_names,
)
from ._reaper import parallel_runs, reap_orphans
from ._repos import GitError, RepoCache, Worktree, default_cache_dir, preferred_slot
from ._sandbox import SANDBOX_MODES, Sandbox, SandboxUnavailable, sandbox_for
from ._specs import EnvSpec, UnknownEnvSpec, has_spec, known_specs, spec_for
from ._verdict import verdict_lines

__all__ = [
    "GRADER_NAMES",
    "GRADE_STATUSES",
    "OVERLAP_LINES_F1",
    "SANDBOX_MODES",
    "ApplyResult",
    "Decision",
    "EnvBuild",
    "EnvBuildError",
    "EnvInfo",
    "EnvSpec",
    "GitError",
    "GradeOutcome",
    "GradeRequest",
    "Grader",
    "Interpreter",
    "PythonNotFound",
    "RepoCache",
    "Sandbox",
    "SandboxUnavailable",
    "TestStatus",
    "UnknownEnvSpec",
    "Worktree",
    "apply_check",
    "apply_patch",
    "build_env",
    "canonical_parser",
    "decide",
    "default_cache_dir",
    "find_python",
    "find_test_output",
    "frame_test_output",
    "get_grader",
    "grade_log",
    "has_spec",
    "is_test_path",
    "known_specs",
    "list_envs",
    "match_test",
    "normalize_patch",
    "parse_log",
    "parse_test_log",
    "parser_for_repo",
    "parser_names",
    "parallel_runs",
    "patch_paths",
    "preferred_slot",
    "prune_envs",
    "reap_orphans",
    "sandbox_for",
    "spec_for",
    "unsafe_reason",
    "verdict_lines",
]
