"""The spec's exact pins hold: the era cut-off never overrules them, a package installed
after them never replaces them, and an old sdist that needs the venv's own setuptools
gets the no-build-isolation path instead of a broken set."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from graders._envs import build_env
from graders._specs import EnvSpec
from graders._uv import exact_pins
from tests.graders.env_support import installed_version, make_sdist, make_wheel
from tests.graders.exec_support import REPO


def test_exact_pins_are_named_whatever_their_spelling() -> None:
    pins = exact_pins(["attrs==23.1.0", "six", "Py_Thing[x] == 1.0 ; python_version<'3'", "a>=1", "b===2", "c==1.*"])
    assert pins == {"attrs": "attrs==23.1.0", "py-thing": "Py_Thing[x] == 1.0 ; python_version<'3'", "b": "b===2"}


def test_a_pin_newer_than_the_era_still_installs(tmp_path: Path) -> None:
    """swebench's pytest 4.5 spec pins attrs 23.1.0 for a 2019 task: the pin is the spec's
    decision; the cut-off only picks what the spec leaves open (real PyPI via uv's cache)."""
    spec = EnvSpec(python=None, pip_packages=["six==1.16.0", "docutils"])
    build = build_env(REPO, "pins", spec, cache_dir=tmp_path, exclude_newer="2021-01-01T00:00:00Z")
    log = build.log_path.read_text() if build.log_path else ""
    assert build.warnings == [], log
    assert installed_version(build.env.python, "six") == "1.16.0"  # released May 2021
    assert installed_version(build.env.python, "docutils") == "0.16"  # 0.17 came out in 2021
    assert "--exclude-newer-package six=false" in log and "docutils=false" not in log
    # each uv call says how it ended and how long it took: where a slow build spent its time
    calls = len(re.findall(r"^\$ \S+ (?:venv|pip install) ", log, re.MULTILINE))
    assert calls and len(re.findall(r"^\[exit \d+, \d+\.\d s\]$", log, re.MULTILINE)) == calls, log


def test_a_pin_whose_dependencies_are_newer_than_the_era_resolves_as_of_the_images(tmp_path: Path) -> None:
    """sphinx 3.0 (2020) pins tox 4.16.0, which needs cachetools>=5.3.3 (2024): under the
    era cut-off nothing satisfies it. The pins are of SWE-bench's images, so the batch
    resolves as of when those were built (real PyPI: pyproject-api 1.7.1 needs
    packaging>=24.1, of June 2024)."""
    spec = EnvSpec(python=None, pip_packages=["pyproject-api==1.7.1"])
    build = build_env(REPO, "image-era", spec, cache_dir=tmp_path, exclude_newer="2021-01-01T00:00:00Z")
    log = build.log_path.read_text() if build.log_path else ""
    assert build.warnings == [], log
    assert installed_version(build.env.python, "pyproject-api") == "1.7.1"
    assert installed_version(build.env.python, "packaging") == "24.2"  # the newest before 2025
    assert "when SWE-bench's images were built" in log


def test_a_later_package_never_replaces_an_earlier_pin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """astropy 1.3: one uninstallable name sends the batch one by one, and then trio
    (pulled in by exceptiongroup) upgraded the pinned attrs 17.3.0 and broke pytest."""
    links = tmp_path / "links"
    make_wheel(links, "tinyattrs", "1.0")
    make_wheel(links, "tinyattrs", "2.0")
    make_wheel(links, "tinytrio", "1.0", requires=("tinyattrs>=2",))
    monkeypatch.setenv("UV_FIND_LINKS", str(links))
    monkeypatch.setenv("UV_NO_INDEX", "1")
    spec = EnvSpec(python=None, pip_packages=["tinyattrs==1.0", "tinytrio", "not-anywhere==1.0"])
    build = build_env(REPO, "held", spec, cache_dir=tmp_path / "cache")
    log = build.log_path.read_text() if build.log_path else ""
    assert installed_version(build.env.python, "tinyattrs") == "1.0", log
    assert sorted(build.warnings) == ["pip_packages: could not install not-anywhere==1.0",
                                      "pip_packages: could not install tinytrio"], build.warnings
    assert not list((tmp_path / "cache").rglob(".swecl-*-pins.txt"))  # the constraints file is gone

    # positive control: without the pin held, the same one-by-one order upgrades it
    unheld = EnvSpec(python=None, pip_packages=["tinytrio"])
    again = build_env(REPO, "unheld", unheld, cache_dir=tmp_path / "cache2")
    assert installed_version(again.env.python, "tinyattrs") == "2.0"


def test_an_old_sdist_builds_without_isolation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """MarkupSafe 1.0's setup.py needs what the venv has, not what an isolated build env
    gets: the batch is retried with --no-build-isolation before anything one by one."""
    links = tmp_path / "links"
    make_wheel(links, "tinyhelper", "1.0")
    make_sdist(links, "oldsdist", "1.0",
               "import tinyhelper\nfrom setuptools import setup\nsetup(name='oldsdist', version='1.0', py_modules=['oldsdist'])\n")
    monkeypatch.setenv("UV_FIND_LINKS", str(links))
    spec = EnvSpec(python=None, packages="tinyhelper", pip_packages=["oldsdist==1.0"])
    build = build_env(REPO, "sdist", spec, cache_dir=tmp_path / "cache")
    log = build.log_path.read_text() if build.log_path else ""
    assert build.warnings == [], log
    assert installed_version(build.env.python, "oldsdist") == "1.0"
    assert "--no-build-isolation oldsdist==1.0" in log
    assert "installing one by one" not in log


def test_a_source_that_failed_to_build_is_not_built_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """matplotlib 3.5 (Python 3.11, era 2022-02): pyzmq 22.3.0 has no wheel for 3.11 and its
    source does not build there; ipywidgets, ipykernel and notebook each need it, and each
    attempt and fallback compiled it again for minutes. Once it has failed with and without
    isolation, later attempts take its wheels only."""
    links = tmp_path / "links"
    builds = tmp_path / "builds.txt"
    make_sdist(links, "swecltest_zmq", "1.0",
               f"open({str(builds)!r}, 'a').write('built\\n')\nraise SystemExit('no wheel for this Python')\n")
    make_wheel(links, "swecltest_widgets", "1.0", requires=("swecltest_zmq",))
    make_wheel(links, "swecltest_kernel", "1.0", requires=("swecltest_zmq",))
    make_wheel(links, "swecltest_plain", "1.0")
    monkeypatch.setenv("UV_FIND_LINKS", str(links))
    spec = EnvSpec(python=None, pip_packages=["swecltest_widgets", "swecltest_kernel", "swecltest_plain"])
    build = build_env(REPO, "unbuildable", spec, cache_dir=tmp_path / "cache")
    log = build.log_path.read_text() if build.log_path else ""
    assert sorted(build.warnings) == ["pip_packages: could not install swecltest_kernel",
                                      "pip_packages: could not install swecltest_widgets"], log
    # the later calls run (uv takes the option) and install what needs no build
    assert installed_version(build.env.python, "swecltest_plain") == "1.0", log
    assert "--only-binary swecltest-zmq " in log and "unexpected argument" not in log
    # the batch's two attempts at most (isolated, then not); none for either package alone
    assert 1 <= builds.read_text().count("built") <= 2, log
