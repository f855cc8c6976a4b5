"""Advisory file locks (flock): one way to take one, one way to ask whether one is held.

Every lock swecl takes is one of these: a run's lock (held while a process works on the
run, so `swecl runs` tells running from interrupted and a second resume is refused), a
sequence's lock under `--jobs`, the environment, mirror and worktree-slot locks of the
grader's cache. The kernel drops an flock when its holder dies, however it dies, so a
SIGKILLed swecl never leaves a lock behind.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["file_lock", "is_locked"]


@contextmanager
def file_lock(path: Path, *, blocking: bool = True) -> Iterator[bool]:
    """An exclusive flock on `path` (created, with its folder); yields False when
    non-blocking and another process holds it (nothing is held then)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def is_locked(path: Path) -> bool:
    """Whether another process holds the lock at `path` right now. A missing file is not
    created (a reader may sit in a read-only folder): nobody holds it."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)
