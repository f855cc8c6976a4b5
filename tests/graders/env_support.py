"""Helpers for environment tests: dated commits, tiny wheels, a local simple index, and
the calc repository as an installable package (setup.py), all built on the spot."""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import os
import subprocess
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.graders.exec_support import make_calc_repo, run_git, write
from tests.loopback import loopback_server


def commit_at(root: Path, message: str, date: str) -> str:
    """Commit everything with this author and committer date; returns the sha."""
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "-m", message, date=date)
    return run_git(root, "rev-parse", "HEAD")


def make_wheel(
    directory: Path, name: str, version: str, requires: tuple[str, ...] = (), modules: dict[str, str] | None = None
) -> Path:
    """A pure-Python wheel whose module `name` has `VERSION = "<version>"`; `modules`:
    more files of the package ({"client.py": source})."""
    directory.mkdir(parents=True, exist_ok=True)
    dist = f"{name}-{version}"
    needs = "".join(f"Requires-Dist: {r}\n" for r in requires)
    entries = {
        f"{name}/__init__.py": f'VERSION = "{version}"\n',
        **{f"{name}/{rel}": text for rel, text in (modules or {}).items()},
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


@contextmanager
def dated_index(root: Path, releases: dict[str, list[tuple[str, str, Path]]]) -> Iterator[str]:
    """A loopback PEP 691 (JSON) index whose files carry upload times, as PyPI's do, so
    uv's --exclude-newer applies to them. releases: {name: [(version, upload time, wheel)]}.
    Yields the index URL; the server stops on exit."""
    pages: dict[str, bytes] = {}
    files: dict[str, Path] = {}
    for name, items in releases.items():
        entries = []
        for version, when, wheel in items:
            files[wheel.name] = wheel
            entries.append({"filename": wheel.name, "url": f"/files/{wheel.name}", "upload-time": when,
                            "hashes": {"sha256": hashlib.sha256(wheel.read_bytes()).hexdigest()}})
        pages[name] = json.dumps({"meta": {"api-version": "1.1"}, "name": name, "files": entries,
                                  "versions": sorted({v for v, _, _ in items})}).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:  # noqa: N802 (the stdlib's names); uv asks before a download
            self.do_GET(head=True)

        def do_GET(self, head: bool = False) -> None:  # noqa: N802
            parts = [p for p in self.path.split("/") if p]
            if len(parts) == 2 and parts[0] == "simple" and parts[1] in pages:
                body, kind = pages[parts[1]], "application/vnd.pypi.simple.v1+json"
            elif len(parts) == 2 and parts[0] == "files" and parts[1] in files:
                body, kind = files[parts[1]].read_bytes(), "application/octet-stream"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    with loopback_server(Handler) as base:
        yield f"{base}/simple"


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
