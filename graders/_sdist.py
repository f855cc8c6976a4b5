"""A repository's release sdist for one of its versions (`swecl env verify --source sdist`):
the newest patch release of that minor version uploaded before the era cut-off, read from
the package index uv is configured with, downloaded into the cache (hash-checked) and
unpacked.

Why the index's JSON pages (PEP 691) and not `pip download`: the choice depends on upload
times (a release after the era is not what the tasks were written against), which pip
cannot filter by, and uv, which can, has no download command; the pages carry both the
times and the hashes, and the file is fetched from the URL the index gives.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from ledger.errors import SweclError

__all__ = ["Sdist", "download_sdist", "index_urls", "pick_sdist", "project_sdists", "unpack_sdist"]

PYPI = "https://pypi.org/simple"
_SDIST_EXTS = (".tar.gz", ".zip", ".tar.bz2", ".tgz")


@dataclass(frozen=True, slots=True)
class Sdist:
    version: str
    filename: str
    url: str
    uploaded: str | None = None  # ISO 8601, as the index gives it
    sha256: str | None = None


def index_urls() -> list[str]:
    """The indexes uv reads, in its order: UV_INDEX and UV_EXTRA_INDEX_URL first, then the
    default (UV_DEFAULT_INDEX, UV_INDEX_URL, PIP_INDEX_URL, else PyPI)."""
    first = (os.environ.get("UV_INDEX", "") + " " + os.environ.get("UV_EXTRA_INDEX_URL", "")).split()
    default = (os.environ.get("UV_DEFAULT_INDEX") or os.environ.get("UV_INDEX_URL") or os.environ.get("PIP_INDEX_URL")
               or PYPI)
    return [u.split("=", 1)[1] if re.match(r"^[A-Za-z0-9_-]+=", u) else u for u in [*first, default]]


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _version_of(filename: str, name: str) -> str | None:
    stem = next((filename[: -len(ext)] for ext in _SDIST_EXTS if filename.endswith(ext)), None)
    if stem is None:
        return None
    head, sep, version = stem.rpartition("-")
    return version if sep and _normalise(head) == _normalise(name) else None


def project_sdists(name: str, indexes: list[str] | None = None, *, timeout_s: float = 60) -> list[Sdist]:
    """The sdists of project `name` on the first index that has the project."""
    import urllib.request  # http, ssl and email come with it: not on every swecl start-up, only a verify's download

    for base in indexes or index_urls():
        url = f"{base.rstrip('/')}/{_normalise(name)}/"
        request = urllib.request.Request(url, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310 (the configured index)
                page = json.loads(response.read())
        except (OSError, ValueError):
            continue  # not there (404), not JSON (a static mirror): the next index
        out = []
        for entry in page.get("files", []):
            version = _version_of(entry.get("filename", ""), name)
            if version is None or entry.get("yanked"):
                continue
            out.append(Sdist(version=version, filename=entry["filename"], url=urllib.request.urljoin(url, entry["url"]),
                             uploaded=entry.get("upload-time"), sha256=(entry.get("hashes") or {}).get("sha256")))
        return out
    raise SweclError(f"no index of {', '.join(indexes or index_urls())} serves {name} as JSON (PEP 691)")


def _stamp(text: str) -> str:
    """An ISO time comparable as text: `2019-12-02T09:15:00.123Z` -> `2019-12-02T09:15:00Z`."""
    return re.sub(r"\.\d+", "", text).replace("+00:00", "Z")


def pick_sdist(sdists: list[Sdist], version: str, cutoff: str | None) -> Sdist | None:
    """The newest final release of minor `version` (3.0 -> 3.0, 3.0.1, ... not 3.1, not
    3.0.1rc1) uploaded before `cutoff` (an upload without a time is taken: nothing says it
    is later); a .tar.gz over a .zip of the same release."""
    def key(s: Sdist) -> tuple[Version, bool]:
        return Version(s.version), s.filename.endswith(".tar.gz")

    chosen: list[Sdist] = []
    for s in sdists:
        try:
            v = Version(s.version)
        except InvalidVersion:
            continue
        if v.is_prerelease or v.is_devrelease or f"{v.major}.{v.minor}" != version:
            continue
        if cutoff and s.uploaded and _stamp(s.uploaded) > _stamp(cutoff):
            continue
        chosen.append(s)
    return max(chosen, key=key, default=None)


def download_sdist(sdist: Sdist, directory: Path, *, timeout_s: float = 600) -> Path:
    """The file in `directory` (kept there: a second verify downloads nothing), its SHA-256
    checked against the index's."""
    import urllib.request  # not on every swecl start-up (see project_sdists)

    directory.mkdir(parents=True, exist_ok=True)
    target = directory / sdist.filename
    if not target.is_file() or (sdist.sha256 and hashlib.sha256(target.read_bytes()).hexdigest() != sdist.sha256):
        partial = target.with_name(target.name + ".part")
        try:
            with urllib.request.urlopen(sdist.url, timeout=timeout_s) as response, partial.open("wb") as fh:  # noqa: S310
                shutil.copyfileobj(response, fh)
        except OSError as exc:
            partial.unlink(missing_ok=True)
            raise SweclError(f"cannot download {sdist.url}: {exc}") from None
        got = hashlib.sha256(partial.read_bytes()).hexdigest()
        if sdist.sha256 and got != sdist.sha256:
            partial.unlink()
            raise SweclError(f"{sdist.filename}: SHA-256 {got} is not the index's {sdist.sha256}")
        os.replace(partial, target)
    return target


