"""The sandbox every test run and every agent run goes into: bubblewrap on Linux.

A Docker-based harness gets isolation from a fresh container per task; a host grader
has to make it itself. Inside the sandbox (`bwrap`):

- the root is empty and read-only: only the system's read-only directories, the
  program's own install and the paths the caller names come back (`graders.host._visible`
  says which and why; deny by default, so no clone, mirror, dataset or results file of
  the host is there to find, wherever it lies);
- what the harness keeps to itself (the repository and environment cache, the results,
  the dataset files) stays hidden even where a shown folder holds it (`hidden`);
- only the paths a run needs are writable: the worktree, the environment's channels
  (tests) or the agent's checkout, scratch and config dirs;
- `/tmp` and `$HOME` are private and empty (tmpfs; `$HOME` points into the private
  `/tmp`); `$TMPDIR` is a private tree apart from the worktree's top directory, as in
  SWE-bench's images (`temp_dir_apart_from`);
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

import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ledger.errors import SandboxUnavailable, SweclError

from ._visible import SANDBOX_HOME, Mount, runtime_mounts, shown_by, system_mounts, under

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

INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf install bubblewrap`; "
    "Arch: `pacman -S bubblewrap`), or run unconfined with --sandbox none"
)


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
    """How a process of this swecl invocation is confined. `hidden`: what it must not see
    even inside a folder it is shown; `exposed`: what the user asked an agent to see
    besides (`--expose`), read-only."""

    mode: SandboxMode = "bwrap"
    bwrap: str | None = None
    hidden: tuple[str, ...] = field(default_factory=tuple)
    exposed: tuple[str, ...] = field(default_factory=tuple)

    @property
    def confined(self) -> bool:
        return self.mode != "none"

    def hiding(self, *paths: str | os.PathLike[str] | None) -> Sandbox:
        """The same sandbox, hiding these paths too."""
        return Sandbox(self.mode, self.bwrap, _norm([*self.hidden, *paths]), self.exposed)

    def plan(
        self,
        argv: Sequence[str],
        *,
        cwd: str | os.PathLike[str],
        env: Mapping[str, str],
        writable: Iterable[str | os.PathLike[str]] = (),
        readable: Iterable[str | os.PathLike[str]] = (),
        programs: Iterable[str] = (),
        exposed: bool = False,
        home: Mapping[str, str] | None = None,
    ) -> list[Mount]:
        """Every path the process sees, in the order the sandbox makes them: the system,
        the install of `argv[0]` and of each of `programs` (found on `env`'s PATH), the
        `exposed` paths when asked for, `readable` read-only, `cwd` and `writable`
        read-write, what is hidden inside any of them, and `home`'s files ({path under the
        home: file}) read-only in the home (graders._sandbox_home), whose folders stay
        writable."""
        hidden = self.hidden
        mounts = system_mounts()
        path_env = env.get("PATH")
        rw_paths = _norm([cwd, *writable])
        shown_rw = [Mount(p, "rw", "named by the run") for p in sorted(rw_paths, key=len)]
        runtime: list[Mount] = []
        for program in [argv[0], *programs] if argv else programs:
            for m in runtime_mounts(program, path_env):
                # an install inside a hidden place stays hidden (the preflight says so)
                if not any(under(m.path, h) or (m.source and under(m.source, h)) for h in hidden):
                    runtime.append(m)
        shown_ro = [*(m for m in runtime if m.mode == "ro"),
                    # an exposed path inside a hidden one is never shown (`--expose` of the cache's mirrors)
                    *(Mount(p, "ro", "exposed (--expose)") for p in (self.exposed if exposed else ())
                      if not any(under(p, h) for h in hidden)),
                    *(Mount(p, "ro", "named by the run") for p in sorted(_norm(readable), key=len)
                      if p not in rw_paths)]  # a path named both ways is writable, once
        seen = {m.path for m in mounts}
        ro_first = [m for m in shown_ro if not any(under(m.path, h) for h in hidden)]
        ro_after = [m for m in shown_ro if any(under(m.path, h) for h in hidden)]
        for m in ro_first:
            if m.path not in seen and os.path.exists(m.path):
                seen.add(m.path)
                mounts.append(m)
        # Hidden where a shown folder would bring it along; shortest first (one inside another).
        shown = [m.path for m in mounts if m.mode in ("ro", "rw")]
        for path in sorted(hidden, key=len):
            if os.path.lexists(path) and any(under(path, s) and path != s for s in shown):
                mounts.append(Mount(path, "empty", "hidden"))
        for m in [*ro_after, *shown_rw]:
            if os.path.exists(m.path) and (m.path not in seen or m.mode == "rw"):
                seen.add(m.path)
                mounts.append(m)
        bound = [m.path for m in mounts if m.mode in ("ro", "rw")]
        for m in runtime:
            if m.mode == "link" and m.path not in seen and not any(under(m.path, b) for b in bound):
                seen.add(m.path)
                mounts.append(m)
        for rel, source in sorted((home or {}).items()):
            mounts.append(Mount(f"{SANDBOX_HOME}/{rel}", "ro", "in the home: made for the environment", source))
        return mounts

    def wrap(
        self,
        argv: Sequence[str],
        *,
        cwd: str | os.PathLike[str],
        env: Mapping[str, str],
        writable: Iterable[str | os.PathLike[str]] = (),
        readable: Iterable[str | os.PathLike[str]] = (),
        network: bool = False,
        programs: Iterable[str] = (),
        exposed: bool = False,
        home: Mapping[str, str] | None = None,
    ) -> tuple[list[str], dict[str, str]]:
        """The command line and environment that run `argv` inside the sandbox (`plan`
        says what it sees). Unconfined: `argv` as is (and its own home)."""
        env_out = dict(env)
        if not self.confined:
            return list(argv), env_out
        assert self.bwrap is not None
        out = [self.bwrap, "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
               "--die-with-parent", "--new-session"]
        if not network:
            out.append("--unshare-net")
        plan = self.plan(argv, cwd=cwd, env=env, writable=writable, readable=readable, programs=programs,
                         exposed=exposed, home=home)
        for m in plan:
            out += _bwrap_args(m)
        # A bytecode cache the sandbox does not show would make Python compile every import
        # at every start (it looks nowhere else); without it, the `__pycache__` beside the
        # sources (a venv's, an install's) serves. Nor is another folder's bytecode shown:
        # it may hold a clone's compiled modules.
        prefix = env_out.get("PYTHONPYCACHEPREFIX")
        if prefix and not shown_by(os.path.realpath(prefix), plan):
            del env_out["PYTHONPYCACHEPREFIX"]
        out += ["--dir", SANDBOX_HOME, "--remount-ro", "/", "--chdir", os.path.abspath(os.fspath(cwd)), "--"]
        env_out["HOME"] = SANDBOX_HOME
        env_out["TMPDIR"] = temp_dir_apart_from(cwd)
        return out + list(argv), env_out


def _bwrap_args(m: Mount) -> list[str]:
    if m.mode == "ro":
        return ["--ro-bind", m.source or m.path, m.path]
    if m.mode == "rw":
        return ["--bind", m.path, m.path]
    if m.mode == "link":
        assert m.source is not None
        return ["--symlink", m.source, m.path]
    if m.mode == "devices":
        return ["--dev", m.path]
    if m.mode == "procfs":
        return ["--proc", m.path]
    if os.path.isdir(m.path):  # empty
        return ["--tmpfs", m.path]
    return ["--ro-bind", "/dev/null", m.path]


def temp_dir_apart_from(cwd: str | os.PathLike[str]) -> str:
    """The private temp tree whose top directory differs from the worktree's.

    SWE-bench's images run tests in /testbed with temp files in /tmp, and tests depend on
    it: docutils' `relative_path` returns an absolute path only when two paths differ in
    their top directory, so with a worktree under /tmp a docname comes out as
    `../../…/baz/baz` and sphinx-11510's gold patch fails its own test.
    """
    top = os.path.abspath(os.fspath(cwd)).split(os.sep)[:2]
    return "/var/tmp" if top == "/tmp".split(os.sep) else "/tmp"


def sandbox_for(mode: str | None = None, *, hide: Iterable[str | os.PathLike[str] | None] = (),
                expose: Iterable[str | os.PathLike[str] | None] = ()) -> Sandbox:
    """The sandbox for `mode` (default: $SWECL_SANDBOX, else bwrap); refuses, in one line,
    a confined mode this machine cannot provide. `expose`: what agents see besides."""
    chosen = (mode or os.environ.get("SWECL_SANDBOX") or "bwrap").strip().lower()
    if chosen not in SANDBOX_MODES:
        raise SweclError(f"--sandbox {chosen!r} is not one of {', '.join(SANDBOX_MODES)}")
    if chosen == "none":
        return Sandbox("none", None, _norm(hide), _norm(expose))
    bwrap = find_bwrap()
    if bwrap is None:
        raise SandboxUnavailable(f"the sandbox needs bubblewrap (`bwrap`), which is not on PATH: {INSTALL_HINT}")
    problem = _probe(bwrap)
    if problem is not None:
        raise SandboxUnavailable(
            f"bubblewrap cannot create its namespaces here ({problem}): allow unprivileged user namespaces, "
            "or run unconfined with --sandbox none"
        )
    return Sandbox("bwrap", bwrap, _norm(hide), _norm(expose))
