"""Leftovers of a killed swecl: the next swecl on the same cache ends them, and only them."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from graders.host import _reaper


def _dead_owner() -> str:
    """An owner (pid.start time) that is gone: a process that already exited."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    return f"{done.stdout.strip()}.0"


def _leftover(owner_token: str) -> subprocess.Popen:
    env = {**os.environ, _reaper.OWNER_VAR: owner_token}
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], env=env)
    # Popen returns once the child's exec has begun, but the kernel sets up the new
    # process's environment a little later; until then /proc/PID/environ reads empty
    marker = f"{_reaper.OWNER_VAR}={owner_token}".encode()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with open(f"/proc/{proc.pid}/environ", "rb") as fh:
            if marker in fh.read().split(b"\0"):
                return proc
        time.sleep(0.01)
    proc.kill()
    raise AssertionError(f"the leftover never showed {_reaper.OWNER_VAR} in its environment")


def test_the_next_swecl_on_a_cache_ends_what_a_killed_one_left_there_and_nothing_else(tmp_path: Path) -> None:
    # a reaper of its own: reap_orphans records the cache, and the process-wide one stays as it was
    reaper = _reaper.Reaper()
    ours, theirs = tmp_path / "cache", tmp_path / "other-cache"
    dead = _dead_owner()
    same_cache = _leftover(f"{dead}/{_reaper._scope_of(ours)}")
    other_cache = _leftover(f"{dead}/{_reaper._scope_of(theirs)}")
    no_cache = _leftover(dead)  # a token that names no cache is anyone's to end
    live_owner = _leftover(f"{os.getppid()}.{_reaper._start_time(os.getppid())}/{_reaper._scope_of(ours)}")
    try:
        killed = set(reaper.reap_orphans(ours))
        assert {same_cache.pid, no_cache.pid} <= killed
        assert other_cache.pid not in killed and live_owner.pid not in killed
        assert same_cache.wait(timeout=10) == -9 and no_cache.wait(timeout=10) == -9
        assert other_cache.poll() is None and live_owner.poll() is None
        assert reaper.owner_token().endswith("/" + _reaper._scope_of(ours))
        assert _reaper.REAPER.owner_token() != reaper.owner_token()
    finally:
        for proc in (same_cache, other_cache, no_cache, live_owner):
            proc.kill()
            proc.wait()


