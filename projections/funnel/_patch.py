"""What a patch touches (files and functions), read as the daydream reads a patch for an
item's `files` and `symbols` (`commands.memory.patch_facts`): unidiff, test-like paths
left out (`ledger.patches.is_test_path`), a function being the `def`/`class` a changed
line is in (or defines); a patch unidiff cannot parse gives its files alone."""

from __future__ import annotations

from dataclasses import dataclass

import unidiff

from ledger.patches import hunk_functions, is_test_path, patch_paths, patched_path



@dataclass(frozen=True)
class Touched:
    files: frozenset[str] = frozenset()
    functions: frozenset[str] = frozenset()

    def listed(self) -> list[str]:
        return sorted(self.files) + sorted(f"{name}()" for name in self.functions)


def touched(patch: str | None) -> Touched:
    """The non-test files and the functions `patch` changes."""
    if not patch or not patch.strip():
        return Touched()
    try:
        parsed = unidiff.PatchSet(patch)
    except unidiff.UnidiffParseError:
        return Touched(files=frozenset(p for p in patch_paths(patch) if not is_test_path(p)))
    files: set[str] = set()
    functions: set[str] = set()
    for pf in parsed:
        path = patched_path(pf)
        if is_test_path(path):
            continue
        files.add(path)
        for hunk in pf:
            functions |= hunk_functions(hunk)
    return Touched(frozenset(files), frozenset(functions))


def shared(task: Touched, files: frozenset[str] | set[str], functions: frozenset[str] | set[str]) -> list[str]:
    """What of `task` an item names: its files, its functions (as `name()`)."""
    return sorted(task.files & set(files)) + sorted(f"{n}()" for n in task.functions & set(functions))


def named_in(task: Touched, text: str) -> list[str]:
    """The files of `task` that a server's text names (by path)."""
    return sorted(f for f in task.files if f in text)
