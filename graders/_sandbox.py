"""The sandbox every test run and every agent run goes into: bubblewrap on Linux.

A Docker-based harness gets isolation from a fresh container per task; a host grader
has to make it itself. Inside the sandbox (`bwrap`):

- the whole file system is read-only (`--ro-bind / /`), so code under test cannot plant
  a `.pth` in the shared environment, delete one of its packages, or write to `$HOME`;
- what the harness keeps to itself is hidden behind an empty tmpfs: the repository and
  environment cache (the mirror holds every later commit, the fix among them), the
  results, the dataset files (grading rows hold the answers);
- only the paths a run needs come back on top: the worktree read-write, the environment
  (tests) or the agent's checkout, scratch and config dirs read-write;
- `/tmp` and `$HOME` are private and empty (tmpfs; `$HOME` points into the private
  `/tmp`); `$TMPDIR` is a private tree apart from the worktree's top directory, as in
  SWE-bench's images (`temp_dir_apart_from`). The real home directory stays readable,
  read-only: interpreters, the agent's CLI and the checkout of swecl itself often live
  there;
- its own PID namespace (`/proc` shows only its own processes, not the parent's command
  line) that dies with the process that started it (`--die-with-parent`): no daemon
  outlives a grade or a SIGKILLed swecl;
- no network (`--unshare-net`): tests have none; an agent's one way out is its egress
  proxy, outside (`agents._egress`: the model API and --allow-host only);
- a new session (`--new-session`): no terminal to inject keystrokes into.

`--sandbox none` runs unconfined (and the run records it); then the grader checks the
environment's integrity before each grade instead.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ledger.errors import SweclError

__all__ = [
    "SANDBOX_MODES",
    "Sandbox",
    "SandboxMode",
    "SandboxUnavailable",
    "find_bwrap",
    "sandbox_for",
]

SandboxMode = Literal["bwrap", "none"]
SANDBOX_MODES: tuple[str, ...] = ("bwrap", "none")
# Where a sandboxed process finds its private home (inside its private /tmp).
SANDBOX_HOME = "/tmp/home"

INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf install bubblewrap`; "
    "Arch: `pacman -S bubblewrap`), or run unconfined with --sandbox none"
)


class SandboxUnavailable(SweclError):
    """The sandbox was asked for and cannot be had on this machine."""


def find_bwrap(environ: Mapping[str, str] | None = None) -> str | None:
    """$SWECL_BWRAP, else `bwrap` on PATH."""
    env = os.environ if environ is None else environ
    explicit = env.get("SWECL_BWRAP")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    return shutil.which("bwrap")


_probed: dict[str, str | None] = {}


def _probe(bwrap: str) -> str | None:
    """None when bwrap can make the namespaces we ask for here, else why not (once per binary)."""
    if bwrap not in _probed:
        try:
            done = subprocess.run(
                [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid",
                 "--unshare-net", "--die-with-parent", "--new-session", "true"],
                capture_output=True, stdin=subprocess.DEVNULL, timeout=30,
            )
            err = done.stderr.decode("utf-8", "replace").strip().splitlines()
            _probed[bwrap] = None if done.returncode == 0 else (err[-1] if err else f"exit {done.returncode}")
        except (OSError, subprocess.TimeoutExpired) as exc:
            _probed[bwrap] = str(exc)
    return _probed[bwrap]


def _norm(paths: Iterable[str | os.PathLike[str] | None]) -> tuple[str, ...]:
    out: list[str] = []
    for p in paths:
        if p is None:
            continue
        text = os.path.abspath(os.fspath(p))
        if text != "/" and text not in out:
            out.append(text)
    return tuple(out)


@dataclass(frozen=True)
class Sandbox:
    """How a process of this swecl invocation is confined. `hidden`: what it must not see."""

    mode: SandboxMode = "bwrap"
    bwrap: str | None = None
    hidden: tuple[str, ...] = field(default_factory=tuple)

    @property
    def confined(self) -> bool:
        return self.mode != "none"

    def hiding(self, *paths: str | os.PathLike[str] | None) -> Sandbox:
        """The same sandbox, hiding these paths too."""
        return Sandbox(self.mode, self.bwrap, _norm([*self.hidden, *paths]))

    def wrap(
        self,
        argv: Sequence[str],
        *,
        cwd: str | os.PathLike[str],
        env: Mapping[str, str],
        writable: Iterable[str | os.PathLike[str]] = (),
        readable: Iterable[str | os.PathLike[str]] = (),
        network: bool = False,
    ) -> tuple[list[str], dict[str, str]]:
        """The command line and environment that run `argv` inside the sandbox.

        `readable` paths come back read-only and `cwd` and `writable` ones read-write on top
        of what is hidden (a worktree inside the hidden cache, say). Unconfined: `argv` as is.
        """
        env_out = dict(env)
        if not self.confined:
            return list(argv), env_out
        assert self.bwrap is not None
        hidden = self.hidden
        out = [
            self.bwrap,
            "--ro-bind", "/", "/",
            "--dev", "/dev",
            "--proc", "/proc",
            "--tmpfs", "/tmp",
            "--tmpfs", "/var/tmp",
            "--tmpfs", "/dev/shm",
            "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--die-with-parent", "--new-session",
        ]
        if not network:
            out.append("--unshare-net")
        # swecl's own files (its checkout, its venv, the interpreter) come back first when
        # they live in a private tree (a clone in /tmp): the sandboxed process may be one of
        # them. Before the hidden paths, so results kept inside such a checkout stay hidden.
        for path in _own_paths():
            out += ["--ro-bind", path, path]
        # Shortest first: a hidden path inside another hidden one needs its parent mounted.
        for path in sorted(hidden, key=len):
            if os.path.isdir(path):
                out += ["--tmpfs", path]
            elif os.path.exists(path):
                out += ["--ro-bind", "/dev/null", path]
        for path in sorted(_norm(readable), key=len):
            if os.path.exists(path):
                out += ["--ro-bind", path, path]
        for path in sorted(_norm([cwd, *writable]), key=len):
            if os.path.exists(path):
                out += ["--bind", path, path]
        out += ["--dir", SANDBOX_HOME, "--chdir", os.path.abspath(os.fspath(cwd)), "--"]
        env_out["HOME"] = SANDBOX_HOME
        env_out["TMPDIR"] = temp_dir_apart_from(cwd)
        return out + list(argv), env_out


def temp_dir_apart_from(cwd: str | os.PathLike[str]) -> str:
    """The private temp tree whose top directory differs from the worktree's.

    SWE-bench's images run tests in /testbed with temp files in /tmp, and tests depend on
    it: docutils' `relative_path` returns an absolute path only when two paths differ in
    their top directory, so with a worktree under /tmp a docname comes out as
    `../../…/baz/baz` and sphinx-11510's gold patch fails its own test.
    """
    top = os.path.abspath(os.fspath(cwd)).split(os.sep)[:2]
    return "/var/tmp" if top == "/tmp".split(os.sep) else "/tmp"


_PRIVATE_TREES = ("/tmp", "/var/tmp", "/dev/shm")


@functools.cache
def _own_paths() -> tuple[str, ...]:
    """The roots swecl runs from that the sandbox's private trees would otherwise hide."""
    roots = [Path(__file__).resolve().parents[1], sys.prefix, sys.base_prefix, Path(os.path.realpath(sys.executable)).parent]
    private = [t + "/" for t in _PRIVATE_TREES]
    found = [p for p in _norm(os.path.realpath(r) for r in roots) if (p + "/").startswith(tuple(private))]
    # a root inside another is covered by it
    return tuple(p for p in sorted(found, key=len) if not any(p != q and (p + "/").startswith(q + "/") for q in found))


def sandbox_for(mode: str | None = None, *, hide: Iterable[str | os.PathLike[str] | None] = ()) -> Sandbox:
    """The sandbox for `mode` (default: $SWECL_SANDBOX, else bwrap); refuses, in one line,
    a confined mode this machine cannot provide."""
    chosen = (mode or os.environ.get("SWECL_SANDBOX") or "bwrap").strip().lower()
    if chosen not in SANDBOX_MODES:
        raise SweclError(f"--sandbox {chosen!r} is not one of {', '.join(SANDBOX_MODES)}")
    if chosen == "none":
        return Sandbox("none", None, _norm(hide))
    bwrap = find_bwrap()
    if bwrap is None:
        raise SandboxUnavailable(f"the sandbox needs bubblewrap (`bwrap`), which is not on PATH: {INSTALL_HINT}")
    problem = _probe(bwrap)
    if problem is not None:
        raise SandboxUnavailable(
            f"bubblewrap cannot create its namespaces here ({problem}): allow unprivileged user namespaces, "
            "or run unconfined with --sandbox none"
        )
    return Sandbox("bwrap", bwrap, _norm(hide))
