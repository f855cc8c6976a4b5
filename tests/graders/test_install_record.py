"""The records of the repository's installs (`graders._install_record`): what is compared
before one is put back, and how many are kept. Putting them back is tested with real
installs in `test_env_install.py`."""

from __future__ import annotations

import hashlib
import os
import time
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


def test_a_records_files_are_hashed_once_then_known_by_their_stat(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A record is checked before every put-back; hashing a sphinx record's 4,200 files each
    time was half a warm grade's own cost. A file hashed once is known by its inode, size
    and times, and any change (content, even with the same size and the old modification
    time) moves its change time, so it is hashed again and caught."""
    folder = tmp_path / "record"
    (folder / "venv").mkdir(parents=True)
    files = {"venv/a.py": b"alpha\n", "venv/b.py": b"beta\n"}
    for rel, data in files.items():
        (folder / rel).write_bytes(data)
    wanted = [(folder / rel, tmp_path / "target" / rel, hashlib.sha256(data).hexdigest()) for rel, data in files.items()]
    hashed: list[str] = []
    real_hash = _install_record._hash_of
    monkeypatch.setattr(_install_record, "_hash_of", lambda p: hashed.append(p.name) or real_hash(p))
    # files written just now are within the clock's grain: hashed every time until they are not
    assert _install_record._changed_file(folder, wanted) is None
    assert _install_record._changed_file(folder, wanted) is None
    assert hashed == ["a.py", "b.py", "a.py", "b.py"]
    real_ns = _install_record.time.time_ns
    monkeypatch.setattr(_install_record.time, "time_ns", lambda: real_ns() + 10_000_000_000)
    hashed.clear()
    assert _install_record._changed_file(folder, wanted) is None  # hashed, then kept by stat
    assert _install_record._changed_file(folder, wanted) is None
    assert hashed == ["a.py", "b.py"]
    # the same size, the modification time set back: the change time still moved
    target = folder / "venv" / "b.py"
    st = target.stat()
    time.sleep(0.05)  # past the file clock's grain (a few ms), which the real check waits out with its 2 s
    target.write_bytes(b"BETA\n")
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    hashed.clear()
    assert _install_record._changed_file(folder, wanted) == target
    assert hashed == ["b.py"]


def test_a_file_written_over_for_another_slot_is_never_read_from_bytecode_of_the_first(tmp_path: Path) -> None:
    """A record made in slot 0 put back in slot 1: astropy's editable finder is rewritten
    with slot 1's path, same size. Kept at the record's time, the environment's bytecode
    cache compiled from the slot-0 text still passed Python's check (a source's time and
    size), the finder mapped astropy to slot 0, which the sandbox hides, and no test ran."""
    import subprocess
    import sys

    venv, record, prefix = tmp_path / "venv", tmp_path / "record", tmp_path / "pycache"
    venv.mkdir()
    record.mkdir()
    for place in (venv, record):  # the module as the record holds it, and as put back in slot 0 before
        (place / "finder.py").write_text("WHERE = '/cache/worktrees/slot-0'\n")
        os.utime(place / "finder.py", (1_700_000_000, 1_700_000_000))
    run = [sys.executable, "-c", "import finder; print(finder.WHERE)"]
    env = {**os.environ, "PYTHONPATH": os.fspath(venv), "PYTHONPYCACHEPREFIX": os.fspath(prefix)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    assert subprocess.run(run, env=env, capture_output=True, text=True, check=True).stdout.strip() == \
        "/cache/worktrees/slot-0"
    assert list(prefix.rglob("finder.*.pyc"))  # compiled from the slot-0 text
    os.unlink(venv / "finder.py")
    digest = _install_record._copy_relocated(os.fspath(record / "finder.py"), os.fspath(venv / "finder.py"),
                                             b"/cache/worktrees/slot-0", b"/cache/worktrees/slot-1")
    assert digest == hashlib.sha256(b"WHERE = '/cache/worktrees/slot-1'\n").hexdigest()
    assert subprocess.run(run, env=env, capture_output=True, text=True, check=True).stdout.strip() == \
        "/cache/worktrees/slot-1"
