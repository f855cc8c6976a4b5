"""`tox --current-env` (SWE-bench's sphinx test command) runs the tests in the env's venv."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import graders._executing as graders_module
from graders import GradeRequest
from graders._executing import SwebenchGrader
from graders._specs import EnvSpec
from graders._tox import current_env_names
from tests.graders.env_support import commit_at, make_calc_package
from tests.graders.exec_support import F2P, GOLD_PATCH, P2P, TEST_PATCH, write

PKG = "acme/calctox"
ENV_NAME = f"py{sys.version_info.major}{sys.version_info.minor}"
# which environment the tests ran in, in pytest's header
PREFIX_HEADER = "import sys\n\n\ndef pytest_report_header():\n    return f'swecl-test-prefix: {sys.prefix}'\n"
TOX_INI = "[tox]\nenvlist = py\n\n[testenv]\ncommands =\n    python -m pytest {posargs}\n"
# as swebench's sphinx specs: tox 4.16 with the current-env plugin, the repo installed editable
# not the fix: calc/ops.py makes every pytest report a pass once the tests import it
FORGED_PATCH = '''\
diff --git a/calc/ops.py b/calc/ops.py
--- a/calc/ops.py
+++ b/calc/ops.py
@@ -1,4 +1,11 @@
 """Arithmetic helpers."""
+from _pytest.reports import TestReport
+_init = TestReport.__init__
+def _passed(self, *args, **kwargs):
+    _init(self, *args, **kwargs)
+    self.outcome, self.longrepr = "passed", None
+TestReport.__init__ = _passed
+
 
 
 def add(a, b):
'''
SPEC = EnvSpec(python=None, pip_packages=["pytest", "tox==4.16.0", "tox-current-env==0.0.11"],
               install="python -m pip install --no-build-isolation --no-deps -e .",
               test_cmd=f"tox --current-env -e{ENV_NAME} -v -- -rA")


@pytest.mark.parametrize(("argv", "names"), [
    (["tox", "--current-env", "-epy39", "-v", "--", "tests/x.py"], ["py39"]),
    (["/env/bin/python", "-m", "tox", "--current-env", "-e", "py39,docs", "--"], ["py39", "docs"]),
    (["/env/bin/tox", "--env=py310", "--current-env"], ["py310"]),
    (["tox", "-epy39", "--", "--current-env"], []),  # after `--` it is pytest's argument
    (["tox", "-epy39"], []),  # tox builds its own environments: nothing to do
    (["pytest", "--current-env", "-epy39"], []),
    (["tox", "--current-env", "-e", "../../escape"], []),
])
def test_the_environments_a_current_env_command_runs(argv: list[str], names: list[str]) -> None:
    assert current_env_names(argv) == names


@pytest.mark.slow
def test_tests_run_by_tox_current_env_see_the_venvs_packages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src, _ = make_calc_package(tmp_path / "src", "2024-08-01T12:00:00Z")
    write(src, "tox.ini", TOX_INI)
    write(src, "conftest.py", PREFIX_HEADER)
    write(src, ".gitignore", ".tox/\n*.egg-info/\n__pycache__/\n")
    base = commit_at(src, "tests run through tox", "2024-08-01T13:00:00Z")
    grader = SwebenchGrader(cache_dir=tmp_path / "cache", repo_sources={PKG: str(src)}, timeout_s=300)

    def grade(patch: str = GOLD_PATCH) -> tuple[str, str]:
        out = grader.grade(GradeRequest(
            instance_id="acme__calctox-1", repo=PKG, version="0.1", base_commit=base, model_patch=patch,
            test_patch=TEST_PATCH, fail_to_pass=F2P, pass_to_pass=P2P, environment=SPEC,
        ))
        return out.status, out.log.decode()

    status, log = grade()
    assert status == "resolved", log
    assert f".tox/{ENV_NAME}/bin/python" in log and "launch the environment's interpreter" in log
    [venv] = (tmp_path / "cache" / "envs").glob("*/*/*/venv")
    assert f"swecl-test-prefix: {venv}" in log
    # pytest under tox loads the results plugin (through tox's posargs): the channel saw
    # all four tests, and a patch that forges pytest's reports gets no pass from it
    assert "[swecl] results channel: 4 tests, finished" in log, log
    status, log = grade(FORGED_PATCH)
    assert "PASSED tests/test_ops.py::test_clamp_high" in log, log  # the forged report
    assert status == "unresolved", log
    assert "tests/test_ops.py::test_clamp_high (PASSED: " in log, log

    # positive control: through tox-current-env's own link the interpreter is not the
    # venv's (Python 3.9: the bare base interpreter, "No module named pytest")
    monkeypatch.setattr(graders_module, "put_current_env_launchers", lambda *args: [])
    status, log = grade()
    assert f"swecl-test-prefix: {venv}" not in log, log
