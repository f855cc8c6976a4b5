"""Writing a memory folder (`results/v{V}/_memory/`, an export, a replay's `_memory/`):
the files `projections.memory.memory_folder` gives, through the core's atomic writers.

A rebuild rewrites only the files whose bytes would change and removes the Markdown of
items no longer live; a failure (a full disk) leaves no temporary file, and a folder
that was missing or empty before is removed or emptied again.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

from ledger import Ledger, SweclError, sqlite
from projections.memory import (
    COOKBOOK_DIR,
    MEMORY_DIR,
    MaterialiseReport,
    MemoryState,
    blob_patch_reader,
    load_memory,
    memory_folder,
)

from .._files import WRITE_ERRNOS, atomic_file, undo_new_folder, write_error, write_if_changed

__all__ = ["materialise_version", "write_memory_folder"]

PatchReader = Callable[[str], "str | None"]


def materialise_version(
    ledger: Ledger, version: str, version_dir: str | os.PathLike[str], *, upto: int | None = None
) -> MaterialiseReport:
    """(Re)build `version_dir/_memory/` (e.g. results/v{V}/_memory) from the ledger."""
    state = load_memory(ledger, version, upto=upto).state
    return write_memory_folder(
        state, Path(version_dir) / MEMORY_DIR, blob_patch_reader(ledger), ledger_id=ledger.ledger_id
    )


def write_memory_folder(
    state: MemoryState, memory_dir: Path, read_patch: PatchReader, *, ledger_id: str | None = None
) -> MaterialiseReport:
    """Write the memory folder of `state` into `memory_dir` (also what export writes)."""
    with undo_new_folder(memory_dir):
        try:
            return _write(state, memory_dir, read_patch, ledger_id)
        except OSError as exc:
            raise write_error(exc, exc.filename or memory_dir, hint="the memory folder was not updated") from None


def _write(state: MemoryState, memory_dir: Path, read_patch: PatchReader, ledger_id: str | None) -> MaterialiseReport:
    memory_dir.mkdir(parents=True, exist_ok=True)
    cookbook = memory_dir / COOKBOOK_DIR
    cookbook.mkdir(exist_ok=True)
    folder = memory_folder(state, read_patch, ledger_id=ledger_id)
    changed: list[str] = []
    for name, data in folder.files.items():
        if name.startswith(f"{COOKBOOK_DIR}/") and write_if_changed(memory_dir / name, data):
            changed.append(name)
    for stale in sorted(cookbook.glob("*.md")):
        if f"{COOKBOOK_DIR}/{stale.name}" not in folder.files:
            stale.unlink()
            changed.append(f"{COOKBOOK_DIR}/{stale.name}")
    for name, data in folder.files.items():
        if not name.startswith(f"{COOKBOOK_DIR}/") and write_if_changed(memory_dir / name, data):
            changed.append(name)
    for name, fill in folder.databases.items():
        if _build_db(memory_dir / name, fill):
            changed.append(name)
    return MaterialiseReport(memory_dir, folder.as_of_seq, folder.live_items, folder.total_items, tuple(changed))


def _build_db(path: Path, fill: Callable[[sqlite.Connection], None]) -> bool:
    """Build a fresh database next to `path`; replace `path` only if the bytes differ.

    One transaction, rollback journal, no WAL: the same statements give the same file.
    """
    try:
        with atomic_file(path) as tmp:
            conn = sqlite.connect(tmp)
            try:
                with conn:
                    fill(conn)
            finally:
                conn.close()
            changed = not (path.exists() and path.read_bytes() == tmp.read_bytes())
            if not changed:
                tmp.unlink()  # atomic_file then leaves `path` (and its mtime) alone
        return changed
    except sqlite.FullError:
        raise write_error(OSError(errno.ENOSPC, WRITE_ERRNOS[errno.ENOSPC]), path, hint="the memory folder was not updated") from None
    except sqlite.SqliteError as exc:
        raise SweclError(f"cannot write {path}: {exc}") from None
