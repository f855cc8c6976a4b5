"""The environments of a validation built ahead of its grades (commands._envs_ahead): the
build is the grade's own, so the grade takes it as it is, and it is the environment a
grade alone would have built."""

from __future__ import annotations

import os
import time
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


def test_a_build_ahead_runs_in_a_session_of_its_own_at_the_lowest_priority_and_clean_ups_spare_it(
        tmp_path: Path) -> None:
    """The build is a process of its own leading its own session (Linux autogroups: a nice
    value orders only the processes of one session, and each test run leads one), at nice
    19 for its session's group; another run's clean-up, ending all through the build, kills
    nothing of it. Under `--jobs 1` such a clean-up once killed the build's uv mid-build,
    and the environment, with no package, was taken as built."""
    from graders.host import descendants
    from graders.host._reaper import kill_new_descendants

    src, setup = make_calc_package(tmp_path / "src", "2024-03-01T12:00:00Z")
    task = Task(instance_id="acme__calcpkg-1", repo=PKG, base_commit=setup, order=1, difficulty=1, version="0.1",
                environment=msgspec.to_builtins(SPEC), environment_setup_commit=setup)
    before = descendants()
    seen: dict[int, tuple[int, str]] = {}  # the builder's pid: its session, its autogroup
    with EnvsAhead([task], cache_dir=tmp_path / "cache", repo_sources={PKG: str(src)},
                   python_paths={}) as building:
        while building._thread.is_alive():
            kill_new_descendants(before, "another-run")  # another run's clean-up, as it ends
            for pid in descendants() - before:
                try:
                    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
                    if b"commands._envs_ahead" in cmdline:
                        seen[pid] = (os.getsid(pid), Path(f"/proc/{pid}/autogroup").read_text().strip())
                except OSError:  # gone, or no autogroups
                    pass
            time.sleep(0.02)
    assert building.built == ["acme__calcpkg-1"]  # spared: built whole
    log = _grade(tmp_path / "cache", src, task)
    assert ": reused (" in log, log
    # (a fork of the builder holds its command line until it execs: in its session too)
    leaders = {pid: group for pid, (session, group) in seen.items() if session == pid}
    assert leaders, f"no build process seen leading its session: {seen}"
    assert {session for session, _ in seen.values()} == set(leaders) and os.getsid(0) not in leaders
    if Path("/proc/self/autogroup").exists():
        assert all(group.endswith("nice 19") for group in leaders.values()), leaders
