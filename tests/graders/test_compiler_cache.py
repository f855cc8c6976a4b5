"""ccache under an install (graders._compiler_cache): a compile of the same source in
another worktree slot comes from the cache, and gives the object the compiler makes."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from graders._env_info import EnvInfo
from graders._install import install_environment
from tests.debian import apt_install

SOURCE = '#include "mod.h"\nint twice(int x) { return x * FACTOR; }\n'


@pytest.fixture(scope="module")
def ccache() -> str:
    found, why = apt_install(["ccache"], lambda: shutil.which("ccache"), "swecl-tests-ccache.lock")
    if not found:
        pytest.skip(f"ccache not available: {why}")
    if shutil.which("gcc") is None:
        pytest.skip("no gcc on PATH to compile with")
    return found


def _env(cache: Path) -> EnvInfo:
    path = cache / "envs" / "o__n" / "1.0" / "py3.11-0123456789ab"
    (path / "venv" / "bin").mkdir(parents=True)
    return EnvInfo(key="o__n/1.0/py3.11-0123456789ab", repo="o/n", version="1.0", spec_hash="0" * 12,
                   python_version="3.11", path=path, complete=True)


def _slot(cache: Path, n: int) -> Path:
    slot = cache / "worktrees" / "o__n" / f"slot-{n}"
    (slot / "include").mkdir(parents=True)
    (slot / "include" / "mod.h").write_text("#define FACTOR 2\n")
    (slot / "mod.c").write_text(SOURCE)
    return slot


def _compile(slot: Path, env: dict[str, str], *more: str) -> bytes:
    # as setuptools calls it: an absolute include folder inside the worktree
    subprocess.run(["gcc", "-O2", *more, "-I", os.fspath(slot / "include"), "-c", "mod.c", "-o", "mod.o"],
                   cwd=slot, env=env, check=True)
    return (slot / "mod.o").read_bytes()


def _pip_build_env(tmp: Path) -> Path:
    """A folder as pip's isolated build environment is: a new random name in TMPDIR at each
    install, holding the same headers (numpy's)."""
    folder = Path(tempfile.mkdtemp(prefix="pip-build-env-", dir=tmp)) / "overlay" / "include"
    folder.mkdir(parents=True)
    (folder / "numpyish.h").write_text("#define SCALE 3\n")
    return folder


def _stats(env: dict[str, str]) -> dict[str, int]:
    out = subprocess.run(["ccache", "--print-stats"], env=env, capture_output=True, text=True, check=True).stdout
    return {k: int(v) for k, v in (line.split("\t") for line in out.splitlines() if "\t" in line)}


def test_another_slots_compile_of_the_same_source_comes_from_the_cache(ccache: str, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    variables = install_environment(_env(cache))
    assert variables["CCACHE_DIR"] == os.fspath(cache / "ccache" / "store")
    links = cache / "ccache" / "bin"
    assert variables["PATH"].split(os.pathsep)[0] == os.fspath(links)
    assert f"exec {ccache} {shutil.which('gcc')} " in (links / "gcc").read_text()

    first = _compile(_slot(cache, 0), variables)
    second = _compile(_slot(cache, 1), variables)
    stats = _stats(variables)
    assert stats.get("direct_cache_hit", 0) + stats.get("preprocessed_cache_hit", 0) == 1
    assert stats.get("cache_miss", 0) == 1

    # the compiler itself, without ccache's links on PATH
    assert first == second == _compile(_slot(tmp_path / "bare", 0), dict(os.environ))


def test_pips_random_build_environment_folder_does_not_make_every_install_a_miss(ccache: str, tmp_path: Path) -> None:
    """astropy's Cython modules include numpy's headers from pip's build environment, a
    new random folder at each install: named through the install's own link, the second
    install's compile is a hit, and the object is the compiler's own."""
    cache = tmp_path / "cache"
    env = _env(cache)
    variables = install_environment(env)
    tmp = Path(variables["TMPDIR"])
    assert tmp == env.path / "build-tmp" and tmp.is_dir()
    objects = []
    for n in (0, 1):
        headers = _pip_build_env(tmp)
        objects.append(_compile(_slot(cache, n), variables, "-include", "numpyish.h", "-I", os.fspath(headers)))
        assert os.readlink(tmp / "build-env") == headers.parent.parent.name  # the link follows pip's folder
        shutil.rmtree(headers.parent.parent)  # pip removes it after the build
    stats = _stats(variables)
    assert stats.get("direct_cache_hit", 0) + stats.get("preprocessed_cache_hit", 0) == 1, stats
    assert stats.get("cache_miss", 0) == 1, stats
    bare = _pip_build_env(tmp_path)
    assert objects[0] == objects[1] == _compile(_slot(tmp_path / "bare", 0), dict(os.environ), "-include",
                                                "numpyish.h", "-I", os.fspath(bare))


def test_turned_off_or_without_ccache_the_install_calls_the_compiler_itself(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    env = _env(tmp_path / "cache")
    monkeypatch.setenv("SWECL_CCACHE", "0")
    assert "CCACHE_DIR" not in install_environment(env)
    monkeypatch.delenv("SWECL_CCACHE")
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", os.fspath(empty))  # no ccache, no compiler
    variables = install_environment(env)
    assert "CCACHE_DIR" not in variables
    assert not (tmp_path / "cache" / "ccache").exists()


def _section(obj: bytes, name: str, tmp: Path) -> bytes | None:
    """The bytes of one section of an object file (None: it has no such section)."""
    (tmp / "in.o").write_bytes(obj)
    listing = subprocess.run(["objdump", "-h", os.fspath(tmp / "in.o")], capture_output=True, text=True,
                             check=True).stdout
    if f" {name} " not in listing:
        return None
    subprocess.run(["objcopy", "-O", "binary", f"--only-section={name}", os.fspath(tmp / "in.o"),
                    os.fspath(tmp / "out.bin")], check=True)
    return (tmp / "out.bin").read_bytes()


def test_a_compile_asking_for_debug_information_gets_the_same_code_without_it(ccache: str, tmp_path: Path) -> None:
    """sysconfig's `-g -O3`: through the install's compilers the object holds no DWARF and
    the same machine code as the compiler's own `-g` object; a link is left as it is."""
    if shutil.which("objdump") is None or shutil.which("objcopy") is None:
        pytest.skip("no binutils (objdump, objcopy) to read the objects with")
    cache = tmp_path / "cache"
    variables = install_environment(_env(cache))
    ours = _compile(_slot(cache, 0), variables, "-g", "-O3")
    bare = _compile(_slot(tmp_path / "bare", 0), dict(os.environ), "-g", "-O3")
    assert _section(bare, ".debug_info", tmp_path) is not None  # the compiler's own writes it
    assert _section(ours, ".debug_info", tmp_path) is None
    assert _section(ours, ".text", tmp_path) == _section(bare, ".text", tmp_path) != b""

    # a link (no -c) goes through with its own arguments only
    slot = cache / "worktrees" / "o__n" / "slot-0"
    (slot / "main.c").write_text("int twice(int);\nint main(void) { return twice(1) - 2; }\n")
    subprocess.run(["gcc", "-g", "-c", "main.c", "-o", "main.o"], cwd=slot, env=variables, check=True)
    linked = subprocess.run(["gcc", "-v", "main.o", "mod.o", "-o", "prog"], cwd=slot, env=variables,
                            capture_output=True, text=True, check=True)
    assert "-g0" not in linked.stderr
    assert subprocess.run([os.fspath(slot / "prog")]).returncode == 0


def test_an_environment_builds_fallback_compiles_again_from_the_cache(ccache: str, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """xarray 0.12's build compiled numcodecs' c-blosc in its first attempt (isolated) and
    again in the fallback without isolation: the environment build's compiles go through
    the cache's ccache as the installs' do, so the second compile of the same source is a
    hit, and the package installs."""
    from graders._envs import build_env
    from graders._specs import EnvSpec
    from tests.graders.env_support import installed_version, make_sdist, make_wheel
    from tests.graders.exec_support import REPO

    links = tmp_path / "links"
    make_wheel(links, "swecltest_helper", "1.0")
    # compiles as a build does (the compiler by its name on PATH), then needs what only the
    # venv has: the isolated attempt fails after its compile, the fallback compiles again
    setup = ("import subprocess\n"
             "open('part.c', 'w').write('int part(int x) { return 3 * x; }\\n')\n"
             "subprocess.check_call(['gcc', '-O2', '-c', 'part.c', '-o', 'part.o'])\n"
             "import swecltest_helper\n"
             "from setuptools import setup\n"
             "setup(name='swecltest_compiled', version='1.0', py_modules=['swecltest_compiled'])\n")
    make_sdist(links, "swecltest_compiled", "1.0", setup)
    monkeypatch.setenv("UV_FIND_LINKS", os.fspath(links))
    cache = tmp_path / "cache"
    spec = EnvSpec(python=None, packages="swecltest_helper", pip_packages=["swecltest_compiled==1.0"])
    build = build_env(REPO, "compiled", spec, cache_dir=cache)
    log = build.log_path.read_text() if build.log_path else ""
    assert build.warnings == [], log
    assert installed_version(build.env.python, "swecltest_compiled") == "1.0"
    assert "--no-build-isolation swecltest_compiled==1.0" in log  # it did compile twice
    stats = _stats({**os.environ, "CCACHE_DIR": os.fspath(cache / "ccache" / "store")})
    # compiled once; every later run of setup.py (uv asks it for metadata, then a wheel) hits
    assert stats.get("cache_miss", 0) == 1, stats
    assert stats.get("direct_cache_hit", 0) + stats.get("preprocessed_cache_hit", 0) >= 1, stats
