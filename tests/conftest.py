"""Fixtures every test package shares."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bench.processes import pycache_prefix, shared_dir
from graders._bytecode import ENV_PYCACHE
from tests.atif_check import AtifValidator, harbor_python, uv_binary

REPO_ROOT = Path(__file__).resolve().parents[1]

# Every Python process the tests start (swecl, the demo grader's pytest, the MCP servers
# and scripts the tests write) keeps its bytecode in one cache, `.dev/pycache` (ignored by
# git; see `pycache_prefix`). Where PYTHONDONTWRITEBYTECODE is set, each would compile its
# imports again at every start (pytest, the MCP SDK, swecl: about 0.3 s each). The graders
# set their own test runs' bytecode rules and pass neither variable through, so what is
# graded does not change.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
# pytest-xdist's workers run with COLUMNS=80 (a plain run has none), and swecl's tables
# honour COLUMNS when their output is piped: a test that wants a width sets it itself.
os.environ.pop("COLUMNS", None)
_OWN_PYCACHE = "PYTHONPYCACHEPREFIX" not in os.environ
os.environ.setdefault("PYTHONPYCACHEPREFIX", pycache_prefix())


def pytest_configure(config: pytest.Config) -> None:
    # Once per session (not in each xdist worker): the bytecode of the temp files of
    # earlier sessions (the scripts and repositories tests write there) goes, as its
    # sources went; else `.dev/pycache` grows by megabytes a run. Never in a cache the
    # user chose with PYTHONPYCACHEPREFIX.
    # A checkout that is itself under the temp dir keeps its own bytecode (its packages',
    # the CLIs' and the tools' it installed under .dev), or each session compiles it again.
    if _OWN_PYCACHE and not hasattr(config, "workerinput"):
        stale = Path(pycache_prefix()) / Path(tempfile.gettempdir()).resolve().relative_to("/")
        own = Path(pycache_prefix()) / REPO_ROOT.relative_to("/")
        for entry in stale.iterdir() if stale.is_dir() else ():
            if entry != own and entry not in own.parents:
                shutil.rmtree(entry, ignore_errors=True)

# The test modules that take longest (the sum of their tests' durations, from
# `pytest --durations=0` on 2 cores), slowest first. xdist's loadscope hands out whole
# modules, by default the ones with the most tests first: these have few tests each, so
# they came last and the suite ended with one of them running alone for minutes.
# pyproject.toml turns that reordering off (`--no-loadscope-reorder`) and the hook below
# puts these first, so the many short modules fill the end. Only the order changes.
# The demo suite goes first of all: its one fixture (the whole demo run) is the longest
# piece of work that cannot be split between the workers.
SLOWEST_FIRST = (
    "tests/run/test_demo_suite.py",  # 91 s
    "tests/leaderboard/test_leaderboard.py",  # 25 s
    "tests/bundle/test_leaderboard.py",  # 22 s
    "tests/run/test_memory_server_presets.py",  # 17 s
    "tests/run/test_memory_server_cognee.py",  # 45 s (and cognee's install from PyPI, once)
    "tests/run/test_memory_server_mem0.py",  # 40 s (mem0ai's install from PyPI, once)
    "tests/bundle/test_bundle.py",  # 15 s
    "tests/agents/test_cli_agents_shared.py",  # 100 s
    "tests/graders/test_env_install.py",  # 92 s
    "tests/scale/test_ray_executor.py",  # 78 s
    "tests/bench/test_bench_quick.py",  # 48 s
    "tests/reliability/test_resource_faults.py",  # 40 s
    "tests/reliability/test_crash_exact.py",  # 36 s
    "tests/agents/test_opencode_e2e.py",  # 35 s
    "tests/agents/test_egress_clis.py",  # 34 s
    "tests/reliability/test_isolation.py",  # 32 s
    "tests/reliability/test_crash_random.py",  # 31 s
    "tests/reliability/test_crash_parallel.py",  # 28 s
    "tests/run/test_memory_server_resume.py",  # 28 s
    "tests/cli/test_view.py",  # 27 s
    "tests/run/test_memory_server_basic_memory.py",  # 25 s
    "tests/run/test_resume.py",  # 24 s
    "tests/agents/test_claude_e2e.py",  # 22 s
    "tests/run/test_memory_server_clis.py",  # 21 s
    "tests/run/test_grade_command.py",  # 20 s
    "tests/graders/test_env_era.py",  # 19 s
    "tests/reliability/test_tamper.py",  # 19 s
    "tests/cli/test_repeat_cli.py",  # 19 s
    "tests/run/test_gemini_run.py",  # 18 s
    "tests/reliability/test_crash_task_jobs.py",  # 17 s
    "tests/run/test_opencode_run.py",  # 17 s
    "tests/graders/test_grade_e2e.py",  # 16 s
    "tests/run/test_memory_server.py",  # 16 s
    "tests/cli/test_commands.py",  # 16 s
    "tests/reliability/test_leaks.py",  # 16 s
    "tests/agents/test_mini_e2e.py",  # 15 s
    "tests/run/test_task_jobs.py",  # 15 s
    "tests/reliability/test_concurrency.py",  # 14 s
    "tests/run/test_resume_invocation.py",  # 14 s
    "tests/run/test_memory_server_host.py",  # 13 s
    "tests/inputs/test_demo.py",  # 12 s
    "tests/reliability/test_bad_input.py",  # 12 s
    "tests/graders/test_envs.py",  # 11 s
    "tests/reliability/test_ctrl_c.py",  # 11 s
    "tests/graders/test_env_integrity.py",  # 11 s
    "tests/run/test_claude_run.py",  # 10 s
    "tests/graders/test_env_verify.py",  # 10 s
    "tests/agents/test_gemini_e2e.py",  # 10 s
    "tests/reliability/test_shell_injection.py",  # 9 s
    "tests/graders/test_tox_current_env.py",  # 9 s
    "tests/run/test_mini_run.py",  # 9 s
    "tests/graders/test_env_pins.py",  # 8 s
    "tests/run/test_codex_run.py",  # 8 s
    "tests/run/test_fork.py",  # 8 s
    "tests/reliability/test_forged_results.py",  # 8 s
    "tests/run/test_jobs.py",  # 7 s
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {module: i for i, module in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))  # stable: the rest keep their order


@pytest.fixture(scope="session")
def shared() -> Path:
    found = shared_dir()
    if found is None:
        pytest.skip("SKIPPED LOUDLY: ../shared (real logs, manifests, CLI captures) is not beside this checkout; set SWECL_SHARED")
    return found


@pytest.fixture(scope="session")
def atif_validator() -> Iterator[AtifValidator]:
    """Harbor's ATIF validator, one process for the session (`tests.atif_check`)."""
    uv = uv_binary()
    python = harbor_python(uv) if uv else None
    if uv is None or python is None:
        pytest.skip("SKIPPED LOUDLY: no uv or no Python 3.12+ to load harbor's ATIF models (set SWECL_HARBOR_PYTHON)")
    validator = AtifValidator(uv, python)
    yield validator
    validator.close()


