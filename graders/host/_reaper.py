"""Ending every process a run started, including those that left its process group.

Killing a process group misses a child that called setsid() (Node's `detached: true`, a
daemonising test server). This process becomes a child subreaper (Linux), so such
orphans are re-parented to it instead of to init and stay findable as its descendants;
after a run, every descendant that was not there before it started is killed and reaped.

The grader's test commands and the agents' processes both use it, through `graders.host`:
the host's infrastructure, which imports neither the grading modules nor the agents.

A SIGKILLed swecl cannot clean up after itself. Every process it starts carries
`SWECL_OWNER=<pid>.<start time>/<cache>` in its environment (inherited by its children,
setsid or not); the next swecl that starts a run or a grade on the same cache ends every
process whose owner is gone (`reap_orphans`). In the sandbox this is not needed (the PID
namespace dies with swecl), but it costs one scan of /proc and covers `--sandbox none`.
The cache scopes it: leftovers work in that cache's worktrees, which is where the next
swecl on it would meet them, and a swecl never ends what another user's or another
project's swecl (another cache) left, even while that one is still deciding.

Several runs may be in flight at once in one swecl (`swecl grade --jobs N` grades in
threads, inside `parallel_runs()`). Each run's processes carry its own `SWECL_RUN`
marker; the clean-up after one run then kills only the new processes that carry its
marker: without that, the first test run to end would kill every other thread's test
run, and the uv or git another thread is running. A process that wiped its environment
and left its group is then not found (in the sandbox it dies with the PID namespace).
Nor is a marker all there is: a process of the session another run in flight leads
(`leads`, told by `run_in_session`) is that run's, marker or not. /proc shows no
environment for a process in the middle of its exec, and the clean-up of a test run under
`--jobs 1` (no `parallel_runs`) killed such a process of the environment build running
beside it in a session of its own (`commands._envs_ahead`).

A subreaper must also wait for the orphans that die: each stays a zombie (holding its
pid) until it is reaped. bwrap's inner process leads a session of its own and outlives the
outer one by a moment, so a grade's sandbox often leaves one behind once its run has ended,
when no clean-up looks at it: a validation of 153 tasks left 258. `reap_zombies` waits for
every exited child of this process outside its own process group, except the children
swecl's threads started themselves as leaders of their own session (`starting`): a
`Popen` that lost its child's exit to another thread would report exit code 0. The
processes that share swecl's group (`subprocess.run` of git or uv, and their children) are
never touched, by that nor by a run's clean-up: a run leads a session of its own, so none
of its processes can be in that group.

That state (subreaper or not, the runs in flight, the cache, the leaders) belongs to the
process, so one `Reaper` holds it; the module's functions are that one instance's methods.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import select
import signal
import subprocess
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

_PR_SET_CHILD_SUBREAPER = 36


def _stat_fields(pid: int) -> list[bytes]:
    """/proc/PID/stat from field 3 (state) on; [] when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return []
    # the command name may hold spaces and parentheses: fields start after the last ')'
    return stat[stat.rfind(b")") + 2 :].split()


# How many times a scan of /proc looks again for what a re-forking process left behind:
# each look that finds something new earns another; a process that outruns this many is
# one no scan can meet (tests/graders/test_reaper.py re-forks every 10 ms and never does).
LOOKS = 20


def proc_pids(rounds: int = LOOKS) -> Iterator[int]:
    """Every pid in /proc, /proc listed again after each pass until a listing holds none
    already given (at most `rounds` listings); nothing where there is no /proc.

    One listing is not enough: a process that forks its successor and exits between the
    listing and the look at its entry (a daemon re-forking to dodge a scan) is gone when
    looked at, and its successor was not listed. The successor exists before the look,
    so the next listing holds it.
    """
    seen: set[int] = set()
    for _ in range(rounds):
        try:
            entries = os.listdir("/proc")
        except OSError:
            return
        new = [int(name) for name in entries if name.isdigit() and int(name) not in seen]
        if not new:
            return
        seen.update(new)
        yield from new


def descendants(root: int | None = None) -> set[int]:
    """Pids below `root` (default: this process), from /proc; empty where there is none."""
    root = os.getpid() if root is None else root
    children: dict[int, list[int]] = {}
    for pid in proc_pids():
        fields = _stat_fields(pid)
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(pid)
    found: set[int] = set()
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


RUN_VAR = "SWECL_RUN"


