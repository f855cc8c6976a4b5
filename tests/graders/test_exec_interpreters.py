"""Finding Pythons: explicit settings, PATH (shims that fail included), pyenv, uv."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from graders._interpreters import PythonNotFound, _pyenv_root, find_python, python_version_of

CURRENT = "%d.%d" % sys.version_info[:2]


def test_none_means_the_running_interpreter() -> None:
    found = find_python(None)
    assert found.path == Path(sys.executable) and found.source == "current"


def test_a_pyenv_only_python_is_found() -> None:
    root = _pyenv_root(os.environ)
    if root is None or not (root / "versions").is_dir():
        pytest.skip("SKIPPED LOUDLY: no pyenv installation on this machine")
    candidates = []
    for d in sorted((root / "versions").iterdir()):
        parts = d.name.split(".")
        if len(parts) < 2 or not (parts[0].isdigit() and parts[1].isdigit()):
            continue
        minor = f"{parts[0]}.{parts[1]}"
        if minor == CURRENT:
            continue
        on_path = shutil.which(f"python{minor}")
        if on_path is None or python_version_of(on_path) is None:  # absent, or a shim that fails
            candidates.append(minor)
    if not candidates:
        pytest.skip("SKIPPED LOUDLY: every pyenv Python here is also runnable from PATH")
    minor = candidates[0]
    found = find_python(minor)
    assert found.source == "pyenv" and found.minor == minor
    assert Path(found.path).is_relative_to(root)
    assert python_version_of(found.path) == found.version


def test_explicit_settings_win_and_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    found = find_python(CURRENT, explicit={CURRENT: sys.executable})
    assert found.source == "explicit"
    monkeypatch.setenv("SWECL_PYTHON_" + CURRENT.replace(".", "_"), sys.executable)
    assert find_python(CURRENT).source == "env"
    monkeypatch.setenv("SWECL_PYTHON_3_1", sys.executable)
    with pytest.raises(PythonNotFound, match=rf"is Python {CURRENT}"):
        find_python("3.1")


def test_missing_python_names_every_way_to_provide_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a broken shim on PATH for the wanted version must not count as found
    shim = tmp_path / "python3.1"
    shim.write_text("#!/bin/sh\necho 'pyenv: python3.1: command not found' >&2\nexit 127\n")
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(PythonNotFound) as info:
        find_python("3.1")
    message = str(info.value)
    for needle in ("Python 3.1 not found", "SWECL_PYTHON_3_1=", "PATH", "pyenv install 3.1",
                   "uv provides no Python before 3.6"):
        assert needle in message
    with pytest.raises(PythonNotFound, match=r"pyenv install 3\.99` or `uv python install 3\.99`"):
        find_python("3.99")  # uv is named where it can provide the version


def test_malformed_version_is_rejected() -> None:
    with pytest.raises(PythonNotFound, match="not of the form"):
        find_python("three")


def test_a_binary_found_is_kept_for_the_process_and_asked_again_once_it_changed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every grade looks its interpreter up; running the candidates each time cost 0.2 s a
    grade. A binary's answer is kept; a changed file (here: the path now a script that is
    another Python) is run again."""
    from graders import _interpreters

    link = tmp_path / "python-here"
    link.symlink_to(os.path.realpath(sys.executable))
    ran: list[str] = []
    real = _interpreters.python_version_of
    monkeypatch.setattr(_interpreters, "python_version_of", lambda p, **kw: ran.append(os.fspath(p)) or real(p, **kw))
    first = find_python(CURRENT, explicit={CURRENT: link})
    assert first.path == link and len(ran) == 1
    assert find_python(CURRENT, explicit={CURRENT: link}) == first and len(ran) == 1
    script = tmp_path / "other"
    script.write_text("#!/bin/sh\necho 2.7.18\n")
    script.chmod(0o755)
    link.unlink()
    link.symlink_to(script)
    with pytest.raises(PythonNotFound, match="is Python 2.7.18"):
        find_python(CURRENT, explicit={CURRENT: link})
    assert len(ran) == 2
