"""The repo's own install across tasks: its products kept (and verified) in the slot,
everything else untracked or ignored removed, re-run when the dependency manifests change."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import msgspec
import pytest

from graders import GradeRequest
from graders._executing import SwebenchGrader
from graders._specs import EnvSpec
from tests.graders.env_support import SETUP_PY, commit_at, make_calc_package
from tests.graders.exec_support import F2P, GOLD_PATCH, P2P, TEST_PATCH, WRONG_PATCH, write

pytestmark = pytest.mark.slow

PKG = "acme/calcpkg"
# no build isolation: the venv's own setuptools builds it, nothing is downloaded
SPEC = EnvSpec(python=None, pip_packages=["pytest"], install="python -m pip install --no-build-isolation --no-deps -e .",
               test_cmd="pytest -rA")


def _grade(grader: SwebenchGrader, base: str, patch: str, setup_commit: str, spec: EnvSpec = SPEC) -> tuple[str, str]:
    out = grader.grade(GradeRequest(
        instance_id="acme__calcpkg-1", repo=PKG, version="0.1", base_commit=base, model_patch=patch,
        test_patch=TEST_PATCH, fail_to_pass=F2P, pass_to_pass=P2P, environment=spec,
        environment_setup_commit=setup_commit,
    ))
    return out.status, out.log.decode()


def _gold_with_test_extras(tmp_path: Path, src: Path, base: str,
                           install: str = "python -m pip install -e .[test]") -> tuple[Path, str]:
    """Grade the gold patch of `src` at `base` with `pip install -e .[test]` as the install
    (the spec's pytest pinned), assert it resolves; (the env's python, the grade's log)."""
    spec = EnvSpec(python=None, pip_packages=["pytest==7.4.4"], install=install, test_cmd="pytest -rA")
    cache = tmp_path / "cache"
    grader = SwebenchGrader(cache_dir=cache, repo_sources={PKG: str(src)})
    out = grader.grade(GradeRequest(
        instance_id="acme__calcpkg-1", repo=PKG, version="0.1", base_commit=base, model_patch=GOLD_PATCH,
        test_patch=TEST_PATCH, fail_to_pass=F2P, pass_to_pass=P2P, environment=spec,
    ))
    log = out.log.decode()
    assert out.status == "resolved", log
    [python] = list((cache / "envs").rglob("venv/bin/python"))
    return python, log


def _gold_on_dated_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, releases: dict, setup_args: str,
                         install: str = "python -m pip install -e .[test]") -> tuple[Path, str]:
    """`_gold_with_test_extras` for a calc package of 2020-06 whose setup.py adds
    `setup_args` (its requirements), the requirements served by a dated index of
    `releases` to uv and to pip alike."""
    from tests.graders.env_support import dated_index
    from tests.graders.exec_support import make_calc_repo

    src, _ = make_calc_repo(tmp_path / "src")
    write(src, "setup.py", 'from setuptools import setup\n\nsetup(name="calc", version="0.1", packages=["calc"], '
                           f'{setup_args})\n')
    base = commit_at(src, "calc with its requirements", "2020-06-01T12:00:00Z")
    with dated_index(tmp_path / "index", releases) as url:
        monkeypatch.setenv("UV_EXTRA_INDEX_URL", url)
        monkeypatch.setenv("PIP_EXTRA_INDEX_URL", url)  # what pip takes when left to itself
        return _gold_with_test_extras(tmp_path, src, base, install)


def _state(cache: Path) -> dict:
    [installed] = list((cache / "envs").rglob("installed.json"))
    return json.loads(installed.read_text())


