"""The records of the repository's installs (`graders._install_record`): what is compared
before one is put back, and how many are kept. Putting them back is tested with real
installs in `test_env_install.py`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from graders import _install_record


def test_the_venv_must_match_but_for_what_the_install_itself_writes() -> None:
    built = {"lib/a.py": [10, 1], "lib/b.py": [20, 2], "bin/tool": ["->", "python"]}
    later = {**built, "lib/a.py": [10, 99]}  # times differ from venv to venv: sizes and names count
    assert _install_record.venv_listing(built) == _install_record.venv_listing(later)
    # an uninstall left an empty easy-install.pth behind: the install writes it anyway
    leftover = {**built, "lib/easy-install.pth": [0, 5]}
    assert _install_record.venv_listing(built) != _install_record.venv_listing(leftover)
    assert (_install_record.venv_listing(built, ["lib/easy-install.pth"])
            == _install_record.venv_listing(leftover, ["lib/easy-install.pth"]))
    assert _install_record.venv_listing(built) != _install_record.venv_listing({**built, "lib/b.py": [21, 2]})
    assert _install_record.venv_listing(built) != _install_record.venv_listing({**built, "bin/tool": ["->", "python3"]})


def test_bytecode_caches_never_decide_whether_a_record_fits() -> None:
    """astropy 5.0: a record made while hypothesis's bytecode caches were in the venv never
    fitted once they were removed (guard_env removes new caches before a grade), so every
    install of the environment's first pass ran again in the next."""
    built = {"lib/python3.9/site-packages/hypothesis/core.py": [10, 1]}
    cached = {**built, "lib/python3.9/site-packages/hypothesis/__pycache__/core.cpython-39.pyc": [7, 2],
              "lib/python3.9/site-packages/old.pyc": [3, 3]}
    assert _install_record.venv_listing(built) == _install_record.venv_listing(cached)
    assert _install_record._difference(_install_record._listed(built), _install_record._listed(cached)) == ""
    # what differs otherwise is named, for the line that says why an install ran again
    other = {**built, "lib/python3.9/site-packages/extra.py": [1, 1]}
    assert _install_record._difference(_install_record._listed(built), _install_record._listed(other)) == \
        "+lib/python3.9/site-packages/extra.py"


def test_the_most_recently_used_records_are_kept_and_a_crashed_recording_goes(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_install_record, "KEEP", 2)
    root = tmp_path / _install_record.INSTALLS
    for age, name in enumerate(["newest", "old", "oldest"]):
        (root / name).mkdir(parents=True)
        meta = root / name / "record.json"
        meta.write_text("{}")
        os.utime(meta, (1_000_000 - age * 100, 1_000_000 - age * 100))
    (root / ".tmp-crashed").mkdir()
    _install_record._drop_oldest(root)
    assert sorted(p.name for p in root.iterdir()) == ["newest", "old"]
