"""An era release that does not run on the environment's Python is replaced by a later
one (xarray 2022.06 on Python 3.10: pydap 3.2.2 imports `Mapping` from `collections`),
and only then: a missing optional dependency, or a pin, stays as it is."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from graders._envs import build_env
from graders._py_compat import import_breakages, modules_of
from graders._specs import EnvSpec
from tests.graders.env_support import dated_index, installed_version, make_wheel
from tests.graders.exec_support import REPO

OLD, NEW, CUTOFF = "2020-05-01T00:00:00Z", "2023-03-01T00:00:00Z", "2021-01-01T00:00:00Z"
# What pydap 3.2.2 does, and what stopped working in Python 3.10.
BROKEN = "from collections import Mapping\n"
FIXED = "from collections.abc import Mapping\n"
# An optional extra that is not installed: the package's normal behaviour on any Python.
OPTIONAL = "try:\n    import not_installed_anywhere\nexcept ImportError:\n    pass\nimport not_installed_either\n"


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    wheels = tmp_path / "wheels"
    releases = {
        "tinyclient": [
            ("1.0", OLD, make_wheel(wheels / "a", "tinyclient", "1.0", modules={"client.py": BROKEN})),
            ("2.0", NEW, make_wheel(wheels / "b", "tinyclient", "2.0", modules={"client.py": FIXED})),
        ],
        "tinyextras": [("1.0", OLD, make_wheel(wheels / "c", "tinyextras", "1.0", modules={"plot.py": OPTIONAL}))],
        # A package that imports the broken one: the failure is charged to tinyclient.
        "tinyuser": [("1.0", OLD, make_wheel(wheels / "d", "tinyuser", "1.0", requires=("tinyclient",),
                                             modules={"use.py": "import tinyclient.client\n"}))],
    }
    with dated_index(tmp_path / "index", releases) as url:
        monkeypatch.setenv("UV_EXTRA_INDEX_URL", url)  # pip and setuptools still come from PyPI
        yield url


def test_an_era_release_broken_on_this_python_is_replaced(tmp_path: Path, index: str) -> None:
    spec = EnvSpec(python=None, packages="tinyuser tinyextras tinyclient")
    build = build_env(REPO, "compat", spec, cache_dir=tmp_path / "cache", exclude_newer=CUTOFF)
    log = build.log_path.read_text() if build.log_path else ""
    python = build.env.python
    assert installed_version(python, "tinyclient") == "2.0", log
    subprocess.run([str(python), "-c", "import tinyuser.use"], check=True)
    said = [w for w in build.warnings if "tinyclient" in w]
    assert len(said) == 1 and "tinyclient 1.0 (of the era)" in said[0] and "installed tinyclient 2.0" in said[0]
    assert "cannot import name 'Mapping'" in said[0]
    # the era still holds for everything else, and the optional import is not a breakage
    assert installed_version(python, "tinyextras") == "1.0" and installed_version(python, "tinyuser") == "1.0"
    assert not [w for w in build.warnings if "tinyextras" in w or "tinyuser" in w], build.warnings
    assert "--exclude-newer-package tinyclient=2024-12-31" in log


def test_a_pinned_release_stays_and_is_named(tmp_path: Path, index: str) -> None:
    spec = EnvSpec(python=None, packages="tinyuser", pip_packages=["tinyclient==1.0"])
    build = build_env(REPO, "compat-pin", spec, cache_dir=tmp_path / "cache", exclude_newer=CUTOFF)
    assert installed_version(build.env.python, "tinyclient") == "1.0"
    said = [w for w in build.warnings if "tinyclient" in w]
    assert len(said) == 1 and "pinned, so it stays" in said[0], build.warnings


def test_without_a_cutoff_nothing_is_probed(tmp_path: Path, index: str) -> None:
    """A pinned broken release would be named by the probe (see above): without a
    cut-off the probe does not run, so nothing is said."""
    spec = EnvSpec(python=None, packages="tinyuser", pip_packages=["tinyclient==1.0"])
    build = build_env(REPO, "compat-now", spec, cache_dir=tmp_path / "cache")
    assert installed_version(build.env.python, "tinyclient") == "1.0"
    assert build.warnings == []


def test_the_probe_names_the_module_and_skips_tests_and_private_modules(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "w", "tinypkg", "1.0", modules={
        "tests/test_x.py": BROKEN, "_private.py": BROKEN, "public.py": "import os\n"})
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python*/site-packages"))
    zipfile.ZipFile(wheel).extractall(site)
    assert modules_of(site / "tinypkg-1.0.dist-info") == ["tinypkg", "tinypkg.public"]
    assert import_breakages(venv / "bin" / "python", ["tinypkg"]) == {}
    (site / "tinypkg" / "public.py").write_text("import inspect\ninspect.no_such_function_anymore\n")
    # a RECORD lists the file, so the failure is charged to its package
    found = import_breakages(venv / "bin" / "python", ["tinypkg"])
    assert list(found) == ["tinypkg"] and "tinypkg.public: AttributeError" in found["tinypkg"].why


# What eccodes 1.4 does without the C library conda put beside it in SWE-bench's images,
# and what a binding over ctypes does: both fail at import, for want of a shared library.
NO_LIBRARY = 'raise RuntimeError("Cannot find the tinycodes library")\n'
NO_SHARED_OBJECT = 'import ctypes\nctypes.CDLL("libswecl-absent-for-tests.so.1")\n'
# A RuntimeError at import that is not about a library: the package's own business.
NO_DISPLAY = 'raise RuntimeError("no display to draw on")\n'


@pytest.fixture
def native_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    wheels = tmp_path / "wheels"
    releases = {
        "tinycodes": [
            ("1.0", OLD, make_wheel(wheels / "a", "tinycodes", "1.0", modules={"bindings.py": NO_LIBRARY})),
            ("2.0", NEW, make_wheel(wheels / "b", "tinycodes", "2.0", modules={"bindings.py": "LIBRARY = 'bundled'\n"})),
        ],
        # cfgrib's part: it imports the binding, so the failure is charged to tinycodes.
        "tinygrib": [("1.0", OLD, make_wheel(wheels / "c", "tinygrib", "1.0", requires=("tinycodes",),
                                             modules={"reader.py": "import tinycodes.bindings\n"}))],
        "tinyctypes": [
            ("1.0", OLD, make_wheel(wheels / "d", "tinyctypes", "1.0", modules={"lib.py": NO_SHARED_OBJECT})),
            ("2.0", NEW, make_wheel(wheels / "e", "tinyctypes", "2.0", modules={"lib.py": "import ctypes\n"})),
        ],
        "tinyrt": [
            ("1.0", OLD, make_wheel(wheels / "f", "tinyrt", "1.0", modules={"screen.py": NO_DISPLAY})),
            ("2.0", NEW, make_wheel(wheels / "g", "tinyrt", "2.0")),
        ],
    }
    with dated_index(tmp_path / "index", releases) as url:
        monkeypatch.setenv("UV_EXTRA_INDEX_URL", url)
        yield url


def test_an_era_release_whose_native_library_is_absent_is_replaced(tmp_path: Path, native_index: str) -> None:
    spec = EnvSpec(python=None, packages="tinygrib tinyctypes tinyrt")
    build = build_env(REPO, "native", spec, cache_dir=tmp_path / "cache", exclude_newer=CUTOFF)
    log = build.log_path.read_text() if build.log_path else ""
    python = build.env.python
    assert installed_version(python, "tinycodes") == "2.0", log
    assert installed_version(python, "tinyctypes") == "2.0", log
    subprocess.run([str(python), "-c", "import tinygrib.reader, tinyctypes.lib"], check=True)
    codes = [w for w in build.warnings if w.startswith("tinycodes")]
    assert len(codes) == 1 and "tinycodes 1.0 (of the era) cannot load its native library" in codes[0], build.warnings
    assert "Cannot find the tinycodes library" in codes[0] and "installed tinycodes 2.0" in codes[0]
    # ctypes raises from the standard library's file: charged to the package that called it
    ctypes_said = [w for w in build.warnings if w.startswith("tinyctypes")]
    assert len(ctypes_said) == 1 and "cannot open shared object file" in ctypes_said[0], build.warnings
    # the package that merely imports the binding, and an unrelated RuntimeError, stay
    assert installed_version(python, "tinygrib") == "1.0" and installed_version(python, "tinyrt") == "1.0"
    assert not [w for w in build.warnings if w.startswith(("tinygrib", "tinyrt"))], build.warnings
