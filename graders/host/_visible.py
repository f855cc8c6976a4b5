"""What a sandboxed process sees: the system's read-only directories, the program's own
install, and the paths its caller names. Nothing else of the host.

A Docker harness shows an agent one repository at its base commit and nothing else; a
host harness that shows the rest of the file system read-only shows the user's own
clones (their `.git` holds every later commit, the fix among them), mirrors, datasets and
other runs' predictions. So the sandbox's root is empty (bubblewrap's own tmpfs, then
read-only) and only these come back:

- the system: `/usr` (less the source trees `/usr/src` and `/usr/local/src`), the
  merged-usr links or directories `/bin`, `/sbin`, `/lib*`, `/sys`, and `/etc` less what
  names the host's users or holds a secret (`passwd` and `group` keep the system's
  accounts and the current one, whose home is the sandbox's private one; the shadow
  files, sudoers, ssh's host keys and ssl's private keys are gone);
- devices (`--dev`), `/proc` of its own PID namespace, private empty `/tmp`, `/var/tmp`,
  `/dev/shm`;
- each program it starts (`runtime_mounts`): found by following the executable and its
  script's interpreter, not by showing their parent folders whole: a Python venv and its
  base interpreter's install, an npm package and the packages it depends on, a native
  binary itself, and every symbolic link met on the way;
- what the caller names: read-only (a test environment, the checkout's object stores, a
  path given with `--expose`), read-write (the worktree, scratch and config folders).

`Mount` is one line of that plan; the sandbox turns the plan into bubblewrap's arguments
(`graders.host._sandbox`) and the run records it (`run.started`'s `visible`), so what a
process could see is written down, not inferred.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = ["Mount", "SANDBOX_HOME", "SYSTEM_DIRS", "as_records", "plan_lines", "runtime_mounts", "shown_by",
           "system_mounts", "tests_view", "under"]

# Where a sandboxed process finds its private home (inside its private /tmp).
SANDBOX_HOME = "/tmp/home"

MountMode = Literal["ro", "rw", "link", "empty", "devices", "procfs"]

# The system's read-only directories; a merged-usr system has links where others have
# directories, and the sandbox copies whichever it finds.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/sys")
# Inside them, what a process needs none of and a user may keep a clone in.
_SOURCE_TREES = ("/usr/src", "/usr/local/src")
# /etc's files and folders that name the host's users beyond the system accounts, or hold secrets.
_ETC_SECRETS = ("shadow", "shadow-", "gshadow", "gshadow-", "passwd-", "group-", "subuid", "subuid-", "subgid",
                "subgid-", "sudoers", "sudoers.d", "ssh", "ssl/private", "security/opasswd")
_PRIVATE_TREES = ("/tmp", "/var/tmp", "/dev/shm")
# An npm install whose dependencies sit beside it (hoisted) shows that node_modules whole
# once more than this many of them would each need a mount of their own: bubblewrap pays
# about 1.4 ms a mount at every start, and the folder holds that one install's packages.
_HOISTED_MOUNTS = 12
_MAX_HOPS = 8  # interpreters of interpreters followed (a script run by a venv's python...)
_HEAD_BYTES = 256


@dataclass(frozen=True)
class Mount:
    """One path as the sandbox shows it. `source`: a link's target, else None."""

    path: str
    mode: MountMode
    what: str
    source: str | None = None

    def record(self) -> dict[str, str]:
        """As `run.started` records it: a link's target, never a made file's own place
        (the filtered /etc/passwd lives in a temporary folder of this process)."""
        out = {"path": self.path, "mode": self.mode, "what": self.what}
        if self.mode == "link" and self.source is not None:
            out["target"] = self.source
        return out


def as_records(mounts: Iterable[Mount]) -> list[dict[str, str]]:
    return [m.record() for m in mounts]


def under(path: str, root: str) -> bool:
    root = root.rstrip("/") or "/"
    return root == "/" or path == root or path.startswith(root + "/")


def system_mounts() -> list[Mount]:
    """The system's part of every sandbox, in the order bubblewrap must make it (a fresh
    list: the caller adds to it)."""
    return list(_system_mounts())


