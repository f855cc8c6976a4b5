"""Manifests of the files the harness made, to tell when something else changed them.

Two kinds, two costs:

- an environment's venv (`venv_manifest`): path -> [size, mtime_ns] (or the target of a
  symlink). Only `lstat`, so a venv of a few thousand files is read in tens of
  milliseconds, cheap enough to check before every grade. A write, a delete, a rename or
  a copy over a file changes its mtime; what it does not catch is a writer that puts an
  equal-sized file back *and* restores its mtime on purpose, which needs the confined
  mode (the venv is read-only there).
- the products of the repo's install in a worktree (`products_manifest`): path ->
  [size, sha256]. A worktree is the test's own working directory, so its files are
  hashed: tests touch files there all the time, and only the content says whether an
  extension module is still the one the install built.

Bytecode caches (`__pycache__/*.pyc`) that appear in a venv are not damage: an unconfined
interpreter writes them for every module it imports. They are removed (`drop_added_caches`)
rather than trusted, so a planted `.pyc` never outlives the grade that wrote it.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "ManifestDiff",
    "diff_manifests",
    "drop_added_caches",
    "file_sha256",
    "load_manifest",
    "products_manifest",
    "save_manifest",
    "venv_manifest",
]

Manifest = dict[str, list[object]]


@dataclass(slots=True)
class ManifestDiff:
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        return (
            [f"added {p}" for p in self.added]
            + [f"removed {p}" for p in self.removed]
            + [f"changed {p}" for p in self.changed]
        )

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)


def _walk(root: Path) -> Iterable[tuple[str, os.stat_result, str]]:
    """(relative path, lstat, absolute path) of every non-directory under root."""
    stack = [os.fspath(root)]
    base = len(os.fspath(root)) + 1
    while stack:
        current = stack.pop()
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        for entry in entries:
            st = entry.stat(follow_symlinks=False)
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
            else:
                yield entry.path[base:], st, entry.path


def venv_manifest(venv: Path) -> Manifest:
    """path -> [size, mtime_ns] of every file, or ["->", target] for a symlink."""
    out: Manifest = {}
    for rel, st, path in _walk(venv):
        if stat.S_ISLNK(st.st_mode):
            out[rel] = ["->", os.readlink(path)]
        else:
            out[rel] = [st.st_size, st.st_mtime_ns]
    return out


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def products_manifest(root: Path, rels: Iterable[str]) -> Manifest:
    """path -> [size, sha256] (or ["->", target]) of the given files under root; an entry
    ending in `/` (a nested repository) stands for every file below it."""
    out: Manifest = {}
    for rel in rels:
        path = root / rel
        if rel.endswith("/"):
            for sub, _, _ in _walk(path):
                out.update(products_manifest(root, [f"{rel}{sub}"]))
        elif path.is_symlink():
            out[rel] = ["->", os.readlink(path)]
        elif path.is_file():
            out[rel] = [path.stat().st_size, file_sha256(path)]
    return out


def diff_manifests(recorded: Mapping[str, list[object]], now: Mapping[str, list[object]]) -> ManifestDiff:
    diff = ManifestDiff()
    for rel in sorted(now.keys() - recorded.keys()):
        diff.added.append(rel)
    for rel in sorted(recorded.keys() - now.keys()):
        diff.removed.append(rel)
    for rel in sorted(recorded.keys() & now.keys()):
        if list(recorded[rel]) != list(now[rel]):
            diff.changed.append(rel)
    return diff


def is_bytecode_cache(rel: str) -> bool:
    parts = rel.split("/")
    return len(parts) >= 2 and parts[-2] == "__pycache__" and parts[-1].endswith((".pyc", ".pyo"))


def drop_added_caches(root: Path, diff: ManifestDiff) -> list[str]:
    """Remove the bytecode caches among `diff.added` (from disk and from the diff)."""
    dropped = [rel for rel in diff.added if is_bytecode_cache(rel)]
    for rel in dropped:
        (root / rel).unlink(missing_ok=True)
    diff.added = [rel for rel in diff.added if not is_bytecode_cache(rel)]
    return dropped


def save_manifest(path: Path, manifest: Mapping[str, list[object]]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(manifest, separators=(",", ":"), sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


def load_manifest(path: Path) -> Manifest | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
