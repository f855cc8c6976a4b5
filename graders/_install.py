"""The repository's own install into a built environment, bound to one worktree slot:
when it must run again (`install_fingerprint`, `installed.json`), cleaning the slot
around its products (`prepare_worktree`), the install itself (`ensure_repo_installed`)
started from the build's packages (`BUILT`) with the repository's requirements of the era.

See `graders._envs` for why the install is not part of the cached environment.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from graders._build_settings import build_settings, build_settings_environment
from graders._bytecode import forget_env_pycache
from graders._compiler_cache import compiler_cache_environment
from graders._env_info import FILES, EnvInfo, record_env_files
from graders._era_deps import project_requirements, self_install_extras
from graders._install_record import (Restored, install_key, record_install, remove_hollow_distributions,
                                     restore_install, switch_install, tracked_state)
from graders._integrity import Manifest, load_manifest, products_manifest, venv_manifest
from graders._interpreters import uv_bin
from graders.host import RepoCache, Worktree, git, untracked_files
from graders._run import LineResult, run_line
from graders._specs import EnvSpec
from graders._uv import _Cutoff, _Log, _uv_env, _uv_install, installed_pins

__all__ = [
    "BUILT",
    "LOCK",
    "INSTALL_RECIPE",
    "InstallResult",
    "ensure_repo_installed",
    "install_environment",
    "install_fingerprint",
    "install_products",
    "installed_slot",
    "prepare_worktree",
    "slot_claims",
    "record_lock",
    "sync_from_lock",
]


@dataclass(slots=True)
class InstallResult:
    ran: bool
    ok: bool
    log: str = ""
    notes: tuple[str, ...] = ()  # lines for the grade's log, whatever the outcome
    restored: bool = False  # put back from the record of the same install (graders._install_record)

    @property
    def how(self) -> str:
        return "ran" if self.ran else "restored" if self.restored else "reused"


def install_environment(env: EnvInfo, extra: Mapping[str, str] = ()) -> dict[str, str]:
    """Variables for setup commands run with the env: host env, env bin first, no PYTHONPATH,
    and no PYTHONPYCACHEPREFIX: what an install compiles belongs beside the env's files,
    where the env's bytecode cache takes it from (graders._bytecode.env_pycache)."""
    out = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "CONDA_PREFIX", "PYTHONSTARTUP", "PYTHONPYCACHEPREFIX")}
    out["PATH"] = os.pathsep.join([os.fspath(env.bin_dir), os.environ.get("PATH", "")])
    out["VIRTUAL_ENV"] = os.fspath(env.venv)
    # what the spec implies for a source build here (matplotlib: Debian's FreeType and Qhull)
    out.update(build_settings_environment(env.repo, env.path))
    # compiles of sources another install compiled already come from ccache's cache
    out.update(compiler_cache_environment(_cache_root(env), out["PATH"], env.path / "build-tmp"))
    out.update(dict(extra))
    return out


def _cache_root(env: EnvInfo) -> Path | None:
    """swecl's cache that holds the env (`<cache>/envs/OWNER__NAME/<version>/<key>`)."""
    parents = env.path.parents
    return parents[3] if len(parents) > 3 and parents[2].name == "envs" else None


_MANIFEST_NAMES = frozenset({"setup.py", "setup.cfg", "pyproject.toml"})