@functools.cache
def _system_mounts() -> tuple[Mount, ...]:
    """Looked up once per process: every sandbox start and every grade's log reads it, and
    the host's system directories do not change under a run."""
    out: list[Mount] = []
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            out.append(Mount(path, "link", "system", os.readlink(path)))
        elif os.path.isdir(path):
            out.append(Mount(path, "ro", "system"))
    out += [Mount("/dev", "devices", "a minimal /dev"), Mount("/proc", "procfs", "its own processes")]
    out += [Mount(t, "empty", "private") for t in _PRIVATE_TREES]
    for path in _SOURCE_TREES:
        if os.path.isdir(path) and not os.path.islink(path):
            out.append(Mount(path, "empty", "hidden: source trees"))
    for name in _ETC_SECRETS:
        path = f"/etc/{name}"
        if os.path.islink(path) or not os.path.exists(path):
            continue
        out.append(Mount(path, "empty", "hidden: secrets and users"))
    for name, made in _accounts().items():
        out.append(Mount(f"/etc/{name}", "ro", "system accounts only", made))
    return tuple(out)


@functools.cache
def _accounts() -> dict[str, str]:
    """`passwd` and `group` as the sandbox shows them (name -> the file made for it): the
    system's accounts (ids under 1000, and nobody) and the current user's, whose home is the
    sandbox's; no other user and no other home. Empty when /etc has none to filter."""
    uid, gid = os.getuid(), os.getgid()
    kept: dict[str, str] = {}

    def keep(ident: str) -> bool:
        return ident.isdigit() and (int(ident) < 1000 or int(ident) == 65534)

    for name, is_user in (("passwd", True), ("group", False)):
        try:
            lines = Path("/etc", name).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        out = []
        for line in lines:
            fields = line.split(":")
            if len(fields) < (7 if is_user else 4):
                continue
            own = fields[2] == str(uid if is_user else gid)
            if not (own or keep(fields[2])):
                continue
            if is_user and own:
                fields[5] = SANDBOX_HOME
            if not is_user:
                fields[3] = ""  # member lists name users
            out.append(":".join(fields))
        kept[name] = "\n".join(out) + "\n"
    if not kept:
        return {}
    try:
        folder = tempfile.mkdtemp(prefix="swecl-etc-")
    except OSError:
        return {}
    atexit.register(shutil.rmtree, folder, True)
    made = {}
    for name, text in kept.items():
        path = os.path.join(folder, name)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(path, 0o644)
        made[name] = path
    os.chmod(folder, 0o755)
    return made


def shown_by(path: str, mounts: Sequence[Mount]) -> bool:
    """Whether a sandbox made of `mounts` shows the real path `path`: the innermost mount
    that holds it is a shown folder, not an empty one."""
    holders = [m for m in mounts if m.mode != "link" and under(path, m.path)]
    if not holders:
        return False
    return max(holders, key=lambda m: len(m.path)).mode in ("ro", "rw")


def system_shows(path: str) -> bool:
    """Whether the system part of the sandbox shows `path` (a real path)."""
    if any(under(path, t) for t in (*_PRIVATE_TREES, *_SOURCE_TREES, "/dev", "/proc")):
        return False
    return any(under(path, d) for d in SYSTEM_DIRS if os.path.lexists(d))


# What every grade adds to the system part, besides the interpreter's install: its paths
# differ per task and per environment; each grade's log lists them exactly.
_PER_GRADE = (
    ("{worktree}", "rw", "the task's worktree at its base commit, patched"),
    ("{environment}", "ro", "the task's environment (venv)"),
    ("{interpreter}", "ro", "the environment's base interpreter: its install"),
    ("{results channel}", "rw", "swecl's pytest plugin and its report"),
    ("{bytecode cache}", "ro", "the environment's own and the grade's private bytecode"),
)


def tests_view() -> list[dict[str, str]]:
    """What a test process sees, as `run.started` records it: the system part, then each
    grade's own paths by what they are."""
    return [*as_records(_system_mounts()), *({"path": p, "mode": m, "what": w} for p, m, w in _PER_GRADE)]


