"""What an agent's process may see: its environment, its mounts, and the recall bridge.

An agent is untrusted code with a shell. Inside the sandbox (`graders.host.Sandbox`) it sees
its checkout and scratch space read-write, and read-only only the system's directories
and its own program's install (`graders.host._visible`): nothing else of the machine, and
never what swecl hides even inside a shown folder: the repository cache (the mirror
holds the task's own fix), the results (the ledger), the dataset files (grading rows
hold the answers) and the user's `--repo-source` clones.

The recall MCP server reads the ledger and appends `memory.recalled` events, so it cannot
run in there. It runs outside, as swecl's own child: the agent's MCP client starts a
20-line stdio relay (standard library only) that connects to a Unix socket in the
agent's scratch dir, and `RecallBridge` connects each connection to a fresh server
process. The agent's MCP configuration names the relay and the socket, nothing else.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType

from graders.host import PROCESS_VARS

__all__ = ["RecallBridge", "agent_environment", "checkout_object_stores"]

_RELAY = r'''
import os, socket, sys, threading
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
def up():
    while True:
        data = os.read(0, 65536)
        if not data:
            s.shutdown(socket.SHUT_WR)
            return
        s.sendall(data)
threading.Thread(target=up, daemon=True).start()
while True:
    data = s.recv(65536)
    if not data:
        break
    view = memoryview(data)
    while view:
        view = view[os.write(1, view):]
'''


def agent_environment(environ: Mapping[str, str], hidden: Iterable[str]) -> dict[str, str]:
    """`environ` without swecl's own variables and without any value that names a hidden path.

    `SWECL_CACHE` and `SWECL_RESULTS` say where the mirror and the ledger are; a value
    such as `PYTHONPATH=/cache/...` would too. The agent gets neither, sandbox or not.
    """
    roots = [h.rstrip("/") for h in hidden if h and h != "/"]
    out: dict[str, str] = {}
    for key, value in environ.items():
        if key.startswith("SWECL_") and key not in PROCESS_VARS:
            continue
        if any(root and root in value for root in roots):
            continue
        out[key] = value
    return out


def checkout_object_stores(checkout: Path) -> list[Path]:
    """The object stores a shared clone borrows from (alternates, followed transitively).

    The agent's checkout borrows the objects of a view that holds only the base commit's
    history; in the sandbox those stores come back read-only, and nothing else of the cache.
    """
    found: list[Path] = []
    queue = [checkout / ".git" / "objects"]
    while queue:
        objects = queue.pop()
        alternates = objects / "info" / "alternates"
        try:
            lines = alternates.read_text(encoding="utf-8").splitlines()
        except OSError:
            continue
        for line in lines:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            path = Path(line) if os.path.isabs(line) else (objects / line).resolve()
            if path not in found:
                found.append(path)
                queue.append(path)
    return found


def unix_listener(path: Path, backlog: int) -> socket.socket:
    """A Unix socket listening at `path` (a stale one from a killed swecl replaced): the
    door a sandboxed relay reaches swecl's own side through."""
    path.unlink(missing_ok=True)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.listen(backlog)
    return sock


def stdlib_script_argv(path: Path, *args: str) -> list[str]:
    """How a standard-library-only script put in a door folder (the recall relay, the egress
    launcher, a recall handle's own MCP proxy) is run inside the sandbox: by the machine's
    real interpreter, isolated (`-I -S`). Not a venv's: a venv inside a hidden directory would not
    start in the sandbox, and the script needs nothing of one."""
    return [os.path.realpath(sys.executable), "-I", "-S", str(path), *args]


class RecallBridge:
    """A Unix socket in `directory`; each connection is served by a new `server_argv` process.

    `relay_argv` is what the agent's MCP client runs instead of the server.
    """

    def __init__(self, server_argv: Sequence[str], server_env: Mapping[str, str], directory: Path) -> None:
        self.server_argv = list(server_argv)
        self.server_env = dict(server_env)
        self.directory = directory
        self.socket_path = directory / "recall.sock"
        self.relay_path = directory / "recall_relay.py"
        self._sock: socket.socket | None = None
        self._threads: list[threading.Thread] = []
        self._procs: list[subprocess.Popen[bytes]] = []
        self._lock = threading.Lock()
        self._closed = False

    @property
    def relay_argv(self) -> list[str]:
        return stdlib_script_argv(self.relay_path, str(self.socket_path))

    def __enter__(self) -> RecallBridge:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.relay_path.write_text(_RELAY, encoding="utf-8")
        self._sock = unix_listener(self.socket_path, 8)
        accept = threading.Thread(target=self._accept, name="recall-bridge", daemon=True)
        accept.start()
        self._threads.append(accept)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            procs = list(self._procs)
        if self._sock is not None:
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._sock.close()
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        for thread in self._threads:
            thread.join(timeout=2)
        self.socket_path.unlink(missing_ok=True)

    def _accept(self) -> None:
        assert self._sock is not None
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with self._lock:
                if self._closed:
                    conn.close()
                    return
                try:
                    proc = subprocess.Popen(
                        self.server_argv, env=self.server_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                        stderr=subprocess.DEVNULL,
                    )
                except OSError:
                    conn.close()
                    continue
                self._procs.append(proc)
            for target in (self._down, self._up):
                t = threading.Thread(target=target, args=(conn, proc), daemon=True)
                t.start()
                self._threads.append(t)

    @staticmethod
    def _up(conn: socket.socket, proc: subprocess.Popen[bytes]) -> None:
        """relay -> server's stdin."""
        assert proc.stdin is not None
        try:
            while True:
                data = conn.recv(65536)
                if not data:
                    break
                proc.stdin.write(data)
                proc.stdin.flush()
        except OSError:
            pass
        finally:
            try:
                proc.stdin.close()
            except OSError:
                pass

    @staticmethod
    def _down(conn: socket.socket, proc: subprocess.Popen[bytes]) -> None:
        """server's stdout -> relay."""
        assert proc.stdout is not None
        try:
            while True:
                data = os.read(proc.stdout.fileno(), 65536)
                if not data:
                    break
                conn.sendall(data)
        except OSError:
            pass
        finally:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()
