"""swecl as its users run it: real `swecl` subprocesses, watched from outside, killed whole.

Shared by the test suite and `python -m bench.soak` (which is why it lives here and not
under tests/: the benchmarks import nothing from the tests). Three kinds of help:

- running the CLI of this checkout (`swecl`, `swecl_json`, `spawn`), each with its own
  cache and the checkout on PYTHONPATH;
- reading a results folder's ledger the way an outside observer would (a monitoring
  job, a second terminal): a read-only SQLite connection that never takes a write lock
  (`read_events`, `read_blobs`, `LedgerWatch`);
- the process table (`live_processes`, `descendants`, `kill_all`), the one /proc
  scanner the tests use to prove nothing a run started is left behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from graders.host import proc_pids
from ledger import decode_blob
from ledger.sqlite import Connection, SqliteError, connect

REPO_ROOT = Path(__file__).resolve().parents[1]
SPANS = "swecl-demo_spans_sequence"
INICONF = "swecl-demo_iniconf_sequence"
TEXTKIT = "swecl-demo_textkit_sequence"


# -- running swecl -----------------------------------------------------------------------


def pycache_prefix() -> str:
    """Where the tests' own Python processes keep bytecode: `.dev/pycache` of this checkout
    (ignored by git, beside the tools `./dev` installs), shared by every process of the
    tests (the interpreter writes each file atomically).

    Not under /tmp: the sandbox gives every agent a private, empty /tmp, and a Python
    there (mini-swe-agent, an MCP server) looks for bytecode only in the prefix, so it
    compiled every import at each start (LiteLLM alone: seconds of CPU). Here the sandbox
    shows the prefix read-only, as it shows the rest of the file system."""
    return os.environ.get("PYTHONPYCACHEPREFIX") or str(REPO_ROOT / ".dev" / "pycache")


def swecl_env(cache: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a swecl subprocess: this checkout on PYTHONPATH, its own cache.

    Bytecode goes to a cache outside the checkout (PYTHONPYCACHEPREFIX): the tests start
    swecl hundreds of times, and recompiling every import each time would triple their
    cost where PYTHONDONTWRITEBYTECODE is set. Nothing is written into the project.
    """
    inherited = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SWECL_FAILPOINTS", "SWECL_RESULTS", "SWECL_DEBUG", "PYTHONDONTWRITEBYTECODE")
    }
    return {
        **inherited,
        "PYTHONPYCACHEPREFIX": pycache_prefix(),
        "SWECL_CACHE": str(cache),
        "PYTHONPATH": str(REPO_ROOT),
        **(extra or {}),
    }


def swecl_argv(results: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "commands", "--results", str(results), *args]