@pytest.fixture(scope="session")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One swecl cache (demo repositories, test environments) per test process: the demo
    is built once per process, whichever package's tests ask for it first."""
    return tmp_path_factory.mktemp("swecl-cache")


# What `own_cache` leaves out of its copy: the environments of other repositories than
# the demo's (the runs it is for never use them) and every environment's bytecode cache
# (made for the venv's path, so made again at the copy's path anyway). The copy of a whole
# cache cost seconds of CPU a test, most of it the kernel's (tens of thousands of files).
_DEMO_ENVS = "swecl-demo__"


def _not_for_a_demo_run(cache: Path) -> Callable[[str, list[str]], set[str]]:
    """`shutil.copytree`'s `ignore` for a copy of `cache` (the comment above)."""
    envs = cache / "envs"

    def ignore(root: str, names: list[str]) -> set[str]:
        here = Path(root)
        if here == envs:
            return {n for n in names if not n.startswith(_DEMO_ENVS)}
        if here.parent.parent.parent == envs:  # envs/REPO/VERSION/ENV: an environment's own folder
            return {n for n in names if n == ENV_PYCACHE or n.startswith(".pycache-")}
        return set()

    return ignore


@pytest.fixture
def own_cache(tmp_path: Path, cache: Path) -> Path:
    """A cache of this test's own, for the demo runs it kills: what a killed run leaves in
    a cache (a lock, a half-made worktree) must not reach other tests. It begins as a copy
    of this process's `cache`, so the demo repositories and environments built there are
    not built again (a cache folder copied elsewhere works on its own; only each
    environment's bytecode cache, made for its path, is made again, so it is not copied)."""
    own = tmp_path / "cache"
    if cache.is_dir():
        try:
            shutil.copytree(cache, own, symlinks=True, ignore=_not_for_a_demo_run(cache))
        except (shutil.Error, OSError):  # a file went while copied: begin empty, and build it all
            shutil.rmtree(own, ignore_errors=True)
    return own
