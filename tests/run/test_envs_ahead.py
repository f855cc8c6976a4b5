"""The environments of a validation built ahead of its grades (commands._envs_ahead): the
build is the grade's own, so the grade takes it as it is, and it is the environment a
grade alone would have built."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from commands._envs_ahead import EnvsAhead
from commands.inputs import Task
from graders import GradeRequest
from graders._executing import SwebenchGrader
from tests.graders.env_support import make_calc_package
from tests.graders.exec_support import F2P, GOLD_PATCH, P2P, TEST_PATCH
from tests.graders.test_env_install import PKG, SPEC

pytestmark = pytest.mark.slow


def _grade(cache: Path, src: Path, task: Task) -> str:
    grader = SwebenchGrader(cache_dir=cache, repo_sources={PKG: str(src)}, timeout_s=120)
    out = grader.grade(GradeRequest(
        instance_id=task.instance_id, repo=PKG, version=task.version, base_commit=task.base_commit,
        model_patch=GOLD_PATCH, test_patch=TEST_PATCH, fail_to_pass=F2P, pass_to_pass=P2P,
        environment=SPEC, environment_setup_commit=task.environment_setup_commit))
    assert out.status == "resolved", out.log.decode()
    return out.log.decode()


def test_an_environment_built_ahead_is_the_one_the_grade_takes(tmp_path: Path) -> None:
    src, setup = make_calc_package(tmp_path / "src", "2024-03-01T12:00:00Z")
    tasks = [Task(instance_id=f"acme__calcpkg-{n}", repo=PKG, base_commit=setup, order=n, difficulty=1, version="0.1",
                  environment=msgspec.to_builtins(SPEC), environment_setup_commit=setup) for n in (1, 2)]
    ahead = tmp_path / "ahead"
    with EnvsAhead(tasks, cache_dir=ahead, repo_sources={PKG: str(src)}, python_paths={}) as building:
        building.wait()
    assert building.built == ["acme__calcpkg-1"]  # one environment for both tasks, built once
    log = _grade(ahead, src, tasks[1])
    assert "[swecl] env acme__calcpkg/0.1/" in log and ": reused (" in log, log

    alone = tmp_path / "alone"  # a grade with nothing built ahead builds the same one
    log = _grade(alone, src, tasks[1])
    assert ": built (" in log, log
    [made_ahead], [made_alone] = ([p.relative_to(c) for c in [cache] for p in (c / "envs").rglob("built.txt")]
                                  for cache in (ahead, alone))
    assert made_ahead == made_alone
    assert (ahead / made_ahead).read_text() == (alone / made_alone).read_text()


def test_a_task_whose_environment_cannot_be_built_ahead_is_left_to_its_grade(tmp_path: Path) -> None:
    """No such repository here: nothing is built and nothing raised; the grade says why."""
    task = Task(instance_id="nobody__none-1", repo="nobody/none", base_commit="0" * 40, order=1, difficulty=1,
                version="0.1", environment=msgspec.to_builtins(SPEC), environment_setup_commit="0" * 40)
    with EnvsAhead([task], cache_dir=tmp_path / "cache", repo_sources={"nobody/none": str(tmp_path / "no-such")},
                   python_paths={}) as building:
        building.wait()
    assert building.built == []
    assert not list((tmp_path / "cache").rglob("env.json"))


def test_a_runs_clean_up_spares_the_processes_of_the_builds_ahead(tmp_path: Path) -> None:
    """A run's clean-up kills the new processes it does not own; the builds ahead carry no
    run's marker. Under `--jobs 1` the first test run's clean-up killed their uv mid-build,
    and the environment, with no package, was taken as built."""
    import subprocess

    from graders.host import descendants
    from graders.host._reaper import kill_new_descendants

    before = descendants()
    with EnvsAhead([], cache_dir=tmp_path / "cache", repo_sources={}, python_paths={}):
        building = subprocess.Popen(["sleep", "60"])  # as the thread's uv: started with no run's marker
        try:
            kill_new_descendants(before, "a-test-run")  # another run's clean-up, as it ends
            assert building.poll() is None
        finally:
            building.kill()
            building.wait()
