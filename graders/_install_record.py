"""A record of each install of the repository, put back instead of running it again.

The repository's install (`graders._install.ensure_repo_installed`) runs again whenever the
slot's last one was for other dependency manifests or, for a compiled repository
(`install_per_task`), at another base commit: astropy builds its C extensions in place at
each task, 88 to 133 s here, and a validation does it again in each pass. What an install
leaves is files: its products in the worktree (untracked; installed.json keeps their
SHA-256) and its changes to the venv (the editable finder or egg-link, `.pth` files,
dist-info, scripts, the era step's packages). After an install, both are recorded under
the environment (one that failed by itself too, put back as a failure) (`installs/<key>/`), keyed by everything the install
depends on: the venv (its path is written into the scripts), the install line, the install recipe, the build settings, the build's packages
(`built.txt`), the dependency manifests as the spec's `pre_install` lines left them
(`manifest_edits`: sphinx's also edit tox.ini, which no install reads), and the
manifests' fingerprint, or the commit for `install_per_task`: the key that lets an
install stay in place (`ensure_repo_installed`), and the rest. The next
install of that key puts the files back instead: the venv goes back to the build's
packages first, as before every install, then the recorded changes are written over it
and the worktree's untracked files are replaced by the recorded products, every file
checked against its recorded SHA-256 before any is put back (hashed
once, then known by its inode, size and times while they stay the same: `_changed_file`). A record made in another
worktree slot is put back with that slot's path written over with this one's, wherever
it appears (the editable finder, `direct_url.json`, bytecode, a compiled extension's
build directory): slot paths differ by their number alone, so nothing else moves (a
record made at a path of another length is not used). Which slot a grade gets depends on
which other grade holds which, so without this a warm pass ran installs again.

Taken only where it gives exactly what the install gave: the venv, back at the build's
packages, must hold the same files at the same sizes as when the record was made (a file
another install left behind makes a difference), but the files the install itself writes or
removes and bytecode caches (written by whatever imported a module, removed by `guard_env`:
they made every record of an environment's first installs unfit), and an install that
changed tracked files is not recorded. A record that does not fit says which files differ. Anything else, or a record found damaged, and the install runs.

SWE-bench's cached instance images hold the same: an environment with the repository
installed at the instance's commit.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from graders._env_info import EnvInfo
from graders._integrity import Manifest, diff_manifests, file_sha256
from graders.host import git

__all__ = ["INSTALLS", "Restored", "install_key", "record_install", "remove_hollow_distributions", "restore_install",
           "switch_install", "tracked_state", "venv_listing"]

INSTALLS = "installs"  # beside the environment's venv
# records kept per environment, the least recently used dropped first (astropy's products
# are up to 85 MB a commit)
KEEP = 64
_META = "record.json"
_FORMAT = 4  # 2: keyed by the edits to the manifests alone, not to every tracked file; 3: not by the slot;
# 4: the venv compared without its bytecode caches, and the listing kept to say what differs


def _bytecode(rel: str) -> bool:
    """A bytecode cache: written by whatever imported the module (an install's setup, a
    test run), removed by `guard_env` before an unconfined grade, rebuilt by Python as
    needed. Whether one is there says nothing of the packages: astropy 5.0's records, made
    with hypothesis's caches in the venv, never fitted once `guard_env` had removed them."""
    return "/__pycache__/" in f"/{rel}" or rel.endswith((".pyc", ".pyo"))


@dataclass(frozen=True, slots=True)
class Restored:
    products: dict  # the worktree's products as installed.json keeps them
    log: str  # the recorded install's log
    notes: tuple[str, ...]
    made_at: float
    moved_from: str | None = None  # the slot the record was made in, when another
    ok: bool = True  # False: the record of an install that failed by itself (`record_install`)


