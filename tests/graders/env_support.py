"""Helpers for environment tests: dated commits, tiny wheels, a local simple index, and
the calc repository as an installable package (setup.py), all built on the spot."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import zipfile
from pathlib import Path

from tests.graders.exec_support import make_calc_repo, run_git, write


def commit_at(root: Path, message: str, date: str) -> str:
    """Commit everything with this author and committer date; returns the sha."""
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "-m", message, date=date)
    return run_git(root, "rev-parse", "HEAD")


def make_wheel(directory: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> Path:
    """A pure-Python wheel whose module `name` has `VERSION = "<version>"`."""
    directory.mkdir(parents=True, exist_ok=True)
    dist = f"{name}-{version}"
    needs = "".join(f"Requires-Dist: {r}\n" for r in requires)
    entries = {
        f"{name}/__init__.py": f'VERSION = "{version}"\n',
        f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{needs}",
        f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: swecl-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in entries.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    record.append(f"{dist}.dist-info/RECORD,,")
    entries[f"{dist}.dist-info/RECORD"] = "\n".join(record) + "\n"
    wheel = directory / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in entries.items():
            archive.writestr(path, text)
    return wheel


def make_sdist(directory: Path, name: str, version: str, setup_py: str) -> Path:
    """A source distribution built by its own setup.py (an old-style sdist)."""
    import io
    import tarfile

    directory.mkdir(parents=True, exist_ok=True)
    dist = f"{name}-{version}"
    files = {
        f"{dist}/setup.py": setup_py,
        f"{dist}/PKG-INFO": f"Metadata-Version: 1.1\nName: {name}\nVersion: {version}\n",
        f"{dist}/{name}.py": f'VERSION = "{version}"\n',
    }
    path = directory / f"{dist}.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        for rel, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(rel)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def simple_index(root: Path, packages: dict[str, list[str]]) -> str:
    """A PEP 503 file:// index serving these wheels, with no upload times (as a plain
    static mirror has none); returns its URL."""
    for name, versions in packages.items():
        project = root / name
        links = [make_wheel(project, name, v).name for v in versions]
        anchors = "".join(f'<a href="{link}">{link}</a>\n' for link in links)
        (project / "index.html").write_text(f"<html><body>\n{anchors}</body></html>\n", encoding="utf-8")
    return root.resolve().as_uri()


def installed_version(python: Path, dist: str) -> str:
    code = f"import importlib.metadata as m; print(m.version({dist!r}))"
    return subprocess.run([os.fspath(python), "-c", code], capture_output=True, text=True, check=True).stdout.strip()


SETUP_PY = 'from setuptools import setup\n\nsetup(name="calc", version="{version}", packages=["calc"])\n'


def make_calc_package(root: Path, date: str) -> tuple[Path, str]:
    """The calc repository with a setup.py (an editable install leaves `calc.egg-info`
    in the worktree), committed at `date`."""
    src, _ = make_calc_repo(root)
    write(src, "setup.py", SETUP_PY.format(version="0.1"))
    return src, commit_at(src, "installable", date)