def plan_lines(mounts: Iterable[Mount]) -> str:
    """A plan on one line, for a grade's log: what is shown beyond the system part."""
    system = {m.path for m in _system_mounts()}
    shown = [f"{m.path} ({m.mode}{' -> ' + m.source if m.mode == 'link' and m.source else ''})"
             for m in mounts if m.path not in system]
    return "the system's directories, " + ", ".join(shown)


# -- a program's own install ---------------------------------------------------------------


def runtime_mounts(program: str, path_env: str | None) -> list[Mount]:
    """The mounts `program` needs to start: itself and the links to it, the venv it lives
    in, its script's interpreter (followed the same way), a Python's install, an npm
    package's dependencies. What the system part shows already is left out."""
    mounts: list[Mount] = []
    _follow(program, path_env, mounts, 0, "program")
    return _dedup(mounts)


def _follow(program: str, path_env: str | None, mounts: list[Mount], hops: int, what: str) -> None:
    found = program if "/" in program else shutil.which(program, path=path_env)
    if found is None or hops > _MAX_HOPS:
        return
    found = os.path.abspath(found)
    real, links = _resolve(found)
    mounts += [Mount(link, "link", what, target) for link, target in links]
    pyenv = _pyenv_root_of_shim(real)
    if pyenv is not None:  # a shim runs `pyenv exec`, which picks an install of the root's
        mounts.append(Mount(pyenv, "ro", f"{what}: pyenv, whose shim it is"))
        return
    venv = _venv_of(found) or _venv_of(real)
    if venv is not None:
        mounts.append(Mount(venv, "ro", f"{what}: its venv"))
        home = _venv_home(venv)
        if home is not None:
            base = os.path.join(home, "python3")
            _follow(base if os.path.exists(base) else os.path.join(home, "python"), None, mounts, hops + 1,
                    f"{what}: its venv's interpreter")
    prefix = _python_prefix(real)
    if prefix is not None:
        mounts.append(Mount(prefix, "ro", f"{what}: the Python install"))
    package = _npm_package(real)
    if package is not None:
        mounts += [Mount(p, "ro", f"{what}: npm package") for p in _npm_closure(package)]
    if venv is None and prefix is None and package is None:
        mounts.append(Mount(real, "ro", what))
    interpreter = _shebang(real)
    if interpreter:
        head, rest = interpreter[0], interpreter[1:]
        if os.path.basename(head) == "env":
            named = [w for w in rest if not w.startswith("-") and "=" not in w]
            _follow(head, path_env, mounts, hops + 1, f"{what}: its interpreter")
            if named:
                _follow(named[0], path_env, mounts, hops + 1, f"{what}: its interpreter")
        else:
            _follow(head, path_env, mounts, hops + 1, f"{what}: its interpreter")


def _resolve(path: str, depth: int = 0) -> tuple[str, list[tuple[str, str]]]:
    """`path`'s real path and every symbolic link met on the way (link, target as written):
    a link the sandbox must make again where no mounted folder brings it along."""
    links: list[tuple[str, str]] = []
    current = ""
    for part in Path(path).parts[1:]:
        step = f"{current}/{part}"
        if os.path.islink(step) and depth < 40:
            target = os.readlink(step)
            links.append((step, target))
            joined = target if target.startswith("/") else os.path.normpath(os.path.join(current or "/", target))
            current, more = _resolve(joined, depth + 1)
            links += more
        else:
            current = step
    return current or "/", links


def _pyenv_root_of_shim(real: str) -> str | None:
    """The pyenv root of a pyenv shim (`ROOT/shims/NAME` beside `ROOT/libexec/pyenv`)."""
    shims = os.path.dirname(real)
    root = os.path.dirname(shims)
    if os.path.basename(shims) == "shims" and os.path.isfile(os.path.join(root, "libexec", "pyenv")):
        return root
    return None


def _venv_of(path: str) -> str | None:
    """The venv a program sits in (`VENV/bin/NAME` beside `VENV/pyvenv.cfg`)."""
    parent = os.path.dirname(path)
    if os.path.basename(parent) not in ("bin", "Scripts"):
        return None
    venv = os.path.dirname(parent)
    return venv if os.path.isfile(os.path.join(venv, "pyvenv.cfg")) else None