def _is_dependency_manifest(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    if rel in _MANIFEST_NAMES:
        return True
    return name.endswith(".txt") and (name.startswith("requirements") or "/requirements/" in f"/{rel}")


def install_fingerprint(worktree: Path, commit: str) -> str | None:
    """SHA-256 over the dependency manifests at `commit` (root setup.py, setup.cfg,
    pyproject.toml; every requirements*.txt and requirements/*.txt), from git's blob ids:
    no file is read. None when `worktree` is not a git checkout."""
    if not (worktree / ".git").exists():
        return None
    listing = git(["ls-tree", "-r", "-z", "--full-tree", commit], cwd=worktree).stdout.decode("utf-8", "surrogateescape")
    lines = []
    for entry in listing.split("\0"):
        if not entry:
            continue
        meta, _, rel = entry.partition("\t")
        if _is_dependency_manifest(rel):
            lines.append(f"{meta.split()[-1]} {rel}")
    return hashlib.sha256("\n".join(sorted(lines)).encode("utf-8", "surrogateescape")).hexdigest()


def manifest_edits(worktree: Path) -> str | None:
    """A hash of how the checkout's dependency manifests differ from its commit (the spec's
    `pre_install` lines pin build requirements in some: sphinx's setup.py, astropy's
    pyproject.toml), leaving out every other tracked file (sphinx's `pre_install` edits
    tox.ini too, whose diff changes from commit to commit and which no install reads).
    None when git cannot say."""
    names = git(["diff", "--name-only", "-z", "HEAD"], cwd=worktree, check=False)
    if names.returncode != 0:
        return None
    paths = sorted(rel for rel in names.stdout.decode("utf-8", "surrogateescape").split("\0")
                   if rel and _is_dependency_manifest(rel))
    if not paths:
        return hashlib.sha256(b"").hexdigest()
    done = git(["diff", "--binary", "HEAD", "--", *(f":(literal){rel}" for rel in paths)], cwd=worktree, check=False)
    return hashlib.sha256(done.stdout).hexdigest() if done.returncode == 0 else None


def _install_state(env: EnvInfo) -> dict:
    try:
        state = json.loads((env.path / "installed.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def installed_slot(env_dir: Path, repos: RepoCache, repo: str) -> int | None:
    """The worktree slot of `repos` where the environment at `env_dir` last installed the
    repository (made there, whether it worked: a failure is taken as it was in that slot
    too, see `ensure_repo_installed`), None when none."""
    try:
        state = json.loads((env_dir / "installed.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    where = state.get("worktree") if isinstance(state, dict) else None
    if not isinstance(where, str) or state.get("products_gone"):  # another grade took that slot since
        return None
    name = os.path.basename(where)
    if not re.fullmatch(r"slot-\d+", name):
        return None
    number = int(name[len("slot-"):])
    return number if os.fspath(repos.slot_path(repo, number)) == where else None


def slot_claims(env_dir: Path, repos: RepoCache, repo: str) -> tuple[int | None, set[int]]:
    """(the worktree slot holding this environment's install, None when none does; the
    slots holding the installs of the repository's other environments, under the same
    `envs/OWNER__NAME/`): a grade tries the first first and the others last. A slot
    holds the install made there last: an older one's products were removed since."""
    owner: dict[int, tuple[float, Path]] = {}
    for state_file in env_dir.parent.parent.glob("*/*/installed.json"):
        number = installed_slot(state_file.parent, repos, repo)
        if number is None:
            continue
        try:
            at = float(json.loads(state_file.read_text(encoding="utf-8")).get("at") or 0)
        except (OSError, ValueError, AttributeError, TypeError):
            at = 0.0
        if number not in owner or owner[number][0] < at:
            owner[number] = (at, state_file.parent)
    mine = [n for n, (_at, d) in owner.items() if d == env_dir]
    return (mine[0] if mine else None), {n for n, (_at, d) in owner.items() if d != env_dir}


def install_products(env: EnvInfo, worktree: Path) -> set[str]:
    """The files the env's recorded install made in `worktree` (none when it was made
    elsewhere or failed)."""
    state = _install_state(env)
    products = state.get("products")
    if (state.get("worktree") != os.fspath(worktree) or not state.get("ok") or not isinstance(products, dict)
            or state.get("products_gone")):
        return set()
    return set(products)


def prepare_worktree(env: EnvInfo, spec: EnvSpec, wt: Worktree) -> str:
    """Clean the slot before a grade: every untracked and ignored file goes except the
    products of the env's install from this slot, which must be as the install left them
    (size and SHA-256); if one is missing or changed, everything goes and the install is
    forgotten so it runs again. Call with the env's lock held. Returns a note for the log."""
    state = _install_state(env)
    products = state.get("products")
    if (not spec.install or state.get("worktree") != os.fspath(wt.path) or not state.get("ok")
            or not isinstance(products, dict) or state.get("products_gone")):
        wt.clean()
        return "worktree cleaned (untracked and ignored files removed)"
    removed = wt.clean(keep=products)
    now = products_manifest(wt.path, products)
    damaged = sorted(p for p in products if now.get(p) != products[p])
    if damaged:
        wt.clean()
        # Not kept in place any more; the venv's side is still what that install left, so
        # its record's products alone can be put back (`_switched`): another environment's
        # grade in this slot removes them at every turn
        _save_state(env, {**state, "products_gone": True})
        return (f"worktree cleaned; {len(damaged)} install product(s) changed since the install "
                f"({', '.join(damaged[:3])}): removed all, the install is made again")
    return f"worktree cleaned: {len(removed)} untracked/ignored file(s) removed, {len(products)} install product(s) kept"


def ensure_repo_installed(
    env: EnvInfo,
    spec: EnvSpec,
    worktree: Path,
    commit: str,
    *,
    fingerprint: str | None = None,
    timeout_s: float = 3600,
    extra_env: Mapping[str, str] = (),
) -> InstallResult:
    """Run spec.install in `worktree` unless the env already has it installed from there.

    Call with the env's lock held (`env_lock`). Runs (or puts back the record of the same
    install, `graders._install_record`) when the last install was made
    from another worktree, failed leaving files in the worktree (a failure that left none is
    taken as it was: it would fail the same way), had other dependency manifests (`fingerprint`, see
    `install_fingerprint`), or (install_per_task) at another commit. After an install
    its products in the worktree and the venv's files are recorded. `extra_env`: more
    variables for the install (a private bytecode cache, graders._bytecode).
    """
    if not spec.install:
        return InstallResult(ran=False, ok=True)
    kept = _kept_install(env, spec, worktree, commit, fingerprint)
    if kept is not None:
        return kept
    if (worktree / ".git").exists() and (switched := _switched(env, spec, worktree, commit, fingerprint)) is not None:
        return switched
    (env.path / "installed.json").unlink(missing_ok=True)
    era_note, at_built = _back_to_built(env, timeout_s=timeout_s)
    # the same install recorded before (graders._install_record): put back, not run again
    recording = _Recording()
    recorded = False
    if at_built and (worktree / ".git").exists():
        put_back, recording, era_note = _put_back(env, spec, worktree, commit, fingerprint, era_note,
                                                  timeout_s=timeout_s)
        if put_back is not None:
            return put_back
        if recording.why:
            era_note += f"[swecl] {recording.why}\n"
    era_text, era_ran = _era_dependencies(env, spec.install, worktree, timeout_s=timeout_s, fingerprint=fingerprint)
    ok, text, notes, settled = _run_install(env, spec.install, worktree, era_note + era_text, era_ran=era_ran,
                                            timeout_s=timeout_s, extra_env=extra_env)
    products: dict = {}
    if (worktree / ".git").exists():
        products = products_manifest(worktree, untracked_files(worktree))
    # installing writes into the venv too (the editable finder, scripts): the harness's own act
    record_env_files(env)
    if settled and recording.key and recording.before is not None:
        try:
            said = "[swecl] " + record_install(env, recording.key, worktree, recording.before, venv_manifest(env.venv),
                                               products, tracked=recording.tracked, log=text, notes=notes, ok=ok)
        except OSError as exc:
            said = f"[swecl] install not recorded: {exc}"
        text += said + "\n"
        notes = (*notes, said)
        recorded = said.startswith("[swecl] install recorded")
    _write_state(env, spec, worktree, commit, fingerprint, ok=ok, products=products,
                 **({"record": recording.key} if recorded else {}),
                 # a failure's account, for the grades that take it as it was (`_kept_install`)
                 **({} if ok else {"log": text[-20000:], "notes": list(notes), "settled": settled}))
    if recording.why:  # why a record of this install was not put back
        notes = (f"[swecl] {recording.why}", *notes)
    return InstallResult(ran=True, ok=ok, log=text, notes=notes)


def _kept_install(env: EnvInfo, spec: EnvSpec, worktree: Path, commit: str,
                  fingerprint: str | None) -> InstallResult | None:
    """The env's last install, when it stands for this one (same slot, line, recipe,
    settings, manifests and, install_per_task, commit): done, or failed the same way."""
    state = _install_state(env)
    same_place = (
        state.get("worktree") == os.fspath(worktree) and state.get("install") == spec.install
        and state.get("fingerprint") == fingerprint and state.get("recipe") == INSTALL_RECIPE
        and state.get("settings", "") == _settings_text(env)
        and (not spec.install_per_task or state.get("commit") == commit)
    )
    if same_place and state.get("ok") is True and not state.get("products_gone"):
        return InstallResult(ran=False, ok=True, log=f"(repo already installed from {worktree} at {state.get('commit')})\n")
    if (same_place and state.get("ok") is False and state.get("products") == {} and isinstance(state.get("log"), str)
            and state.get("settled") is not False and (worktree / ".git").exists()):
        # The same install in the same environment and slot, with the same manifests, fails
        # the same way (sympy 1.1's era setuptools cannot run on Python 3.9): run again it
        # costs a uv sync and a pip run per grade and changes nothing. Only a failure that
        # left no file in the worktree is taken as it was: the slot is cleaned whole before
        # each grade, so the tests see what they saw after the failed install (one that left
        # files is put back from its record, `_switched`). Not a timeout or a kill.
        return InstallResult(ran=False, ok=False, log=state["log"], notes=tuple(state.get("notes") or ()))
    return None


@dataclass(slots=True)
class _Recording:
    """What recording an install takes (graders._install_record): its key, the venv's files
    and the worktree's tracked files before it (None: it cannot be recorded), and why a
    record of it was not put back ("" when there was none to put back)."""

    key: str | None = None
    before: Manifest | None = None
    tracked: str | None = None
    why: str = ""


def _record_key(env: EnvInfo, spec: EnvSpec, worktree: Path, commit: str, fingerprint: str | None) -> str:
    return install_key(env, {"install": spec.install, "recipe": INSTALL_RECIPE,
                             "settings": _settings_text(env), "fingerprint": fingerprint,
                             "commit": commit if spec.install_per_task else None,
                             # the manifests as pre_install left them: what else it edits, no install reads
                             "pre_install": spec.pre_install, "manifests": manifest_edits(worktree)})


def _switched(env: EnvInfo, spec: EnvSpec, worktree: Path, commit: str,
              fingerprint: str | None) -> InstallResult | None:
    """The record of this install put over the one the venv holds now, by their difference
    (`switch_install`): when the env's last install in this slot worked and was recorded
    or put back (`record` in installed.json), else None and nothing touched."""
    state = _install_state(env)
    current = state.get("record")
    if (not isinstance(current, str) or state.get("worktree") != os.fspath(worktree)
            or state.get("recipe") != INSTALL_RECIPE):
        return None
    key = _record_key(env, spec, worktree, commit, fingerprint)
    restored = switch_install(env, current, key, worktree, venv_manifest(env.venv), load_manifest(env.path / FILES))
    if restored is None:
        return None
    record_env_files(env)
    _write_put_back(env, spec, worktree, commit, fingerprint, key, restored)
    made = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(restored.made_at))
    what = ("the venv held it still: its products put back" if current == key else
            f"over the record {current} the venv held: the files the two differ in, each checked")
    said = (f"[swecl] {_what_put_back(restored)} from its record {key} of {made} (graders._install_record) {what}, "
            f"{len(restored.products)} product(s) in the worktree")
    return InstallResult(ran=False, ok=restored.ok, restored=True, notes=(said, *restored.notes),
                         log=said + "; the recorded install's log:\n" + restored.log)


def _put_back(env: EnvInfo, spec: EnvSpec, worktree: Path, commit: str, fingerprint: str | None, note: str, *,
              timeout_s: float) -> tuple[InstallResult | None, _Recording, str]:
    """The record of this same install put back, if there is one that fits: (its result,
    or None when it must run; what recording the run takes; `note`, the install log so
    far, with what putting back added)."""
    tracked = tracked_state(worktree)
    key = _record_key(env, spec, worktree, commit, fingerprint)
    before = venv_manifest(env.venv)
    recording = _Recording(key, before, tracked)
    try:
        restored, recording.why = restore_install(env, key, worktree, before)
    except OSError as exc:  # half put back: both taken back below
        restored, recording.why = None, f"the install's record could not be put back ({exc})"
        more, at_built = _back_to_built(env, timeout_s=timeout_s)  # while the worktree names what to remove
        git(["clean", "-ffdx", "--quiet"], cwd=worktree)
        note += more
        recording.before = venv_manifest(env.venv) if at_built else None
    if restored is None:
        return None, recording, note
    record_env_files(env)
    if restored.moved_from:
        forget_env_pycache(env)
    _write_put_back(env, spec, worktree, commit, fingerprint, key, restored)
    made = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(restored.made_at))
    said = (f"[swecl] {_what_put_back(restored)} from its record {key} of {made} (graders._install_record): "
            f"{len(restored.products)} product(s) in the worktree and the venv's files, each checked"
            + (f"; made in {restored.moved_from}, its path written over with this slot's"
               if restored.moved_from else ""))
    return (InstallResult(ran=False, ok=restored.ok, restored=True, notes=(said, *restored.notes),
                          log=note + said + "; the recorded install's log:\n" + restored.log), recording, note)


def _run_install(env: EnvInfo, install: str, worktree: Path, head: str, *, era_ran: bool, timeout_s: float,
                 extra_env: Mapping[str, str]) -> tuple[bool, str, tuple[str, ...], bool]:
    """The install line run (after `head`, the log so far): whether it worked, its log, a
    warning when pip installed past the era step, and whether its outcome is its own (it
    worked, or exited with a status of its own: not timed out (124), killed by a signal or
    not started), which the same inputs give again."""
    before = _frozen(env.python) if era_ran else None
    results: list[LineResult] = []
    variables: dict[str, str] = {}
    variables_of_install = install_environment(env, extra_env)
    if "CCACHE_DIR" in variables_of_install:  # graders._compiler_cache
        head += f"[swecl] C and C++ compiles through ccache (cache {variables_of_install['CCACHE_DIR']})\n"
    for line in [install]:  # `a; b` lines are split by run_line itself
        results.append(
            run_line(line, cwd=worktree, env=variables_of_install, python=env.python,
                     bin_dir=env.bin_dir, variables=variables, timeout_s=timeout_s)
        )
    if "TMPDIR" in variables_of_install:  # the install's own (graders._compiler_cache): what a kill left
        shutil.rmtree(variables_of_install["TMPDIR"], ignore_errors=True)
    ok = all(r.status == "ok" for r in results)
    settled = all(r.status == "ok" or (r.exit_code is not None and 0 < r.exit_code < 124) for r in results)
    text = head + "".join(f"$ {r.line}\n{r.output}[{r.status}{': ' + r.reason if r.reason else ''}]\n" for r in results)
    notes: tuple[str, ...] = ()
    if before is not None and (after := _frozen(env.python)) is not None:
        past = [f"{name}=={v}" + (f" (was {before[name]})" if name in before else "")
                for name, v in sorted(after.items()) if before.get(name) != v]
        if past:
            notes = (f"[swecl] WARNING pip installed past the era step (as of today, not {env.exclude_newer}): "
                     + ", ".join(past),)
            text += "".join(n + "\n" for n in notes)
    return ok, text, notes, settled


def _write_state(env: EnvInfo, spec: EnvSpec, worktree: Path, commit: str, fingerprint: str | None, *, ok: bool,
                 products: Mapping[str, object], **more: object) -> None:
    """`installed.json`: where and how the env's install was last made, and its products."""
    _save_state(env, {"worktree": os.fspath(worktree), "commit": commit, "install": spec.install, "ok": ok,
                      "recipe": INSTALL_RECIPE, "settings": _settings_text(env), "fingerprint": fingerprint,
                      "products": products, "at": time.time(), **more})


def _what_put_back(restored: Restored) -> str:
    return "install put back" if restored.ok else "failed install put back (it failed by itself: it would again)"


def _write_put_back(env: EnvInfo, spec: EnvSpec, worktree: Path, commit: str, fingerprint: str | None, key: str,
                    restored: Restored) -> None:
    # a failure's account too, as when it ran (`_kept_install` takes it as it was)
    _write_state(env, spec, worktree, commit, fingerprint, ok=restored.ok, products=restored.products,
                 restored=key, record=key,
                 **({} if restored.ok else {"log": restored.log[-20000:], "notes": list(restored.notes)}))


def _save_state(env: EnvInfo, state: Mapping[str, object]) -> None:
    (env.path / "installed.json").write_text(json.dumps(state) + "\n", encoding="utf-8")


# 2: the repository's own requirements are installed under the era cut-off first;
# 3: with the environment build's fallbacks (`graders._uv._uv_install`), never left to pip;
# 4: install lines with pip options that change nothing about what is installed
# (astropy's `-e .[test] --verbose`) get the era step too (`graders._era_deps.self_install_extras`)
# (an install made without the build settings its repository now gets, `graders._build_settings`,
# is redone through the recorded `settings`: only that repository's)
INSTALL_RECIPE = 4


def _settings_text(env: EnvInfo) -> str:
    found = build_settings(env.repo)
    return found.text if found else ""


def _frozen(python: Path) -> dict[str, str] | None:
    """{normalised name: version} of the venv's packages from the index (the repository's
    own editable install left out); None when uv cannot say."""
    pins = installed_pins(python)
    return {name: line.partition("==")[2] for name, line in pins.items()} or None

# The env's packages as its build left them (`uv pip freeze`), so that every install of
# the repository starts from them: an install for other dependency manifests (another
# task's setup.py) leaves packages behind, and the next install keeps whatever already
# satisfies it (pytest 8 from an unpinned install stays where the era has pytest 6).
# SWE-bench builds each instance's image from the environment image the same way.
BUILT = "built.txt"


def _record_built(python: Path, path: Path, log: _Log) -> None:
    argv = [uv_bin(), "pip", "freeze", "--python", os.fspath(python)]
    log.write("$ " + shlex.join(argv))
    try:
        done = subprocess.run(argv, capture_output=True, env=_uv_env(), stdin=subprocess.DEVNULL, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.write(f"failed to run: {exc}; installs will not start from the build's packages")
        return
    log.write((done.stdout + done.stderr).decode("utf-8", "replace").rstrip() + f"\n[exit {done.returncode}]")
    if done.returncode == 0:
        path.write_bytes(done.stdout)


LOCK = "lock.txt"
# the repository's requirements read per dependency manifests (`_era_dependencies`)
ERA_REQUIREMENTS = "era-requirements"


def record_lock(python: Path, built: Path, lock: Path, log: _Log) -> bool:
    """The environment's lock: every distribution of the build (`BUILT`) at its exact version
    with the sha256 of each file the index offers for it, as `uv pip compile
    --generate-hashes` writes them; `sync_from_lock` makes an environment of the same
    distributions from it. False (no lock, said in the build log) when the index gives no
    hashes or cannot be reached."""
    argv = [uv_bin(), "pip", "compile", "--no-deps", "--generate-hashes", "--no-header", "--no-annotate",
            "--python", os.fspath(python), os.fspath(built), "--output-file", os.fspath(lock)]
    log.write("$ " + shlex.join(argv))
    try:
        done = subprocess.run(argv, capture_output=True, env=_uv_env(), stdin=subprocess.DEVNULL, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.write(f"failed to run: {exc}; no lock")
        return False
    log.write(done.stderr.decode("utf-8", "replace").rstrip() + f"\n[exit {done.returncode}]")
    text = lock.read_text(encoding="utf-8", errors="replace") if lock.is_file() else ""
    if done.returncode != 0 or "--hash=" not in text:
        lock.unlink(missing_ok=True)
        log.write("# no lock: the index gave no hashes for these files")
        return False
    return True


def sync_from_lock(python: Path, lock: Path, *, timeout_s: float = 3600) -> subprocess.CompletedProcess[bytes]:
    """Make the venv of `python` hold exactly the lock's distributions, each file checked
    against its hashes (`uv pip sync --require-hashes`)."""
    return subprocess.run([uv_bin(), "pip", "sync", "--require-hashes", "--python", os.fspath(python), os.fspath(lock)],
                          capture_output=True, env=_uv_env(), stdin=subprocess.DEVNULL, timeout=timeout_s)


def _back_to_built(env: EnvInfo, *, timeout_s: float) -> tuple[str, bool]:
    """The venv's packages back to the build's (`uv pip sync`, from uv's cache); lines
    for the install log, and whether they are the build's now. An env built before builds
    were recorded is left as it is."""
    built = env.path / BUILT
    if not built.is_file():
        return "", False
    remove_hollow_distributions(env.venv)
    text = _uv_install_log(["pip", "sync", "--python", os.fspath(env.python), os.fspath(built)], timeout_s=timeout_s,
                           failed="the env's packages could not be put back to its build's")
    return text, text.rstrip().endswith("[ok]")


def _uv_install_log(args: list[str], *, timeout_s: float, failed: str, cwd: Path | None = None) -> str:
    """One uv call of the repository's install step, as lines for its install log (which
    is text the grade keeps, not the build's `_Log`); `failed` says what a failure means."""
    argv = [uv_bin(), *args]
    try:
        done = subprocess.run(argv, cwd=cwd, capture_output=True, env=_uv_env(), stdin=subprocess.DEVNULL,
                              timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"[swecl] {failed} ({exc})\n"
    out = (done.stdout + done.stderr).decode("utf-8", "replace")
    verdict = "ok" if done.returncode == 0 else f"exit {done.returncode}: {failed}"
    return f"$ {shlex.join(argv)}\n{out}[{verdict}]\n"


def _era_dependencies(env: EnvInfo, install: str, worktree: Path, *, timeout_s: float,
                      fingerprint: str | None = None) -> tuple[str, bool]:
    """Before `pip install -e .[extras]`: the checkout's requirements installed with uv as
    of the env's era (see `graders._era_deps`). Returns the lines for the install log and
    whether the step applied (an era, a line that pip-installs the checkout); when anything
    fails, pip resolves as it would have, and the log says so.

    The requirements read for one `fingerprint` of the dependency manifests are kept in the
    environment and read from there the next time: `setup.py egg_info` takes seconds (pytest
    5.4's: 7 s, to fail the same way each time), and an install runs at every task whose
    manifests differ from the last one's, so again in each pass of a validation."""
    extras = self_install_extras(install)
    if not env.exclude_newer:
        return "", False
    if extras is None:
        return f"[swecl] install line not read for requirements (not a pip install of the checkout alone): {install}\n", False
    kept = env.path / ERA_REQUIREMENTS / f"{fingerprint}-{hashlib.sha256(' '.join(extras).encode()).hexdigest()[:12]}.json"
    try:
        known = json.loads(kept.read_text(encoding="utf-8")) if fingerprint else None
        reqs, how = known["requirements"], known["how"] + " (read before for these manifests)"
    except (OSError, ValueError, TypeError, KeyError):
        reqs, how = project_requirements(worktree, env.python, extras, timeout_s=min(timeout_s, 600))
        if fingerprint and "failed to run" not in how:  # a run that could not start is not the manifests' answer
            kept.parent.mkdir(exist_ok=True)
            kept.write_text(json.dumps({"requirements": reqs, "how": how}) + "\n", encoding="utf-8")
    head = f"[swecl] the repository's requirements as of {env.exclude_newer}: {how}\n"
    if not reqs:
        return head, True
    # The environment build's own installer, fallbacks included: a requirement no release
    # of the era installs here (skyfield 1.10's sdist, built with a setuptools of 2019 that
    # does not run on Python 3.9) comes as of SWE-bench's images, never as of today, which
    # is what pip would take for whatever is left unsatisfied.
    with tempfile.TemporaryDirectory(prefix="swecl-era-deps-") as tmp:
        # compiles through the cache's ccache, as the environment builds' (`graders._envs`)
        log = _Log(Path(tmp) / "install.log", compiler_cache_environment(_cache_root(env), os.environ.get("PATH", "")))
        try:
            warnings = _uv_install(env.python, reqs, log, "requirements", _Cutoff(env.exclude_newer))
        finally:
            log.close()
        text = log.path.read_text(encoding="utf-8", errors="replace")
    return head + text + "".join(f"[swecl] WARNING {w}\n" for w in warnings), True
