"""A memory server's data directory as snapshot blobs: a large file in content-defined
chunks, a changed one storing only its new chunks, and every manifest restored byte for
byte (old ledgers' whole-file entries too). Real ledgers on disk, real files."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import msgspec
import pytest

from commands.run.memory import SNAPSHOT_CHUNK_ABOVE
from commands.run.memory._server_snapshot import restore, snapshot, snapshot_event
from ledger import IntegrityError, Ledger, blob_refs_of
from ledger.events import ProviderSnapshot, SnapshotFile

STREAM = "run/1/seq"


def _jsonl(rng: random.Random, n: int) -> list[bytes]:
    """Lines as server-memory writes them: one JSON entity a line, words of varying length."""
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9))) for _ in range(800)]
    return [json.dumps({"type": "entity", "name": f"task-{i}", "entityType": "swecl-task",
                        "observations": [" ".join(rng.choices(words, k=rng.randint(5, 30)))]}).encode() + b"\n"
            for i in range(n)]


def _stored(led: Ledger) -> set[str]:
    return {digest for digest, _, _ in led.iter_blobs()}


def test_a_line_inserted_mid_file_stores_a_few_new_chunks_and_both_snapshots_restore(tmp_path: Path) -> None:
    rng = random.Random(3)
    data = tmp_path / "data"
    data.mkdir()
    lines = _jsonl(rng, 14_000)  # some 2 MB: chunked
    (data / "memory.jsonl").write_bytes(b"".join(lines))
    (data / "small.json").write_bytes(b'{"version": 1}\n')  # one blob, as before
    assert (data / "memory.jsonl").stat().st_size > 4 * SNAPSHOT_CHUNK_ABOVE

    with Ledger.open(tmp_path / "ledger.db", create=True) as led:
        first = snapshot(led, data)
        before = _stored(led)
        big, small = first
        assert (big.path, big.blob, small.path) == ("memory.jsonl", None, "small.json")
        assert len(big.chunks) > 10 and sum(c.size for c in big.chunks) == big.size
        assert small.blob is not None and small.chunks == []
        assert before == {small.blob, *(c.blob for c in big.chunks)}
        first_bytes = {p: (data / p).read_bytes() for p in ("memory.jsonl", "small.json")}

        # New entities land mid-file (before the relations, as server-memory writes them).
        middle = len(lines) // 2
        new = _jsonl(random.Random(4), 3)
        (data / "memory.jsonl").write_bytes(b"".join(lines[:middle] + new + lines[middle:]))
        second = snapshot(led, data)
        added = _stored(led) - before
        assert 1 <= len(added) <= 3  # the chunks around the insertion, nothing else
        new_chunks = [c for c in second[0].chunks if c.blob in added]
        assert sum(c.size for c in new_chunks) < second[0].size // 10
        assert second[1] == small  # the unchanged small file: the same blob
        assert snapshot(led, data) == second and _stored(led) - before == added  # unchanged: nothing written

        led.append(STREAM, [snapshot_event(m, sequence_id="seq", instance_id=f"t{k}", order=k)
                            for k, m in enumerate((first, second), start=1)])
        assert led.verify().blobs == len(before) + len(added)
        snaps = [r.event for r in led.read(types=["memory.provider.snapshot"])]
        assert [s.files for s in snaps] == [first, second]  # the chunks as [blob, size] survive the round trip

        restore(led, snaps[0].files, tmp_path / "r1")
        restore(led, snaps[1].files, tmp_path / "r2")
    assert {p: (tmp_path / "r1" / p).read_bytes() for p in first_bytes} == first_bytes
    assert (tmp_path / "r2" / "memory.jsonl").read_bytes() == (data / "memory.jsonl").read_bytes()
    assert (tmp_path / "r2" / "small.json").read_bytes() == (data / "small.json").read_bytes()


def test_changed_pages_of_a_database_file_store_only_the_chunks_around_them(tmp_path: Path) -> None:
    rng = random.Random(5)
    data = tmp_path / "data"
    data.mkdir()
    pages = bytearray(rng.randbytes(512 * 4096))  # a 2 MB database file of 4 KiB pages
    (data / "memory.db").write_bytes(pages)
    with Ledger.open(tmp_path / "ledger.db", create=True) as led:
        snapshot(led, data)
        before = _stored(led)
        for page in (3, 200, 401):
            pages[page * 4096:(page + 1) * 4096] = rng.randbytes(4096)
        (data / "memory.db").write_bytes(pages)
        (entry,) = snapshot(led, data)
        added = _stored(led) - before
        assert 3 <= len(added) <= 9 and len(added) < len(entry.chunks) // 4
        restore(led, [entry], tmp_path / "restored")
    assert (tmp_path / "restored" / "memory.db").read_bytes() == bytes(pages)


def _one_big_file(led: Ledger, tmp_path: Path, *, seed: int, chunks_above: int) -> Any:
    """The snapshot entry of a data directory holding one random file `chunks_above` times
    the size above which files are chunked."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "big.bin").write_bytes(random.Random(seed).randbytes(chunks_above * SNAPSHOT_CHUNK_ABOVE))
    (entry,) = snapshot(led, data)
    return entry