def test_install_products_are_kept_and_the_rest_goes(tmp_path: Path) -> None:
    src, base = make_calc_package(tmp_path / "src", "2024-03-01T12:00:00Z")
    cache = tmp_path / "cache"
    # unconfined (--sandbox none), as a user without bubblewrap grades; the other tests of
    # the install run in the sandbox, as grading does by default
    grader = SwebenchGrader(cache_dir=cache, repo_sources={PKG: str(src)}, timeout_s=120, sandbox="none")
    status, log = _grade(grader, base, GOLD_PATCH, base)
    assert status == "resolved", log
    assert "install: ran (ok)" in log and "packages as of 2024-03-01T00:00:00Z" in log
    state = _state(cache)
    assert "calc.egg-info/PKG-INFO" in state["products"] and state["fingerprint"]
    slot = Path(state["worktree"])

    # what a task's tests may leave behind, among ignored and untracked files
    write(slot, ".tox/py39/stale.txt", "stale tox env")
    write(slot, "build/__pycache__/evil.cpython-311.pyc", "planted")
    write(slot, "calc/__pycache__/ops.cpython-311.pyc", "planted bytecode")  # would break `import calc.ops`
    status, log = _grade(grader, base, WRONG_PATCH, base)
    assert status == "unresolved", log
    assert "install: reused (ok)" in log and "install product(s) kept" in log
    assert not (slot / ".tox").exists() and not (slot / "build").exists()
    assert (slot / "calc.egg-info" / "PKG-INFO").is_file()
    planted = slot / "calc" / "__pycache__" / "ops.cpython-311.pyc"
    assert not planted.exists() or planted.read_bytes() != b"planted bytecode"

    # a product changed since the install: everything goes and the install is put back
    # from its record (graders._install_record), as the install left it
    (slot / "calc.egg-info" / "PKG-INFO").write_text("Name: something-else\n")
    status, log = _grade(grader, base, GOLD_PATCH, base)
    assert status == "resolved", log
    assert "install product(s) changed" in log and "install: restored (ok)" in log
    # the venv is still what the install left: the products alone are put back, no uv sync
    assert "the venv held it still: its products put back" in log and "pip sync" not in log, log
    assert "Name: calc" in (slot / "calc.egg-info" / "PKG-INFO").read_text()
    assert _state(cache)["products"] == state["products"]


def test_changed_dependency_manifests_reinstall_and_others_do_not(tmp_path: Path) -> None:
    src, setup = make_calc_package(tmp_path / "src", "2024-03-01T12:00:00Z")
    write(src, "calc/extra.py", "X = 1\n")
    same_deps = commit_at(src, "code only", "2024-03-02T12:00:00Z")
    write(src, "setup.py", SETUP_PY.format(version="0.2"))
    new_deps = commit_at(src, "new setup.py", "2024-03-03T12:00:00Z")
    write(src, "requirements-dev.txt", "pytest\n")
    new_reqs = commit_at(src, "a requirements file", "2024-03-04T12:00:00Z")
    cache = tmp_path / "cache"
    grader = SwebenchGrader(cache_dir=cache, repo_sources={PKG: str(src)}, timeout_s=120)
    # one env for all (one setup commit); the install follows each task's manifests
    expected = [(setup, "ran"), (same_deps, "reused"), (new_deps, "ran"), (new_reqs, "ran"), (new_reqs, "reused")]
    for commit, install in expected:
        status, log = _grade(grader, commit, GOLD_PATCH, setup)
        assert status == "resolved", log
        assert f"install: {install} (ok)" in log, (commit, log)
    assert len(list((cache / "envs").rglob("installed.json"))) == 1
    assert _state(cache)["commit"] == new_reqs


def _sizes(cache: Path) -> dict:
    """The venv's files as the harness last recorded them: name -> size (or link target)."""
    [files] = list((cache / "envs").rglob("files.json"))
    return {rel: value[1] if value[0] == "->" else value[0] for rel, value in json.loads(files.read_text()).items()
            if "__pycache__" not in rel}


def _contents(cache: Path) -> dict:
    """The venv's files and folders now: name -> SHA-256 (or link target, or "folder"),
    bytecode caches aside. Folders count: one left behind empty by a put-back (a removed
    package's `NAME.dist-info/`) is a distribution without metadata to pip and uv."""
    [venv] = list((cache / "envs").rglob("venv/bin/python"))
    root = venv.parent.parent
    return {os.fspath(p.relative_to(root)): os.readlink(p) if p.is_symlink() else "folder" if p.is_dir()
            else hashlib.sha256(p.read_bytes()).hexdigest()
            for p in root.rglob("*") if "__pycache__" not in p.parts}


def _calc_version(cache: Path) -> str:
    [python] = list((cache / "envs").rglob("venv/bin/python"))
    return subprocess.run([python, "-c", "import importlib.metadata as m; print(m.version('calc'))"],
                          capture_output=True, text=True, check=True, cwd=cache).stdout.strip()


