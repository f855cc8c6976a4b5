"""Bundles end to end on real demo runs: made, signed, opened by every read command,
checked and graded again from an empty cache; and each kind of tampering refused in one
line with a non-zero exit."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import apsw
import pytest

from bench.processes import SPANS, swecl
from ledger import Ledger, chain_hash, encode_payload
from ledger.events import BundleSealed, MemoryRejected
from tests.ledger.test_bad_input import assert_one_line_error
from tests.ledger.test_integrity import raw


# A task's recorded status changed in place (payload is a BLOB column: text in, blob out).
TAMPER = ("UPDATE events SET payload = CAST(replace(CAST(payload AS TEXT), '\"status\":\"', '\"status\":\"x') AS BLOB) ")


def manifest_of(bundle: Path) -> tuple[int, dict]:
    """(seq of the seal, the manifest), read with nothing but SQLite, as docs/bundles.md says."""
    conn = sqlite3.connect(bundle)
    try:
        seq, payload = conn.execute("SELECT seq, payload FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        digest = json.loads(payload)["manifest"]
        encoding, data = conn.execute("SELECT encoding, data FROM blobs WHERE sha256 = ?", (digest,)).fetchone()
    finally:
        conn.close()
    assert encoding in ("identity", "zlib")
    import zlib

    return seq, json.loads(zlib.decompress(data) if encoding == "zlib" else data)


def check(bundle: Path, cache: Path, *args: str) -> tuple[int, str, str]:
    proc = swecl(bundle.parent, "check", str(bundle), *args, cache=cache, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def assert_refused(bundle: Path, cache: Path, needle: str, *args: str) -> None:
    code, _, err = check(bundle, cache, *args)
    assert code == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("swecl: check failed: "), err
    assert needle in lines[0], err
    assert "Traceback" not in err


def rechain(bundle: Path, after: int) -> None:
    """Recompute every hash after seq `after`, as a forger who knows the format would."""
    conn = apsw.Connection(str(bundle))
    rows = conn.execute("SELECT seq, event_id, stream, stream_version, type, schema, time, payload, hash FROM events "
                        "ORDER BY seq").fetchall()
    prev = bytes(rows[after - 1][8]) if after else bytes(32)
    updates = []
    for seq, event_id, stream, version, type_, schema, time, payload, _ in rows[after:]:
        digest = chain_hash(prev, seq, event_id, stream, version, type_, schema, time, bytes(payload))
        updates.append((prev, digest, seq))
        prev = digest
    conn.close()
    for prev_hash, digest, seq in updates:
        raw(bundle, "UPDATE events SET prev_hash = ?, hash = ? WHERE seq = ?", params=(prev_hash, digest, seq))


def reseal(bundle: Path, manifest: dict, **seal: object) -> None:
    """Store `manifest` as a new blob and point the seal at it (with `seal`'s fields), chain mended."""
    from commands._bundle import canonical_json

    body = canonical_json(manifest)
    import hashlib

    digest = hashlib.sha256(body).hexdigest()
    seq, _ = manifest_of(bundle)
    conn = sqlite3.connect(bundle)
    payload = json.loads(conn.execute("SELECT payload FROM events WHERE seq = ?", (seq,)).fetchone()[0])
    conn.close()
    payload.update(manifest=digest, **seal)
    payload.pop("type")
    text = encode_payload(BundleSealed(**payload))  # the bytes swecl itself would have written
    raw(bundle, "INSERT OR IGNORE INTO blobs (sha256, size, encoding, data) VALUES (?, ?, 'identity', ?)",
        params=(digest, len(body), body))
    raw(bundle, "UPDATE events SET payload = ? WHERE seq = ?", params=(text, seq))
    rechain(bundle, seq - 1)


def test_a_signed_bundle_holds_and_grades_again_from_an_empty_cache(signed_bundle: Path, keys: Path,
                                                                    tmp_path: Path) -> None:
    empty = tmp_path / "empty-cache"
    code, out, err = check(signed_bundle, empty, "--key", str(keys / "mine.pub"), "--regrade", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["ok"] and report["signed_by"] and report["runs"] == ["2"]
    regrade = report["regrade"]
    assert regrade["counts"] == {"same": 3}, regrade
    assert {t["instance_id"] for t in regrade["tasks"]} and all(t["pass"] == "initial" for t in regrade["tasks"])
    # What it carries: the memory run, its base (its gain is computed against it), the rows.
    _, manifest = manifest_of(signed_bundle)
    assert manifest["carried"] == {"2": "bundled", "1": "base"}
    assert manifest["dataset"][0]["sequences"] == [SPANS]
    assert manifest["metrics"]["versions"][0]["normalized_gain"]["sequences"]


def test_a_bundle_is_a_ledger_every_read_command_opens(signed_bundle: Path, demo_results: Path, cache: Path,
                                                       tmp_path: Path) -> None:
    folder = tmp_path / "opened"
    folder.mkdir()
    shutil.copyfile(signed_bundle, folder / "ledger.db")
    assert swecl(folder, "verify", cache=cache).returncode == 0
    again = json.loads(swecl(folder, "metrics", "--version", "2", "--json", cache=cache).stdout)
    source = json.loads(swecl(demo_results, "metrics", "--version", "2", "--json", cache=cache).stdout)
    assert again == source
    # The verbatim prefix: the bundle's first events are the source's, hashes and all.
    with Ledger.open(folder / "ledger.db", readonly=True) as bundled, \
            Ledger.open(demo_results / "ledger.db", readonly=True) as original:
        assert bundled.hash_at(5) == original.hash_at(5)


def test_a_changed_event_is_refused(bundle_copy: Path, cache: Path) -> None:
    raw(bundle_copy, TAMPER + "WHERE seq = (SELECT max(seq) FROM events WHERE type = 'task.finished')")
    assert_refused(bundle_copy, cache, "does not verify")


def test_a_changed_event_with_its_chain_rebuilt_is_refused(bundle_copy: Path, cache: Path) -> None:
    conn = sqlite3.connect(bundle_copy)
    seq = conn.execute("SELECT max(seq) FROM events WHERE type = 'task.finished'").fetchone()[0]
    conn.close()
    raw(bundle_copy, TAMPER + f"WHERE seq = {seq}")
    rechain(bundle_copy, seq - 1)
    assert_refused(bundle_copy, cache, "the events changed after sealing")


def test_a_swapped_blob_is_refused(bundle_copy: Path, cache: Path) -> None:
    conn = sqlite3.connect(bundle_copy)
    patch = json.loads(conn.execute("SELECT payload FROM events WHERE type = 'agent.finished' AND CAST(payload AS TEXT) "
                                    "LIKE '%\"patch\":\"%' LIMIT 1").fetchone()[0])["patch"]
    conn.close()
    other = b"diff --git a/x b/x\n"
    raw(bundle_copy, "UPDATE blobs SET data = ?, size = ?, encoding = 'identity' WHERE sha256 = ?",
        params=(other, len(other), patch))
    assert_refused(bundle_copy, cache, "does not match its hash")


def test_a_changed_metric_is_refused_signed_or_not(bundle_copy: Path, cache: Path) -> None:
    _, manifest = manifest_of(bundle_copy)
    manifest["metrics"]["versions"][0]["macro"]["ACC"] = 0.123
    reseal(bundle_copy, manifest)  # the old signature kept: it no longer matches
    assert_refused(bundle_copy, cache, "the signature does not match the manifest")
    reseal(bundle_copy, manifest, signature=None, public_key=None, key_fingerprint=None)  # the forger drops it
    assert_refused(bundle_copy, cache, "a recorded number differs from the one its events give: metrics.versions[0]"
                                       ".macro.ACC")


def test_a_changed_verdict_in_the_manifest_is_refused(bundle_copy: Path, cache: Path) -> None:
    _, manifest = manifest_of(bundle_copy)
    (cells,) = manifest["outcomes"]["2"][SPANS].values()
    cells["1"][2] = "resolved" if cells["1"][2] != "resolved" else "unresolved"
    reseal(bundle_copy, manifest, signature=None, public_key=None, key_fingerprint=None)
    assert_refused(bundle_copy, cache, f"a recorded verdict differs from the one its events give: outcomes.2.{SPANS}"
                                       ".initial.1[2]")


def test_a_signature_by_another_key_is_refused(bundle_copy: Path, keys: Path, cache: Path) -> None:
    from commands._bundle import canonical_json
    from commands._bundle_keys import sign

    _, manifest = manifest_of(bundle_copy)
    signature, public, fingerprint = sign(keys / "theirs", canonical_json(manifest))
    reseal(bundle_copy, manifest, signature=signature, public_key=public, key_fingerprint=fingerprint)
    assert_refused(bundle_copy, cache, "not by the key given with --key", "--key", str(keys / "mine.pub"))
    code, out, _ = check(bundle_copy, cache)  # unpinned, it holds, and says whose key it is
    assert code == 0 and fingerprint[:16] in out and "not pinned" in out


def test_an_unsigned_bundle_fails_a_pinned_check(demo_results: Path, keys: Path, cache: Path, tmp_path: Path) -> None:
    out = tmp_path / "unsigned.bundle"
    swecl(demo_results, "bundle", "2", "--out", str(out), cache=cache)
    assert check(out, cache)[0] == 0
    assert_refused(out, cache, "not signed", "--key", str(keys / "mine.pub"))


def test_a_secret_in_the_events_refuses_the_bundle(demo_results: Path, cache: Path, tmp_path: Path) -> None:
    results = Path(shutil.copytree(demo_results, tmp_path / "results"))
    with Ledger.open(results / "ledger.db") as ledger:
        key = "sk-ant-api03-" + "Q7x" * 20
        ledger.append(f"run/2/{SPANS}", [MemoryRejected(reason="secret", rule="secret", title=key)])
    out = tmp_path / "leaky.bundle"
    proc = swecl(results, "bundle", "2", "--out", str(out), cache=cache, check=False)
    assert_one_line_error(proc, "looks like a secret", "nothing was bundled")
    assert not out.exists() and not list(tmp_path.glob(".leaky.bundle.*"))


@pytest.mark.parametrize("args, needle", [
    (("9",), "no run version '9'"),
    (("2", "--with", "7"), "no run version '7'"),
])
def test_bad_bundle_input_is_one_line(demo_results: Path, cache: Path, tmp_path: Path, args: tuple[str, ...],
                                      needle: str) -> None:
    out = tmp_path / "x.bundle"
    proc = swecl(demo_results, "bundle", *args, "--out", str(out), cache=cache, check=False)
    assert_one_line_error(proc, needle)
    assert not out.exists()
    out.write_bytes(b"")
    assert_one_line_error(swecl(demo_results, "bundle", "2", "--out", str(out), cache=cache, check=False),
                          "exists already")
    not_a_key = tmp_path / "not-a-key"
    not_a_key.write_text("hello\n")
    proc = swecl(demo_results, "bundle", "2", "--out", str(tmp_path / "y.bundle"), "--sign", str(not_a_key),
                 cache=cache, check=False)
    assert_one_line_error(proc, "not an unencrypted PEM private key")
    assert not (tmp_path / "y.bundle").exists()


def test_the_by_hand_check_of_the_docs_holds_and_catches_a_change(signed_bundle: Path, bundle_copy: Path,
                                                                  tmp_path: Path) -> None:
    """docs/bundles.md's script, run as a reader would: it holds on a real bundle, and a
    changed event with its chain rebuilt fails it."""
    import subprocess
    import sys

    text = (Path(__file__).resolve().parents[2] / "docs" / "bundles.md").read_text()
    script = text.split("## Checking one by hand", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / "by_hand.py").write_text(script)
    done = subprocess.run([sys.executable, str(tmp_path / "by_hand.py"), str(signed_bundle)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and "the bundle holds: runs ['2'] signed by" in done.stdout, done.stderr
    conn = sqlite3.connect(bundle_copy)
    seq = conn.execute("SELECT max(seq) FROM events WHERE type = 'task.finished'").fetchone()[0]
    conn.close()
    raw(bundle_copy, TAMPER + f"WHERE seq = {seq}")
    rechain(bundle_copy, seq - 1)
    done = subprocess.run([sys.executable, str(tmp_path / "by_hand.py"), str(bundle_copy)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode != 0 and "the events changed after sealing" in done.stderr