def _venv_home(venv: str) -> str | None:
    try:
        lines = Path(venv, "pyvenv.cfg").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        key, sep, value = line.partition("=")
        if sep and key.strip() == "home":
            return value.strip() or None
    return None


def _python_prefix(real: str) -> str | None:
    """A Python interpreter's install (`PREFIX/bin/pythonX.Y` with `PREFIX/lib/pythonX.Y`):
    its standard library and shared library come with it."""
    name = os.path.basename(real)
    parent = os.path.dirname(real)
    if not name.startswith("python") or os.path.basename(parent) != "bin":
        return None
    prefix = os.path.dirname(parent)
    lib = os.path.join(prefix, "lib")
    try:
        has_stdlib = any(n.startswith("python") for n in os.listdir(lib))
    except OSError:
        return None
    return prefix if has_stdlib else None


def _shebang(path: str) -> list[str]:
    try:
        with open(path, "rb") as fh:
            head = fh.read(_HEAD_BYTES)
    except OSError:
        return []
    if not head.startswith(b"#!"):
        return []
    return head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()


def _npm_package(real: str) -> str | None:
    """The npm package a file belongs to: the nearest folder above it with a package.json
    that sits in a node_modules folder (`node_modules/NAME` or `node_modules/@SCOPE/NAME`)."""
    folder = os.path.dirname(real)
    while folder not in ("/", ""):
        parent = os.path.dirname(folder)
        in_modules = os.path.basename(parent) == "node_modules" or (
            os.path.basename(parent).startswith("@") and os.path.basename(os.path.dirname(parent)) == "node_modules")
        if in_modules and os.path.isfile(os.path.join(folder, "package.json")):
            return folder
        if os.path.basename(folder) == "node_modules":
            return None
        folder = parent
    return None


def _npm_closure(package: str) -> list[str]:
    """`package` and the packages it needs, as Node's resolution finds them (each
    dependency in the nearest node_modules above the one who needs it); a hoisted tree of
    more than `_HOISTED_MOUNTS` packages as its node_modules folder."""
    found: list[str] = []
    queue = [package]
    while queue:
        current = queue.pop()
        if current in found:
            continue
        found.append(current)
        try:
            meta = json.loads(Path(current, "package.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        names: set[str] = set()
        for key in ("dependencies", "optionalDependencies", "peerDependencies"):
            value = meta.get(key) if isinstance(meta, dict) else None
            if isinstance(value, dict):
                names.update(n for n in value if isinstance(n, str))
        for name in sorted(names):
            dep = _npm_resolve(current, name)
            if dep is not None and dep not in found:
                queue.append(dep)
    # Nested dependencies come with the package that holds them.
    roots = [p for p in found if not any(p != q and under(p, q) for q in found)]
    by_modules: dict[str, list[str]] = {}
    for p in roots:
        modules = os.path.dirname(p)
        if os.path.basename(modules).startswith("@"):
            modules = os.path.dirname(modules)
        by_modules.setdefault(modules, []).append(p)
    out: list[str] = []
    for modules, members in by_modules.items():
        out += [modules] if len(members) > _HOISTED_MOUNTS else members
    return out


def _npm_resolve(package: str, name: str) -> str | None:
    folder = package
    while True:
        candidate = os.path.join(folder, "node_modules", name)
        if os.path.isfile(os.path.join(candidate, "package.json")):
            return os.path.realpath(candidate)
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _dedup(mounts: Sequence[Mount]) -> list[Mount]:
    """Each path once; a read-only path inside another one, or anywhere the system shows
    already, dropped; links kept unless a mounted folder or the system brings them along."""
    dirs = [m.path for m in mounts if m.mode == "ro"]
    out: list[Mount] = []
    seen: set[str] = set()
    for m in mounts:
        if m.path in seen:
            continue
        covered = system_shows(m.path) or any(m.path != d and under(m.path, d) for d in dirs)
        if covered:
            continue
        seen.add(m.path)
        out.append(m)
    return out