def test_verify_counts_each_chunk_a_snapshot_names(tmp_path: Path) -> None:
    with Ledger.open(tmp_path / "a.db", create=True) as led:
        entry = _one_big_file(led, tmp_path, seed=6, chunks_above=3)
    event = snapshot_event([entry], sequence_id="seq", instance_id="t1", order=1)
    assert blob_refs_of(event) == [c.blob for c in entry.chunks]
    # The same event in a ledger that lacks the chunks: verify names the first missing one.
    with Ledger.open(tmp_path / "b.db", create=True) as other:
        other.append(STREAM, [event])
        with pytest.raises(IntegrityError, match=f"references blob {entry.chunks[0].blob}"):
            other.verify()


def test_restore_checks_a_chunked_files_size(tmp_path: Path) -> None:
    with Ledger.open(tmp_path / "ledger.db", create=True) as led:
        entry = _one_big_file(led, tmp_path, seed=8, chunks_above=2)
        short = msgspec.structs.replace(entry, chunks=entry.chunks[:-1])
        with pytest.raises(IntegrityError, match="'big.bin': .* bytes restored, its entry says"):
            restore(led, [short], tmp_path / "r1")
        lying = msgspec.structs.replace(entry, chunks=[msgspec.structs.replace(entry.chunks[0], size=1),
                                                       *entry.chunks[1:]])
        with pytest.raises(IntegrityError, match="chunk .* holds"):
            restore(led, [lying], tmp_path / "r2")


def test_an_old_ledgers_snapshot_of_whole_files_restores_unchanged(tmp_path: Path) -> None:
    big = random.Random(9).randbytes(2 * SNAPSHOT_CHUNK_ABOVE)  # large, but stored whole as before
    with Ledger.open(tmp_path / "ledger.db", create=True) as led:
        digest = led.put_blobs([big])[0]
        # The payload as the previous version wrote it: no chunks field.
        payload = json.dumps({"type": "memory.provider.snapshot", "sequence_id": "seq", "instance_id": "t1",
                              "order": 1, "pass": "initial", "attempt": 1, "total_bytes": len(big),
                              "files": [{"path": "graph/memory.jsonl", "blob": digest, "size": len(big),
                                         "mode": 0o600}]})
        old = msgspec.json.decode(payload, type=ProviderSnapshot)
        assert old.files == [SnapshotFile(path="graph/memory.jsonl", blob=digest, size=len(big), mode=0o600)]
        assert old.files[0].chunks == [] and blob_refs_of(old) == [digest]
        restore(led, old.files, tmp_path / "restored")
    restored = tmp_path / "restored" / "graph" / "memory.jsonl"
    assert restored.read_bytes() == big and restored.stat().st_mode & 0o777 == 0o600
