"""Environment cache: uv venvs built once, atomic builds, the repo install step, pruning."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from graders._env_info import EnvBuildError
from graders._envs import build_env, env_lock, era_for, list_envs, prune_envs
from graders._install import ensure_repo_installed
from graders._interpreters import Interpreter
from graders._manifests import _read_environment_yml, _read_requirements, pre_install_plan
from graders.host import RepoCache
from graders._specs import EnvSpec, spec_for
from tests.graders.exec_support import REPO, TEST_ENV, shared_grading_cache


@pytest.fixture(scope="module")
def shared_env(tmp_path_factory: pytest.TempPathFactory):
    cache, src, base = shared_grading_cache(tmp_path_factory)
    # the era the grader gives this repo's tasks, so both share one environment
    era = era_for(RepoCache(cache, {REPO: str(src)}), REPO, base, None)
    return cache, build_env(REPO, "0.1", TEST_ENV, cache_dir=cache, exclude_newer=era.cutoff)


@pytest.mark.slow
def test_env_is_built_once_then_reused(shared_env) -> None:
    cache, first = shared_env
    again = build_env(REPO, "0.1", TEST_ENV, cache_dir=cache, exclude_newer=first.env.exclude_newer)
    assert again.built is False and again.env.path == first.env.path
    envs = list_envs(cache)
    assert [e.key for e in envs] == [first.env.key] and envs[0].complete
    assert first.env.key.startswith("acme__calc/0.1/py%d.%d-" % sys.version_info[:2])
    log = (first.env.path / "build.log").read_text()
    assert log.count("# environment for acme/calc@0.1") == 1 and "pytest" in log
    done = subprocess.run([str(first.env.python), "-m", "pytest", "--version"], capture_output=True, text=True)
    assert done.returncode == 0
    meta = json.loads((first.env.path / "env.json").read_text())
    assert meta["spec_hash"] == TEST_ENV.spec_hash() and meta["repo"] == REPO
    # the test-time fields do not change the environment's identity
    assert EnvSpec(python=None, pip_packages=["pytest"], test_cmd="pytest -x").spec_hash() == TEST_ENV.spec_hash()


def test_a_failed_build_leaves_no_environment(tmp_path: Path) -> None:
    bogus = Interpreter(Path("/bin/false"), "3.11.0", "explicit")
    with pytest.raises(EnvBuildError, match="could not create a venv"):
        build_env(REPO, "0.1", EnvSpec(), cache_dir=tmp_path, interpreter=bogus)
    assert list_envs(tmp_path) == []
    leftovers = [p.name for p in (tmp_path / "envs" / "acme__calc" / "0.1").iterdir()]
    assert all(name.endswith((".lock", ".failed.log")) for name in leftovers), leftovers


def test_requirement_files_need_a_checkout(tmp_path: Path) -> None:
    with pytest.raises(EnvBuildError, match="checkout"):
        build_env("django/django", "4.0", EnvSpec(packages="requirements.txt"), cache_dir=tmp_path)


def test_repo_install_runs_once_per_worktree_and_per_commit_when_compiled(tmp_path: Path) -> None:
    bare = EnvSpec(python=None)  # a venv only: fast, no packages
    build = build_env(REPO, "0.2", bare, cache_dir=tmp_path)
    counter = "import pathlib; p = pathlib.Path('runs.txt'); p.write_text(p.read_text() + 'x' if p.exists() else 'x')"
    spec = EnvSpec(python=None, install=f'python -c "{counter}"')
    wt_a, wt_b = tmp_path / "a", tmp_path / "b"
    wt_a.mkdir()
    wt_b.mkdir()
    with env_lock(build.env):
        assert ensure_repo_installed(build.env, spec, wt_a, "c1").ran
        assert not ensure_repo_installed(build.env, spec, wt_a, "c2").ran  # pure Python: stays valid
        assert ensure_repo_installed(build.env, spec, wt_b, "c2").ran  # another slot: reinstall there
        compiled = EnvSpec(python=None, install=spec.install, install_per_task=True)
        assert ensure_repo_installed(build.env, compiled, wt_b, "c3").ran
        assert not ensure_repo_installed(build.env, compiled, wt_b, "c3").ran
        failing = EnvSpec(python=None, install="python -c 'raise SystemExit(1)'")
        result = ensure_repo_installed(build.env, failing, wt_b, "c3")
        assert result.ran and not result.ok
        assert ensure_repo_installed(build.env, failing, wt_b, "c3").ran  # a failed install is retried
        # in a checkout: a failure that left no file there fails the same way again, and is
        # taken as it was, with its log; one that left a file runs again
        wt_c = tmp_path / "c"
        subprocess.run(["git", "init", "-q", str(wt_c)], check=True)
        first = ensure_repo_installed(build.env, failing, wt_c, "c3")
        again = ensure_repo_installed(build.env, failing, wt_c, "c4")
        assert first.ran and not first.ok and not again.ran and not again.ok and again.log == first.log
        leaving = EnvSpec(python=None, install="python -c \"open('partial.txt', 'w'); raise SystemExit(1)\"")
        assert ensure_repo_installed(build.env, leaving, wt_c, "c4").ran
        assert ensure_repo_installed(build.env, leaving, wt_c, "c4").ran
    assert (wt_a / "runs.txt").read_text() == "x"
    assert (wt_b / "runs.txt").read_text() == "xx"


def test_a_build_gets_the_settings_its_spec_implies_here(tmp_path: Path) -> None:
    """matplotlib's setupext.py reads `[libs]` from the file MPLSETUPCFG names: the install
    gets Debian's FreeType and Qhull instead of tarballs from outside the registries. A
    small package reading the file the same way sees them; another repository gets none."""
    setup = ("import configparser, os, pathlib\n"
             "config = configparser.ConfigParser()\n"
             "config.read(os.environ.get('MPLSETUPCFG') or 'mplsetup.cfg')\n"
             "libs = [f'{k}={config.getboolean(\"libs\", k, fallback=False)}' for k in ('system_freetype', 'system_qhull')]\n"
             "pathlib.Path('built-with.txt').write_text(' '.join(libs))\n")
    spec = EnvSpec(python=None, install="python setup.py")
    for repo in ("matplotlib/matplotlib", REPO):
        src = tmp_path / repo.replace("/", "__")
        src.mkdir()
        (src / "setup.py").write_text(setup)
        build = build_env(repo, "3.5", EnvSpec(python=None), cache_dir=tmp_path / "cache")
        with env_lock(build.env):
            assert ensure_repo_installed(build.env, spec, src, "c1").ok
            # an install recorded before the settings existed is redone, only where they apply
            state = json.loads((build.env.path / "installed.json").read_text())
            state.pop("settings")
            (build.env.path / "installed.json").write_text(json.dumps(state))
            assert ensure_repo_installed(build.env, spec, src, "c2").ran is (repo == "matplotlib/matplotlib")
        assert (src / "built-with.txt").read_text() == {
            "matplotlib/matplotlib": "system_freetype=True system_qhull=True",
            REPO: "system_freetype=False system_qhull=False"}[repo]


def test_prune_keeps_what_is_asked_and_skips_envs_in_use(tmp_path: Path) -> None:
    one = build_env(REPO, "1.0", EnvSpec(python=None), cache_dir=tmp_path).env
    two = build_env(REPO, "2.0", EnvSpec(python=None), cache_dir=tmp_path).env
    stale = one.path.parent / f".{one.path.name}.tmp-dead"
    stale.mkdir()
    assert set(prune_envs(tmp_path, dry_run=True)) == {one.path, two.path, stale}
    assert one.path.exists()
    with env_lock(two):
        removed = prune_envs(tmp_path, keep=[one.key])
    assert removed == [stale] or set(removed) == {stale}
    assert one.path.exists() and two.path.exists()
    assert prune_envs(tmp_path, keep_recent=0, keep=[one.key]) == [two.path]
    assert [e.key for e in list_envs(tmp_path)] == [one.key]


def test_requirements_files_are_read_like_pip(tmp_path: Path) -> None:
    (tmp_path / "base.txt").write_text("asgiref>=3.2  # comment\n-e .\n--index-url https://example.invalid\n")
    (tmp_path / "py3.txt").write_text("-r base.txt\nPillow>=6.2.0\n\n# only a comment\nnumpy; python_version<'3.12'\n")
    assert _read_requirements(tmp_path / "py3.txt") == ["asgiref>=3.2", "Pillow>=6.2.0", "numpy; python_version<'3.12'"]


def test_environment_yml_becomes_pip_requirements(tmp_path: Path) -> None:
    (tmp_path / "environment.yml").write_text(
        "name: xarray-tests\nchannels:\n  - conda-forge\n  - nodefaults\ndependencies:\n"
        "  - python=3.10\n  - numpy=1.23\n  - conda-forge::pandas>=1.4\n  - hdf5\n  - matplotlib-base\n  - dask-core\n"
        "  - pip\n  - pip:\n      - pytest-mypy-plugins\n      - numbagg==0.2.1\n  - scipy  # trailing comment\n"
    )
    assert _read_environment_yml(tmp_path / "environment.yml") == [
        "numpy==1.23.*", "pandas>=1.4", "matplotlib", "dask", "pytest-mypy-plugins", "numbagg==0.2.1", "scipy",
    ]


def test_pre_install_lines_that_need_root_are_reported() -> None:
    runnable, skipped = pre_install_plan(spec_for("sphinx-doc/sphinx", "7.2"))
    assert runnable == ["sed -i 's/pytest/pytest -rA/' tox.ini"]
    assert [line for line, _ in skipped] == ["apt-get update && apt-get install -y graphviz"]
    assert "root" in skipped[0][1]


@pytest.mark.slow
def test_an_environment_writes_a_lock_that_makes_the_same_distributions_elsewhere(shared_env, tmp_path: Path) -> None:
    """lock.txt: the build's distributions at exact versions with their files' hashes; a
    fresh venv synced from it (hashes required) holds exactly the same set."""
    from graders._install import BUILT, LOCK, sync_from_lock
    from graders._interpreters import uv_bin

    _, build = shared_env
    lock = (build.env.path / LOCK).read_text()
    built = (build.env.path / BUILT).read_text().split()
    assert built and all(f"{pin} \\" in lock for pin in built) and "--hash=sha256:" in lock
    assert str(build.env.path) not in lock  # nothing of this machine's paths
    fresh = tmp_path / "fresh"
    subprocess.run([uv_bin(), "venv", "--quiet", "--python", str(build.env.python), str(fresh)], check=True)
    done = sync_from_lock(fresh / "bin" / "python", build.env.path / LOCK)
    assert done.returncode == 0, done.stderr
    frozen = subprocess.run([uv_bin(), "pip", "freeze", "--python", str(fresh / "bin" / "python")],
                            capture_output=True, text=True, check=True).stdout.split()
    assert frozen == built


def test_an_environment_whose_interpreter_is_gone_is_built_again(tmp_path: Path) -> None:
    """A cache folder copied to a machine without the interpreter its venvs link to (at
    that path): such an environment cannot start, and is built again rather than reused."""
    first = build_env(REPO, "0.3", EnvSpec(python=None), cache_dir=tmp_path)
    assert build_env(REPO, "0.3", EnvSpec(python=None), cache_dir=tmp_path).built is False
    python = first.env.python
    python.unlink()
    python.symlink_to(tmp_path / "no-such-interpreter")
    again = build_env(REPO, "0.3", EnvSpec(python=None), cache_dir=tmp_path)
    assert again.built is True and again.env.path == first.env.path and again.env.python.exists()


def test_the_requirements_of_one_set_of_manifests_are_read_once(tmp_path: Path) -> None:
    """`setup.py egg_info` runs once per environment and dependency manifests: the next
    install with the same manifests (another task, the next pass) reads what it found."""
    from graders._install import _era_dependencies

    env = build_env(REPO, "0.4", EnvSpec(python=None), cache_dir=tmp_path / "cache",
                    exclude_newer="2024-01-01T00:00:00Z").env
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    counter = tmp_path / "egg_info_runs.txt"
    (checkout / "setup.py").write_text(
        f"import pathlib\np = pathlib.Path({str(counter)!r})\np.write_text(p.read_text() + 'x' if p.exists() else 'x')\n"
        "from setuptools import setup\nsetup(name='calc', version='0')\n"
    )
    line = "python -m pip install -e ."
    first, ran = _era_dependencies(env, line, checkout, timeout_s=120, fingerprint="f1")
    again, _ = _era_dependencies(env, line, checkout, timeout_s=120, fingerprint="f1")
    assert ran and "setup.py declares no requirements" in first and "read before for these manifests" in again
    assert counter.read_text() == "x"
    _era_dependencies(env, line, checkout, timeout_s=120, fingerprint="f2")  # other manifests: read again
    _era_dependencies(env, line, checkout, timeout_s=120)  # none known: read every time
    assert counter.read_text() == "xxx"
