"""Docker-free SWE-bench grading: apply a patch, run the gold tests, parse, decide.

Graders by name (`get_grader`): `swebench` (host, Docker-free, the default), `local`
(an existing interpreter/venv), `auto` (swebench when an environment spec is known, else
local), `overlap` (no execution: similarity to the gold patch) and `none` (record only).
Decisions follow swebench 5.x; `verdict_lines` decides recorded logs without running.
The host's infrastructure that the graders and the agents share (the sandbox, process
sessions and reaping, the repository cache) is the subpackage `graders.host`.
"""

from __future__ import annotations

from ._apply import ApplyResult, apply_check, apply_patch, is_test_path, normalize_patch, patch_paths, unsafe_reason
from ._decide import (
    MISSING,
    PATCH_BROKE_RUN,
    Decision,
    blame,
    decide,
    f2p_passes,
    grade_log,
    keep_blame,
    leave_out,
    match_test,
    p2p_passes,
)
from ._env_info import EnvBuildError, EnvInfo
from ._envs import EnvBuild, build_env, env_lock, era_for, list_envs, prune_envs
from ._by_name import get_grader
from ._grade import GRADE_STATUSES, GRADER_NAMES, GradeOutcome, Grader, GradeRequest
from ._overlap import OVERLAP_LINES_F1, patch_similarity
from ._interpreters import Interpreter, PythonNotFound, find_python
from ._limits import MAX_JSON_BYTES, MAX_PARQUET_BYTES, check_input_file, json_problem, loads_limited, read_limited
from ._manifests import pre_install_plan
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
from ._recipe import RecipeRun, run_recipe
from ._run import test_directives
from ._sdist import download_sdist, pick_sdist, project_sdists, unpack_sdist
from ._system_deps import install_command, missing_packages, spec_system_packages
from ._specs import EnvSpec, UnknownEnvSpec, has_spec, known_specs, spec_for
from ._verdict import verdict_lines

__all__ = [
    "ApplyResult",
    "Decision",
    "EnvBuild",
    "EnvBuildError",
    "EnvInfo",
    "EnvSpec",
    "GRADER_NAMES",
    "GRADE_STATUSES",
    "GradeOutcome",
    "GradeRequest",
    "Grader",
    "Interpreter",
    "MAX_JSON_BYTES",
    "MAX_PARQUET_BYTES",
    "MISSING",
    "OVERLAP_LINES_F1",
    "PATCH_BROKE_RUN",
    "PythonNotFound",
    "RecipeRun",
    "TestStatus",
    "UnknownEnvSpec",
    "apply_check",
    "apply_patch",
    "blame",
    "build_env",
    "canonical_parser",
    "check_input_file",
    "decide",
    "download_sdist",
    "env_lock",
    "era_for",
    "f2p_passes",
    "find_python",
    "find_test_output",
    "frame_test_output",
    "get_grader",
    "grade_log",
    "has_spec",
    "install_command",
    "is_test_path",
    "json_problem",
    "keep_blame",
    "known_specs",
    "leave_out",
    "list_envs",
    "loads_limited",
    "match_test",
    "missing_packages",
    "normalize_patch",
    "p2p_passes",
    "parse_log",
    "parse_test_log",
    "parser_for_repo",
    "parser_names",
    "patch_paths",
    "pick_sdist",
    "pre_install_plan",
    "project_sdists",
    "prune_envs",
    "read_limited",
    "run_recipe",
    "spec_for",
    "spec_system_packages",
    "test_directives",
    "unpack_sdist",
    "unsafe_reason",
    "verdict_lines",
]
