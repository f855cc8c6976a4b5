"""Running commands without a shell: test commands, setup lines, hard timeouts."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from graders._run import (
    build_test_command,
    parse_eval_commands,
    pytest_version,
    run_line,
    run_process,
    test_directives,
    test_environment,
)

PY = Path(sys.executable)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purpose
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    script = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "print('started', flush=True)\n"
        "time.sleep(300)\n"
    )
    start = time.monotonic()
    result = run_process([sys.executable, "-c", script], cwd=tmp_path, env=os.environ, timeout_s=2)
    assert time.monotonic() - start < 30
    assert result.timed_out and result.exit_code is None
    assert b"started" in result.output and b"timed out" in result.output
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def test_output_is_combined_bytes_with_exit_code(tmp_path: Path) -> None:
    script = "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"
    result = run_process([sys.executable, "-c", script], cwd=tmp_path, env=os.environ, timeout_s=30)
    assert result.exit_code == 3 and not result.timed_out
    assert b"out" in result.output and b"err" in result.output
    assert result.duration_s > 0


def test_missing_program_is_an_error_not_a_crash(tmp_path: Path) -> None:
    result = run_process(["/nonexistent/prog"], cwd=tmp_path, env=os.environ, timeout_s=5)
    assert result.exit_code is None and result.error


def test_directives_follow_swebench() -> None:
    patch = (
        "diff --git a/tests/model_fields/test_x.py b/tests/model_fields/test_x.py\n"
        "diff --git a/tests/model_fields/data.json b/tests/model_fields/data.json\n"
        "diff --git a/tests/auth_tests/test_y.py b/tests/auth_tests/test_y.py\n"
    )
    assert test_directives("django/django", patch) == ["model_fields.test_x", "auth_tests.test_y"]
    assert test_directives("sympy/sympy", "diff --git a/sympy/core/tests/test_a.py b/sympy/core/tests/test_a.py\n") == [
        "sympy/core/tests/test_a.py"
    ]
    assert test_directives("pytest-dev/pytest", "") == []


def test_django_and_sympy_commands(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "runtests.py").write_text("#!/usr/bin/env python\n")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "test").write_text("#!/usr/bin/env python\n")
    django = build_test_command(
        "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1", ["a.b"],
        python=PY, bin_dir=None, worktree=tmp_path,
    )
    assert django.argv == [str(PY), str(tmp_path / "tests" / "runtests.py"), "--verbosity", "2",
                           "--settings=test_sqlite", "--parallel", "1", "a.b"]
    sympy = build_test_command(
        "PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' bin/test -C --verbose", ["sympy/x/tests/test_a.py"],
        python=PY, bin_dir=None, worktree=tmp_path,
    )
    assert sympy.env == {"PYTHONWARNINGS": "ignore::UserWarning,ignore::SyntaxWarning"}
    assert sympy.argv == [str(PY), str(tmp_path / "bin" / "test"), "-C", "--verbose", "sympy/x/tests/test_a.py"]
    pytest_cmd = build_test_command("pytest -rA", ["t.py"], python=PY, bin_dir=None, worktree=tmp_path)
    assert pytest_cmd.argv == [str(PY), "-m", "pytest", "-rA", "t.py"]
    bindir = tmp_path / "venv" / "bin"
    bindir.mkdir(parents=True)
    (bindir / "tox").write_text("#!/bin/sh\n")
    tox = build_test_command("tox --current-env -epy39 -v --", ["tests/test_x.py"], python=PY, bin_dir=bindir, worktree=tmp_path)
    assert tox.argv[0] == str(bindir / "tox") and tox.argv[-2:] == ["--", "tests/test_x.py"]


def test_no_header_only_for_a_pytest_that_knows_it(tmp_path: Path) -> None:
    cmd = "pytest --no-header -rA --tb=no -p no:cacheprovider"
    for version in [(6, 0, 0), (7, 4, 0), None]:  # None: not known, the command stays as it is
        built = build_test_command(cmd, ["t.py"], python=PY, bin_dir=None, worktree=tmp_path, pytest_version=version)
        assert built.argv == [str(PY), "-m", "pytest", "--no-header", "-rA", "--tb=no", "-p", "no:cacheprovider", "t.py"]
        assert built.notes == []
    old = build_test_command(cmd, ["t.py"], python=PY, bin_dir=None, worktree=tmp_path, pytest_version=(5, 4, 3))
    assert old.argv == [str(PY), "-m", "pytest", "-rA", "--tb=no", "-p", "no:cacheprovider", "t.py"]
    assert old.notes == ["[swecl] test command without --no-header: the environment's pytest 5.4.3 has no such "
                         "option (it came with pytest 6.0)"]
    # another runner's words are not pytest's options
    (tmp_path / "run.sh").write_text("#!/bin/sh\n")
    other = build_test_command("./run.sh --no-header", [], python=PY, bin_dir=None, worktree=tmp_path,
                               pytest_version=(5, 4, 3))
    assert other.argv[-1] == "--no-header" and other.notes == []


def test_pytest_version_is_read_from_the_venv(tmp_path: Path) -> None:
    site = tmp_path / "venv" / "lib" / "python3.9" / "site-packages"
    assert pytest_version(tmp_path / "venv") is None  # no venv
    site.mkdir(parents=True)
    (site / "pytest_cov-4.1.0.dist-info").mkdir()
    assert pytest_version(tmp_path / "venv") is None  # a plugin is not pytest
    (site / "pytest-6.0.0rc1.dist-info").mkdir()
    assert pytest_version(tmp_path / "venv") == (6, 0, 0)
    # the interpreter running these tests has a real one
    import pytest as running

    real = pytest_version(Path(sys.prefix))
    assert real is not None and real[:2] == tuple(int(x) for x in running.__version__.split(".")[:2])


def test_eval_commands_exports_become_variables(tmp_path: Path) -> None:
    env, skipped = parse_eval_commands(
        [
            "export LANG=en_US.UTF-8",
            "export LANGUAGE=en_US:en LC_ALL=en_US.UTF-8",
            "sed -i '/en_US.UTF-8/s/^# //g' /etc/locale.gen && locale-gen",
            "export DATA=/testbed/data",
        ],
        tmp_path,
    )
    assert env == {"LANG": "en_US.UTF-8", "LANGUAGE": "en_US:en", "LC_ALL": "en_US.UTF-8", "DATA": f"{tmp_path}/data"}
    assert skipped == ["sed -i '/en_US.UTF-8/s/^# //g' /etc/locale.gen && locale-gen"]


def test_test_environment_drops_host_python_variables(monkeypatch) -> None:
    monkeypatch.setenv("PYTHONPATH", "/somewhere")
    monkeypatch.setenv("PYTEST_ADDOPTS", "-x")
    env = test_environment(bin_dir=Path("/venv/bin"), venv=Path("/venv"), extra={"LANG": "en_US.UTF-8"})
    assert "PYTHONPATH" not in env and "PYTEST_ADDOPTS" not in env
    assert env["PATH"].split(os.pathsep)[0] == "/venv/bin"
    assert env["VIRTUAL_ENV"] == "/venv" and env["LANG"] == "en_US.UTF-8"


def test_setup_lines_run_without_a_shell(tmp_path: Path) -> None:
    (tmp_path / "tox.ini").write_text("commands = pytest {posargs}\n")
    (tmp_path / "setup.py").write_text("install_requires=['sphinxcontrib-htmlhelp>=2.0.0']\n")
    env = dict(os.environ)
    ok = run_line("sed -i 's/pytest/pytest -rA/' tox.ini", cwd=tmp_path, env=env, python=PY, bin_dir=None)
    assert ok.status == "ok" and (tmp_path / "tox.ini").read_text() == "commands = pytest -rA {posargs}\n"
    chained = run_line(
        "grep -q 'sphinxcontrib-htmlhelp>=2.0.0' setup.py && sed -i 's/sphinxcontrib-htmlhelp>=2.0.0/"
        "sphinxcontrib-htmlhelp>=2.0.0,<=2.0.4/' setup.py || sed -i 's/sphinxcontrib-htmlhelp/sphinxcontrib-htmlhelp<=2.0.4/' setup.py",
        cwd=tmp_path, env=env, python=PY, bin_dir=None,
    )
    assert chained.status == "ok"
    assert (tmp_path / "setup.py").read_text() == "install_requires=['sphinxcontrib-htmlhelp>=2.0.0,<=2.0.4']\n"
    variables: dict[str, str] = {}
    assert run_line('DIR="/testbed/build"', cwd=tmp_path, env=env, python=PY, bin_dir=None, variables=variables).status == "ok"
    assert run_line('mkdir -p "$DIR"', cwd=tmp_path, env=env, python=PY, bin_dir=None, variables=variables).status == "ok"
    assert (tmp_path / "build").is_dir()  # /testbed is the worktree


def test_system_and_shell_only_lines_are_skipped_with_a_reason(tmp_path: Path) -> None:
    env = dict(os.environ)
    apt = run_line("apt-get update && apt-get install -y graphviz", cwd=tmp_path, env=env, python=PY, bin_dir=None)
    assert apt.status == "skipped" and "apt-get" in (apt.reason or "")
    redirect = run_line("echo 'en_US UTF-8' > /etc/locale.gen", cwd=tmp_path, env=env, python=PY, bin_dir=None)
    assert redirect.status == "skipped" and "shell" in (redirect.reason or "")
    subst = run_line("echo $(whoami)", cwd=tmp_path, env=env, python=PY, bin_dir=None)
    assert subst.status == "skipped"
    fetch = run_line('wget -O "$QHULL_TAR" "$QHULL_URL"', cwd=tmp_path, env=env, python=PY, bin_dir=None)
    assert fetch.status == "skipped" and "registries" in (fetch.reason or "")


def test_install_line_uses_the_given_python(tmp_path: Path) -> None:
    result = run_line(
        "python -c \"import sys; open('which.txt', 'w').write(sys.executable)\"; python -c 'import sys; sys.exit(4)'",
        cwd=tmp_path, env=dict(os.environ), python=PY, bin_dir=None,
    )
    assert (tmp_path / "which.txt").read_text() == str(PY)
    assert result.status == "failed" and result.exit_code == 4
