"""What the deny-by-default sandbox shows (`graders.host._visible`, `Sandbox.plan`): the
system, a program's own install found by following it, the named paths; nothing else."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from graders.host import sandbox_for
from graders.host._visible import SANDBOX_HOME, runtime_mounts


def _package(root: Path, name: str, deps: list[str], *, bin_name: str | None = None) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "package.json").write_text(json.dumps({"name": name, "dependencies": {d: "*" for d in deps}}))
    if bin_name:
        script = folder / "cli.js"
        script.write_text("#!/usr/bin/env node\n")
        script.chmod(0o755)
    return folder


def test_an_npm_cli_shows_its_package_and_dependencies_through_its_link_not_its_prefix(tmp_path: Path) -> None:
    modules = tmp_path / "prefix" / "node_modules"
    cli = _package(modules, "@acme/cli", ["left", "right"], bin_name="cli")
    left, right = _package(modules, "left", ["deep"]), _package(modules, "right", [])
    nested = _package(right / "node_modules", "deep", [])  # not the one left resolves to
    deep = _package(modules, "deep", [])
    _package(modules, "unused", [])
    (modules / ".bin").mkdir()
    (modules / ".bin" / "cli").symlink_to("../@acme/cli/cli.js")
    mounts = {m.path: m for m in runtime_mounts(str(modules / ".bin" / "cli"), "/usr/bin:/bin")}
    assert mounts[str(modules / ".bin" / "cli")].mode == "link"
    assert mounts[str(modules / ".bin" / "cli")].source == "../@acme/cli/cli.js"
    assert {p for p, m in mounts.items() if m.mode == "ro"} >= {str(cli), str(left), str(right), str(deep)}
    assert str(modules / "unused") not in mounts and str(modules) not in mounts and str(tmp_path / "prefix") not in mounts
    assert str(nested) not in mounts  # inside right, which is shown whole


def test_a_hoisted_tree_of_many_dependencies_shows_as_its_node_modules(tmp_path: Path) -> None:
    modules = tmp_path / "node_modules"
    deps = [f"dep{i}" for i in range(20)]
    _package(modules, "cli", deps, bin_name="cli")
    for d in deps:
        _package(modules, d, [])
    paths = {m.path for m in runtime_mounts(str(modules / "cli" / "cli.js"), "/usr/bin:/bin")}
    assert str(modules) in paths and not any(p.startswith(str(modules) + "/") for p in paths)


def test_a_venv_program_shows_the_venv_and_its_base_interpreter_install(tmp_path: Path) -> None:
    base = Path(os.path.realpath(sys.executable))
    venv = tmp_path / "tool"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(f"home = {base.parent}\n")
    (venv / "bin" / "python").symlink_to(base)
    script = venv / "bin" / "tool"
    script.write_text(f"#!{venv / 'bin' / 'python'}\nprint('hi')\n")
    script.chmod(0o755)
    paths = {m.path: m.mode for m in runtime_mounts(str(script), None)}
    assert paths[str(venv)] == "ro" and str(tmp_path) not in paths
    if not base.is_relative_to("/usr"):
        assert paths[str(base.parent.parent)] == "ro"


def test_the_sandbox_shows_no_home_no_sibling_and_hides_what_is_named_inside_an_exposed_folder(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "results").mkdir(parents=True)
    (work / "results" / "ledger.db").write_text("answers")
    (work / "notes.txt").write_text("shown")
    (tmp_path / "sibling").mkdir()
    (tmp_path / "sibling" / "secret.txt").write_text("not shown")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    sandbox = sandbox_for("bwrap", hide=[work / "results"], expose=[work])
    probe = ("import os, sys; r = sys.argv[1]; home = os.path.expanduser('~'); "
             "print(os.path.exists(r + '/sibling/secret.txt'), open(r + '/work/notes.txt').read(), "
             "os.listdir(r + '/work/results'), home, open('/etc/passwd').read().count(':/root:'))")
    argv = [os.path.realpath(sys.executable), "-I", "-c", probe, str(tmp_path)]
    wrapped, env = sandbox.wrap(argv, cwd=cwd, env={"PATH": "/usr/bin:/bin"}, exposed=True)
    done = subprocess.run(wrapped, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "shown", "[]", SANDBOX_HOME, "0"]
    # not exposed: the work folder is not there at all
    wrapped, env = sandbox.wrap(argv, cwd=cwd, env={"PATH": "/usr/bin:/bin"})
    done = subprocess.run(wrapped, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "No such file or directory" in done.stderr


def test_an_exposed_path_inside_a_hidden_one_is_not_shown(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    (cache / "repos").mkdir(parents=True)
    plan = sandbox_for("bwrap", hide=[cache], expose=[cache / "repos"]).plan(["/bin/true"], cwd=tmp_path, env={},
                                                                             exposed=True)
    assert str(cache / "repos") not in {m.path for m in plan}


@pytest.mark.parametrize("name", ["shadow", "sudoers", "ssh"])
def test_etc_secrets_are_empty(name: str) -> None:
    path = f"/etc/{name}"
    if not os.path.lexists(path):
        pytest.skip(f"{path} is not on this host")
    plan = {m.path: m.mode for m in sandbox_for("bwrap").plan(["/bin/true"], cwd="/", env={})}
    assert plan[path] == "empty" and plan["/etc"] == "ro"


def test_a_pyenv_shim_runs_its_interpreter_in_the_sandbox(tmp_path: Path) -> None:
    """A program found through pyenv's shims (`python3` on a pyenv user's PATH) runs `pyenv
    exec` from pyenv's root: that install is shown, nothing else of the home around it."""
    pyenv = shutil.which("pyenv")
    shims = Path(pyenv).resolve().parents[1] / "shims" if pyenv else None
    if shims is None or not (shims / "python3").is_file():
        pytest.skip("no pyenv with a python3 shim on this host")
    plan = {m.path: m.mode for m in sandbox_for("bwrap").plan([str(shims / "python3")], cwd=tmp_path, env={})}
    assert plan[str(shims.parent)] == "ro" and str(Path.home()) not in plan
    wrapped, env = sandbox_for("bwrap").wrap([str(shims / "python3"), "-c", "print(6 * 7)"], cwd=tmp_path,
                                             env={"PATH": f"{shims}:/usr/bin:/bin"})
    done = subprocess.run(wrapped, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "42", done.stderr
