"""What a run records about where it came from: code, packages, data, command line.

Never secrets: the command line and environment-derived values go through `scrub`.
"""

from __future__ import annotations

import importlib.metadata
import platform
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from agents import Scrubber

_PACKAGES = ("apsw", "msgspec", "pydantic", "polars", "unidiff", "mcp", "click", "datasets", "uv")

_SECRET_VALUE = re.compile(
    r"(sk-ant-[A-Za-z0-9_\-]{8,}|sk-[A-Za-z0-9]{20,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{20,})"
)
# `--token=${TOKEN}` names a variable, not a secret: left alone.
_SECRET_FLAG = re.compile(r"(?i)(api[_-]?key|token|secret|password)=(?!\$\{)\S+")


def scrub(text: str) -> str:
    """Mask things that look like credentials in free text (command lines, errors), and
    the environment's secret values in any form `agents._scrub` knows (base64, hex...)."""
    text = Scrubber().text(text)
    text = _SECRET_VALUE.sub("[REDACTED]", text)
    return _SECRET_FLAG.sub(lambda m: m.group(0).split("=", 1)[0] + "=[REDACTED]", text)


def git_sha() -> dict[str, Any]:
    root = Path(__file__).resolve().parents[1]
    try:
        sha = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
        )
        if sha.returncode != 0:
            return {}
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        return {"git_sha": sha.stdout.strip(), "git_dirty": bool(dirty.stdout.strip())}
    except (OSError, subprocess.SubprocessError):
        return {}


def package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def provenance(**extra: Any) -> dict[str, Any]:
    info: dict[str, Any] = {
        "swecl": package_version("swecl"),
        **git_sha(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "host": socket.gethostname(),
        "packages": {name: v for name in _PACKAGES if (v := package_version(name))},
        "command": scrub(" ".join(["swecl", *sys.argv[1:]])),
    }
    info.update(extra)
    return info
