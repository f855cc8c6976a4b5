"""Environments resolved as of the task's era (uv --exclude-newer at the setup commit's
date, seed packages included) and dependency manifests read at the setup commit."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from graders._envs import build_env, env_identity, era_for, spec_pins_named
from graders._interpreters import PythonNotFound, find_python
from graders.host import RepoCache
from graders._specs import EnvSpec
from graders._uv import compile_flag
from tests.graders.env_support import commit_at, dated_index, installed_version, make_sdist, make_wheel, simple_index
from tests.graders.exec_support import REPO, make_calc_repo, write


def test_packages_and_seed_resolve_as_of_the_cutoff(tmp_path: Path) -> None:
    """Real PyPI (through uv's cache): unpinned docutils and the seed packages of 2020."""
    spec = EnvSpec(python=None, pip_packages=["docutils"])
    build = build_env(REPO, "era", spec, cache_dir=tmp_path, exclude_newer="2021-01-01T00:00:00Z")
    assert build.built and build.warnings == [], (build.log_path.read_text() if build.log_path else "")
    python = build.env.python
    assert installed_version(python, "docutils") == "0.16"  # 0.17 came out in 2021
    # the installer is exempt (an era pip cannot resolve today's index): pip of 2024
    assert installed_version(python, "pip").split(".")[0] == "24"
    assert int(installed_version(python, "setuptools").split(".")[0]) <= 51
    subprocess.run([str(python), "-c", "import pkg_resources"], check=True)  # setuptools 82 has none
    meta = json.loads((build.env.path / "env.json").read_text())
    assert meta["exclude_newer"] == "2021-01-01T00:00:00Z" and meta["exclude_newer_applied"] is True
    assert build.env.exclude_newer == "2021-01-01T00:00:00Z"
    assert build.env.key.endswith(env_identity(spec, "2021-01-01T00:00:00Z")[:12])
    log = build.log_path.read_text() if build.log_path else ""
    assert "--exclude-newer 2021-01-01T00:00:00Z" in log and "venv --no-config" in log
    # the cut-off is part of the identity: another era is another environment
    assert env_identity(spec, "2021-01-01T00:00:00Z") != env_identity(spec, "2022-01-01T00:00:00Z")
    assert env_identity(spec, None) == spec.spec_hash()


def test_an_index_without_upload_times_falls_back_to_the_pins_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    index = simple_index(tmp_path / "index", {"tinypkg": ["1.0", "2.0"], "tinyb": ["0.5"]})
    monkeypatch.setenv("UV_EXTRA_INDEX_URL", index)  # pip and friends still come from PyPI
    spec = EnvSpec(python=None, packages="tinyb", pip_packages=["tinypkg==1.0"])
    build = build_env(REPO, "noidx", spec, cache_dir=tmp_path / "cache", exclude_newer="2021-01-01T00:00:00Z")
    assert installed_version(build.env.python, "tinypkg") == "1.0"
    assert installed_version(build.env.python, "tinyb") == "0.5"
    said = [w for w in build.warnings if "no upload times" in w]
    assert len(said) == 1 and "2021-01-01T00:00:00Z" in said[0], build.warnings
    log = build.log_path.read_text() if build.log_path else ""
    assert log.count("# WARNING the era cut-off") == 1
    meta = json.loads((build.env.path / "env.json").read_text())
    assert meta["exclude_newer_applied"] is False


def test_find_links_escape_the_cutoff_and_the_build_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    links = tmp_path / "links"
    make_wheel(links, "tinypkg", "1.0")
    make_wheel(links, "tinypkg", "2.0")
    monkeypatch.setenv("UV_FIND_LINKS", str(links))
    build = build_env(REPO, "links", EnvSpec(python=None, pip_packages=["tinypkg"]), cache_dir=tmp_path / "cache",
                      exclude_newer="2020-01-01T00:00:00Z")
    # uv serves find-links files whatever the cut-off (they have no upload time to compare)
    assert installed_version(build.env.python, "tinypkg") == "2.0"
    assert any("find-links" in w for w in build.warnings), build.warnings


def test_manifests_are_read_at_the_setup_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    links = tmp_path / "links"
    make_wheel(links, "tinypkg", "1.0")
    make_wheel(links, "tinypkg", "2.0")
    monkeypatch.setenv("UV_FIND_LINKS", str(links))  # no network: the requirements come from here
    src, _ = make_calc_repo(tmp_path / "src")
    write(src, "requirements.txt", "-r reqs/base.txt\n")
    write(src, "reqs/base.txt", "tinypkg==1.0\n")
    setup = commit_at(src, "env setup", "2020-03-01T23:30:00-05:00")
    write(src, "reqs/base.txt", "tinypkg==2.0\n")
    base = commit_at(src, "later task", "2021-05-02T10:00:00Z")
    repos = RepoCache(tmp_path / "cache", {REPO: str(src)})
    spec = EnvSpec(python=None, packages="requirements.txt")

    era = era_for(repos, REPO, base, setup)
    assert era.commit == setup and era.cutoff == "2020-03-02T00:00:00Z"  # committer date in UTC, floored to the day
    with repos.worktree(REPO, base) as wt:
        build = build_env(REPO, "req", spec, cache_dir=repos.cache_dir, worktree=wt.path, exclude_newer=era.cutoff,
                          read_file=era.read_file, files_origin=f"commit {setup}")
    assert installed_version(build.env.python, "tinypkg") == "1.0"
    assert f"# packages from requirements.txt (commit {setup})" in (build.log_path.read_text() if build.log_path else "")

    # without a setup commit: the base commit's era, and its checkout's files
    era = era_for(repos, REPO, base, None)
    assert era.commit == base and era.cutoff == "2021-05-01T00:00:00Z" and era.read_file is None  # its month
    with repos.worktree(REPO, base) as wt:
        build = build_env(REPO, "req", spec, cache_dir=repos.cache_dir, worktree=wt.path, exclude_newer=era.cutoff)
    assert installed_version(build.env.python, "tinypkg") == "2.0"

    # a setup commit the repository does not have: the base commit's era, said in a note
    era = era_for(repos, REPO, base, "f" * 40)
    assert era.commit == base and era.notes and "environment_setup_commit" in era.notes[0]


def test_bytecode_is_compiled_at_install_only_where_uv_can(tmp_path: Path) -> None:
    """uv's compile step needs Python 3.7 (py_compile.PycInvalidationMode)."""
    def venv(name: str, cfg: str) -> Path:
        write(tmp_path / name, "pyvenv.cfg", cfg)
        return tmp_path / name / "bin" / "python"

    assert compile_flag(venv("uv36", "home = /x\nversion_info = 3.6.15\n")) == []
    assert compile_flag(venv("std27", "home = /x\nversion = 2.7.18\n")) == []
    assert compile_flag(venv("uv39", "version_info = 3.9.20\n")) == ["--compile-bytecode"]
    assert compile_flag(tmp_path / "nowhere" / "bin" / "python") == ["--compile-bytecode"]


def test_a_python_3_6_environment_installs_its_packages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """astropy 1.3's environments (Python 3.6): with uv's --compile-bytecode every install
    failed after installing, and the whole pip_packages batch ended as env problems."""
    try:
        find_python("3.6")
    except PythonNotFound as e:
        pytest.skip(f"needs a Python 3.6 (PATH, pyenv, uv or SWECL_PYTHON_3_6): {e}")
    links = tmp_path / "links"
    make_wheel(links, "tinypkg", "1.0")
    monkeypatch.setenv("UV_FIND_LINKS", str(links))
    build = build_env(REPO, "py36", EnvSpec(python="3.6", pip_packages=["tinypkg==1.0"]), cache_dir=tmp_path / "cache")
    log = build.log_path.read_text() if build.log_path else ""
    assert build.built and build.warnings == [], log
    assert _pip_show_version(build.env.python, "tinypkg") == "1.0"
    assert "--compile-bytecode" not in log and "PycInvalidationMode" not in log


def test_an_old_sdist_builds_under_a_cutoff_older_than_uv_s_build_backend(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """astropy 1.3's era (2018-10-01) predates setuptools 40.8.0, which uv needs to build a
    legacy setup.py: PyYAML 3.12 and MarkupSafe 1.0 failed with "No solution found when
    resolving: setuptools>=40.8.0". The build environment may take setuptools up to that
    release; the venv keeps its own era setuptools. On astropy 1.3's Python 3.6: setuptools
    40.8.0 does not run on 3.9+ (HTMLParser.unescape), nor do that era's tasks."""
    try:
        find_python("3.6")
    except PythonNotFound as e:
        pytest.skip(f"needs a Python 3.6 (PATH, pyenv, uv or SWECL_PYTHON_3_6): {e}")
    setup_py = "from setuptools import setup\nsetup(name='tinyold', version='1.0', py_modules=['tinyold'])\n"
    sdist = make_sdist(tmp_path / "sdists", "tinyold", "1.0", setup_py)
    cutoff = "2018-10-01T00:00:00Z"
    with dated_index(tmp_path / "index", {"tinyold": [("1.0", "2018-05-01T00:00:00Z", sdist)]}) as url:
        monkeypatch.setenv("UV_EXTRA_INDEX_URL", url)  # setuptools and pip still come from PyPI
        build = build_env(REPO, "oldsdist", EnvSpec(python="3.6", pip_packages=["tinyold"]),
                          cache_dir=tmp_path / "cache", exclude_newer=cutoff)
    log = build.log_path.read_text() if build.log_path else ""
    assert build.built and build.warnings == [], log
    assert _pip_show_version(build.env.python, "tinyold") == "1.0"
    assert "--exclude-newer-package setuptools=2019-02-06T00:00:00Z" in log
    # the venv's setuptools is the era's seed, not the build backend's
    assert tuple(int(p) for p in _pip_show_version(build.env.python, "setuptools").split(".")[:2]) < (40, 8), log


def _pip_show_version(python: Path, dist: str) -> str:
    """The installed version (Python 3.6 has no importlib.metadata)."""
    shown = subprocess.run([str(python), "-m", "pip", "show", dist], capture_output=True, text=True, check=True).stdout
    return next(line.split(":", 1)[1].strip() for line in shown.splitlines() if line.startswith("Version:"))


def test_a_package_no_era_release_installs_here_gets_the_images_wheel(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """xarray 0.12 runs on Python 3.10 with a cut-off of 2021-05: bottleneck 1.3.2 has no
    wheel for it and its build compiles numpy 1.17.3, which fails after minutes (once per
    attempt). The failed source build is not retried offline, and the package comes as its
    newest wheel as of SWE-bench's images, with a warning; others stay of the era."""
    broken = "raise SystemExit('error: this C extension does not compile on this Python')\n"
    releases = {
        "tinybuild": [("1.0", "2020-06-01T00:00:00Z", make_sdist(tmp_path / "a", "tinybuild", "1.0", broken)),
                      ("2.0", "2023-06-01T00:00:00Z", make_wheel(tmp_path / "b", "tinybuild", "2.0")),
                      ("3.0", "2025-06-01T00:00:00Z", make_wheel(tmp_path / "c", "tinybuild", "3.0"))],
        "tinyera": [("1.0", "2020-06-01T00:00:00Z", make_wheel(tmp_path / "d", "tinyera", "1.0")),
                    ("2.0", "2023-06-01T00:00:00Z", make_wheel(tmp_path / "e", "tinyera", "2.0"))],
    }
    with dated_index(tmp_path / "index", releases) as url:
        monkeypatch.setenv("UV_EXTRA_INDEX_URL", url)
        build = build_env(REPO, "nowheel", EnvSpec(python=None, packages="tinyera tinybuild"),
                          cache_dir=tmp_path / "cache", exclude_newer="2021-01-01T00:00:00Z")
    log = build.log_path.read_text() if build.log_path else ""
    assert installed_version(build.env.python, "tinybuild") == "2.0", log  # not 3.0: after the images
    assert installed_version(build.env.python, "tinyera") == "1.0"
    said = [w for w in build.warnings if "tinybuild" in w]
    assert len(said) == 1 and "no release of tinybuild as of 2021-01-01" in said[0], build.warnings
    assert "could not install" not in " ".join(build.warnings)
    # A failed source build is never tried again offline: once it failed with and without
    # isolation, every later attempt takes its wheels only.
    offline = [line for line in log.splitlines() if "--offline" in line and "tinybuild" in line]
    assert all("--only-binary tinybuild" in line for line in offline), offline


def test_the_packages_stage_takes_the_spec_s_pin_of_what_it_names(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """xarray 0.12: environment.yml names numpy and pytest, the spec's pip_packages pin
    numpy==1.23.0 and pytest==7.4.0, the era's numpy (2021-05) has no wheel for Python
    3.10, and pytest 7.4.0 needs exceptiongroup, first released after the era. The pins
    replace the era's releases in the next step anyway, so the packages stage takes them
    at once: the era release is never built; the pins come first, their newer dependencies
    as of SWE-bench's images; what depends on them resolves against them as installed (not
    to an ancient release that declares no dependency at all); a name no index has (a
    conda-only package) fails alone."""
    broken = "raise SystemExit('error: this C extension does not compile on this Python')\n"
    releases = {
        "tinycore": [("1.0", "2020-06-01T00:00:00Z", make_sdist(tmp_path / "a", "tinycore", "1.0", broken)),
                     ("2.0", "2023-06-01T00:00:00Z", make_wheel(tmp_path / "b", "tinycore", "2.0", ("tinynew",)))],
        "tinynew": [("1.0", "2022-06-01T00:00:00Z", make_wheel(tmp_path / "c", "tinynew", "1.0"))],
        "tinyuser": [("0.1", "2013-06-01T00:00:00Z", make_wheel(tmp_path / "d", "tinyuser", "0.1")),
                     ("1.0", "2020-06-01T00:00:00Z", make_wheel(tmp_path / "e", "tinyuser", "1.0", ("tinycore>=1",)))],
    }
    spec = EnvSpec(python=None, packages="tinyuser tinycore>=1 tinycondaonly", pip_packages=["tinycore==2.0"])
    with dated_index(tmp_path / "index", releases) as url:
        monkeypatch.setenv("UV_EXTRA_INDEX_URL", url)
        build = build_env(REPO, "pinned", spec, cache_dir=tmp_path / "cache", exclude_newer="2021-01-01T00:00:00Z")
    log = build.log_path.read_text() if build.log_path else ""
    assert build.warnings == ["packages: could not install tinycondaonly"], log
    assert installed_version(build.env.python, "tinycore") == "2.0"
    assert installed_version(build.env.python, "tinynew") == "1.0"
    assert installed_version(build.env.python, "tinyuser") == "1.0"  # of the era, not 0.1
    assert "tinycore==1.0" not in log  # the era release is never tried
    assert "the spec's pip_packages pins of what they name, first: tinycore==2.0" in log


def test_spec_pins_named_are_the_pins_of_named_unpinned_packages() -> None:
    reqs = ["numpy", "dask[array]>=2", "pandas==0.25", "toolz; python_version>'3'", "-e ."]
    pins = ["numpy==1.23.0", "dask==2022.8.1", "pandas==1.5.3", "pytest==7.4.0", "Toolz==0.12.0"]
    # numpy, dask and toolz are named and not pinned by the stage; pandas keeps the stage's
    # own pin (pip_packages replaces it later, as in swebench); pytest is not named
    assert spec_pins_named(reqs, pins) == ["numpy==1.23.0", "dask==2022.8.1", "Toolz==0.12.0"]
    assert spec_pins_named(reqs, []) == []


def test_a_source_build_takes_the_spec_s_pin_of_what_it_builds_against(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """xarray 0.12 (Python 3.10, cut-off 2021-05): h5py 3.2.1 and bottleneck 1.3.2 have no
    wheel for 3.10, and their isolated builds compiled the era's numpy (1.19.3, 1.17.3) from
    source for minutes, to fail, at every attempt: the build took over an hour. Isolated
    builds are held to the spec's pins (numpy 1.23.0, a wheel): the era's release of what
    they build against is never built; such a build fails at once, and the retry without
    build isolation builds against the pin installed in the venv."""
    marker = tmp_path / "tinynum-1.0-was-built"
    slow = f"open({str(marker)!r}, 'w').close()\nraise SystemExit('error: numpy of the era does not compile here')\n"
    tinyc = tmp_path / "tinyc-src"
    write(tinyc, "pyproject.toml", '[build-system]\nrequires = ["setuptools", "tinynum==1.0"]\n'
                                   'build-backend = "setuptools.build_meta"\n\n'
                                   '[project]\nname = "tinyc"\nversion = "1.0"\n')
    write(tinyc, "tinyc.py", "import tinynum\n")
    sdist_dir = tmp_path / "sdists"
    sdist_dir.mkdir()
    subprocess.run(["tar", "-czf", str(sdist_dir / "tinyc-1.0.tar.gz"), "--transform", "s,^tinyc-src,tinyc-1.0,",
                    "-C", str(tmp_path), "tinyc-src"], check=True)
    releases = {
        "tinynum": [("1.0", "2022-06-01T00:00:00Z", make_sdist(tmp_path / "a", "tinynum", "1.0", slow)),
                    ("2.0", "2023-06-01T00:00:00Z", make_wheel(tmp_path / "b", "tinynum", "2.0"))],
        "tinyc": [("1.0", "2022-06-01T00:00:00Z", sdist_dir / "tinyc-1.0.tar.gz")],
    }
    spec = EnvSpec(python=None, packages="tinyc tinynum", pip_packages=["tinynum==2.0"])
    with dated_index(tmp_path / "index", releases) as url:
        monkeypatch.setenv("UV_EXTRA_INDEX_URL", url)  # setuptools still comes from PyPI
        build = build_env(REPO, "buildpins", spec, cache_dir=tmp_path / "cache", exclude_newer="2023-01-01T00:00:00Z")
    log = build.log_path.read_text() if build.log_path else ""
    assert build.warnings == [], log
    assert installed_version(build.env.python, "tinynum") == "2.0"
    assert _pip_show_version(build.env.python, "tinyc") == "1.0"
    assert not marker.exists(), log  # the era's tinynum was never built
    assert "--build-constraints" in log


def test_a_fallback_of_the_images_never_replaces_what_is_installed(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """xarray 0.12: no cartopy of the era installs on Python 3.10, so it came with its
    dependencies as of SWE-bench's images: cartopy 0.24 needs matplotlib>=3.6 and replaced
    the installed matplotlib with 3.10, which seaborn 0.11 of the era cannot import, and no
    test was collected. Such fallbacks come after the stage's other requirements, and what
    is installed then stays: the fallback takes the newest release of then that works with it."""
    broken = "raise SystemExit('error: this C extension does not compile on this Python')\n"
    releases = {
        "tinyplot": [("1.0", "2020-06-01T00:00:00Z", make_wheel(tmp_path / "a", "tinyplot", "1.0")),
                     ("2.0", "2023-06-01T00:00:00Z", make_wheel(tmp_path / "b", "tinyplot", "2.0"))],
        "tinygeo": [("1.0", "2022-06-01T00:00:00Z", make_wheel(tmp_path / "c", "tinygeo", "1.0"))],
        "tinycart": [("1.0", "2020-06-01T00:00:00Z", make_sdist(tmp_path / "d", "tinycart", "1.0", broken)),
                     ("1.5", "2022-06-01T00:00:00Z", make_wheel(tmp_path / "e", "tinycart", "1.5", ("tinygeo", "tinyplot>=1"))),
                     ("2.0", "2023-06-01T00:00:00Z", make_wheel(tmp_path / "f", "tinycart", "2.0", ("tinygeo", "tinyplot>=2")))],
    }
    # tinycart first, as cartopy comes before matplotlib in xarray's environment.yml
    spec = EnvSpec(python=None, packages="tinycart tinyplot tinycondaonly")
    with dated_index(tmp_path / "index", releases) as url:
        monkeypatch.setenv("UV_EXTRA_INDEX_URL", url)
        build = build_env(REPO, "keep", spec, cache_dir=tmp_path / "cache", exclude_newer="2021-01-01T00:00:00Z")
    log = build.log_path.read_text() if build.log_path else ""
    assert installed_version(build.env.python, "tinyplot") == "1.0", log  # not replaced by 2.0
    assert installed_version(build.env.python, "tinycart") == "1.5", log
    assert installed_version(build.env.python, "tinygeo") == "1.0"
    assert "packages: could not install tinycondaonly" in build.warnings


def test_a_package_whose_history_pypi_lost_resolves_as_of_its_re_upload(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """atomicwrites' author deleted every release in 2022 and uploaded 1.4.1 again; pytest
    3.6 to 5.0 require it, so under scikit-learn 0.21's cut-off (2019-08) the resolver
    stepped around it to pytest 3.5.1, whose `-rA` prints no PASSED line. Here a tiny
    index does the same: tinytest 2.0 (of the era) needs atomicwrites, whose only file is
    uploaded after the era; the era's tinytest 2.0 is installed, not the older 1.0."""
    releases = {
        "tinytest": [("1.0", "2018-01-01T00:00:00Z", make_wheel(tmp_path / "a", "tinytest", "1.0")),
                     ("2.0", "2019-06-01T00:00:00Z",
                      make_wheel(tmp_path / "b", "tinytest", "2.0", requires=("atomicwrites>=1.0",)))],
        "atomicwrites": [("1.4.1", "2022-07-08T18:31:40Z", make_wheel(tmp_path / "c", "atomicwrites", "1.4.1"))],
    }
    with dated_index(tmp_path / "index", releases) as url:
        monkeypatch.setenv("UV_EXTRA_INDEX_URL", url)  # first: uv asks PyPI only for what it lacks (pip, setuptools)
        build = build_env(REPO, "lost", EnvSpec(python=None, packages="tinytest"),
                          cache_dir=tmp_path / "cache", exclude_newer="2019-08-01T00:00:00Z")
    log = build.log_path.read_text() if build.log_path else ""
    assert installed_version(build.env.python, "tinytest") == "2.0", log
    assert installed_version(build.env.python, "atomicwrites") == "1.4.1"
    assert "--exclude-newer-package atomicwrites=2022-07-09T00:00:00Z" in log
