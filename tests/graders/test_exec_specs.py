"""The environment spec table and the spec override rule."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from graders._specs import EnvSpec, UnknownEnvSpec, has_spec, known_specs, requirements_paths, spec_for

CL_REPOS = {
    "django/django", "sympy/sympy", "sphinx-doc/sphinx", "matplotlib/matplotlib",
    "scikit-learn/scikit-learn", "astropy/astropy", "pydata/xarray", "pytest-dev/pytest",
}


def test_table_covers_the_eight_repos() -> None:
    assert set(known_specs()) == CL_REPOS


def test_every_sequence_task_has_a_spec(shared: Path) -> None:
    manifest = json.loads((shared / "data" / "SWE-Bench-CL-order-manifest.reconstructed.json").read_text())
    tasks = [t for s in manifest["sequences"] for t in s["tasks"]]
    assert len(tasks) == 273
    for t in tasks:
        repo, version = t["metadata"]["repo"], t["swebench_verified_extra"]["version"]
        spec = spec_for(repo, version)
        assert spec.test_cmd and spec.python, (repo, version)


# The command SWE-bench made the task lists with (its TEST_PYTEST until release 2.0.7), for
# the repos that ran it; 4.1.0's table has `pytest -rA` there (see extract_env_specs.py).
LISTS_TEST_PYTEST = "pytest --no-header -rA --tb=no -p no:cacheprovider"
LISTS_TEST_PYTEST_REPOS = {"astropy/astropy", "matplotlib/matplotlib", "pydata/xarray", "scikit-learn/scikit-learn"}


def test_table_matches_the_swebench_export(shared: Path) -> None:
    source = json.loads((shared / "data" / "swebench-4.1.0-python-env-specs.json").read_text())
    restored = 0
    for repo in CL_REPOS:
        for version, raw in source[repo].items():
            spec = spec_for(repo, version)
            assert spec.python == raw["python"]
            assert spec.pip_packages == raw.get("pip_packages", [])
            if repo in LISTS_TEST_PYTEST_REPOS and raw.get("test_cmd") == "pytest -rA":
                assert spec.test_cmd == LISTS_TEST_PYTEST, (repo, version)
                restored += 1
            else:
                assert spec.test_cmd == raw.get("test_cmd"), (repo, version)
            assert spec.install == raw.get("install")
            assert spec.pre_install == raw.get("pre_install", [])
            assert spec.eval_commands == raw.get("eval_commands", [])
    assert restored == 45  # astropy 3.0 to v5.3 (10), matplotlib (19), xarray (9), scikit-learn (7)


def test_task_lists_command_where_swebench_made_the_lists_with_it() -> None:
    # astropy 3.1 (whose own header hook would leave DeprecationWarnings raised as errors),
    # the other versions of pytest 7.4.0 and the repos of the same harness command
    for repo, version in [("astropy/astropy", "3.1"), ("astropy/astropy", "5.2"), ("pydata/xarray", "0.12"),
                          ("matplotlib/matplotlib", "3.5"), ("scikit-learn/scikit-learn", "0.20")]:
        assert spec_for(repo, version).test_cmd == LISTS_TEST_PYTEST, (repo, version)
    # pytest-dev ran `pytest -rA` from the start; astropy 1.3's command (pytest 3.3.1) is 4.1.0's own
    assert spec_for("pytest-dev/pytest", "5.4").test_cmd == "pytest -rA"
    assert spec_for("astropy/astropy", "1.3").test_cmd == "pytest -rA -vv -o console_output_style=classic --tb=no"


def test_compiled_repos_reinstall_per_task() -> None:
    assert spec_for("scikit-learn/scikit-learn", "1.3").install_per_task
    assert spec_for("astropy/astropy", "5.0").install_per_task
    assert spec_for("matplotlib/matplotlib", "3.5").install_per_task
    assert not spec_for("django/django", "3.0").install_per_task
    assert spec_for("django/django", "2.2").install_per_task  # `setup.py install` copies the package
    assert requirements_paths("django/django") == ("tests/requirements/py3.txt",)


def test_a_task_environment_wins_whole() -> None:
    own = EnvSpec(python="3.11", test_cmd="pytest -rA -x")
    assert spec_for("django/django", "3.0", own) is own
    assert spec_for("acme/unknown", "1", own) is own
    assert has_spec("django/django", "3.0") and not has_spec("django/django", "0.0") and not has_spec("acme/x", "1")


def test_unknown_specs_say_what_to_do() -> None:
    with pytest.raises(UnknownEnvSpec, match="known versions are"):
        spec_for("django/django", "0.0")
    with pytest.raises(UnknownEnvSpec, match="environment"):
        spec_for("acme/unknown", "1.0")


def test_spec_hash_is_stable_and_tracks_env_shaping_fields() -> None:
    spec = spec_for("django/django", "3.0")
    code = "from graders._specs import spec_for; print(spec_for('django/django', '3.0').spec_hash())"
    other_process = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                   cwd=Path(__file__).resolve().parents[2]).stdout.strip()
    assert other_process == spec.spec_hash()
    assert msgspec.structs.replace(spec, pip_packages=["x==1"]).spec_hash() != spec.spec_hash()
    assert msgspec.structs.replace(spec, python="3.7").spec_hash() != spec.spec_hash()
    assert msgspec.structs.replace(spec, test_cmd="other").spec_hash() == spec.spec_hash()


def test_env_spec_decodes_from_task_json_and_rejects_typos() -> None:
    spec = msgspec.json.decode(b'{"python": "3.9", "pip_packages": ["pytest"]}', type=EnvSpec)
    assert spec.python == "3.9" and spec.install is None and spec.pre_install == []
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(b'{"pyhton": "3.9"}', type=EnvSpec)