def swecl(
    results: Path,
    *args: str,
    cache: Path,
    env: dict[str, str] | None = None,
    timeout: float = 600,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run `swecl --results RESULTS ARGS...` to completion; with `check`, a non-zero exit
    raises AssertionError with the command's output."""
    proc = subprocess.run(
        swecl_argv(results, *args),
        capture_output=True,
        text=True,
        env=swecl_env(cache, env),
        timeout=timeout,
        cwd=REPO_ROOT,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"swecl {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def swecl_json(results: Path, *args: str, cache: Path) -> Any:
    return json.loads(swecl(results, *args, "--json", cache=cache).stdout)


def spawn(
    argv: Sequence[str], *, cache: Path, env: dict[str, str] | None = None, log: Path | None = None
) -> subprocess.Popen[bytes]:
    """Start argv in a new session (its own process group), output to `log`."""
    out = open(log, "ab") if log is not None else subprocess.DEVNULL  # noqa: SIM115 - closed by the child's exit
    try:
        return subprocess.Popen(
            list(argv), cwd=REPO_ROOT, env=swecl_env(cache, env), stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )
    finally:
        if log is not None:
            out.close()  # type: ignore[union-attr]


# -- the process table -------------------------------------------------------------------


@dataclass(frozen=True)
class Process:
    pid: int
    ppid: int
    state: str  # Z: a zombie, already dead
    pgrp: int = 0  # its process group

    def cmdline(self) -> bytes:
        return _read_proc(self.pid, "cmdline")

    def environ(self) -> bytes:
        return _read_proc(self.pid, "environ")


def _read_proc(pid: int, name: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/{name}").read_bytes()
    except OSError:  # gone since the scan, or not ours to read
        return b""


def processes() -> Iterator[Process]:
    """Every process of this machine, from /proc (a snapshot: any may be gone by now)."""
    # proc_pids lists /proc again until nothing is new: a daemon that re-forks to dodge
    # a scan is met in its successor (one listing misses it about one look in fifty)
    for pid in proc_pids():
        fields = _stat_fields(Path(f"/proc/{pid}/stat"))
        if fields:
            yield Process(pid, int(fields[1]), fields[0], int(fields[2]))


def _stat_fields(stat: Path) -> list[str]:
    """The fields of a /proc `stat` file after the command name, from the state on (none
    once the process or thread is gone)."""
    try:
        text = stat.read_bytes().decode("utf-8", "replace")
    except OSError:
        return []
    # the command name is in parentheses and may hold spaces: split after the last ')'
    return text[text.rfind(")") + 2 :].split()


def live_processes(*, cmdline: str | None = None, environ: str | None = None) -> list[int]:
    """Pids of live (not zombie) processes whose command line, or environment, holds the text."""
    found = []
    for proc in processes():
        if proc.state == "Z":
            continue
        if cmdline is not None and cmdline.encode() not in proc.cmdline():
            continue
        if environ is not None and environ.encode() not in proc.environ():
            continue
        found.append(proc.pid)
    return found


def descendants(root: int) -> list[int]:
    """Every live process whose parent chain leads to `root`."""
    parents = {p.pid: p.ppid for p in processes()}
    found: list[int] = []
    frontier = [root]
    while frontier:
        pid = frontier.pop()
        kids = [p for p, pp in parents.items() if pp == pid]
        found.extend(kids)
        frontier.extend(kids)
    return found


def _stop(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGSTOP)
    except ProcessLookupError:
        pass


def _running(pid: int) -> bool:
    """Whether any thread of `pid` is neither stopped nor dead (a multi-threaded process
    stops thread by thread)."""
    return any(fields[0] not in "TtZX" for stat in Path(f"/proc/{pid}/task").glob("*/stat")
               if (fields := _stat_fields(stat)))


def _wait_while(busy: Callable[[], bool], seconds: float, every: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and busy():
        time.sleep(every)


def kill_all(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process, its group and every descendant (even ones in other sessions),
    and return once they are all dead.

    The whole tree is frozen first, top down, with SIGSTOP: the process, then what it has
    started, listed again until no new one shows (a stopped process forks no more). A
    child forked at the last moment (the graders start each test run in a session of
    its own) is found this way while it still hangs off the tree, not after its parent
    died and left it to init. Then everything gets SIGKILL.
    """
    pids: list[int] = []
    frozen: set[int] = set()
    new = [proc.pid]
    while new:
        for pid in new:
            _stop(pid)
        frozen.update(new)
        # a SIGSTOP lands when its process next runs: it may fork once more before
        _wait_while(lambda: any(_running(pid) for pid in frozen), 5, 0.001)
        new = [pid for pid in descendants(proc.pid) if pid not in frozen]
        pids += new
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for pid in (proc.pid, *pids):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()
    # A killed process is torn down on the kernel's time, and holds what it had open until
    # then: a child forked by one of the run's threads and not yet exec'd holds a copy of
    # the run's lock, and the resume a test starts at once was refused as "being run by
    # another process". So: until none of them, nor any of the group, is still alive.
    _wait_while(lambda: any(p.state != "Z" and (p.pid in pids or p.pgrp == proc.pid) for p in processes()), 30, 0.005)


# -- the ledger, read from outside -------------------------------------------------------


def _read_only(results: Path) -> Connection:
    return connect(results / "ledger.db", readonly=True)


def shared_dir() -> Path | None:
    """`../shared` beside the checkout (CI always has it), or $SWECL_SHARED."""
    explicit = os.environ.get("SWECL_SHARED")
    candidate = Path(explicit) if explicit else REPO_ROOT.parent / "shared"
    return candidate if (candidate / "docs" / "DESIGN.md").is_file() else None


def event_time(text: str) -> float:
    """An event's recorded `time` (ISO 8601, UTC) as seconds since the epoch."""
    return datetime.fromisoformat(text).timestamp()


def ledger_rows(results: Path, types: Sequence[str]) -> list[tuple[str, str, float, dict[str, Any]]]:
    """(stream, type, time in seconds, payload) of the events of `types`, in order, read-only."""
    conn = _read_only(results)
    try:
        rows = conn.execute(f"SELECT stream, type, time, payload FROM events WHERE type IN "
                            f"({', '.join('?' * len(types))}) ORDER BY seq", tuple(types)).fetchall()
    finally:
        conn.close()
    return [(stream, type_, event_time(at), json.loads(payload)) for stream, type_, at, payload in rows]


def read_events(results: Path, *, prefix: str | None = None) -> list[dict[str, Any]]:
    """Every event (seq, event_id, stream, version, type, payload) straight from SQLite,
    read-only; with `prefix`, only that stream and the streams under it."""
    conn = _read_only(results)
    try:
        rows = conn.execute(
            "SELECT seq, event_id, stream, stream_version, type, payload FROM events ORDER BY seq"
        ).fetchall()
    finally:
        conn.close()
    out = []
    for seq, event_id, stream, version, type_, payload in rows:
        if prefix is not None and not (stream == prefix or stream.startswith(prefix + "/")):
            continue
        out.append(
            {"seq": seq, "event_id": event_id, "stream": stream, "version": version, "type": type_,
             "payload": json.loads(payload)}
        )
    return out


def read_blobs(results: Path) -> dict[str, bytes]:
    """Every blob of the ledger by its digest, decompressed."""
    conn = _read_only(results)
    try:
        rows = conn.execute("SELECT sha256, encoding, data FROM blobs").fetchall()
    finally:
        conn.close()
    return {sha: decode_blob(enc, data) for sha, enc, data in rows}


class LedgerWatch:
    """A read-only look at `results/ledger.db`: new events of one run, as they land."""

    def __init__(self, ledger: Path, version: str) -> None:
        self.path = ledger
        self.prefix = f"run/{version}"
        self._conn: Connection | None = None

    def _connect(self) -> Connection | None:
        if self._conn is None:
            if not self.path.exists():
                return None
            try:
                conn = connect(self.path, readonly=True)
                conn.set_busy_timeout(2000)
                if not conn.table_exists("main", "events"):
                    conn.close()
                    return None
            except SqliteError:
                return None
            self._conn = conn
        return self._conn

    def head(self) -> int:
        conn = self._connect()
        if conn is None:
            return 0
        try:
            return int(conn.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0])
        except SqliteError:
            return 0

    def since(self, after: int) -> list[tuple[int, str, str]]:
        """(seq, stream, type) of this run's events with seq > after."""
        conn = self._connect()
        if conn is None:
            return []
        try:
            return [
                (seq, stream, type_)
                for seq, stream, type_ in conn.execute(
                    "SELECT seq, stream, type FROM events WHERE seq > ? AND (stream = ? OR stream LIKE ?) ORDER BY seq",
                    (after, self.prefix, self.prefix + "/%"),
                )
            ]
        except SqliteError:
            return []

    def wait_for(self, type_: str, proc: subprocess.Popen[bytes], timeout: float = 120) -> None:
        """Until the run has an event of `type_`; fails if the process ends first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(t == type_ for _, _, t in self.since(0)):
                return
            if proc.poll() is not None:
                raise AssertionError(f"the run ended (exit {proc.returncode}) before any {type_}")
            time.sleep(0.02)
        raise AssertionError(f"no {type_} within {timeout}s")

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def run_exists(results: Path, version: str) -> bool:
    watch = LedgerWatch(results / "ledger.db", version)
    try:
        return any(t == "run.started" for _, stream, t in watch.since(0) if stream == watch.prefix)
    finally:
        watch.close()
