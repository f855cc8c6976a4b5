"""A memory server's data directory as ledger blobs: snapshot after a task, restore as of any order.

The files go into the ledger's content-addressed blobs, so a file that did not change
between two snapshots is stored once; the manifest (relative path, blob, size, mode) is
the `memory.provider.snapshot` event. Symbolic links, sockets and other special files
are left out: a server's state is its regular files.

A file larger than `CHUNK_ABOVE` is stored as content-defined chunks (FastCDC, pyfastcdc),
each a blob, listed in order in its manifest entry (`SnapshotFile.chunks`, `blob` None):
servers keep their data in one file rewritten at each save (server-memory's JSONL, where
new entities land mid-file) or a SQLite database changed page by page, and cut where the
content says, an insertion or a changed page dirties only the chunks around it, so the
snapshot stores (and compresses, and writes) those alone. Small files stay one blob.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from pyfastcdc import FastCDC

from ledger import IntegrityError, Ledger, SweclError
from ledger.events import ProviderSnapshot, SnapshotChunk, SnapshotFile

__all__ = ["CHUNK_ABOVE", "SNAPSHOT_CHUNK_ABOVE", "restore", "restore_server_data", "server_snapshot_event", "snapshot",
           "snapshot_event", "snapshot_server_data"]

# Files above this size are chunked. Below it a changed file costs little whole, and a
# data directory of many small files (basic-memory's notes) keeps one blob each.
CHUNK_ABOVE = 256 * 1024
# FastCDC's sizes (its chunks average about avg + min: some 44 KiB here). Measured on
# 10 MB: a few lines inserted mid-file add 2 chunks (~48 KB), five changed 4 KiB pages
# some 9 chunks (~430 KB); at twice the sizes, 70 and 480 KB, with half the manifest
# (each chunk is about 75 bytes of the event). Cutting costs ~10 ms per 10 MB either way.
_AVG, _MIN, _MAX = 32 * 1024, 8 * 1024, 128 * 1024


def _files(data_dir: Path) -> list[tuple[str, Path, int]]:
    """(relative posix path, path, mode) of every regular file under `data_dir`, sorted."""
    found: list[tuple[str, Path, int]] = []
    for root, dirs, names in os.walk(data_dir, followlinks=False):
        dirs.sort()
        for name in sorted(names):
            path = Path(root) / name
            st = path.lstat()
            if stat.S_ISREG(st.st_mode):
                found.append((path.relative_to(data_dir).as_posix(), path, stat.S_IMODE(st.st_mode)))
    return sorted(found)


# Files are read and stored in batches of about this many bytes: one transaction per
# batch, and a large data directory is never all in memory at once.
_BATCH_BYTES = 64 * 1024 * 1024


def snapshot(ledger: Ledger, data_dir: Path) -> list[SnapshotFile]:
    """Store the files of `data_dir` as blobs (those already stored are not written
    again) and return the manifest. Take it while the server is idle (`ServerHost.idle`).

    Each file is read once, and each blob (a small file, or a chunk of a large one) hashed
    once; the new blobs of a batch go in one transaction (`Ledger.put_blobs`), a snapshot
    of unchanged files writes nothing."""
    # One chunker per snapshot: pyfastcdc's is not to be shared between threads.
    chunker = FastCDC(_AVG, min_size=_MIN, max_size=_MAX)
    manifest: list[SnapshotFile] = []
    # (relative path, mode, size, chunked, pieces): the pieces are memoryviews of the
    # file's bytes, cut without copying.
    batch: list[tuple[str, int, int, bool, list[memoryview]]] = []
    size = 0

    def flush() -> None:
        digests = iter(ledger.put_blobs([piece for *_, pieces in batch for piece in pieces]))
        for rel, mode, length, chunked, pieces in batch:
            if chunked:
                chunks = [SnapshotChunk(next(digests), len(piece)) for piece in pieces]
                manifest.append(SnapshotFile(path=rel, blob=None, size=length, mode=mode, chunks=chunks))
            else:
                manifest.append(SnapshotFile(path=rel, blob=next(digests), size=length, mode=mode))
        batch.clear()

    for rel, path, mode in _files(data_dir):
        data = path.read_bytes()
        if len(data) > CHUNK_ABOVE:
            batch.append((rel, mode, len(data), True, [chunk.data for chunk in chunker.cut_buf(data)]))
        else:
            batch.append((rel, mode, len(data), False, [memoryview(data)]))
        size += len(data)
        if size >= _BATCH_BYTES:
            flush()
            size = 0
    if batch:
        flush()
    return manifest


def snapshot_event(
    manifest: Sequence[SnapshotFile], *, sequence_id: str, instance_id: str | None, order: int,
    pass_: str = "initial", attempt: int = 1,
) -> ProviderSnapshot:
    return ProviderSnapshot(
        sequence_id=sequence_id, instance_id=instance_id, order=order, pass_=pass_, attempt=attempt,
        files=list(manifest), total_bytes=sum(f.size for f in manifest),
    )


def _safe(rel: str) -> PurePosixPath:
    path = PurePosixPath(rel)
    if path.is_absolute() or not path.parts or any(p in ("", ".", "..") for p in path.parts):
        raise SweclError(f"snapshot file {rel!r} is not a relative path inside the data directory")
    return path


def restore(ledger: Ledger, manifest: Sequence[SnapshotFile], dest: Path) -> None:
    """Write the files of `manifest` under `dest` (made if missing; must hold no file yet):
    each blob checked against its hash by the ledger, a chunked file's chunks written in
    order, and every file's size checked against the manifest's."""
    if dest.exists() and any(dest.iterdir()):
        raise SweclError(f"restore: {dest} is not empty; restore into a new directory")
    dest.mkdir(parents=True, exist_ok=True)
    for item in manifest:
        target = dest.joinpath(*_safe(item.path).parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        if item.blob is not None:
            data = ledger.get_blob(item.blob)
            target.write_bytes(data)
            written = len(data)
        else:
            written = 0
            with target.open("wb") as out:
                for chunk in item.chunks:
                    data = ledger.get_blob(chunk.blob)
                    if len(data) != chunk.size:
                        raise IntegrityError(None, f"snapshot file {item.path!r}: chunk {chunk.blob} holds "
                                                   f"{len(data)} bytes, its entry says {chunk.size}")
                    out.write(data)
                    written += len(data)
        if written != item.size:
            raise IntegrityError(None, f"snapshot file {item.path!r}: {written} bytes restored, "
                                       f"its entry says {item.size}")
        target.chmod(item.mode & 0o777)


# The names the package exports (a bare `snapshot` would say too little among a run's memories).
snapshot_server_data = snapshot
restore_server_data = restore
server_snapshot_event = snapshot_event
SNAPSHOT_CHUNK_ABOVE = CHUNK_ABOVE
