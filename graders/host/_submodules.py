"""Git submodules of a checkout: which ones, and which repository each one is.

Old astropy checkouts carry `astropy_helpers` as a submodule; its install (`ah_bootstrap`)
runs `git submodule update --init` itself when the directory is empty, which needs GitHub,
then falls back to PyPI. SWE-bench's images clone with the network on; a host grader
fills the submodule itself, from a cached mirror like any other repository, so that
`--repo-source OWNER/NAME=PATH` names a submodule's source offline too.

A submodule's repository key is the OWNER/NAME of its URL: an absolute URL's last two
path components (`https://github.com/astropy/astropy-helpers.git` is
`astropy/astropy-helpers`), a relative URL resolved against the superproject's
`github.com/OWNER/NAME`, as git resolves it against the superproject's remote.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from pathlib import Path

from ledger.errors import SweclError

__all__ = ["Submodule", "gitlinks_at", "is_inside", "parse_gitmodules", "submodule_repo", "submodules_of"]

_SCP_LIKE = re.compile(r"^[A-Za-z0-9_.-]+@[^:/]+:(?P<path>.+)$")  # git@github.com:owner/name.git


@dataclass(frozen=True, slots=True)
class Submodule:
    name: str
    path: str
    url: str
    commit: str


def parse_gitmodules(text: str) -> dict[str, dict[str, str]]:
    """`git config -z --list` output of a .gitmodules file -> {name: {path, url, ...}}."""
    out: dict[str, dict[str, str]] = {}
    for entry in text.split("\0"):
        key, _, value = entry.partition("\n")
        if not key.startswith("submodule."):
            continue
        # the name may hold dots itself: submodule.<name>.<var>
        name, _, var = key[len("submodule."):].rpartition(".")
        if name and var:
            out.setdefault(name, {})[var.lower()] = value
    return out


def submodule_repo(url: str, superproject: str) -> tuple[str, str | None]:
    """(OWNER/NAME key, the absolute URL to clone when no source is given, or None for
    a relative URL: then the key's GitHub URL, as for any repo)."""
    if url.startswith(("./", "../")):
        resolved = posixpath.normpath(posixpath.join(superproject, url))
        parts = [p for p in resolved.split("/") if p]
        absolute = None
    else:
        scp = _SCP_LIKE.match(url)
        path = scp.group("path") if scp else re.sub(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/]*", "", url)
        parts = [p for p in path.split("/") if p]
        absolute = url
    if len(parts) < 2 or ".." in parts:
        raise SweclError(f"submodule URL {url!r} of {superproject} names no OWNER/NAME repository")
    owner, name = parts[-2], parts[-1]
    if name.endswith(".git"):
        name = name[:-4]
    return f"{owner}/{name}", absolute


def submodules_of(gitlinks: list[tuple[str, str]], gitmodules: dict[str, dict[str, str]], superproject: str) -> list[Submodule]:
    """The submodules of a tree: its gitlinks [(path, commit)] joined with .gitmodules."""
    by_path = {entry.get("path"): name for name, entry in gitmodules.items()}
    out: list[Submodule] = []
    for path, commit in gitlinks:
        name = by_path.get(path)
        url = gitmodules.get(name, {}).get("url") if name else None
        if name is None or not url:
            raise SweclError(f"{superproject} has a submodule at {path} that its .gitmodules does not name: "
                             f"cannot tell where to fetch it from")
        out.append(Submodule(name=name, path=path, url=url, commit=commit))
    return out


def gitlinks_at(text: str) -> list[tuple[str, str]]:
    """`git ls-tree -r -z HEAD` output -> the gitlinks [(path, commit)]."""
    out: list[tuple[str, str]] = []
    for entry in text.split("\0"):
        meta, _, path = entry.partition("\t")
        fields = meta.split()
        if len(fields) == 3 and fields[0] == "160000" and fields[1] == "commit":
            out.append((path, fields[2]))
    return out


def is_inside(root: Path, rel: str) -> bool:
    norm = posixpath.normpath(rel)
    return not (norm.startswith(("../", "/")) or norm in ("..", ".")) and (root / norm).resolve().is_relative_to(root.resolve())