def test_an_install_made_before_is_put_back_not_run_again(tmp_path: Path) -> None:
    """Tasks alternate between two setup.py: each install runs once, then its record is put
    back, the venv and the slot exactly as the install left them; a record changed on disk
    is found while it is put back, removed, and the install runs. The spec's pre_install
    edits a tracked file first, as sphinx's and astropy's pin their build requirements."""
    spec = msgspec.structs.replace(SPEC, pre_install=["sed -i '1i # pinned by the spec' setup.py"])
    src, first = make_calc_package(tmp_path / "src", "2024-03-01T12:00:00Z")
    write(src, "setup.py", SETUP_PY.format(version="0.2"))
    second = commit_at(src, "version 0.2", "2024-03-02T12:00:00Z")
    cache = tmp_path / "cache"
    grader = SwebenchGrader(cache_dir=cache, repo_sources={PKG: str(src)}, timeout_s=120)
    seen: dict[str, dict] = {}
    for commit, how, version in [(first, "ran", "0.1"), (second, "ran", "0.2"), (first, "restored", "0.1"),
                                 (second, "restored", "0.2")]:
        status, log = _grade(grader, commit, GOLD_PATCH, first, spec)
        assert status == "resolved", log
        assert f"install: {how} (ok)" in log, (commit, log)
        assert _calc_version(cache) == version
        slot = Path(_state(cache)["worktree"])
        assert f"Version: {version}" in (slot / "calc.egg-info" / "PKG-INFO").read_text()
        # the venv as that install left it, byte for byte
        assert seen.setdefault(commit, (_sizes(cache), _contents(cache))) == (_sizes(cache), _contents(cache))
        assert "pre_install [ok] sed -i '1i # pinned by the spec' setup.py" in log, log
        if how == "ran":
            assert "[swecl] install recorded" in log, log
        else:  # the venv held the other record: only what the two differ in is written
            assert "over the record" in log, log
    assert "install put back from its record" in log and _state(cache)["restored"]

    # a record changed on disk: found while put back, removed, and the install runs
    [record] = [p for p in (cache / "envs").rglob("installs/*/worktree/calc.egg-info/PKG-INFO")
                if "Version: 0.1" in p.read_text()]
    record.write_text(record.read_text().replace("Version: 0.1", "Version: 6.6"))
    status, log = _grade(grader, first, GOLD_PATCH, first, spec)
    assert status == "resolved" and "install: ran (ok)" in log, log
    assert "the install's record of worktree/calc.egg-info/PKG-INFO was changed since it was made: removed" in log
    assert _calc_version(cache) == "0.1" and (_sizes(cache), _contents(cache)) == seen[first]
    status, log = _grade(grader, second, GOLD_PATCH, first, spec)
    status, log = _grade(grader, first, GOLD_PATCH, first, spec)  # recorded again by the install above
    assert status == "resolved" and "install: restored (ok)" in log, log


