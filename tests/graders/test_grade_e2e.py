"""Graders end to end: a real repo, real git worktrees, a real uv venv, real pytest runs."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import msgspec
import pytest

from bench.processes import live_processes
from graders._envs import list_envs
from graders import GRADER_NAMES, GradeOutcome, GradeRequest, get_grader, patch_similarity
from graders._specs import EnvSpec
from ledger.errors import SweclError
from tests.graders.exec_support import (
    F2P,
    GOLD_PATCH,
    P2P,
    REPO,
    TEST_ENV,
    TEST_PATCH,
    WRONG_PATCH,
    shared_grading_cache,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    return shared_grading_cache(tmp_path_factory)


def _req(base: str, patch: str, **kw) -> GradeRequest:
    fields = dict(
        instance_id="acme__calc-1", repo=REPO, version="0.1", base_commit=base, model_patch=patch,
        test_patch=TEST_PATCH, fail_to_pass=F2P, pass_to_pass=P2P, environment=TEST_ENV, gold_patch=GOLD_PATCH,
    )
    fields.update(kw)
    return GradeRequest(**fields)


def _grade(setup, patch: str, *, grader: str = "swebench", timeout_s: float = 120, **kw) -> GradeOutcome:
    cache, src, base = setup
    g = get_grader(grader, cache_dir=cache, repo_sources={REPO: str(src)}, timeout_s=timeout_s)
    return g.grade(_req(base, patch, **kw))


def _outside_snapshot(setup) -> set[str]:
    cache, src, _ = setup
    root = cache.parent
    return {
        os.path.relpath(os.path.join(d, f), root)
        for d, dirs, files in os.walk(root)
        for f in files
        if "/worktrees/" not in d + "/" and "/.git" not in d and "/envs/" not in d + "/" and "/repos/" not in d + "/"
    }


def test_gold_patch_resolves(setup) -> None:
    out = _grade(setup, GOLD_PATCH)
    assert out.status == "resolved" and out.resolved is True, out.log.decode()
    assert out.applied_with == "git apply"
    assert out.f2p == {F2P[0]: "PASSED"}
    assert set(out.p2p.values()) == {"PASSED"}
    assert out.test_exit_code == 0 and out.test_cmd[-1] == "tests/test_ops.py"
    assert out.env_key and out.error is None and out.duration_s > 0
    # the grader's own account of its time: the test run and the environment, within the whole
    assert out.timings["tests"] > 0 and out.timings["env"] >= 0 and isinstance(out.env_built, bool)
    assert out.timings["tests"] + out.timings["env"] <= out.duration_s
    assert b">>>>> Start Test Output" in out.log and b"PASSED tests/test_ops.py::test_clamp_high" in out.log
    # the outcome is a plain msgspec struct: it survives an encode/decode round trip
    assert msgspec.json.decode(msgspec.json.encode(out), type=GradeOutcome) == out


def test_environment_is_built_once_and_reused(setup) -> None:
    cache, _, _ = setup
    _grade(setup, GOLD_PATCH)
    envs = list_envs(cache)
    assert len(envs) == 1 and envs[0].complete
    built_at = envs[0].built_at
    second = _grade(setup, WRONG_PATCH)
    assert b"reused" in second.log and second.env_built is False
    envs = list_envs(cache)
    assert len(envs) == 1 and envs[0].built_at == built_at
    build_log = (envs[0].path / "build.log").read_text()
    assert build_log.count("# environment for acme/calc@0.1") == 1  # one build, ever


def test_wrong_fix_is_unresolved_with_per_test_statuses(setup) -> None:
    out = _grade(setup, WRONG_PATCH)
    assert out.status == "unresolved" and out.resolved is False
    assert out.f2p == {F2P[0]: "FAILED"}
    assert out.p2p == {name: "PASSED" for name in P2P}
    assert out.test_exit_code == 1


def test_empty_patch(setup) -> None:
    out = _grade(setup, "   \n")
    assert out.status == "empty_patch" and out.resolved is False and out.test_cmd == []


def test_agent_edit_to_a_test_file_is_reverted(setup) -> None:
    # the wrong fix plus a "fix" of the failing test and a new test file of its own
    cheat = WRONG_PATCH + (
        "diff --git a/tests/test_ops.py b/tests/test_ops.py\n--- a/tests/test_ops.py\n+++ b/tests/test_ops.py\n"
        "@@ -11,3 +11,7 @@ def test_sub():\n \n def test_clamp_low():\n     assert clamp(-5, 0, 10) == 0\n"
        "+\n+\n+def test_clamp_high():\n+    assert True\n"
        "diff --git a/tests/test_mine.py b/tests/test_mine.py\nnew file mode 100644\n--- /dev/null\n"
        "+++ b/tests/test_mine.py\n@@ -0,0 +1,2 @@\n+def test_mine():\n+    assert True\n"
    )
    out = _grade(setup, cheat)
    assert out.test_files_reverted == ["tests/test_mine.py", "tests/test_ops.py"]
    assert out.status == "unresolved" and out.f2p == {F2P[0]: "FAILED"}
    assert "tests/test_mine.py::test_mine" not in out.tests


@pytest.mark.parametrize(
    ("mangle", "strategy"),
    [
        (lambda p: p.replace("\n", "\r\n"), "git apply"),
        (lambda p: p.rstrip("\n"), "git apply"),
        # wrong hunk counts fail, as in swebench's chain: tests/graders/test_apply.py
    ],
    ids=["crlf", "no-final-newline"],
)
def test_damaged_gold_patches_still_apply_and_resolve(setup, mangle, strategy: str) -> None:
    out = _grade(setup, mangle(GOLD_PATCH))
    assert out.status == "resolved", out.log.decode()
    assert out.applied_with == strategy


@pytest.mark.parametrize(
    "path",
    ["../escaped.py", "/tmp/swecl-e2e-absolute.py", ".git/config"],
)
def test_unsafe_paths_are_patch_failed_and_write_nothing_outside(setup, path: str) -> None:
    before = _outside_snapshot(setup)
    patch = f"--- /dev/null\n+++ {'b/' + path if not path.startswith('/') else path}\n@@ -0,0 +1 @@\n+pwned = 1\n"
    out = _grade(setup, GOLD_PATCH + patch)
    assert out.status == "patch_failed" and out.resolved is False
    assert out.error and "unsafe patch" in out.error
    assert _outside_snapshot(setup) == before
    assert not Path("/tmp/swecl-e2e-absolute.py").exists()


def test_outside_pointing_symlink_is_patch_failed(setup) -> None:
    patch = (
        "diff --git a/calc/link b/calc/link\nnew file mode 120000\n--- /dev/null\n+++ b/calc/link\n"
        "@@ -0,0 +1 @@\n+../../../../outside\n\\ No newline at end of file\n"
    )
    out = _grade(setup, GOLD_PATCH + patch)
    assert out.status == "patch_failed" and "symlink" in (out.error or "")


@pytest.mark.parametrize("sandbox", ["bwrap", "none"])
def test_hanging_test_times_out_and_its_children_die(setup, sandbox: str) -> None:
    token = f"swecl-hang-{sandbox}-{os.getpid()}-{time.monotonic_ns()}"
    hang = (
        "diff --git a/calc/ops.py b/calc/ops.py\n--- a/calc/ops.py\n+++ b/calc/ops.py\n"
        "@@ -13,6 +13,11 @@ def clamp(x, lo, hi):\n"
        '     """x limited to [lo, hi]."""\n'
        "     if x < lo:\n"
        "         return lo\n"
        "+    if x > hi:\n"
        "+        import subprocess, sys, time\n"
        f"+        subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', {token!r}], start_new_session=True)\n"
        "+        time.sleep(600)\n"
        "+        return hi\n"
        "     return x\n \n \n"
    )
    start = time.monotonic()
    cache, src, base = setup
    g = get_grader("swebench", cache_dir=cache, repo_sources={REPO: str(src)}, timeout_s=4, sandbox=sandbox)
    out = g.grade(_req(base, hang))
    assert time.monotonic() - start < 60
    assert out.status == "timeout" and out.resolved is False, out.log.decode()
    assert out.test_exit_code is None and b"timed out" in out.log
    deadline = time.monotonic() + 5
    while live_processes(cmdline=token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not live_processes(cmdline=token), "a child of the timed-out test run (in its own session) is still alive"


def test_skipped_fail_to_pass_is_unresolved(setup) -> None:
    skip = GOLD_PATCH.replace("+        return hi\n", "+        import pytest; pytest.skip('not today')\n")
    out = _grade(setup, skip)
    assert b"SKIPPED" in out.log and b"not today" in out.log
    # pytest's `SKIPPED [1] file:line: reason` summary names no test id, so (as in swebench)
    # the skipped test is absent from the results: either way it has not passed
    assert out.f2p[F2P[0]] in ("SKIPPED", "MISSING")
    assert out.status == "unresolved" and out.resolved is False


def test_test_patch_that_does_not_apply_is_infra_error(setup) -> None:
    broken = TEST_PATCH.replace("assert clamp(-5, 0, 10) == 0", "assert nothing_like_this()")
    out = _grade(setup, GOLD_PATCH, test_patch=broken)
    assert out.status == "infra_error" and out.resolved is None
    assert "gold test patch" in (out.error or "")


def test_no_parsed_results_is_never_unresolved(setup) -> None:
    out = _grade(setup, GOLD_PATCH, environment=msgspec.structs.replace(TEST_ENV, test_cmd="python -c pass"))
    assert out.status == "infra_error" and out.resolved is None
    assert "without the patch either" in (out.error or "")
    assert b"control run without the model patch" in out.log


BREAKING_PATCH = """\
diff --git a/calc/ops.py b/calc/ops.py
--- a/calc/ops.py
+++ b/calc/ops.py
@@ -1,4 +1,6 @@
 \"\"\"Arithmetic helpers.\"\"\"
