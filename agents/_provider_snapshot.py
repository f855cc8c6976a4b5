"""A memory provider's data directory as ledger blobs: snapshot after a task, restore as of any order.

The files go into the ledger's content-addressed blobs, so a file that did not change
between two snapshots is stored once; the manifest (relative path, blob, size, mode) is
the `memory.provider.snapshot` event. Symbolic links, sockets and other special files
are left out: a server's state is its regular files.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from ledger import Ledger, SweclError
from ledger.events import ProviderSnapshot, SnapshotFile

__all__ = ["provider_snapshot_event", "restore", "restore_provider_data", "snapshot", "snapshot_event",
           "snapshot_provider_data"]


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
    again) and return the manifest. Take it while the server is idle (`ProviderHost.idle`).

    Each file is read and hashed once; the new blobs of a batch go in one transaction
    (`Ledger.put_blobs`), a snapshot of unchanged files writes nothing."""
    manifest: list[SnapshotFile] = []
    batch: list[tuple[str, int, bytes]] = []
    size = 0

    def flush() -> None:
        digests = ledger.put_blobs([data for _, _, data in batch])
        manifest.extend(SnapshotFile(path=rel, blob=digest, size=len(data), mode=mode)
                        for (rel, mode, data), digest in zip(batch, digests))
        batch.clear()

    for rel, path, mode in _files(data_dir):
        data = path.read_bytes()
        batch.append((rel, mode, data))
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
    """Write the files of `manifest` under `dest` (made if missing; must hold no file yet),
    each checked against its blob hash by the ledger."""
    if dest.exists() and any(dest.iterdir()):
        raise SweclError(f"restore: {dest} is not empty; restore into a new directory")
    dest.mkdir(parents=True, exist_ok=True)
    for item in manifest:
        target = dest.joinpath(*_safe(item.path).parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(ledger.get_blob(item.blob))
        target.chmod(item.mode & 0o777)


# The names the package exports (agents.snapshot would say too little).
snapshot_provider_data = snapshot
restore_provider_data = restore
provider_snapshot_event = snapshot_event
