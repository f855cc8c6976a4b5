"""The Debian packages the specs' set-up lines install (`swecl env system-deps`): read from
the shipped spec table's own lines, checked against this host's dpkg database."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from commands._env_system import install_system_deps, system_deps
from commands.cli import cli
from graders import spec_for
from graders._system_deps import apt_packages, install_command, missing_packages, spec_system_packages
from ledger import SweclError

NO_SUCH = "swecl-no-such-package"
needs_dpkg = pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="not a Debian-based host")


def _pre_install(repo: str, version: str) -> str:
    (line,) = [line for line in spec_for(repo, version).pre_install if "apt" in line]
    return line


def test_packages_are_read_from_the_specs_own_set_up_lines() -> None:
    assert apt_packages(_pre_install("sphinx-doc/sphinx", "7.2")) == ["graphviz"]
    assert apt_packages(_pre_install("django/django", "2.2")) == ["locales"]
    # `VAR=value apt-get ...`, after `apt-get -y upgrade` (not an install)
    assert apt_packages(_pre_install("matplotlib/matplotlib", "3.1")) == [
        "imagemagick", "ffmpeg", "libfreetype6-dev", "pkg-config", "texlive", "texlive-latex-extra",
        "texlive-fonts-recommended", "texlive-xetex", "texlive-luatex", "cm-super"]
    # SWE-bench's own typo `&& &&` (matplotlib 1.x-2.2) splits all the same
    assert apt_packages(_pre_install("matplotlib/matplotlib", "2.2")) == ["imagemagick", "ffmpeg"]
    assert apt_packages("sudo apt-get install --no-install-recommends -y libqhull-dev=2020.2-5 tk") == [
        "libqhull-dev", "tk"]
    assert apt_packages("apt-get update") == [] and apt_packages("sed -i 's/a/b/' setup.py") == []
    # one spec's lines together, de-duplicated
    assert spec_system_packages(spec_for("matplotlib/matplotlib", "3.0")) == [
        "imagemagick", "ffmpeg", "libfreetype6-dev", "pkg-config"]
    assert spec_system_packages(spec_for("sympy/sympy", "1.1")) == []
    # with the repository: what its build settings need here too (matplotlib's system
    # FreeType and Qhull, graders._build_settings), after the spec's own
    assert spec_system_packages(spec_for("matplotlib/matplotlib", "3.5"), "matplotlib/matplotlib")[-3:] == [
        "libfreetype-dev", "libqhull-dev", "pkg-config"]
    assert spec_system_packages(spec_for("matplotlib/matplotlib", "3.0"), "matplotlib/matplotlib") == [
        "imagemagick", "ffmpeg", "libfreetype6-dev", "pkg-config", "libfreetype-dev", "libqhull-dev"]
    assert spec_system_packages(spec_for("sympy/sympy", "1.1"), "sympy/sympy") == []


@needs_dpkg
def test_missing_packages_come_from_the_dpkg_database() -> None:
    assert missing_packages(["coreutils", NO_SUCH, "coreutils"]) == [NO_SUCH]
    assert missing_packages([]) == []


@needs_dpkg
def test_a_package_an_installed_one_provides_is_not_missing() -> None:
    """Debian 12 has libfreetype-dev, which provides the specs' libfreetype6-dev; a virtual
    name such as this host's `awk` (mawk's) counts as there, as apt would see it."""
    import subprocess

    rows = subprocess.run(["dpkg-query", "-W", "-f=${Package}\t${Status}\t${Provides}\n"], capture_output=True,
                          text=True, check=True).stdout.splitlines()
    names = {row.split("\t")[0] for row in rows}
    virtual = next((item.strip().split(" ")[0] for row in rows for item in row.split("\t")[2].split(",")
                    if row.split("\t")[1].endswith(" installed") and item.strip()
                    and item.strip().split(" ")[0] not in names), None)
    if virtual is None:
        pytest.skip("no installed package provides a virtual name here")
    assert missing_packages([virtual, NO_SUCH]) == [NO_SUCH]


def test_installing_needs_root_and_says_what_to_run_by_hand() -> None:
    assert install_command(["graphviz"], euid=0) == ["apt-get", "install", "-y", "graphviz"]
    with pytest.raises(ValueError, match=r"not root: .*as root, or install them by hand: sudo apt-get install -y graphviz"):
        install_command(["graphviz"], euid=1000)
    said: list[str] = []
    with pytest.raises(SweclError, match="not root"):
        install_system_deps(["graphviz"], said.append, euid=1000)
    assert said == []  # nothing claimed to run


def _dataset(tmp_path: Path) -> Path:
    """The demo curriculum, its first sequence's tasks given a set-up naming two packages."""
    from commands.inputs.demo import write_demo_curriculum

    path = write_demo_curriculum(tmp_path / "demo.json")
    doc = json.loads(path.read_text())
    for task in doc["sequences"][0]["tasks"]:
        env = task.get("environment") or doc["sequences"][0].get("environment")
        task["environment"] = {**env, "pre_install": [f"apt-get update && apt-get install -y coreutils {NO_SUCH}"]}
    path.write_text(json.dumps(doc))
    return path


@needs_dpkg
def test_json_lists_every_spec_and_what_is_missing(tmp_path: Path) -> None:
    dataset = _dataset(tmp_path)
    out = CliRunner().invoke(cli, ["--results", str(tmp_path / "r"), "env", "system-deps", "--dataset", str(dataset),
                                   "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert doc["packages"] == ["coreutils", NO_SUCH] and doc["missing"] == [NO_SUCH] and doc["checked"] is True
    assert doc["install"] == f"apt-get install -y {NO_SUCH}"
    first_repo = json.loads(dataset.read_text())["sequences"][0]["repo"]
    assert doc["specs"]  # the first sequence's versions carry the set-up; the others name no package
    for spec in doc["specs"]:
        assert set(spec) == {"repo", "version", "packages", "missing"}
        assert spec["repo"] == first_repo and spec["missing"] == [NO_SUCH]
    # the default is the spec table: sphinx 7.2's graphviz is among them
    table = system_deps()
    assert any(s.repo == "sphinx-doc/sphinx" and s.version == "7.2" and s.packages == ["graphviz"] for s in table.specs)
    bad = CliRunner().invoke(cli, ["--results", str(tmp_path / "r"), "env", "system-deps", "--repo", "no/such"])
    # a SweclError: `swecl` prints it as one line and exits 1
    assert isinstance(bad.exception, SweclError) and str(bad.exception).startswith("--repo no/such: ")
