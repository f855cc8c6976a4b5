"""What a patch says, read without applying it: its file sections, the lines it adds,
and which of its paths are tests or test configuration.

Shared by the grader (which applies patches and reverts an agent's edits to tests) and the
read side (integrity flags of a recorded patch), so both read a patch by one set of rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

__all__ = ["TEST_CONFIG_FILES", "PatchFile", "hunk_functions", "patched_path", "is_test_config_path", "is_test_path", "parse_patch_files", "patch_paths",
           "strip_prefix"]

# Files that configure pytest (plugins, addopts, conftest hooks): reverted like test files.
TEST_CONFIG_FILES = frozenset(
    {"conftest.py", "pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "tox.ini", "setup.cfg", "pyproject.toml"}
)

_SYMLINK_MODE = "120000"
_TEST_DIRS_ANYWHERE = {"tests"}
# `test/` and `testing/` only at the top: django/test/ and sympy/testing/ or
# matplotlib/testing/ are library code a real fix may touch.
_TEST_DIRS_TOP = {"test", "tests", "testing"}


@dataclass(slots=True)
class PatchFile:
    """One file section of a patch; paths are repo-relative (prefix stripped), None for /dev/null."""

    old_path: str | None = None
    new_path: str | None = None
    raw_paths: list[str] = field(default_factory=list)
    symlink: bool = False
    symlink_target: str | None = None
    added_lines: list[str] = field(default_factory=list)
    start_line: int = 0  # the index of the section's first line in the patch text


_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def _unquote(path: str) -> str:
    """git's C-style quoted path (`"a/caf\\303\\251"`) -> text."""
    if not (len(path) >= 2 and path.startswith('"') and path.endswith('"')):
        return path
    body, out, i = path[1:-1], bytearray(), 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "01234567" and re.match(r"[0-7]{3}", body[i + 1 : i + 4]):
                out.append(int(body[i + 1 : i + 4], 8))
                i += 4
                continue
            out.append(_ESCAPES.get(nxt, ord(nxt)))
            i += 2
            continue
        out.extend(ch.encode("utf-8"))
        i += 1
    return out.decode("utf-8", "surrogateescape")


def _header_path(rest: str) -> str:
    rest = rest.rstrip("\r")
    if rest.startswith('"'):
        end = rest.find('"', 1)
        while end > 0 and rest[end - 1] == "\\":
            end = rest.find('"', end + 1)
        return _unquote(rest[: end + 1]) if end > 0 else rest
    return rest.split("\t")[0]  # traditional diffs put a timestamp after a tab


def strip_prefix(raw: str) -> str | None:
    if raw == "/dev/null":
        return None
    parts = raw.split("/", 1)
    return parts[1] if len(parts) == 2 else raw


def _split_diff_git(rest: str) -> tuple[str, str] | None:
    rest = rest.rstrip("\r")
    if rest.startswith('"'):
        end = rest.find('" ', 1)
        if end < 0:
            return None
        return _unquote(rest[: end + 1]), _header_path(rest[end + 2 :])
    half = (len(rest) - 1) // 2
    if len(rest) % 2 == 1 and rest[half] == " " and rest[:half][2:] == rest[half + 1 :][2:]:
        return rest[:half], rest[half + 1 :]
    idx = rest.find(" b/")
    return (rest[:idx], rest[idx + 1 :]) if idx > 0 else None