+import os
+os._exit(0)  # the test process vanishes: no results, exit 0
 
 
 def add(a, b):
"""


def test_a_patch_that_breaks_the_test_run_is_the_agents_failure(setup) -> None:
    """The patch kills the test process: no results; the control run shows the harness is fine."""
    out = _grade(setup, BREAKING_PATCH)
    assert out.status == "unresolved" and out.resolved is False, out.log.decode()
    assert "the patch broke the test run" in (out.error or "")
    assert out.env_built is not None and out.timings["tests"] > 0  # both test runs counted
    assert b"control run without the model patch" in out.log


def test_missing_python_is_env_failed_with_a_clear_error(setup) -> None:
    out = _grade(setup, GOLD_PATCH, environment=EnvSpec(python="3.1", pip_packages=["pytest"]))
    assert out.status == "env_failed" and out.resolved is None
    assert "Python 3.1 not found" in (out.error or "") and "SWECL_PYTHON_3_1" in (out.error or "")


def test_unknown_repo_without_environment_is_env_failed(setup) -> None:
    out = _grade(setup, GOLD_PATCH, environment=None)
    assert out.status == "env_failed" and "no environment spec" in (out.error or "")


def test_local_grader_runs_in_the_running_interpreter(setup) -> None:
    cache, _, _ = setup
    before = len(list_envs(cache))
    out = _grade(setup, GOLD_PATCH, grader="local", environment=None)
    assert out.status == "resolved", out.log.decode()
    assert out.env_key is None and out.test_cmd[:3] == [sys.executable, "-m", "pytest"]
    assert len(list_envs(cache)) == before


def test_auto_grader_picks_swebench_or_local(setup) -> None:
    with_env = _grade(setup, GOLD_PATCH, grader="auto")
    without = _grade(setup, GOLD_PATCH, grader="auto", environment=None)
    assert with_env.status == without.status == "resolved"
    assert with_env.grader == "swebench" and with_env.env_key
    assert without.grader == "local" and without.env_key is None


def test_overlap_grader_is_a_labelled_proxy(setup) -> None:
    gold = _grade(setup, GOLD_PATCH, grader="overlap")
    assert gold.status == "resolved" and gold.similarity and gold.similarity["lines_f1"] == 1.0
    assert "proxy" in (gold.error or "") and gold.test_cmd == []
    wrong = _grade(setup, WRONG_PATCH, grader="overlap")
    assert wrong.similarity and wrong.similarity["files_recall"] == 1.0 and 0 < wrong.similarity["lines_f1"] < 1
    other = _grade(setup, "--- a/README\n+++ b/README\n@@ -1 +1 @@\n-a\n+b\n", grader="overlap")
    assert other.status == "unresolved" and other.similarity and other.similarity["files_recall"] == 0.0
    assert _grade(setup, GOLD_PATCH, grader="overlap", gold_patch=None).status == "infra_error"


def test_similarity_ignores_test_files() -> None:
    sim = patch_similarity(GOLD_PATCH + TEST_PATCH, GOLD_PATCH)
    assert sim["files_precision"] == 1.0 and sim["lines_f1"] == 1.0 and sim["hunks_recall"] == 1.0


def test_none_grader_records_only(setup) -> None:
    out = _grade(setup, GOLD_PATCH, grader="none")
    assert out.status == "ungraded" and out.resolved is None


def test_grader_names() -> None:
    assert GRADER_NAMES == ("swebench", "local", "auto", "overlap", "none")
    for name in GRADER_NAMES:
        assert get_grader(name).name == name
    with pytest.raises(SweclError, match="unknown grader"):
        get_grader("docker")