def unpack_sdist(archive: Path, into: Path) -> Path:
    """Unpacked into `into`; returns the sdist's top directory (`Django-3.0.14/`)."""
    into.mkdir(parents=True, exist_ok=True)
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(into)
    else:
        with tarfile.open(archive) as tf:
            if hasattr(tarfile, "data_filter"):  # Python 3.11.4 and later
                try:
                    tf.extractall(into, filter="data")
                except tarfile.FilterError as exc:
                    raise SweclError(f"{archive.name}: {exc}") from None
            else:
                tf.extractall(into, members=data_members(tf, archive.name))
    tops = [p for p in into.iterdir() if p.is_dir()]
    return tops[0] if len(tops) == 1 else into


def data_members(tf: tarfile.TarFile, name: str) -> list[tarfile.TarInfo]:
    """The members of an archive, checked as tarfile's "data" filter checks them, for a
    Python without it (3.11.0 to 3.11.3: Debian 12's is 3.11.2): regular files,
    directories and links, none landing or pointing outside the folder unpacked into
    (leading slashes stripped), no special mode bits. Anything else stops the unpacking,
    the member named."""

    def inside(path: str) -> bool:
        norm = os.path.normpath(path)
        return not os.path.isabs(path) and norm != ".." and not norm.startswith(".." + os.sep)

    members = []
    for member in tf.getmembers():
        member.name = member.name.lstrip("/")  # as the filter does: `/a/b` lands at `a/b`
        if not inside(member.name):
            raise SweclError(f"{name}: {member.name!r} would be unpacked outside its folder")
        if member.issym():
            target = os.path.join(os.path.dirname(member.name), member.linkname)
            if os.path.isabs(member.linkname) or not inside(target):
                raise SweclError(f"{name}: the link {member.name!r} points outside its folder ({member.linkname!r})")
        elif member.islnk():
            if not inside(member.linkname):
                raise SweclError(f"{name}: the hard link {member.name!r} points outside its folder ({member.linkname!r})")
        elif not (member.isfile() or member.isdir()):
            raise SweclError(f"{name}: {member.name!r} is a special file (a device or a pipe), not data")
        member.mode &= 0o755  # no setuid, setgid or sticky bit, nothing writable by others
        member.uid = member.gid = 0
        member.uname = member.gname = ""
        members.append(member)
    return members
