"""Ray itself, for `swecl run --executor ray` (see `_ray`): importing it (`import_ray`),
checking it before a run is claimed (`check_ray`), connecting to it (`ray_session`), and
the code identity the driver and its nodes must share (`code_identity`).
"""

from __future__ import annotations

import logging
import os
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from typing import Any

from ledger import SweclError

from .._provenance import git_sha, package_version
from ._options import RunOptions

INSTALL_HINT = "pip install 'swecl[ray]' (or uv sync --extra ray)"


# -- Ray itself ----------------------------------------------------------------------------


def import_ray() -> Any:
    # A driver started under `uv run` would otherwise have Ray start every worker with
    # that `uv run` command line in a copy of the driver's project: a job must run the
    # swecl installed on its node (read by Ray when it is imported; a user's own setting
    # wins).
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    try:
        import ray  # lazy: Ray is optional and heavy; only --executor ray loads it
    except ImportError:
        raise SweclError(f"--executor ray needs Ray on this machine and on every node: {INSTALL_HINT}") from None
    return ray


def check_ray(opts: RunOptions) -> None:
    """Fail fast, before a run is claimed or resumed: Ray is importable, and a HOST:PORT
    address answers (ray.init would otherwise retry against it for minutes)."""
    import_ray()
    address = opts.execution.ray_address or ""
    host, sep, port = address.rpartition(":")
    if "://" in address or not sep or not port.isdigit() or not host:
        return  # auto, local, ray://..., or nothing: Ray resolves those itself
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=10).close()
    except OSError as exc:
        raise SweclError(
            f"--ray-address {address}: nothing answers there ({exc.strerror or exc}); start the cluster with "
            "`ray start --head` and pass its address"
        ) from None


@contextmanager
def ray_session(opts: RunOptions) -> Iterator[Any]:
    """Ray, connected as `--ray-address` says; disconnected (a local instance it started:
    stopped) on exit. Nested sessions share the outer connection."""
    check_ray(opts)
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
    address = opts.execution.ray_address
    kwargs: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False}
    if address == "local":
        kwargs["include_dashboard"] = False  # a throwaway local instance: no web UI to serve
    # Ray prints what it hears from the cluster (a worker died, ...) on stdout, which
    # belongs to `--json` progress lines: while connected, stray output goes to stderr.
    # The reporters hold their stream from before, so they still write where they should.
    with redirect_stdout(sys.stderr):
        try:
            ray.init(address=address, **kwargs)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = address or os.environ.get("RAY_ADDRESS") or "a new local instance"
            raise SweclError(f"--ray-address {where}: cannot connect to Ray ({' '.join(str(exc).split())[:300]})") from None
        try:
            yield ray
        finally:
            ray.shutdown()


def code_identity() -> dict[str, str]:
    """What must match between the driver and a node: event ids and payloads come from the code."""
    found = {"swecl": package_version("swecl") or "", **{k: str(v) for k, v in git_sha().items() if k == "git_sha"}}
    return {k: v for k, v in found.items() if v}
