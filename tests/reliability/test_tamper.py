"""Tamper evidence on a real run's ledger, through `swecl verify` as a user runs it.

The store's own contract tests (tests/ledger/contract.py) alter rows of a small ledger;
here the victim is a whole demo run, and the attacker first drops the append-only
triggers (anyone with the file can), then edits with plain SQL.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import apsw
import pytest

from .crashkit import SPANS, read_events, swecl

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> tuple[Path, str]:
    """A finished run's results dir, and the head hash `swecl verify` printed for it."""
    results = tmp_path_factory.mktemp("original")
    swecl(results, "run", "--stage", "plugin-blank", "--sequence", SPANS, "--passes", "initial", "--version", "v",
          "--quiet", cache=cache)
    line = swecl(results, "verify", cache=cache).stdout.strip()
    return results, line.rsplit(" ", 1)[-1]


def _copy(original: tuple[Path, str], tmp_path: Path) -> Path:
    results = tmp_path / "results"
    shutil.copytree(original[0], results)
    return results


def _sql(results: Path, *statements: str, params: tuple = ()) -> None:
    conn = apsw.Connection(str(results / "ledger.db"))
    for trigger in ("events_no_update", "events_no_delete", "events_append_only", "blobs_no_update",
                    "blobs_no_delete"):
        conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    for statement in statements:
        conn.execute(statement, params)
    conn.close()


def _verify_fails(results: Path, cache: Path) -> str:
    """The one line `swecl verify` prints for a ledger that fails (its exit code is
    checked once, in test_verify_exits_1_on_a_tampered_ledger)."""
    done = swecl(results, "verify", cache=cache, check=False)
    assert not done.stdout.startswith("ledger OK"), done.stdout
    assert done.stderr.startswith("swecl: verify failed: ") and len(done.stderr.strip().splitlines()) == 1
    return done.stderr


def test_verify_exits_1_on_a_tampered_ledger(original: tuple[Path, str], tmp_path: Path, cache: Path) -> None:
    """Scripts and CI trust the exit code: 0 intact, 1 tampered (`swecl verify --help`)."""
    results = _copy(original, tmp_path)
    _sql(results, "DELETE FROM events WHERE seq = 5")
    done = swecl(results, "verify", cache=cache, check=False)
    assert done.stderr.startswith("swecl: verify failed: ")
    assert done.returncode == 1


def test_the_database_itself_refuses_edits(original: tuple[Path, str], tmp_path: Path) -> None:
    results = _copy(original, tmp_path)
    conn = apsw.Connection(str(results / "ledger.db"))
    with pytest.raises(apsw.ConstraintError):
        conn.execute("UPDATE events SET payload = payload WHERE seq = 3")
    with pytest.raises(apsw.ConstraintError):
        conn.execute("DELETE FROM events WHERE seq = 3")
    with pytest.raises(apsw.ConstraintError):
        conn.execute("DELETE FROM blobs")
    conn.close()


def test_an_edited_verdict_is_found_at_its_seq(original: tuple[Path, str], tmp_path: Path, cache: Path) -> None:
    results = _copy(original, tmp_path)
    (seq,) = [e["seq"] for e in read_events(results) if e["type"] == "task.finished" and not e["payload"]["resolved"]][:1]
    _sql(results, "UPDATE events SET payload = CAST(replace(CAST(payload AS TEXT), '\"resolved\":false', "
                  "'\"resolved\":true') AS BLOB) WHERE seq = ?", params=(seq,))
    assert f"seq {seq}: hash mismatch" in _verify_fails(results, cache)


def test_a_deleted_event_is_found(original: tuple[Path, str], tmp_path: Path, cache: Path) -> None:
    results = _copy(original, tmp_path)
    _sql(results, "DELETE FROM events WHERE seq = 7")
    assert "seq 7 is missing" in _verify_fails(results, cache)


def test_a_swapped_patch_blob_is_found(original: tuple[Path, str], tmp_path: Path, cache: Path) -> None:
    results = _copy(original, tmp_path)
    (digest,) = [e["payload"]["patch"] for e in read_events(results) if e["type"] == "agent.finished"][:1]
    _sql(results, "UPDATE blobs SET data = CAST('diff --git a/x b/x' AS BLOB), encoding = 'identity' WHERE sha256 = ?",
         params=(digest,))
    assert f"blob {digest}: content does not match its hash" in _verify_fails(results, cache)


def test_a_removed_blob_is_found(original: tuple[Path, str], tmp_path: Path, cache: Path) -> None:
    results = _copy(original, tmp_path)
    (digest,) = [e["payload"]["log"] for e in read_events(results) if e["type"] == "grade.finished"][:1]
    _sql(results, "DELETE FROM blobs WHERE sha256 = ?", params=(digest,))
    assert f"references blob {digest}, which is not in the ledger" in _verify_fails(results, cache)


def test_a_cut_tail_shows_as_another_head_hash(original: tuple[Path, str], tmp_path: Path, cache: Path) -> None:
    """Dropping the last events leaves a valid shorter chain: what exposes it is the head
    hash `swecl verify` printed before (keep it, e.g. in the paper or the run's notes)."""
    results = _copy(original, tmp_path)
    head = max(e["seq"] for e in read_events(results))
    _sql(results, "DELETE FROM events WHERE seq > ?", params=(head - 3,))
    line = swecl(results, "verify", cache=cache).stdout.strip()
    assert line.startswith("ledger OK") and line.rsplit(" ", 1)[-1] != original[1]