def test_a_record_put_over_another_leaves_no_folder_of_what_only_the_other_installed(tmp_path: Path) -> None:
    """pytest 5.4's era step brought iniconfig and toml at one commit and not at the next:
    putting the next task's record over the first's removed their files but left their
    folders, and the install after failed on `iniconfig-2.1.0.dist-info` without METADATA.
    Here each commit's install brings a helper package of its own name."""
    spec = msgspec.structs.replace(SPEC, install="python -m pip install --no-build-isolation --no-deps -e . ./helper")
    src, _ = make_calc_package(tmp_path / "src", "2024-03-01T12:00:00Z")
    helper = 'from setuptools import setup\n\nsetup(name="{0}", version="1.0", packages=["{0}"])\n'
    write(src, "helper/pyproject.toml", '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n')
    write(src, "helper/setup.py", helper.format("helper_a"))
    write(src, "helper/helper_a/__init__.py", "")
    first = commit_at(src, "helper a", "2024-03-01T13:00:00Z")
    subprocess.run(["git", "rm", "-rq", "helper/helper_a"], cwd=src, check=True)
    write(src, "setup.py", SETUP_PY.format(version="0.2"))
    write(src, "helper/setup.py", helper.format("helper_b"))
    write(src, "helper/helper_b/__init__.py", "")
    second = commit_at(src, "helper b", "2024-03-02T12:00:00Z")
    cache = tmp_path / "cache"
    grader = SwebenchGrader(cache_dir=cache, repo_sources={PKG: str(src)}, timeout_s=120)
    seen: dict[str, dict] = {}
    for commit, how, mine, other in [(first, "ran", "helper_a", "helper_b"), (second, "ran", "helper_b", "helper_a"),
                                     (first, "restored", "helper_a", "helper_b"),
                                     (second, "restored", "helper_b", "helper_a")]:
        status, log = _grade(grader, commit, GOLD_PATCH, first, spec)
        assert status == "resolved" and f"install: {how} (ok)" in log, log
        if how == "restored":
            assert "over the record" in log, log
        [python] = list((cache / "envs").rglob("venv/bin/python"))
        [site] = list(python.parent.parent.glob("lib/python*/site-packages"))
        # (a helper's build keeps the other's module in its build folder, a product: only
        # the distributions tell which install this is)
        names = sorted(p.name for p in site.iterdir() if p.name.startswith("helper"))
        assert f"{mine}-1.0.dist-info" in names and not [n for n in names if n.startswith(f"{other}-")], (how, names)
        assert seen.setdefault(commit, _contents(cache)) == _contents(cache)

    # such folders left by an earlier swecl are removed before the venv goes back to its build
    (site / "iniconfig-2.1.0.dist-info" / "licenses").mkdir(parents=True)
    (site / "toml" / "__pycache__").mkdir(parents=True)
    write(src, "setup.py", SETUP_PY.format(version="0.3"))
    status, log = _grade(grader, commit_at(src, "version 0.3", "2024-03-03T12:00:00Z"), GOLD_PATCH, first, spec)
    assert status == "resolved" and "install: ran (ok)" in log, log
    assert not (site / "iniconfig-2.1.0.dist-info").exists() and not (site / "toml").exists()


def test_a_record_is_keyed_by_the_manifests_as_pre_install_left_them_not_every_tracked_file(tmp_path: Path) -> None:
    """sphinx's pre_install edits tox.ini as well as setup.py, and tox.ini differs from
    commit to commit: an install at another commit with the same manifests, edited the
    same way, puts back the record (no install reads tox.ini); the whole diff is what
    the install itself must leave unchanged."""
    spec = msgspec.structs.replace(SPEC, pre_install=["sed -i '1i # pinned by the spec' setup.py",
                                                      "sed -i 's/^envlist.*/envlist = py/' tox.ini"])
    src, _ = make_calc_package(tmp_path / "src", "2024-03-01T12:00:00Z")
    write(src, "tox.ini", "[tox]\nenvlist = py37, py38\n")
    first = commit_at(src, "tox", "2024-03-01T13:00:00Z")
    write(src, "setup.py", SETUP_PY.format(version="0.2"))
    second = commit_at(src, "version 0.2", "2024-03-02T12:00:00Z")
    write(src, "setup.py", SETUP_PY.format(version="0.1"))
    write(src, "tox.ini", "[tox]\nenvlist = py38, py39\n\n[testenv]\ncommands = pytest\n")
    third = commit_at(src, "version 0.1 again, another tox.ini", "2024-03-03T12:00:00Z")
    cache = tmp_path / "cache"
    grader = SwebenchGrader(cache_dir=cache, repo_sources={PKG: str(src)}, timeout_s=120)
    for commit, how in [(first, "ran"), (second, "ran"), (third, "restored")]:
        status, log = _grade(grader, commit, GOLD_PATCH, first, spec)
        assert status == "resolved" and f"install: {how} (ok)" in log, (how, log)
        assert "pre_install [ok] sed -i 's/^envlist.*/envlist = py/' tox.ini" in log, log
    assert _calc_version(cache) == "0.1"
    assert len(list((cache / "envs").rglob("installs/*/record.json"))) == 2  # the third made none