def install_key(env: EnvInfo, parts: Mapping[str, object]) -> str:
    """The record's name: a hash of the venv, the build's packages and `parts` (install
    line, recipe, settings, fingerprint or commit, manifests). Not the slot: a record made
    in one is put back in another (`restore_install`)."""
    built = env.path / "built.txt"
    text = json.dumps({"format": _FORMAT, "venv": os.fspath(env.venv),
                       "built": hashlib.sha256(built.read_bytes()).hexdigest() if built.is_file() else None,
                       **{k: v for k, v in parts.items()}}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def venv_listing(venv_files: Manifest, written: Collection[str] = ()) -> str:
    """A hash of the venv's file names with their sizes (symlinks: their targets), from a
    `venv_manifest`, but bytecode caches and the files the install wrote or removed (`written`): what must be
    the same before a record is put back. (An uninstall leaves `easy-install.pth` behind,
    empty, where the build had none: the install writes it, and so does its record.)"""
    digest = hashlib.sha256()
    skip = set(written)
    for rel in sorted(venv_files.keys() - skip):
        if _bytecode(rel):
            continue
        value = venv_files[rel]
        digest.update(f"{rel}\0{value[1] if value[0] == '->' else value[0]}\n".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def _listed(venv_files: Manifest, written: Collection[str] = ()) -> dict[str, str]:
    """What `venv_listing` hashes, as a table (file -> size, or `-> target`): kept in the
    record so that a record that does not fit can say which files differ."""
    skip = set(written)
    return {rel: (f"-> {value[1]}" if value[0] == "->" else str(value[0]))
            for rel, value in sorted(venv_files.items()) if rel not in skip and not _bytecode(rel)}


def _difference(was: Mapping[str, str], now: Mapping[str, str], most: int = 3) -> str:
    """`+a, -b, ~c (size 1 -> 2)` of the first `most` files that differ, and how many in all."""
    added = [f"+{rel}" for rel in now.keys() - was.keys()]
    gone = [f"-{rel}" for rel in was.keys() - now.keys()]
    changed = [f"~{rel} ({was[rel]} -> {now[rel]})" for rel in was.keys() & now.keys() if was[rel] != now[rel]]
    every = sorted(added) + sorted(gone) + sorted(changed)
    more = f" and {len(every) - most} more" if len(every) > most else ""
    return ", ".join(every[:most]) + more


def _copy_hashed(source: str, target: str) -> str:
    """Copy a file (or a symlink) and return the SHA-256 of what was copied (`-> target`
    for a symlink)."""
    if os.path.islink(source):
        link = os.readlink(source)
        os.symlink(link, target)
        return "-> " + link
    digest = hashlib.sha256()
    with open(source, "rb") as src, open(target, "wb") as dst:
        for block in iter(lambda: src.read(1 << 20), b""):
            digest.update(block)
            dst.write(block)
    _same_mode_and_time(source, target)
    return digest.hexdigest()


def _same_mode_and_time(source: str, target: str) -> None:
    st = os.stat(source)
    os.chmod(target, stat.S_IMODE(st.st_mode))
    # the time too: bytecode compiled by the install names its source's
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))


def tracked_state(worktree: Path) -> str | None:
    """A hash of how the checkout's tracked files differ from its commit (the spec's
    `pre_install` lines edit some: sphinx's pins in setup.py and tox.ini, astropy's in
    pyproject.toml); None when git cannot say."""
    done = git(["diff", "--binary", "HEAD"], cwd=worktree, check=False)
    return hashlib.sha256(done.stdout).hexdigest() if done.returncode == 0 else None


