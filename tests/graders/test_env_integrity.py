"""Environment integrity in unconfined runs: what tests write into the venv is found before
the next grade; bytecode caches are removed, anything else rebuilds the environment."""

from __future__ import annotations

import sysconfig
from pathlib import Path

import pytest

from graders._env_info import EnvInfo
from graders._envs import build_env, check_env, env_lock, guard_env
from graders import GradeRequest
from graders._executing import SwebenchGrader
from graders._specs import EnvSpec
from tests.graders.exec_support import F2P, GOLD_PATCH, P2P, REPO, TEST_ENV, TEST_PATCH, WRONG_PATCH, make_calc_repo


def _site(env: EnvInfo) -> Path:
    [site] = list(env.venv.glob("lib/python*/site-packages"))
    return site


def test_check_env_lists_added_removed_and_changed_files(tmp_path: Path) -> None:
    env = build_env(REPO, "0.1", EnvSpec(python=None), cache_dir=tmp_path).env
    assert check_env(env) == []
    site = _site(env)
    rel = site.relative_to(env.venv).as_posix()
    (site / "evil.pth").write_text("import os\n")
    victim = next(p for p in sorted(site.rglob("*.py")) if p.stat().st_size > 0)
    victim.write_text(victim.read_text() + "\n# touched\n")
    gone = next(p for p in sorted((site / "pip").rglob("*.py")) if p != victim)
    gone.unlink()
    changes = check_env(env)
    assert f"added {rel}/evil.pth" in changes
    assert f"changed {victim.relative_to(env.venv).as_posix()}" in changes
    assert f"removed {gone.relative_to(env.venv).as_posix()}" in changes
    assert len(changes) == 3


def test_guard_removes_new_bytecode_and_rebuilds_on_anything_else(tmp_path: Path) -> None:
    spec = EnvSpec(python=None)
    build = build_env(REPO, "0.1", spec, cache_dir=tmp_path)
    rebuilds: list[int] = []

    def rebuild() -> EnvInfo:
        rebuilds.append(1)
        return build_env(REPO, "0.1", spec, cache_dir=tmp_path, force=True, locked=True).env

    with env_lock(build.env):
        assert guard_env(build.env, rebuild) == (build.env, None)
        planted = _site(build.env) / "pip" / "__pycache__" / "planted.cpython-311.pyc"
        planted.parent.mkdir(exist_ok=True)
        planted.write_bytes(b"not bytecode")
        env, note = guard_env(build.env, rebuild)
        assert note and "restored" in note and not planted.exists() and rebuilds == []
        (_site(env) / "pip").rename(_site(env) / "pip-moved")
        env, note = guard_env(env, rebuild)
        assert note and "rebuilt" in note and rebuilds == [1]
        assert (_site(env) / "pip").is_dir() and check_env(env) == []


# A test of the task's own test patch that damages the environment it runs in.
_PLANT = {
    "pth": [
        "def test_leaves_a_pth_behind():",
        "    import pathlib, sysconfig",
        "    pathlib.Path(sysconfig.get_paths()['purelib'], 'zzz_swecl_evil.pth').write_text('import os; os._exit(3)\\n')",
    ],
    "delete": [
        "def test_deletes_a_package():",
        "    import pathlib, shutil, pluggy",
        "    shutil.rmtree(pathlib.Path(pluggy.__file__).parent)",
    ],
}


def _hostile_test_patch(kind: str) -> str:
    body = "".join(f"+{line}\n" for line in ["", "", *_PLANT[kind]])
    head, _, _ = TEST_PATCH.partition("@@")
    added = 7 + len(_PLANT[kind]) + 2
    return (
        head + f"@@ -11,3 +11,{added} @@ def test_sub():\n \n def test_clamp_low():\n     assert clamp(-5, 0, 10) == 0\n"
        "+\n+\n+def test_clamp_high():\n+    assert clamp(50, 0, 10) == 10\n" + body
    )


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["pth", "delete"])
def test_a_task_that_damages_the_env_does_not_decide_the_next(tmp_path: Path, kind: str) -> None:
    src, base = make_calc_repo(tmp_path / "src")
    cache = tmp_path / "cache"

    def grade(patch: str, test_patch: str, *, check: bool) -> tuple[str, str]:
        grader = SwebenchGrader(cache_dir=cache, repo_sources={REPO: str(src)}, timeout_s=120, sandbox="none",
                                check_env_integrity=check)
        out = grader.grade(GradeRequest(
            instance_id="acme__calc-1", repo=REPO, version="0.1", base_commit=base, model_patch=patch,
            test_patch=test_patch, fail_to_pass=F2P, pass_to_pass=P2P, environment=TEST_ENV,
        ))
        return out.status, out.log.decode()

    status, log = grade(GOLD_PATCH, _hostile_test_patch(kind), check=True)
    assert status == "resolved", log
    # unchecked, the damage decides the next grade: no test results at all
    status, log = grade(WRONG_PATCH, TEST_PATCH, check=False)
    assert status == "infra_error", log
    # checked: found, rebuilt, and the wrong patch is graded as what it is
    status, log = grade(WRONG_PATCH, TEST_PATCH, check=True)
    assert status == "unresolved", log
    assert "env rebuilt" in log
    assert ("zzz_swecl_evil.pth" if kind == "pth" else "removed lib/python") in log
    status, log = grade(WRONG_PATCH, TEST_PATCH, check=True)
    assert status == "unresolved" and "env rebuilt" not in log, log
    assert not any(Path(sysconfig.get_paths()["purelib"]).glob("zzz_swecl_evil.pth"))  # ours was never touched
