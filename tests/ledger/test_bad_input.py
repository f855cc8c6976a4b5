"""Files that are not usable ledgers: one-line error, exit 2, and not a byte written."""

from __future__ import annotations

import os
import subprocess
import sys
import shutil
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import apsw
import pytest

from bench.processes import pycache_prefix
from ledger import Ledger, LedgerError
from ledger.events import RunFinished


def swecl(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "commands", *args],
        capture_output=True,
        text=True,
        # bytecode in the tests' shared cache: each of these processes would otherwise compile
        # swecl's imports where PYTHONDONTWRITEBYTECODE is set
        env={**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
             "PYTHONPYCACHEPREFIX": pycache_prefix(), **(env or {})},
        timeout=60,
    )


def assert_one_line_error(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("swecl: error: ")
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in lines[0]


def snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


@pytest.mark.parametrize("content", [b"not a database at all\n", b"\x00" * 4096, b"SQLite format 3\x00" + b"\xff" * 200])
def test_a_file_that_is_not_a_ledger(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "ledger.db").write_bytes(content)
    before = snapshot(tmp_path)
    for cmd in (["log"], ["verify"], ["init"]):
        proc = swecl("--results", str(tmp_path), *cmd)
        assert_one_line_error(proc, "ledger.db", "not")
    assert snapshot(tmp_path) == before


def test_an_sqlite_database_of_someone_else(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    conn.close()
    before = snapshot(tmp_path)
    assert_one_line_error(swecl("--results", str(tmp_path), "init"), "not a swecl ledger")
    assert_one_line_error(swecl("--results", str(tmp_path), "log"), "not a swecl ledger")
    assert snapshot(tmp_path) == before


def test_a_ledger_of_a_newer_store_schema(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    Ledger.open(path, create=True).close()
    conn = apsw.Connection(str(path))
    conn.execute("UPDATE swecl_meta SET value = '99' WHERE key = 'store_schema'")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    before = snapshot(tmp_path)
    for cmd in (["log"], ["verify"], ["init"]):
        assert_one_line_error(swecl("--results", str(tmp_path), *cmd), "store schema 99", "upgrade swecl")
    assert snapshot(tmp_path) == before


@contextmanager
def read_only(path: Path) -> Iterator[None]:
    """Make `path` read-only for real: chmod for users, the immutable attribute for root."""
    if os.geteuid() != 0:
        path.chmod(0o444)
        yield
        path.chmod(0o644)
        return
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(path)]).returncode != 0:
        pytest.skip("SKIPPED LOUDLY: running as root without a working `chattr +i`: cannot make a file read-only")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def test_a_read_only_ledger_file(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    led = Ledger.open(path, create=True)
    led.append("s", [RunFinished(status="finished")])
    led.close()
    before = path.read_bytes()
    with read_only(path):
        led = Ledger.open(path)
        assert led.readonly
        with pytest.raises(LedgerError, match="read-only; nothing was written"):
            led.append("s", [RunFinished(status="x")])
        assert [r.event for r in led.read()] == [RunFinished(status="finished")]
        led.close()
        proc = swecl("--results", str(tmp_path), "log")
        assert proc.returncode == 0 and "run.finished" in proc.stdout
    assert path.read_bytes() == before


def test_a_ledger_opened_read_only_refuses_writes(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    Ledger.open(path, create=True).close()
    before = path.read_bytes()
    led = Ledger.open(path, readonly=True)
    with pytest.raises(LedgerError, match="read-only; nothing was written"):
        led.append("s", [RunFinished(status="x")])
    with pytest.raises(LedgerError, match="read-only"):
        led.put_blob(b"x")
    led.close()
    assert path.read_bytes() == before


def test_a_locked_ledger(tmp_path: Path) -> None:
    """Another process holds an exclusive lock: give up after the busy timeout, in one line."""
    path = tmp_path / "ledger.db"
    Ledger.open(path, create=True).close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import apsw, sys, time
                c = apsw.Connection({str(path)!r})
                c.execute("PRAGMA locking_mode=EXCLUSIVE")
                c.execute("BEGIN EXCLUSIVE")
                c.execute("INSERT INTO swecl_meta VALUES ('lock-holder', 'x')")
                print("locked", flush=True)
                time.sleep(30)
                """
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        env = {"SWECL_BUSY_TIMEOUT_MS": "300"}
        assert_one_line_error(swecl("--results", str(tmp_path), "log", env=env), "locked")
        assert_one_line_error(swecl("--results", str(tmp_path), "verify", env=env), "locked")
    finally:
        holder.kill()
        holder.wait()
    assert list(Ledger.open(path).read()) == []


def test_missing_ledger_says_how_to_create_one(tmp_path: Path) -> None:
    assert_one_line_error(swecl("--results", str(tmp_path / "nowhere"), "log"), "start with `swecl run`",
                          str(tmp_path / "nowhere" / "ledger.db"))
    assert not (tmp_path / "nowhere").exists()