def record_install(env: EnvInfo, key: str, worktree: Path, before: Manifest, after: Manifest,
                   products: Mapping[str, list], *, tracked: str | None, log: str, notes: tuple[str, ...],
                   ok: bool = True) -> str:
    """Record an install (`before`/`after`: the venv's manifests around it; `products`:
    the worktree's, as installed.json keeps them; `tracked`: `tracked_state` before it).
    `ok=False`: an install that failed by itself (an exit status of its own, not a timeout
    or a signal), recorded the same way: the same inputs fail the same way, and put back
    it leaves what the failure left, without running again in another slot (sympy 1.1's
    era setuptools cannot run on Python 3.9: 3 s per grade of each slot, for nothing).
    Returns a line for the log."""
    if tracked is None or tracked_state(worktree) != tracked:
        return "install not recorded: it changed tracked files of the checkout"
    root = env.path / INSTALLS
    root.mkdir(exist_ok=True)
    diff = diff_manifests(before, after)
    work = Path(tempfile.mkdtemp(prefix=".tmp-", dir=root))
    try:
        venv_files: dict[str, str] = {}
        for rel in [*diff.added, *diff.changed]:
            target = work / "venv" / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            venv_files[rel] = _copy_hashed(os.fspath(env.venv / rel), os.fspath(target))
        kept: dict[str, str] = {}
        for rel in products:
            target = work / "worktree" / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            kept[rel] = _copy_hashed(os.fspath(worktree / rel), os.fspath(target))
        # the products as installed.json has them ([size, sha256] or ["->", target]) must be
        # what was copied: a file changed between the two reads is not recorded
        for rel, value in products.items():
            expected = "-> " + str(value[1]) if value[0] == "->" else str(value[1])
            if kept.get(rel) != expected:
                return f"install not recorded: {rel} changed while it was recorded"
        meta = {"format": _FORMAT, "key": key, "made_at": time.time(), "worktree": os.fspath(worktree),
                "before": venv_listing(before, [*venv_files, *diff.removed]),
                "before_files": _listed(before, [*venv_files, *diff.removed]),
                "venv_files": venv_files, "venv_removed": diff.removed, "products": dict(products),
                "log": log[-20000:], "notes": list(notes), "ok": ok}
        (work / _META).write_text(json.dumps(meta) + "\n", encoding="utf-8")
        final = root / key
        if final.exists():
            shutil.rmtree(final, ignore_errors=True)
        os.rename(work, final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    _drop_oldest(root)
    size = len(venv_files) + len(kept)
    return (f"install recorded ({len(venv_files)} venv file(s), {len(kept)} product(s); {size} in all) as {key}"
            + ("" if ok else ": a failure, put back as one"))


def _drop_oldest(root: Path) -> None:
    """Keep the `KEEP` most recently used records; remove what a crashed recording left
    (`.tmp-*`: records are made under the environment's lock, so none is in progress)."""
    for stale in root.glob(".tmp-*"):
        shutil.rmtree(stale, ignore_errors=True)
    records = sorted((p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")),
                     key=lambda p: (p / _META).stat().st_mtime if (p / _META).exists() else 0)
    for old in records[:-KEEP] if len(records) > KEEP else []:
        shutil.rmtree(old, ignore_errors=True)


def _hash_of(path: Path) -> str:
    if path.is_symlink():
        return "-> " + os.readlink(path)
    return file_sha256(path)


_CHECKED = "checked.json"  # beside record.json: the record's files as they were when last checked


def _stat_key(path: Path) -> list[int]:
    st = os.lstat(path)
    return [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _changed_file(folder: Path, wanted: list[tuple[Path, Path, str]]) -> Path | None:
    """The first file of the record that is not what was recorded (None: all are).

    Each file is hashed once; then `checked.json` keeps its inode, size, modification and
    change times, and a file whose four are the same is the file that was checked (the
    change time cannot be set back: any write, chmod or utime moves it; git's index trusts
    a file's stat the same way). A sphinx record is 4,200 files and 68 MB: hashed at
    every put-back, that was half of a warm grade's own cost."""
    try:
        checked = json.loads((folder / _CHECKED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        checked = {}
    checked = checked if isinstance(checked, dict) else {}
    racy = time.time_ns() - 2_000_000_000
    now: dict[str, list[int]] = {}
    for source, _target, expected in wanted:
        rel = os.fspath(source.relative_to(folder))
        try:
            key = _stat_key(source)
            if checked.get(rel) != key:
                if _hash_of(source) != expected:
                    return source
                key = _stat_key(source)
        except OSError:
            return source
        if key[3] < racy:  # a change within the clock's grain of the check could keep its times
            now[rel] = key
    if now != checked:
        try:
            (folder / _CHECKED).write_text(json.dumps(now) + "\n", encoding="utf-8")
        except OSError:
            pass  # hashed again next time
    return None


def _clear(target: Path) -> None:
    """Make room for a file at `target` (its folder exists)."""
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(target)
    else:
        os.unlink(target)


def _hollow(folder: str | os.PathLike[str]) -> bool:
    """Whether `folder` holds nothing but folders and bytecode caches, at any depth."""
    for entry in os.scandir(folder):
        if not entry.is_dir(follow_symlinks=False) or (entry.name != "__pycache__" and not _hollow(entry.path)):
            return False
    return True


def _remove_emptied(venv: Path, removed: Iterable[str]) -> None:
    """The folders of removed files that hold nothing now (`_hollow`), and their parents,
    removed up to the venv: a package's folder left behind reads as a distribution
    without metadata (an empty `iniconfig-2.1.0.dist-info/`: pip's next install of the
    repository failed on it, uv would not uninstall it, importlib.metadata lists it) or,
    holding only `__pycache__`, imports as a namespace package."""
    for folder in sorted({(venv / rel).parent for rel in removed}, key=lambda p: len(p.parts), reverse=True):
        while folder != venv and folder.is_relative_to(venv):
            try:
                if not _hollow(folder):
                    break
                shutil.rmtree(folder)
            except FileNotFoundError:
                pass
            folder = folder.parent


def remove_hollow_distributions(venv: Path) -> None:
    """What an earlier swecl's put-back could leave (a removed distribution's files gone,
    its folders not) removed: metadata folders without METADATA (uv cannot uninstall them
    and pip's next install fails on them) and `_hollow` folders (an empty `toml/` imports
    as a namespace package)."""
    for site in venv.glob("lib/python*/site-packages"):
        for folder in site.iterdir():
            if not folder.is_dir() or folder.is_symlink():
                continue
            if (folder.suffix == ".dist-info" and not (folder / "METADATA").exists()) or _hollow(folder):
                shutil.rmtree(folder, ignore_errors=True)


def _copy_checked(source: str, target: str) -> None:
    """Copy a record's file (or symlink) checked before, with its mode and times (the
    kernel copies: `shutil.copyfile`)."""
    if os.path.islink(source):
        os.symlink(os.readlink(source), target)
        return
    shutil.copyfile(source, target)
    _same_mode_and_time(source, target)


def restore_install(env: EnvInfo, key: str, worktree: Path, before: Manifest) -> tuple[Restored | None, str]:
    """Put back the record `key` (venv at the build's packages, manifest `before`). Returns
    (the record, "") when put back, (None, why) when there is none, it does not fit, or it
    was changed since it was made (then it is removed, with nothing touched). Every file
    of the record is checked before any is put back; an OSError while they are put back
    leaves the venv and the worktree half done (the caller takes both back)."""
    folder = env.path / INSTALLS / key
    try:
        meta = json.loads((folder / _META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, ""
    if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
        return None, "the install's record is of another format"
    venv_files, products = meta.get("venv_files") or {}, meta.get("products") or {}
    removed = meta.get("venv_removed") or []
    if meta.get("before") != venv_listing(before, [*venv_files, *removed]):
        was = meta.get("before_files")
        which = f" ({_difference(was, _listed(before, [*venv_files, *removed]))})" if isinstance(was, dict) else ""
        return None, ("the install's record does not fit: the venv, back at its build, differs from when it was "
                      f"made{which}")
    wanted = [(folder / "venv" / rel, env.venv / rel, expected) for rel, expected in venv_files.items()]
    wanted += [(folder / "worktree" / rel, worktree / rel, "-> " + str(value[1]) if value[0] == "->" else str(value[1]))
               for rel, value in products.items()]
    if (changed := _changed_file(folder, wanted)) is not None:
        shutil.rmtree(folder, ignore_errors=True)
        return None, f"the install's record of {changed.relative_to(folder)} was changed since it was made: removed"
    made_in = os.fsencode(str(meta.get("worktree") or ""))
    here = os.fsencode(os.fspath(worktree))
    moved = made_in != here
    if moved and (not made_in or len(made_in) != len(here)):
        # a compiled product names its build directory in place (astropy's extensions):
        # only a path of the same length can be written over it
        return None, "the install's record was made in a slot whose path is not of this slot's length"
    for rel in removed:
        target = env.venv / rel
        if target.is_symlink() or target.is_file():
            target.unlink()
    _remove_emptied(env.venv, removed)
    git(["clean", "-ffdx", "--quiet"], cwd=worktree)
    relocated: dict[str, list] = {}
    for parent in sorted({target.parent for _source, target, _expected in wanted}):
        parent.mkdir(parents=True, exist_ok=True)
    for source, target, _expected in wanted:
        _clear(target)
        if not moved:
            _copy_checked(os.fspath(source), os.fspath(target))  # checked above
        elif (digest := _copy_relocated(os.fspath(source), os.fspath(target), made_in, here)) is not None:
            rel = os.path.relpath(target, worktree)
            if rel in products:  # installed.json keeps what each product holds now
                relocated[rel] = ["->", digest[3:]] if digest.startswith("-> ") else [os.path.getsize(target), digest]
    os.utime(folder / _META)  # recently used: kept longest
    return Restored(products={**products, **relocated}, log=str(meta.get("log") or ""),
                    notes=tuple(meta.get("notes") or ()), made_at=float(meta.get("made_at") or 0),
                    moved_from=made_in.decode("utf-8", "surrogateescape") if moved else None,
                    ok=meta.get("ok") is not False), ""


def _copy_relocated(source: str, target: str, old: bytes, new: bytes) -> str | None:
    """Copy a record's file into another slot, its slot path written over with this one's
    (same length: the editable finder, `direct_url.json`, `.pth` and egg-link files, and
    the strings of bytecode and compiled extensions, which keep their layout); returns the
    new SHA-256 (`-> target` for a symlink) when something was written over, else None."""
    # the slot's path whole: not slot-1 in slot-10
    pattern = re.compile(re.escape(old) + rb"(?![0-9])")
    if os.path.islink(source):
        link = os.fsencode(os.readlink(source))
        changed = pattern.sub(lambda _m: new, link)
        os.symlink(os.fsdecode(changed), target)
        return "-> " + os.fsdecode(changed) if changed != link else None
    with open(source, "rb") as src:
        data = src.read()
    changed = pattern.sub(lambda _m: new, data)  # a function: no escapes read in `new`
    with open(target, "wb") as dst:
        dst.write(changed)
    _same_mode_and_time(source, target)
    if changed == data:
        return None
    # Other bytes, the same size: kept at the record's time, a module's bytecode cached
    # beside it or in the environment's own cache (graders._bytecode) would still be taken
    # for it (Python checks a source's time and size), and astropy's editable finder then
    # mapped the package to the slot the record was made in, which the sandbox hides
    os.utime(target, ns=(time.time_ns(), time.time_ns()))
    return hashlib.sha256(changed).hexdigest()


def _meta(env: EnvInfo, key: str) -> dict | None:
    try:
        meta = json.loads((env.path / INSTALLS / key / _META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) and meta.get("format") == _FORMAT else None


def switch_install(env: EnvInfo, current: str, key: str, worktree: Path, venv_now: Manifest,
                   harness_left: Manifest | None) -> Restored | None:
    """Put back the record `key` over the venv as the record `current` left it, writing only
    the files the two records hold differently; None (nothing touched) when that cannot be
    done exactly, and the install goes the long way (`restore_install`).

    The long way takes the venv back to its build's packages first (`uv pip sync`) and then
    writes every file of the record: for sphinx, 4,200 files removed and then written
    again, the same bytes, at every grade of a validation (0.9 to 1.7 s of a grade whose
    tests take 1.5). Exact only when: the venv is as the harness left it after putting back
    or recording `current` (`harness_left`: its manifest then, sizes and times, as
    `guard_env` trusts it), both records were made in this slot, and every file `current`
    wrote that `key` does not write was not there at the build (so it is removed, not
    needed back as the build had it). Then the venv, at its build outside both records,
    must fit `key` as `restore_install` requires, and each file of `key` is checked."""
    if harness_left is None:
        return None
    was, meta = _meta(env, current), _meta(env, key)
    here = os.fspath(worktree)
    if was is None or meta is None or was.get("worktree") != here or meta.get("worktree") != here:
        return None
    if {k: v for k, v in venv_now.items() if not _bytecode(k)} != \
            {k: v for k, v in harness_left.items() if not _bytecode(k)}:
        return None
    old_files, new_files = was.get("venv_files") or {}, meta.get("venv_files") or {}
    old_written = {*old_files, *(was.get("venv_removed") or [])}
    new_removed = meta.get("venv_removed") or []
    new_written = {*new_files, *new_removed}
    at_build = meta.get("before_files")
    if not isinstance(at_build, dict):
        return None
    # files `current` wrote that `key` leaves alone: the build's must come back; only
    # files the build did not have (removed) can be
    undo = old_written - new_written
    if any(rel in at_build for rel in undo):
        return None
    either = old_written | new_written
    if ({rel: v for rel, v in _listed(venv_now).items() if rel not in either}
            != {rel: v for rel, v in at_build.items() if rel not in old_written}):
        return None  # outside both records, the venv is not the build `key` was made on
    products = meta.get("products") or {}
    wanted = [(env.path / INSTALLS / key / "venv" / rel, env.venv / rel, expected) for rel, expected in new_files.items()]
    wanted += [(env.path / INSTALLS / key / "worktree" / rel, worktree / rel,
                "-> " + str(value[1]) if value[0] == "->" else str(value[1])) for rel, value in products.items()]
    if _changed_file(env.path / INSTALLS / key, wanted) is not None:
        return None  # the long way says which, and removes it
    for rel in [*undo, *new_removed]:
        _clear(env.venv / rel)
    _remove_emptied(env.venv, [*undo, *new_removed])
    git(["clean", "-ffdx", "--quiet"], cwd=worktree)
    for parent in sorted({target.parent for _source, target, _expected in wanted}):
        parent.mkdir(parents=True, exist_ok=True)
    for source, target, expected in wanted:
        rel = os.path.relpath(target, env.venv)
        if target.is_relative_to(env.venv) and old_files.get(rel) == expected and rel in venv_now:
            continue  # the same bytes are there: `current` wrote them, and nothing changed since
        _clear(target)
        _copy_checked(os.fspath(source), os.fspath(target))
    os.utime(env.path / INSTALLS / key / _META)
    return Restored(products=dict(products), log=str(meta.get("log") or ""), notes=tuple(meta.get("notes") or ()),
                    made_at=float(meta.get("made_at") or 0), ok=meta.get("ok") is not False)
