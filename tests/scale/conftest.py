"""A Ray instance per test module, started the way a user starts one, and torn down to the last process.

The head runs in a helper process of its own (not in pytest): `swecl run --executor ray
--ray-address ADDR` connects to it as a driver would to a cluster. Its environment is
the node's: `SWECL_CACHE` there is the cache the jobs use. Every process Ray starts
inherits a marker variable, which is how teardown proves that none is left running.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.processes import REPO_ROOT, live_processes

# Ray's defaults that would leave this machine or write outside the test: no usage
# reports, no token file in the home directory (loopback only).
# RAY_ENABLE_UV_RUN_RUNTIME_ENV: the suite runs under `uv run` (./dev), which Ray would
# otherwise replicate to its workers (swecl sets it too; the head is started here).
RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled", "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0"}

_HEAD = """
import sys, ray
ctx = ray.init(num_cpus=2, include_dashboard=False, _temp_dir=sys.argv[1])
print("RAY_ADDRESS=" + ctx.address_info["gcs_address"], flush=True)
sys.stdin.read()  # until the test module is done
ray.shutdown()
"""


@dataclass(frozen=True)
class RayCluster:
    address: str
    cache: Path


@pytest.fixture(scope="module")
def ray_cluster(cache: Path) -> Iterator[RayCluster]:
    pytest.importorskip("ray", reason="the ray executor's tests need Ray: the test extra installs it")
    if not Path("/proc/self/environ").exists():
        pytest.skip("needs /proc to prove no Ray process is left behind")
    mark = f"swecl-scale-{uuid.uuid4().hex}"
    temp = tempfile.mkdtemp(prefix="swecl-rayhead-")  # short: Ray's socket paths must fit 107 bytes
    env = {k: v for k, v in os.environ.items() if k not in ("SWECL_FAILPOINTS", "RAY_ADDRESS")}
    env.update(RAY_ENV, SWECL_CACHE=str(cache), PYTHONPATH=str(REPO_ROOT), SWECL_TEST_RAY_MARK=mark)
    head = subprocess.Popen(
        [sys.executable, "-c", _HEAD, temp], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
        cwd=REPO_ROOT, start_new_session=True,
    )
    try:
        assert head.stdout is not None
        line = head.stdout.readline().strip()
        if not line.startswith("RAY_ADDRESS="):
            pytest.fail(f"the Ray head did not start (exit {head.poll()}): {line!r}")
        yield RayCluster(line.split("=", 1)[1], cache)
    finally:
        assert head.stdin is not None
        head.stdin.close()
        try:
            head.wait(60)
        except subprocess.TimeoutExpired:
            head.kill()
        deadline = time.monotonic() + 30
        while (left := live_processes(environ=mark)) and time.monotonic() < deadline:
            time.sleep(0.5)
        for pid in left:  # ours: started by this fixture's Ray head
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(temp, ignore_errors=True)
        assert not left, f"Ray processes still running after shutdown: {left}"