def test_a_grade_takes_the_slot_its_environment_installed_into(tmp_path: Path) -> None:
    """Which worker grades a task changes from task to task, and with it the slot it would
    take first: the slot holding the environment's install comes first, so the install is
    reused; a slot busy elsewhere is passed over, and the install is put back in the next."""
    from graders.host import RepoCache, preferred_slot

    src, setup = make_calc_package(tmp_path / "src", "2024-03-01T12:00:00Z")
    cache = tmp_path / "cache"
    grader = SwebenchGrader(cache_dir=cache, repo_sources={PKG: str(src)}, timeout_s=120)
    with preferred_slot(0):
        status, log = _grade(grader, setup, GOLD_PATCH, setup)
    assert status == "resolved" and "install: ran (ok)" in log and "(slot 0)" in log, log
    with preferred_slot(1):  # another worker
        status, log = _grade(grader, setup, WRONG_PATCH, setup)
    assert status == "unresolved" and "install: reused (ok)" in log and "(slot 0)" in log, log
    with RepoCache(cache).worktree(PKG, setup, slot=0), preferred_slot(1):  # slot 0 held by another grade
        status, log = _grade(grader, setup, GOLD_PATCH, setup)
    # the next slot: the install is slot 0's record, put back there (see below)
    assert status == "resolved" and "install: restored (ok)" in log and "(slot 1)" in log, log


def test_a_grade_leaves_the_slots_of_other_environments_installs_alone(tmp_path: Path) -> None:
    """Two environments of one repository (two versions) graded in turn by one worker: the
    second takes a slot of its own rather than the first's, whose install products would
    go; so each finds its install in place when its turn comes again, checked out already."""
    from graders.host import preferred_slot

    src, setup = make_calc_package(tmp_path / "src", "2024-03-01T12:00:00Z")
    grader = SwebenchGrader(cache_dir=tmp_path / "cache", repo_sources={PKG: str(src)}, timeout_s=120)

    def grade(version: str) -> str:
        with preferred_slot(0):  # the worker's own slot
            out = grader.grade(GradeRequest(
                instance_id=f"acme__calcpkg-{version}", repo=PKG, version=version, base_commit=setup,
                model_patch=GOLD_PATCH, test_patch=TEST_PATCH, fail_to_pass=F2P, pass_to_pass=P2P,
                environment=SPEC, environment_setup_commit=setup))
        assert out.status == "resolved", out.log.decode()
        return out.log.decode()

    assert "install: ran (ok)" in (log := grade("0.1")) and "(slot 0)" in log, log
    assert "install: ran (ok)" in (log := grade("0.2")) and "(slot 1)" in log, log
    assert "install: reused (ok)" in (log := grade("0.1")) and "(slot 0)" in log, log
    assert "install: reused (ok)" in (log := grade("0.2")) and "(slot 1)" in log, log


def test_a_record_made_in_one_slot_is_put_back_in_another_with_its_path(tmp_path: Path) -> None:
    """Which slot a grade gets depends on which other grade holds which: an install
    recorded in slot 0 is put back in slot 1 with slot 0's path written over (the
    editable install then imports this slot's code), and the put-back product keeps the
    grade after it in place."""
    from graders.host import RepoCache, preferred_slot

    # the install also leaves a product naming where it was built, as a compiled extension does
    where = 'import os\nos.makedirs("build", exist_ok=True)\nopen("build/where.txt", "w").write(os.getcwd())\n'
    src, _ = make_calc_package(tmp_path / "src", "2024-03-01T12:00:00Z")
    write(src, "setup.py", where + SETUP_PY.format(version="0.1"))
    first = commit_at(src, "version 0.1, built where", "2024-03-01T13:00:00Z")
    write(src, "setup.py", where + SETUP_PY.format(version="0.2"))
    second = commit_at(src, "version 0.2", "2024-03-02T12:00:00Z")
    cache = tmp_path / "cache"
    grader = SwebenchGrader(cache_dir=cache, repo_sources={PKG: str(src)}, timeout_s=120)
    for commit in (first, second):  # both recorded in slot 0
        with preferred_slot(0):
            status, log = _grade(grader, commit, GOLD_PATCH, first)
        assert status == "resolved" and "install: ran (ok)" in log and "(slot 0)" in log, log
    slot0, slot1 = (RepoCache(cache).slot_path(PKG, n) for n in (0, 1))
    with RepoCache(cache).worktree(PKG, first, slot=0), preferred_slot(0):  # slot 0 held by another grade
        status, log = _grade(grader, first, GOLD_PATCH, first)
    assert status == "resolved" and "install: restored (ok)" in log and "(slot 1)" in log, log
    assert f"made in {slot0}, its path written over with this slot's" in log, log
    assert _state(cache)["worktree"] == str(slot1) and _calc_version(cache) == "0.1"
    [python] = list((cache / "envs").rglob("venv/bin/python"))
    where = subprocess.run([python, "-c", "import calc; print(calc.__file__)"], capture_output=True, text=True,
                           check=True, cwd=tmp_path).stdout.strip()
    assert where == str(slot1 / "calc" / "__init__.py")
    venv_files = [p for p in python.parent.parent.rglob("*") if p.is_file() and not p.is_symlink()]
    naming = {p.name for p in venv_files if str(slot1).encode() in p.read_bytes()}
    assert {"calc.egg-link", "easy-install.pth"} <= naming, naming  # this setuptools' editable install
    assert not [p for p in venv_files if str(slot0).encode() in p.read_bytes()]
    assert "Version: 0.1" in (slot1 / "calc.egg-info" / "PKG-INFO").read_text()
    assert (slot1 / "build" / "where.txt").read_text() == str(slot1)
    # the products as put back are what installed.json keeps: the next grade keeps them in place
    with preferred_slot(1):
        status, log = _grade(grader, first, WRONG_PATCH, first)
    assert status == "unresolved" and "install: reused (ok)" in log and "(slot 1)" in log, log