def parse_patch_files(patch: str) -> list[PatchFile]:
    """The file sections of a unified/git patch, with every path each one names.

    A `--- ` line starts a header only when a `+++ ` line follows it (GNU patch's own
    rule), so a removed line that happens to read `--- x` stays hunk content.
    """
    files: list[PatchFile] = []
    current: PatchFile | None = None
    from_git_header = False
    lines = patch.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if line.startswith("diff --git "):
            current = PatchFile(start_line=i)
            files.append(current)
            from_git_header = True
            pair = _split_diff_git(line[len("diff --git ") :])
            if pair:
                current.raw_paths += list(pair)
                current.old_path, current.new_path = strip_prefix(pair[0]), strip_prefix(pair[1])
        elif line.startswith("--- ") and nxt.startswith("+++ "):
            if current is None or not from_git_header:
                current = PatchFile(start_line=i)
                files.append(current)
            from_git_header = False  # the next ---/+++ pair is a new section
            old_raw, new_raw = _header_path(line[4:]), _header_path(nxt[4:])
            current.raw_paths += [old_raw, new_raw]
            current.old_path, current.new_path = strip_prefix(old_raw), strip_prefix(new_raw)
            i += 2
            continue
        elif line.startswith("Index: "):
            if current is None:
                current = PatchFile(start_line=i)
                files.append(current)
            current.raw_paths.append("x/" + line[7:].strip())
        elif current is not None:
            if line.startswith("+"):
                current.added_lines.append(line[1:])
            for key in ("rename from ", "rename to ", "copy from ", "copy to "):
                if line.startswith(key):
                    path = _header_path(line[len(key) :])
                    current.raw_paths.append("x/" + path)  # a dummy prefix, like a/ and b/
                    if key.endswith("from "):
                        current.old_path = path
                    else:
                        current.new_path = path
            if line.startswith(("new file mode ", "new mode ")) and line.split()[-1] == _SYMLINK_MODE:
                current.symlink = True
        i += 1
    for f in files:
        if f.symlink and f.added_lines:
            f.symlink_target = f.added_lines[0]
    return files


def patch_paths(patch: str) -> list[str]:
    """Every repo-relative path the patch reads or writes (old and new names), in order."""
    seen: dict[str, None] = {}
    for f in parse_patch_files(patch):
        for p in (f.old_path, f.new_path):
            if p:
                seen.setdefault(p, None)
    return list(seen)


def is_test_path(path: str) -> bool:
    """Test-like paths an agent must not change: test files, test dirs, conftest.py."""
    parts = PurePosixPath(path).parts
    if not parts:
        return False
    name = parts[-1]
    if name == "conftest.py" or (name.startswith("test_") and name.endswith(".py")) or name.endswith("_test.py"):
        return True
    dirs = parts[:-1]
    return any(d in _TEST_DIRS_ANYWHERE for d in dirs) or (bool(dirs) and dirs[0] in _TEST_DIRS_TOP)


def is_test_config_path(path: str) -> bool:
    """Files that configure the test run (`TEST_CONFIG_FILES`, at any depth): a
    `[pytest] addopts = -p plugin` in any of them loads code that can report any result."""
    return PurePosixPath(path).name in TEST_CONFIG_FILES


# -- what a parsed patch changes (unidiff's objects, read by attribute) ---------------------

_DEF = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)")


def patched_path(pf: Any) -> str:
    """A unidiff `PatchedFile`'s path in the repository: the target's, the source's for a
    deleted file, without git's `a/`/`b/` prefix."""
    target = pf.target_file if pf.target_file != "/dev/null" else pf.source_file
    return target[2:] if target.startswith(("a/", "b/")) else target


def hunk_functions(hunk: Any) -> set[str]:
    """The functions and classes a unidiff `Hunk` changes: each `def`/`class` a changed line
    is in (from the hunk's header or an earlier line of it) or defines. The daydream's item
    `symbols` and the funnel's `used` read a patch the same way, through this."""
    names: set[str] = set()
    header = _DEF.match(hunk.section_header or "")
    enclosing = header.group(1) if header else None
    for line in hunk:
        defined = _DEF.match(line.value)
        if defined:
            enclosing = defined.group(1)
            if line.is_added or line.is_removed:
                names.add(enclosing)
            continue
        if (line.is_added or line.is_removed) and line.value.strip() and enclosing:
            names.add(enclosing)
    return names