def _exits_when_told(tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    """A child that exits 3 once `go` exists: its end comes after the wait has begun."""
    go = tmp_path / "go"
    code = f"import os, sys, time\nwhile not os.path.exists({str(go)!r}): time.sleep(0.01)\nsys.exit(3)"
    return subprocess.Popen([sys.executable, "-c", code]), go


def test_wait_for_exit_is_woken_by_the_exit_not_by_polling(tmp_path: Path, monkeypatch) -> None:
    proc, go = _exits_when_told(tmp_path)
    naps: list[float] = []
    real_sleep = time.sleep
    monkeypatch.setattr(time, "sleep", lambda s: (naps.append(s), real_sleep(s)))
    told = threading.Timer(0.3, go.touch)  # the child ends while the wait is under way, never before it
    told.start()
    _reaper.wait_for_exit(proc, 60)
    told.join()
    monkeypatch.undo()
    assert proc.returncode == 3
    # Popen.wait(timeout) sleeps between looks at the child; the pidfd's wait does not
    assert naps == [] or not hasattr(os, "pidfd_open")


def test_wait_for_exit_times_out_as_popen_wait_does_and_leaves_the_process_to_the_caller(tmp_path: Path,
                                                                                           monkeypatch) -> None:
    for pidfd in (True, False):
        if not pidfd:
            monkeypatch.delattr(os, "pidfd_open", raising=False)  # an OS without pidfds: Popen.wait
        proc, go = _exits_when_told(tmp_path)
        try:
            try:
                _reaper.wait_for_exit(proc, 0.2)
            except subprocess.TimeoutExpired as exc:
                assert exc.timeout == 0.2
            else:
                raise AssertionError("a running process was waited for past the timeout")
            assert proc.poll() is None  # still running, not reaped: the caller kills it
            go.touch()
            _reaper.wait_for_exit(proc, 60)
            assert proc.returncode == 3
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            go.unlink(missing_ok=True)


# A daemon that forks its successor and exits every 10 ms (in a session of its own), each
# generation naming `token` on its command line and inheriting the owner token.
_REFORKING = (
    "import os, sys, time\n"
    "while True:\n"
    "    if os.fork():\n"
    "        os._exit(0)\n"
    "    os.setsid()\n"
    "    time.sleep(0.01)\n"
)


def _has_token(pid: int, token: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmdline = fh.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] != b"Z" and token in cmdline


def _one_listing() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def test_a_daemon_that_reforks_to_dodge_a_scan_of_proc_is_always_met_and_reaped(tmp_path: Path) -> None:
    token = f"swecl-reforking-{os.getpid()}-{time.monotonic_ns()}"
    owner = f"{_dead_owner()}/{_reaper._scope_of(tmp_path)}"
    subprocess.Popen([sys.executable, "-c", _REFORKING, token], start_new_session=True,
                     env={**os.environ, _reaper.OWNER_VAR: owner})
    try:
        deadline = time.monotonic() + 10
        while not any(_has_token(pid, token.encode()) for pid in _reaper.proc_pids()):
            assert time.monotonic() < deadline, "the daemon never started"
        # control: one listing of /proc misses it often (the listed generation is gone
        # when looked at, its successor was not listed)
        misses = sum(not any(_has_token(pid, token.encode()) for pid in _one_listing()) for _ in range(50))
        assert misses > 0
        # listed again until nothing is new, it is met at every look
        assert all(any(_has_token(pid, token.encode()) for pid in _reaper.proc_pids()) for _ in range(50))
        # and the next swecl on the cache ends it
        _reaper.Reaper().reap_orphans(tmp_path)
        time.sleep(0.1)
        assert not any(_has_token(pid, token.encode()) for pid in _reaper.proc_pids())
    finally:
        for _ in range(3):  # SIGKILL each generation met, until none is left
            for pid in [p for p in _reaper.proc_pids() if _has_token(p, token.encode())]:
                try:
                    os.kill(pid, 9)
                except ProcessLookupError:
                    pass
            time.sleep(0.05)


def _zombie_children() -> set[int]:
    me = os.getpid()
    return {pid for pid in _reaper.proc_pids(1)
            if (fields := _reaper._stat_fields(pid)) and len(fields) > 1 and fields[0] == b"Z" and int(fields[1]) == me}


def _until(check, what: str, timeout_s: float = 20.0):
    deadline = time.monotonic() + timeout_s
    while not (found := check()):
        assert time.monotonic() < deadline, what
        time.sleep(0.02)
    return found


def test_an_orphan_that_dies_after_its_run_is_reaped_and_no_popen_loses_its_exit(tmp_path: Path) -> None:
    """bwrap's inner process outlives its run by a moment, leading a session of its own: as
    the subreaper's child it stays a zombie until waited for (258 after one validation).
    The next run's end reaps it; a session leader another thread started, exited but not
    yet waited for by its Popen, keeps its exit code; a child of swecl's own group is
    never touched."""
    from graders.host import parallel_runs, run_in_session

    quiet = dict(cwd=tmp_path, env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout_s=60)
    already = _zombie_children()
    with parallel_runs():  # as `--jobs N`: a leftover without its run's marker is spared by the clean-up
        first = run_in_session(["sh", "-c", "setsid env -i /bin/sh -c 'sleep 0.5' & sleep 0.2; exit 0"], **quiet)
        assert first.returncode == 0
        orphans = _until(lambda: _zombie_children() - already, "the orphan died and is this process's zombie")
        with _reaper.starting_session_leader() as leader:
            held = subprocess.Popen(["sh", "-c", "exit 7"], start_new_session=True)
            leader(held.pid)
        own_group = subprocess.Popen(["sh", "-c", "exit 5"])  # as `subprocess.run` of git or uv
        _until(lambda: {held.pid, own_group.pid} <= _zombie_children(), "both exited")
        second = run_in_session(["true"], **quiet)
        assert second.returncode == 0
    assert not orphans & _zombie_children()
    assert held.wait() == 7 and own_group.wait() == 5
    _reaper.session_leader_reaped(held.pid)


def test_a_runs_clean_up_kills_what_it_left_and_never_a_process_of_swecls_own_group(tmp_path: Path) -> None:
    """Outside `parallel_runs` (`--jobs 1`) a run's clean-up kills every new process it
    does not own, but not swecl's own `subprocess.run` of another thread (the uv of an
    environment built ahead): killed and waited for there, its Popen got no exit status and
    reported 0, and an environment with no package was taken as built."""
    from graders.host import run_in_session

    token = f"swecl-left-{os.getpid()}-{time.monotonic_ns()}"
    started = tmp_path / "run-started"
    own_group: list[subprocess.Popen] = []

    def another_thread() -> None:  # starts its uv while the run is in flight
        _until(started.exists, "the run started")
        own_group.append(subprocess.Popen(["sh", "-c", "sleep 2; exit 3"]))

    thread = threading.Thread(target=another_thread)
    thread.start()
    quiet = dict(cwd=tmp_path, env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout_s=60)
    line = f"setsid sh -c 'exec sleep 60 # {token}' & touch {started}; sleep 1"
    done = run_in_session(["sh", "-c", line], **quiet)
    thread.join()
    assert done.returncode == 0
    assert not any(_has_token(pid, token.encode()) for pid in _reaper.proc_pids())  # the run's leftover: ended
    assert own_group[0].wait(timeout=30) == 3  # swecl's own: ran to its end, its status its own


def test_another_runs_clean_up_spares_a_process_of_a_run_in_flight_that_carries_no_marker(tmp_path: Path) -> None:
    """A run's processes are found by their marker and by the session the run leads: /proc
    shows no environment for a process in the middle of its exec, nor any for one that
    wiped it. Outside `parallel_runs` another run's clean-up took such a process of the
    environment build beside it for a leftover and killed it."""
    from graders.host import run_in_session

    started = tmp_path / "started"
    outcome: list[int | None] = []
    quiet = dict(cwd=tmp_path, env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout_s=60)
    before = _reaper.descendants()
    # no marker in its environment, in the session its run leads
    line = f"touch {started}; sleep 2; exit 5"
    thread = threading.Thread(target=lambda: outcome.append(
        run_in_session(["env", "-i", "/bin/sh", "-c", line], **quiet).returncode))
    thread.start()
    _until(started.exists, "the run started")
    _reaper.kill_new_descendants(before, "another-run")  # another run's clean-up, as it ends
    thread.join()
    assert outcome == [5]  # ran to its end