def test_a_failed_install_is_recorded_and_put_back_as_failed_in_any_slot(tmp_path: Path) -> None:
    """sympy 1.1's era setuptools cannot run on Python 3.9: its install fails, by itself,
    the same way every time. Recorded as a failure, it is put back as one in the other slot
    (with what it left, the grade still says the install failed) and never runs again; a
    failure that is not the install's own (killed by a signal, timed out) is not recorded."""
    from graders.host import RepoCache, preferred_slot

    runs = tmp_path / "runs.txt"
    count = f"p = __import__('pathlib').Path({str(runs)!r}); p.write_text(p.read_text() + 'x' if p.exists() else 'x')"
    src, setup = make_calc_package(tmp_path / "src", "2024-03-01T12:00:00Z")
    cache = tmp_path / "cache"
    grader = SwebenchGrader(cache_dir=cache, repo_sources={PKG: str(src)}, timeout_s=120)

    def grade(spec: EnvSpec, slot: int | None = None) -> str:
        if slot is None:
            status, log = _grade(grader, setup, GOLD_PATCH, setup, spec)
        else:
            with RepoCache(cache, {PKG: str(src)}).worktree(PKG, setup, slot=1 - slot), preferred_slot(1 - slot):
                status, log = _grade(grader, setup, GOLD_PATCH, setup, spec)
            assert f"(slot {slot})" in log, log
        assert status == "resolved", log  # the tests import calc from the checkout
        return log

    failing = msgspec.structs.replace(SPEC, install=f'python -c "{count}; open(\'partial.txt\', \'w\'); '
                                                  'raise SystemExit(3)"')
    log = grade(failing, 0)
    assert "install: ran (FAILED)" in log and "install recorded" in log and "a failure, put back as one" in log, log
    for slot in (1, 0, 1):
        log = grade(failing, slot)
        assert "install: restored (FAILED)" in log and "failed install put back" in log, log
        assert "SystemExit" not in log or "recorded install's log" in log
        assert _state(cache)["products"].keys() == {"partial.txt"}  # what the failure left, put back
    assert runs.read_text() == "x"

    runs.unlink()
    killed = msgspec.structs.replace(SPEC, install=f'python -c "{count}; import os, signal; '
                                                 'os.kill(os.getpid(), signal.SIGKILL)"')
    for _ in range(2):  # in the same slot: a failure that is not its own is not taken as it was either
        log = grade(killed)
        assert "install: ran (FAILED)" in log and "install recorded" not in log, log
    assert runs.read_text() == "xx"


