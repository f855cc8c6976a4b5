"""Rebuild `env_specs.json` from the swebench 4.1.0 spec table (a one-off, kept for audit).

Usage:  python graders/data/extract_env_specs.py SPECS_JSON [OUT_JSON]

SPECS_JSON is the repo -> version -> spec export of swebench 4.1.0's
`harness/constants` (`MAP_REPO_VERSION_TO_SPECS`), as shipped beside the project in
`shared/data/swebench-4.1.0-python-env-specs.json`. Only the 8 SWE-Bench-CL repos are
kept, and each spec is reshaped into the fields of `graders._specs.EnvSpec`:

- python, pip_packages, packages, pre_install, install, eval_commands: copied;
- test_cmd: copied, except swebench's `pytest -rA` for the repos whose task lists
  SWE-bench made with `pytest --no-header -rA --tb=no -p no:cacheprovider` (see
  `LISTS_TEST_PYTEST`): those get that command back;
- log_parser: left null (the grader asks `graders._parsers.parser_for_repo`);
- install_per_task: true for repos with compiled extensions built in place (their
  `.so` files must be rebuilt at every base commit) and for non-editable installs
  (`setup.py install` copies the package, which goes stale at the next commit);
- swebench's docker-only keys (`no_use_env`, `execute_test_as_nonroot`) are dropped.

The requirement-file paths swebench reads for `packages: requirements.txt` /
`environment.yml` (`MAP_REPO_TO_REQS_PATHS`, `MAP_REPO_TO_ENV_YML_PATHS` in the same
module) are not in the export; they are written below from swebench 4.1.0's source.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPOS = (
    "django/django",
    "sympy/sympy",
    "sphinx-doc/sphinx",
    "matplotlib/matplotlib",
    "scikit-learn/scikit-learn",
    "astropy/astropy",
    "pydata/xarray",
    "pytest-dev/pytest",
)
COMPILED = {"matplotlib/matplotlib", "scikit-learn/scikit-learn", "astropy/astropy"}
REQUIREMENTS_PATHS = {
    "django/django": ["tests/requirements/py3.txt"],
    "matplotlib/matplotlib": [
        "requirements/dev/dev-requirements.txt",
        "requirements/testing/travis_all.txt",
    ],
    "sympy/sympy": ["requirements-dev.txt", "requirements-test.txt"],
}
# The pytest command SWE-bench made the task lists (FAIL_TO_PASS, PASS_TO_PASS) with: its
# harness's TEST_PYTEST for these four of the 8 repos (pytest-dev/pytest ran `pytest -rA`),
# as the harness source has it at its first commit (2023-10-10, `harness/constants.py`,
# MAP_REPO_TO_TEST_FRAMEWORK), on 2024-03-28 and in the commit before release 2.0.8.
# Release 2.0.8 (2024-07-08) defined TEST_PYTEST a second time, as `pytest -rA`, further
# down the same module, and that one won: 4.1.0's table has it. The
# two commands grade differently where the header runs code: astropy 3.1's own header
# hook (`astropy/tests/plugins/display.py`) leaves DeprecationWarnings raised as errors
# for the whole session, which `--no-header` never lets happen (see graders._run for a
# pytest older than 6.0, which has no `--no-header`).
LISTS_TEST_PYTEST = "pytest --no-header -rA --tb=no -p no:cacheprovider"
LISTS_TEST_PYTEST_REPOS = frozenset(
    {"astropy/astropy", "matplotlib/matplotlib", "pydata/xarray", "scikit-learn/scikit-learn"}
)
TEST_PYTEST_SINCE_2_0_8 = "pytest -rA"
ENVIRONMENT_YML_PATHS = {
    "matplotlib/matplotlib": ["environment.yml"],
    "pydata/xarray": ["ci/requirements/environment.yml", "environment.yml"],
}


def _version_key(version: str) -> tuple[int, ...]:
    digits = version.lstrip("v").split(".")
    return tuple(int(part) if part.isdigit() else 0 for part in digits)


def lists_test_cmd(repo: str, test_cmd: str | None) -> str | None:
    """The test command the repo's task lists were made with (`LISTS_TEST_PYTEST`)."""
    if repo in LISTS_TEST_PYTEST_REPOS and test_cmd == TEST_PYTEST_SINCE_2_0_8:
        return LISTS_TEST_PYTEST
    return test_cmd


def reshape(repo: str, spec: dict) -> dict:
    install = spec.get("install")
    editable = install is not None and (" -e " in f" {install} " or "develop" in install)
    return {
        "python": spec.get("python"),
        "pip_packages": list(spec.get("pip_packages", [])),
        "packages": spec.get("packages"),
        "pre_install": list(spec.get("pre_install", [])),
        "install": install,
        "eval_commands": list(spec.get("eval_commands", [])),
        "test_cmd": lists_test_cmd(repo, spec.get("test_cmd")),
        "log_parser": None,
        "install_per_task": repo in COMPILED or (install is not None and not editable),
    }


def extract(source: dict) -> dict:
    specs = {
        repo: {
            version: reshape(repo, source[repo][version])
            for version in sorted(source[repo], key=_version_key)
        }
        for repo in REPOS
    }
    return {
        "_source": {
            "package": "swebench 4.1.0 (PyPI), MIT licence, Copyright (c) 2023 Carlos E Jimenez, John Yang et al.",
            "module": "swebench/harness/constants/python.py: MAP_REPO_VERSION_TO_SPECS, MAP_REPO_TO_REQS_PATHS, MAP_REPO_TO_ENV_YML_PATHS",
            "extracted_by": "graders/data/extract_env_specs.py",
        },
        "requirements_paths": REQUIREMENTS_PATHS,
        "environment_yml_paths": ENVIRONMENT_YML_PATHS,
        "specs": specs,
    }


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(__doc__.splitlines()[2], file=sys.stderr)
        return 2
    source = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    out = Path(argv[2]) if len(argv) == 3 else Path(__file__).with_name("env_specs.json")
    out.write_text(json.dumps(extract(source), indent=1, sort_keys=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
