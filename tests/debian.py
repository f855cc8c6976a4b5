"""Debian packages the tests need (chromium for the browser tests, ccache for the compiler
cache's, nodejs and npm for the `claude` CLI), installed with apt-get when missing and we
are root, as the README says."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path


def apt_install(packages: list[str], find: Callable[[], str | None], lock_name: str) -> tuple[str | None, str]:
    """What `find` finds, installing `packages` first when it finds nothing and we are root.

    Returns (path or None, why not). A file lock serialises pytest-xdist workers: the
    first installs, the others wait and then find it. An install that fails for a stale
    package list is retried once after `apt-get update`.
    """
    found = find()
    if found:
        return found, ""
    wanted = " ".join(packages)
    if os.geteuid() != 0:
        return None, f"{wanted} not installed and we are not root (apt-get install -y {wanted} needs root)"
    if shutil.which("apt-get") is None:
        return None, f"{wanted} not installed and there is no apt-get to install it with"
    lock = Path(tempfile.gettempdir()) / lock_name
    with lock.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            found = find()
            if found:
                return found, ""
            env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
            install = ["apt-get", "install", "-y", *packages]
            log = []
            for argv in (install, ["apt-get", "update"], install):
                if argv[1] == "update" and find():
                    break
                proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1200, check=False)
                log.append(f"$ {' '.join(argv)} -> exit {proc.returncode}\n{proc.stderr[-1500:]}")
                if argv[1] == "install" and proc.returncode == 0:
                    break
            found = find()
            return found, "" if found else f"apt-get install -y {wanted} failed:\n" + "\n".join(log)
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