def test_the_repositorys_own_requirements_resolve_as_of_the_era(tmp_path: Path) -> None:
    """pip knows no cut-off: sphinx 3.0's `docutils>=0.12` became docutils 0.21 (no
    `docutils.utils.roman`) and every sphinx 3.x run died on import. The requirements of
    `pip install -e .[test]` are installed as of the era first (real PyPI), and pip keeps them."""
    from graders._era_deps import parse_requires_txt, self_install_extras
    from tests.graders.env_support import installed_version
    from tests.graders.exec_support import make_calc_repo

    assert self_install_extras("python -m pip install -e .[test,docs]") == ["test", "docs"]
    assert self_install_extras("pip install .") == []
    assert self_install_extras("python setup.py develop") is None
    # SWE-bench's own lines with options that change nothing about what pip installs
    assert self_install_extras("python -m pip install -e .[test] --verbose") == ["test"]  # astropy
    assert self_install_extras("python -m pip install -v --no-use-pep517 --no-build-isolation -e .") == []
    assert self_install_extras('python -m pip install --no-build-isolation -e ".[dev]"') == ["dev"]
    # options that change what pip installs or from where: the line is left to pip
    assert self_install_extras("python -m pip install --no-index --find-links wheels -e .") is None
    assert self_install_extras("python -m pip install --no-deps -e .") is None
    assert self_install_extras("pip install -e . other") is None
    assert parse_requires_txt('a>=1\n\n[test]\nb\n\n[test:python_version < "3.8"]\nc\n\n[docs]\nd\n', ["test"]) == [
        "a>=1", "b", 'c ; python_version < "3.8"']

    src, _ = make_calc_repo(tmp_path / "src")
    write(src, "setup.py", 'from setuptools import setup\n\nsetup(name="calc", version="0.1", packages=["calc"], '
                           'install_requires=["docutils"], extras_require={"test": ["six"]})\n')
    base = commit_at(src, "calc with requirements", "2020-06-01T12:00:00Z")
    python, log = _gold_with_test_extras(tmp_path, src, base)
    assert installed_version(python, "docutils") == "0.16", log  # 0.17 came out in 2021
    assert installed_version(python, "six") == "1.15.0", log  # 1.16.0: May 2021
    assert installed_version(python, "pytest") == "7.4.4"  # the spec's pin is kept


def test_every_install_starts_from_the_packages_the_env_was_built_with(tmp_path: Path) -> None:
    """An install for other dependency manifests left its packages in the venv, and the
    next install kept whatever satisfied it (sphinx: pytest 8 from an unpinned install
    stayed where the era has pytest 6). Each install now starts from the build's packages."""
    from tests.graders.env_support import installed_version, make_wheel

    links = tmp_path / "links"
    make_wheel(links, "tinyextra", "1.0")
    src, first = make_calc_package(tmp_path / "src", "2024-03-01T12:00:00Z")
    write(src, "setup.py", 'from setuptools import setup\n\nsetup(name="calc", version="0.2", packages=["calc"], '
                           'install_requires=["tinyextra"])\n')
    needs_extra = commit_at(src, "needs tinyextra", "2024-03-02T12:00:00Z")
    write(src, "setup.py", SETUP_PY.format(version="0.3"))
    without = commit_at(src, "tinyextra no more", "2024-03-03T12:00:00Z")
    spec = EnvSpec(python=None, pip_packages=["pytest"], test_cmd="pytest -rA",
                   install=f"python -m pip install --no-build-isolation --no-index --find-links {links} -e .")
    cache = tmp_path / "cache"
    grader = SwebenchGrader(cache_dir=cache, repo_sources={PKG: str(src)}, timeout_s=120)

    def grade(commit: str) -> str:
        out = grader.grade(GradeRequest(
            instance_id="acme__calcpkg-1", repo=PKG, version="0.1", base_commit=commit, model_patch=GOLD_PATCH,
            test_patch=TEST_PATCH, fail_to_pass=F2P, pass_to_pass=P2P, environment=spec,
            environment_setup_commit=first,
        ))
        assert out.status == "resolved", out.log.decode()
        return out.log.decode()

    grade(needs_extra)
    [python] = list((cache / "envs").rglob("venv/bin/python"))
    assert installed_version(python, "tinyextra") == "1.0"
    [built] = list((cache / "envs").rglob("built.txt"))
    assert "pytest==" in built.read_text() and "tinyextra" not in built.read_text()
    grade(without)
    gone = subprocess.run([str(python), "-c", "import tinyextra"], capture_output=True)
    assert gone.returncode != 0, "the earlier install's package is still in the venv"
    assert installed_version(python, "pytest")  # the build's own packages stay


