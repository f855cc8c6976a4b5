"""Writing output files so that a failure (a full disk, a quota, a read-only mount)
leaves nothing behind: no temporary file, no half-written file, no new empty folder.

Every file is written to a temporary name in its own directory and renamed over the
target only when complete (`atomic_file`); the temporary file goes on any failure.
A command that writes a whole folder wraps it in `undo_new_folder`, so a folder it
created (or found empty) is left missing (or empty) again if the command fails.
`write_error` is the one-line wording of such failures, shared by every writer.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ledger import SweclError

__all__ = [
    "WRITE_ERRNOS",
    "atomic_file",
    "output_file",
    "undo_new_folder",
    "write_atomic",
    "write_error",
    "write_if_changed",
    "write_output",
]

# What a user can act on, in words; anything else keeps the OS's own text.
WRITE_ERRNOS: dict[int, str] = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EROFS: "the file system is read-only",
    errno.EFBIG: "the file would exceed the file size limit",
}


def write_error(exc: OSError, path: str | os.PathLike[str], *, hint: str = "nothing was written") -> SweclError:
    """`cannot write PATH: the disk is full; nothing was written` (one line)."""
    reason = WRITE_ERRNOS.get(exc.errno or 0) or exc.strerror or " ".join(str(exc).split())
    return SweclError(f"cannot write {path}: {reason}; {hint}")


def _temp_name(path: Path) -> Path:
    # Hidden, beside the target (same file system, so the rename is atomic), per process.
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except OSError:  # gone already, or the failure being reported matters more
        pass


@contextmanager
def atomic_file(path: Path) -> Iterator[Path]:
    """A temporary path to write `path`'s new content to; renamed over `path` when the
    block succeeds, removed (with a SQLite `-journal` beside it) when it fails. A block
    that removes the temporary file itself (nothing to change) leaves `path` alone."""
    tmp = _temp_name(path)
    _remove(tmp)
    try:
        yield tmp
        if tmp.exists():
            os.replace(tmp, path)
    except BaseException:
        _remove(tmp)
        _remove(tmp.with_name(tmp.name + "-journal"))
        raise


@contextmanager
def output_file(path: Path) -> Iterator[Path]:
    """`atomic_file` for a file whose folder may not exist yet: the folder is created,
    and removed again (with every parent created for it) if writing fails."""
    with undo_new_folder(path.parent):
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_file(path) as tmp:
            yield tmp


def write_output(path: Path, data: bytes) -> None:
    """`data` at `path` through `output_file`; a failure is one `write_error` line.

    Writers whose library writes files itself (polars) render into memory first: polars
    reports a failed write without its errno ("Invalid thrift: transport error"), and a
    full disk must be worded as every other writer words it."""
    try:
        with output_file(path) as tmp:
            tmp.write_bytes(data)
    except OSError as exc:
        raise write_error(exc, path) from None


def write_atomic(path: Path, data: bytes) -> None:
    with atomic_file(path) as tmp:
        tmp.write_bytes(data)


def write_if_changed(path: Path, data: bytes) -> bool:
    """Write `data` at `path` atomically, unless the file already holds exactly it (so a
    rebuild that changes nothing leaves every file and its mtime alone)."""
    if path.exists() and path.read_bytes() == data:
        return False
    write_atomic(path, data)
    return True


def _topmost_missing(path: Path) -> Path | None:
    top = None
    for candidate in (path, *path.parents):
        if candidate.exists() or candidate.is_symlink():
            break
        top = candidate
    return top


@contextmanager
def undo_new_folder(folder: Path) -> Iterator[None]:
    """If the block fails, undo what it wrote into `folder` when `folder` was missing
    (it and every parent created for it are removed) or empty (it is emptied again).
    A folder that held files before is left to the per-file atomic writes."""
    top = _topmost_missing(folder)
    try:
        empty = top is None and folder.is_dir() and not any(folder.iterdir())
    except OSError:
        empty = False
    try:
        yield
    except BaseException:
        if top is not None:
            shutil.rmtree(top, ignore_errors=True)
        elif empty:
            for child in list(folder.iterdir()):
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child, ignore_errors=True)
                else:
                    _remove(child)
        raise
