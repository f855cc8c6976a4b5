"""The test command SWE-bench made the task lists with hides pytest's header, and with it
whatever a repository's header hook does to the session (a real repo, a real uv venv, real
pytest runs).

astropy 3.1's own header plugin enters `ignore_warnings(DeprecationWarning)`, whose exit
turns every DeprecationWarning into an error for the rest of the session (its setup.cfg
has `-p no:warnings`, so pytest does not reset the filters around each test). The repo
below does the same in a few lines: under `pytest -rA` (swebench 4.1.0's command) the
warning at the import of the package stops collection and nothing passes; under the
table's command for astropy 3.1 (`--no-header`, SWE-bench's until its release 2.0.7) the
hook never runs and the gold patch resolves, as SWE-bench's lists say it should.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from graders import GradeRequest, get_grader
from graders._specs import spec_for
from tests.graders.exec_support import F2P, GOLD_PATCH, P2P, TEST_ENV, TEST_PATCH, make_calc_repo, run_git, write

pytestmark = pytest.mark.slow

REPO = "acme/header"

HEADER_CONFTEST = '''\
import warnings


def pytest_report_header(config):
    # as astropy 3.1's display plugin leaves it: DeprecationWarnings are errors from here on
    warnings.simplefilter("error", DeprecationWarning)
    return "acme header"
'''


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    root = tmp_path_factory.mktemp("swecl-header")
    src, _ = make_calc_repo(root / "src")
    write(src, "conftest.py", HEADER_CONFTEST)
    write(src, "setup.cfg", "[tool:pytest]\naddopts = -p no:warnings\n")
    # a deprecation at import, as setuptools' distutils LooseVersion in astropy 3.1's test_quantity.py
    write(src, "calc/__init__.py", 'import warnings\n\nwarnings.warn("an old API", DeprecationWarning)\n')
    run_git(src, "add", "-A")
    run_git(src, "commit", "-q", "-m", "a header hook and a deprecation")
    return root / "cache", src, run_git(src, "rev-parse", "HEAD")


def _grade(setup: tuple[Path, Path, str], test_cmd: str):
    cache, src, base = setup
    env = msgspec.structs.replace(TEST_ENV, test_cmd=test_cmd)  # the same environment either way
    grader = get_grader("swebench", cache_dir=cache, repo_sources={REPO: str(src)}, timeout_s=120)
    return grader.grade(GradeRequest(
        instance_id="acme__header-1", repo=REPO, version="0.1", base_commit=base, model_patch=GOLD_PATCH,
        test_patch=TEST_PATCH, fail_to_pass=F2P, pass_to_pass=P2P, environment=env, gold_patch=GOLD_PATCH,
    ))


def test_the_lists_command_hides_the_header_hook_and_the_gold_patch_resolves(setup) -> None:
    command = spec_for("astropy/astropy", "3.1").test_cmd
    assert command is not None and "--no-header" in command.split()
    out = _grade(setup, command)
    assert out.status == "resolved", out.log.decode()
    assert "--no-header" in out.test_cmd and b"acme header" not in out.log
    assert set(out.f2p.values()) == {"PASSED"} and set(out.p2p.values()) == {"PASSED"}


def test_with_the_header_shown_the_hook_breaks_collection(setup) -> None:
    out = _grade(setup, "pytest -rA")
    assert out.status != "resolved" and out.resolved is False
    assert b"acme header" in out.log and b"DeprecationWarning: an old API" in out.log
    assert out.f2p[F2P[0]] != "PASSED"