def _marker_of(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            environ = fh.read()
    except OSError:
        return None
    prefix = RUN_VAR.encode() + b"="
    for entry in environ.split(b"\0"):
        if entry.startswith(prefix):
            return entry[len(prefix):].decode("ascii", "replace")
    return None


OWNER_VAR = "SWECL_OWNER"
# swecl's variables every process it starts carries: they name no path, only a process
# and a run, so an agent may see them (`agents._confine.agent_environment`).
PROCESS_VARS = (OWNER_VAR, RUN_VAR)


def _start_time(pid: int) -> str | None:
    fields = _stat_fields(pid)
    return fields[19].decode() if len(fields) > 19 else None  # field 22: start time in ticks


def _scope_of(cache_dir: str | os.PathLike[str]) -> str:
    return hashlib.sha256(os.path.realpath(cache_dir).encode()).hexdigest()[:16]


def _owner_alive(token: str) -> bool:
    pid_text, _, started = token.partition("/")[0].partition(".")
    if not pid_text.isdigit():
        return True  # not ours to judge
    return _start_time(int(pid_text)) == started


class Reaper:
    """What this process knows about the runs it has in flight: whether it is a subreaper
    yet, the markers of the runs in flight, how deep in `parallel_runs` it is, and the cache
    its owner tokens name. Subreaping and /proc are per process, so swecl keeps one
    (`REAPER`, behind the module's functions); tests may make their own."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subreaper = False
        # the markers of the runs in flight, each with the session its leader leads (once known)
        self._in_flight: dict[str, int | None] = {}
        self._parallel = 0  # > 0 inside parallel_runs()
        self._scope = ""  # the cache this swecl works on (`reap_orphans` sets it), in owner tokens
        # the leaders of their own session this process started and has not reaped yet
        # (`starting`); held while they start, so no zombie is reaped and no run's clean-up
        # looks in between
        self._leaders_lock = threading.Lock()
        self._leaders: set[int] = set()

    @contextmanager
    def starting(self) -> Iterator[Callable[[int], None]]:
        """Around starting a child that leads its own session or group: call what it yields
        with the child's pid, and `reaped(pid)` once the child is waited for. Until then
        `reap_zombies` leaves it to its `Popen`."""
        with self._leaders_lock:
            yield self._leaders.add

    def reaped(self, pid: int) -> None:
        with self._leaders_lock:
            self._leaders.discard(pid)

    def reap_zombies(self) -> list[int]:
        """Wait for every exited child of this process outside its process group but the
        leaders it started (module doc); returns their pids."""
        me, group = os.getpid(), os.getpgrp()
        done: list[int] = []
        with self._leaders_lock:
            for pid in proc_pids(1):
                fields = _stat_fields(pid)  # state, ppid, pgrp, ...
                if (len(fields) > 2 and fields[0] == b"Z" and int(fields[1]) == me and int(fields[2]) != group
                        and pid not in self._leaders):
                    try:
                        if os.waitpid(pid, os.WNOHANG)[0] == pid:
                            done.append(pid)
                    except ChildProcessError:
                        pass
        return done

    def become_subreaper(self) -> None:
        with self._lock:
            if self._subreaper:
                return
            self._subreaper = True
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        except (OSError, AttributeError):  # not Linux: process groups are all there is
            pass

    @contextmanager
    def parallel_runs(self) -> Iterator[None]:
        """Within the block runs may be in flight in several threads (see the module doc)."""
        with self._lock:
            self._parallel += 1
        try:
            yield
        finally:
            with self._lock:
                self._parallel -= 1

    @contextmanager
    def run_marker(self) -> Iterator[str]:
        """A marker for the processes of one run (put it in their environment as `RUN_VAR`),
        in flight until the block ends."""
        marker = uuid.uuid4().hex
        with self._lock:
            self._in_flight[marker] = None
        try:
            yield marker
        finally:
            with self._lock:
                self._in_flight.pop(marker, None)

    def leads(self, marker: str, leader: int) -> None:
        """The run of `marker` leads the session `leader` (its leader's pid): a process of
        that session is the run's, marker or not (see `kill_new_descendants`)."""
        with self._lock:
            if marker in self._in_flight:
                self._in_flight[marker] = leader

    @contextmanager
    def owned_processes(self, env: Mapping[str, str]) -> Iterator[tuple[dict[str, str], Callable[[], None]]]:
        """For one run: the environment its processes get (`OWNER_VAR`: found and ended by
        the next swecl if this one is killed; `RUN_VAR`: spared by other threads'
        clean-ups), and the clean-up that kills what the run left behind (call it when the
        run ends)."""
        with self.run_marker() as marker:
            self.become_subreaper()
            before = descendants()
            yield ({**env, OWNER_VAR: self.owner_token(), RUN_VAR: marker},
                   lambda: self.kill_new_descendants(before, marker))

    def _spared(self, theirs: str | None, session: int, marker: str | None) -> bool:
        with self._lock:
            if theirs is None and any(m != marker and s == session for m, s in self._in_flight.items()):
                return True  # another run's, in the session it leads (module doc)
            return (theirs is not None and theirs in self._in_flight) or (theirs is None and self._parallel > 0)

    def kill_new_descendants(self, before: set[int], marker: str | None = None) -> None:
        """SIGKILL and reap every descendant that appeared since `before` was taken; with
        runs in several threads, only those that carry `marker` (see the module doc)."""
        # Again until a look finds nothing new: a process killed in one pass may have
        # forked a child after its parent's entry was read (a daemon re-forking).
        handled = set(before)
        group = os.getpgrp()
        # No run starts meanwhile: between its fork and its exec a run's leader has neither
        # its marker nor its session known (`starting`), and would be taken for a leftover.
        with self._leaders_lock:
            self._kill_new(handled, group, marker)

    def _kill_new(self, handled: set[int], group: int, marker: str | None) -> None:
        for _ in range(LOOKS):
            found = descendants() - handled
            if not found:
                return
            handled |= found
            for pid in found:
                fields = _stat_fields(pid)  # state, ppid, pgrp, session, ...
                if len(fields) < 4:
                    continue  # gone
                if int(fields[2]) == group:
                    # swecl's own `subprocess.run` (another thread's uv or git, and theirs):
                    # a run leads a session of its own, so nothing it started is in this
                    # group. Killed and waited for here, the Popen that runs it would get
                    # no exit status and report 0 (an environment with no package "built").
                    continue
                theirs = _marker_of(pid)
                if theirs != marker and self._spared(theirs, int(fields[3]), marker):
                    continue
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    continue
                try:
                    os.waitpid(pid, 0)  # ours now (subreaper): leave no zombie
                except ChildProcessError:
                    pass

    def owner_token(self) -> str:
        """This process, in a form no later process can share (pid plus start time), and
        the cache it works on."""
        return f"{os.getpid()}.{_start_time(os.getpid()) or 0}/{self._scope}"

    def reap_orphans(self, cache_dir: str | os.PathLike[str]) -> list[int]:
        """SIGKILL every process started by a swecl on this cache that is gone (and by one
        that named no cache); returns their pids. From now on, this process's children
        carry this cache in their owner token."""
        self._scope = scope = _scope_of(cache_dir)
        killed: list[int] = []
        prefix = OWNER_VAR.encode() + b"="
        mine = self.owner_token()
        for pid in proc_pids():
            if pid == os.getpid():
                continue
            try:
                with open(f"/proc/{pid}/environ", "rb") as fh:
                    environ = fh.read()
            except OSError:
                continue
            for entry in environ.split(b"\0"):
                if entry.startswith(prefix):
                    token = entry[len(prefix):].decode("ascii", "replace")
                    if token != mine and token.partition("/")[2] in ("", scope) and not _owner_alive(token):
                        try:
                            os.kill(pid, signal.SIGKILL)
                            killed.append(pid)
                        except (ProcessLookupError, PermissionError):
                            pass
                    break
        return killed


def wait_for_exit(proc: subprocess.Popen[bytes], timeout: float | None, wake: int | None = None) -> bool:
    """`proc.wait(timeout)`, woken by the exit itself rather than by polling.

    With a timeout, `Popen.wait` polls, sleeping up to 50 ms between looks: a test run or
    an agent step of a quarter second then waits about 25 ms past its end, which is a
    tenth of a task's grading. A pidfd (Linux 5.3+) becomes readable when the process
    exits; where there is none (another OS, an old kernel) this is `proc.wait`.
    Raises `subprocess.TimeoutExpired` as `proc.wait` does. With `wake`, a file
    descriptor another thread makes readable, the wait also ends there, unreaped: returns
    False (True when the process exited). Without a pidfd, `wake` is not heard.
    """
    if (timeout is None and wake is None) or not hasattr(os, "pidfd_open"):
        proc.wait(timeout)
        return True
    try:
        # Not reaped yet (only `proc.wait` reaps it), so the pid cannot name another process.
        fd = os.pidfd_open(proc.pid)
    except OSError:
        proc.wait(timeout)
        return True
    try:
        poller = select.poll()  # not select(): a busy process may hold fds past FD_SETSIZE
        poller.register(fd, select.POLLIN)
        if wake is not None:
            poller.register(wake, select.POLLIN)
        ready = poller.poll(None if timeout is None else max(0.0, timeout) * 1000)
    finally:
        os.close(fd)
    if not ready:
        raise subprocess.TimeoutExpired(proc.args, timeout)
    if wake is not None and all(ready_fd == wake for ready_fd, _ in ready):
        return False
    proc.wait()
    return True


REAPER = Reaper()
become_subreaper = REAPER.become_subreaper
parallel_runs = REAPER.parallel_runs
run_marker = REAPER.run_marker
owned_processes = REAPER.owned_processes
kill_new_descendants = REAPER.kill_new_descendants
owner_token = REAPER.owner_token
reap_orphans = REAPER.reap_orphans
starting_session_leader = REAPER.starting
session_leader_reaped = REAPER.reaped
run_leads = REAPER.leads
reap_zombies = REAPER.reap_zombies
