"""Caps on what swecl reads from users: file kind, file size, JSON depth, huge integers.

One module for every reader (datasets, rows, predictions, `verdict` inputs and logs,
memory exports, metric vectors). It lives in `graders/` because `graders` may import
only `ledger`, while `commands` may import everything: both layers can share it.

- Only regular files are read. A FIFO, a device (`/dev/zero`) or a directory is refused
  before any byte is read: a FIFO would block forever and a device never ends. Inputs
  are read more than once (`swecl grade` reads its predictions twice), so a pipe could
  not work anyway.
- A file larger than its cap is refused from its size alone; the read itself stops one
  byte past the cap, so a file that grows while read cannot slip through.
- JSON deeper than `MAX_JSON_DEPTH` and integers longer than Python's digit limit
  (4300 by default) are one-line errors instead of a `RecursionError` / `ValueError`
  from inside the decoder.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import sys
from typing import Any

from ledger.errors import InputRefused, SweclError

__all__ = [
    "LIMIT_ENV",
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_LOG_BYTES",
    "MAX_PARQUET_BYTES",
    "InputRefused",
    "check_input_file",
    "input_limit",
    "json_problem",
    "loads_limited",
    "read_limited",
]

MiB = 1024 * 1024
GiB = 1024 * MiB
MAX_JSON_BYTES = 256 * MiB
"""JSON and JSONL inputs: curricula, rows, predictions, verdict inputs, memory exports."""
MAX_PARQUET_BYTES = 2 * GiB
"""Parquet rows: columnar and compressed, so a real one is larger on disk than its JSON."""
MAX_LOG_BYTES = 256 * MiB
"""Test logs named by a `swecl verdict` input."""
MAX_JSON_DEPTH = 64
"""Nesting of arrays and objects; SWE-bench rows and curricula need fewer than 10."""
LIMIT_ENV = "SWECL_MAX_INPUT_BYTES"
"""Overrides every size cap above (bytes, or with a K/M/G suffix: `4G`)."""

_SIZE = re.compile(r"\s*(\d+)\s*([KMG]?)(?:i?B)?\s*", re.IGNORECASE)
_UNITS = {"": 1, "K": 1024, "M": MiB, "G": GiB}
_READ_CHUNK = 8 * MiB


def input_limit(default: int) -> int:
    """`default`, or the cap set with SWECL_MAX_INPUT_BYTES."""
    raw = os.environ.get(LIMIT_ENV)
    if raw is None or not raw.strip():
        return default
    match = _SIZE.fullmatch(raw)
    if match is None:
        raise SweclError(f"{LIMIT_ENV}={raw!r}: expected a size in bytes, e.g. 536870912 or 512M or 4G")
    return int(match.group(1)) * _UNITS[match.group(2).upper()]


def _size_text(size: int) -> str:
    return f"{size / GiB:.4g} GiB" if size >= GiB else f"{size / MiB:.4g} MiB" if size >= MiB else f"{size} bytes"


def _kind(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _refuse_stat(st: os.stat_result, label: str, limit: int) -> None:
    kind = _kind(st.st_mode)
    if kind == "a directory":
        raise InputRefused(label, "is a directory, not a file", "directory")
    if kind is not None:
        raise InputRefused(label, f"is {kind}, not a regular file; save the input to a file and pass that", "special")
    if st.st_size > limit:
        raise _too_large(label, st.st_size, limit)


def _too_large(label: str, size: int | None, limit: int) -> InputRefused:
    what = f"is {_size_text(size)}," if size is not None else "grew while being read,"
    return InputRefused(
        label,
        f"{what} over the {_size_text(limit)} limit for one input file; set {LIMIT_ENV} to raise it",
        "too_large",
    )


def _os_refusal(exc: OSError, label: str) -> InputRefused:
    if isinstance(exc, FileNotFoundError):
        return InputRefused(label, "no such file", "missing")
    if isinstance(exc, IsADirectoryError):
        return InputRefused(label, "is a directory, not a file", "directory")
    if exc.errno == errno.ENXIO:  # a socket, or a FIFO opened for writing without a reader
        return InputRefused(label, "is not a regular file; save the input to a file and pass that", "special")
    return InputRefused(label, f"cannot read: {exc.strerror or exc}", "unreadable")


def check_input_file(path: str | os.PathLike[str], label: str, limit: int = MAX_PARQUET_BYTES) -> int:
    """Refuse what `read_limited` refuses, for a reader that opens the file itself
    (polars); the file's size."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise _os_refusal(exc, label) from None
    _refuse_stat(st, label, input_limit(limit))
    return st.st_size


def read_limited(path: str | os.PathLike[str], label: str, limit: int = MAX_JSON_BYTES) -> bytes:
    """The bytes of a regular file no larger than `limit` (or SWECL_MAX_INPUT_BYTES)."""
    cap = input_limit(limit)
    try:
        # O_NONBLOCK: opening a FIFO without a writer must not block; the fstat that
        # follows refuses it before any read.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise _os_refusal(exc, label) from None
    try:
        _refuse_stat(os.fstat(fd), label, cap)
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, min(_READ_CHUNK, cap + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > cap:
                raise _too_large(label, None, cap)
        return b"".join(chunks)
    except InputRefused:
        raise
    except OSError as exc:
        raise _os_refusal(exc, label) from None
    finally:
        os.close(fd)


def _too_deep(document: Any, limit: int) -> bool:
    # Iterative, so the check itself cannot hit the recursion limit it guards against.
    stack: list[tuple[Any, int]] = [(document, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > limit:
            return True
        for child in value.values() if isinstance(value, dict) else value:
            if isinstance(child, dict | list):
                stack.append((child, depth + 1))
    return False


def json_problem(text: str | bytes, max_depth: int = MAX_JSON_DEPTH) -> tuple[Any, str | None]:
    """(document, None) for JSON within the caps, else (None, what is wrong) in words
    (`not valid JSON: ...` keeps the decoder's position)."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
    except RecursionError:
        return None, f"nested deeper than {max_depth} levels of arrays/objects"
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    except ValueError:
        # The only other ValueError json raises: int() past sys.get_int_max_str_digits().
        return None, f"holds an integer of more than {sys.get_int_max_str_digits()} digits"
    if isinstance(document, dict | list):
        # Only a document with more brackets than the cap can be too deep: skip the walk
        # (str.count runs in C) for every ordinary file.
        brackets = text.count("[") + text.count("{") if isinstance(text, str) else text.count(b"[") + text.count(b"{")
        if brackets > max_depth and _too_deep(document, max_depth):
            return None, f"nested deeper than {max_depth} levels of arrays/objects"
    return document, None


def loads_limited(text: str | bytes, label: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """`json.loads` within the caps; anything else is one `SweclError` line naming `label`."""
    document, problem = json_problem(text, max_depth)
    if problem is not None:
        raise SweclError(f"{label}: {problem}")
    return document