def test_a_requirement_the_era_cannot_supply_comes_as_of_the_images_never_today(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """astropy 3.1 (`pip install -e .[test]`, Python 3.9, cut-off 2019-06): pytest-mpl of the
    era needs a matplotlib of then, which has no wheel for 3.9 and does not build. Left to
    pip, the requirement took today's releases (pyparsing 3.3, whose DeprecationWarnings
    astropy's tests raise as errors: no test ran). It now comes with its dependencies as of
    SWE-bench's images, and what the era can supply stays of the era."""
    from tests.graders.env_support import installed_version, make_sdist, make_wheel

    broken = "raise SystemExit('error: this C extension does not compile on this Python')\n"
    releases = {
        "tinyplot": [("1.0", "2019-01-01T00:00:00Z", make_sdist(tmp_path / "w1", "tinyplot", "1.0", broken)),
                     ("2.0", "2023-06-01T00:00:00Z", make_wheel(tmp_path / "w2", "tinyplot", "2.0")),
                     ("3.0", "2025-06-01T00:00:00Z", make_wheel(tmp_path / "w3", "tinyplot", "3.0"))],
        "tinympl": [("0.5", "2019-01-01T00:00:00Z", make_wheel(tmp_path / "w4", "tinympl", "0.5", ("tinyplot",))),
                    ("0.9", "2025-06-01T00:00:00Z", make_wheel(tmp_path / "w5", "tinympl", "0.9", ("tinyplot",)))],
        "tinyera": [("1.0", "2019-01-01T00:00:00Z", make_wheel(tmp_path / "w6", "tinyera", "1.0")),
                    ("2.0", "2023-06-01T00:00:00Z", make_wheel(tmp_path / "w7", "tinyera", "2.0"))],
    }
    python, log = _gold_on_dated_index(tmp_path, monkeypatch, releases, 'extras_require={"test": ["tinympl", "tinyera"]}')
    assert installed_version(python, "tinyplot") == "2.0", log  # of the images, not 3.0 of today
    assert installed_version(python, "tinympl") == "0.5", log  # the era's still, as of the images too
    assert installed_version(python, "tinyera") == "1.0", log


def test_an_install_line_with_pip_options_still_resolves_as_of_the_era(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """astropy's install line is `python -m pip install -e .[test] --verbose`: the trailing
    option hid it from the era step, so pip alone installed astropy 3.1's test extras as of
    today (pytest-mpl brought matplotlib 3.9 and pyparsing 3.3, whose DeprecationWarnings
    astropy's tests raise as errors: the gold patches of 8707 and 8872 failed). The era
    step now reads such lines, and nothing pip installs goes past it."""
    from tests.graders.env_support import installed_version, make_wheel

    releases = {
        "tinyera": [("1.0", "2019-01-01T00:00:00Z", make_wheel(tmp_path / "w1", "tinyera", "1.0")),
                    ("2.0", "2023-06-01T00:00:00Z", make_wheel(tmp_path / "w2", "tinyera", "2.0"))],
        "tinydep": [("1.0", "2019-01-01T00:00:00Z", make_wheel(tmp_path / "w3", "tinydep", "1.0")),
                    ("3.0", "2025-06-01T00:00:00Z", make_wheel(tmp_path / "w4", "tinydep", "3.0"))],
    }
    python, log = _gold_on_dated_index(tmp_path, monkeypatch, releases,
                                       'install_requires=["tinydep"], extras_require={"test": ["tinyera"]}',
                                       "python -m pip install -e .[test] --verbose")
    assert installed_version(python, "tinyera") == "1.0", log  # 2.0 is of 2023
    assert installed_version(python, "tinydep") == "1.0", log  # 3.0 is of 2025
    assert "pip installed past the era" not in log, log


def test_what_pip_installs_past_the_era_step_is_named_in_the_grade_log(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A requirement no release of the era (nor of SWE-bench's images) supplies is left to
    pip, which takes today's: the grade's log names it, so an environment that is not of
    its era never passes unseen."""
    from tests.graders.env_support import installed_version, make_wheel

    releases = {"tinynew": [("3.0", "2025-06-01T00:00:00Z", make_wheel(tmp_path / "w1", "tinynew", "3.0"))],
                "tinyera": [("1.0", "2019-01-01T00:00:00Z", make_wheel(tmp_path / "w2", "tinyera", "1.0"))]}
    python, log = _gold_on_dated_index(tmp_path, monkeypatch, releases, 'extras_require={"test": ["tinyera", "tinynew"]}',
                                       "python -m pip install -e .[test] --verbose")
    assert installed_version(python, "tinynew") == "3.0"
    [line] = [x for x in log.splitlines() if "pip installed past the era step" in x]
    assert "tinynew==3.0" in line and "tinyera" not in line, line
