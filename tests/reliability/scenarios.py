"""Fault scenarios that must run inside a private mount namespace (a small tmpfs as the
results dir, a read-only bind mount): `python -m tests.reliability.scenarios NAME JSON`.

The caller starts this under `unshare -m` (root) or `unshare -rm` (a user namespace),
so the mounts vanish with the process and nothing outside is touched. The scenario
writes its findings as JSON to `report` and copies the results dir to `keep` before the
namespace (and its tmpfs) goes away.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.inprocess import swecl


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True)


def fill(root: Path, leave: int) -> Path:
    """Fill the filesystem of `root`, then give back `leave` bytes."""
    filler = root / "filler"
    chunk = b"\0" * 65536
    # Unbuffered: a buffered file keeps what a short write left over and writes it again
    # when it closes, which raises ENOSPC outside the loop once the free space is not a
    # multiple of the chunk.
    with open(filler, "wb", buffering=0) as fh:
        try:
            while True:
                fh.write(chunk)
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EFBIG):
                raise
    size = filler.stat().st_size
    os.truncate(filler, max(0, size - leave))
    return filler


def _done(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    return {"code": proc.returncode, "stdout": proc.stdout[-4000:], "stderr": proc.stderr[-4000:]}


def disk_full(spec: dict[str, Any]) -> dict[str, Any]:
    """A run that fills the disk, then a resume once space is back."""
    mountpoint = Path(spec["mountpoint"])
    _mount("-t", "tmpfs", "-o", f"size={spec['size']}", "tmpfs", str(mountpoint))
    results = mountpoint / "results"
    cache = Path(spec["cache"])
    out: dict[str, Any] = {}
    filler = fill(mountpoint, spec["leave"])
    out["full_run"] = _done(swecl(results, "run", *spec["start_args"], "--version", spec["version"], "--quiet",
                                  cache=cache, check=False))
    out["verify_while_full"] = _done(swecl(results, "verify", cache=cache, check=False))
    filler.unlink()
    out["verify_after"] = _done(swecl(results, "verify", cache=cache, check=False))
    out["resume"] = _done(swecl(results, "run", "--resume", spec["version"], "--quiet", cache=cache, check=False))
    out["verify_final"] = _done(swecl(results, "verify", cache=cache, check=False))
    shutil.copytree(results, spec["keep"], symlinks=True)
    return out


def read_only(spec: dict[str, Any]) -> dict[str, Any]:
    """The results dir bind-mounted read-only over itself: writes refused, reads work."""
    results = Path(spec["results"])
    cache = Path(spec["cache"])
    _mount("--bind", str(results), str(results))
    _mount("-o", "remount,bind,ro", str(results))
    out: dict[str, Any] = {}
    for name, args in spec["commands"].items():
        out[name] = _done(swecl(results, *args, cache=cache, check=False))
    return out


SCENARIOS = {"disk_full": disk_full, "read_only": read_only}


def main() -> None:
    name, spec_path = sys.argv[1], sys.argv[2]
    spec = json.loads(Path(spec_path).read_text())
    report = SCENARIOS[name](spec)
    Path(spec["report"]).write_text(json.dumps(report))


if __name__ == "__main__":
    main()
