"""Every writer on a full disk, inside a private mount namespace (as `scenarios`):
`python -m tests.reliability.scenarios_writers disk_full_writers JSON`.

A small tmpfs holds a copy of a finished results dir; the disk is filled (leaving
`leave` bytes), then each command of `commands` runs with `{m}` in its arguments
replaced by the mountpoint. The report records, per command, its outcome and the
files under the mountpoint before and after it, so the caller can check that a refused
write left nothing behind.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from tests.inprocess import swecl

from .scenarios import _done, _mount, fill

# SQLite's own sidecars of the ledger and the read-model database come and go with
# their readers: they are not outputs of the writers under test.
_SIDECARS = tuple(f"{db}-{kind}" for db in ("ledger.db", "projections.db") for kind in ("wal", "shm"))


def tree(root: Path, skip: Path) -> list[str]:
    """Every path under `root` (files and folders, hidden ones too), `skip` left out."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath, name)
            if path != skip and name not in _SIDECARS:
                found.append(str(path.relative_to(root)))
    return sorted(found)


def disk_full_writers(spec: dict[str, Any]) -> dict[str, Any]:
    mountpoint = Path(spec["mountpoint"])
    _mount("-t", "tmpfs", "-o", f"size={spec['size']}", "tmpfs", str(mountpoint))
    results = mountpoint / "results"
    shutil.copytree(spec["results"], results, symlinks=True)
    # materialise must write: the folder a run left is removed first
    shutil.rmtree(results / f"v{spec['version']}" / "_memory", ignore_errors=True)
    cache = Path(spec["cache"])
    filler = fill(mountpoint, spec["leave"])
    out: dict[str, Any] = {}
    for name, args in spec["commands"].items():
        before = tree(mountpoint, filler)
        done = _done(swecl(results, *[a.replace("{m}", str(mountpoint)) for a in args], cache=cache, check=False))
        out[name] = {**done, "before": before, "after": tree(mountpoint, filler)}
    return out


SCENARIOS = {"disk_full_writers": disk_full_writers}


def main() -> None:
    name, spec_path = sys.argv[1], sys.argv[2]
    spec = json.loads(Path(spec_path).read_text())
    Path(spec["report"]).write_text(json.dumps(SCENARIOS[name](spec)))


if __name__ == "__main__":
    main()
