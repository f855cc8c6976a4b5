"""`swecl merge`: shards verified first, imported in their own order, idempotently."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.ledgers import LedgerBuilder
from commands.cli._merge import merge_cmd
from ledger import IntegrityError, Ledger, LedgerError
from ledger._merge import merge_ledgers
from projections.audit import audit_task
from tests.ledger.contract import tamper

from .crafted import P1, SEQ, TASKS, accum_run, blank_run


def ids(path: Path) -> list[str]:
    with Ledger.open(path, readonly=True) as led:
        return [r.event_id for r in led.read()]


def head(path: Path) -> tuple[int, str]:
    with Ledger.open(path, readonly=True) as led:
        return led.head(), led.verify().head_hash


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("shards")
    a, b = root / "a" / "ledger.db", root / "b" / "ledger.db"
    with Ledger.open(a, create=True) as led:
        blank_run(LedgerBuilder(led), "1")
    with Ledger.open(b, create=True) as led:
        r = LedgerBuilder(led)
        r.start_run("7", stage="base", plan={SEQ: TASKS})
        r.task("7", SEQ, 1, patch=P1)
        r.finish_run("7")
    return a, b


def test_merge_keeps_each_shards_order_and_is_idempotent(shards: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = shards
    target = tmp_path / "main" / "ledger.db"
    report = merge_ledgers([a, b], target)
    assert report.created and [s.added for s in report.shards] == [len(ids(a)), len(ids(b))]
    merged = ids(target)
    assert sorted(merged) == sorted(ids(a) + ids(b))
    for shard in (a, b):
        mine = set(ids(shard))
        assert [e for e in merged if e in mine] == ids(shard)  # the shard's own order
    with Ledger.open(target, readonly=True) as led:
        assert led.get_blob(next(r.event.patch for r in led.read(types=["agent.finished"]))).decode() == P1
        events = [(r.event_id, r.stream, r.stream_version, r.type, r.time, r.event) for r in led.read()]
    before = head(target)
    again = merge_ledgers([a, b], target)
    assert [(s.added, s.skipped, s.blobs_added) for s in again.shards] == [(0, len(ids(a)), 0), (0, len(ids(b)), 0)]
    assert head(target) == before and not again.created
    with Ledger.open(target, readonly=True) as led:
        assert [(r.event_id, r.stream, r.stream_version, r.type, r.time, r.event) for r in led.read()] == events


def test_merging_into_an_empty_ledger_reproduces_the_chain(shards: tuple[Path, Path], tmp_path: Path) -> None:
    a, _ = shards
    merge_ledgers([a], tmp_path / "copy.db")
    assert head(tmp_path / "copy.db") == head(a)


def test_a_tampered_shard_is_refused_with_nothing_written(shards: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = shards
    bad = tmp_path / "bad" / "ledger.db"
    bad.parent.mkdir()
    shutil.copy(b, bad)
    with Ledger.open(bad, readonly=True) as led:
        seq = next(r.seq for r in led.read(types=["task.started"]))
    tamper(bad, seq)
    fresh = tmp_path / "fresh" / "ledger.db"
    with pytest.raises(IntegrityError, match=rf"shard {bad}.*seq {seq}.*nothing was merged"):
        merge_ledgers([a, bad], fresh)
    assert not fresh.exists()  # not even created
    existing = tmp_path / "existing" / "ledger.db"
    merge_ledgers([a], existing)
    before = head(existing), ids(existing)
    out = CliRunner().invoke(merge_cmd, [str(bad), "--into", str(existing)])
    assert out.exit_code == 1 and out.output.count("\n") == 1 and "merge refused" in out.output
    assert (head(existing), ids(existing)) == before


def test_two_shards_claiming_the_same_stream_version_conflict(shards: tuple[Path, Path], tmp_path: Path) -> None:
    a, _ = shards
    rival = tmp_path / "rival.db"
    with Ledger.open(rival, create=True) as led:
        blank_run(LedgerBuilder(led), "1")  # another machine's run 1: same streams, other event ids
    target = tmp_path / "t.db"
    merge_ledgers([a], target)
    before = head(target)
    with pytest.raises(LedgerError, match="already taken.*nothing of this shard's events was merged"):
        merge_ledgers([rival], target)
    assert head(target) == before


def test_a_shard_whose_seed_positions_would_shift_is_refused(tmp_path: Path) -> None:
    seeded = tmp_path / "seeded.db"
    with Ledger.open(seeded, create=True) as led:
        r = LedgerBuilder(led)
        blank_run(r, "1")
        seqs = accum_run(r, "2", "1")
    busy = tmp_path / "busy.db"
    with Ledger.open(busy, create=True) as led:
        r = LedgerBuilder(led)
        r.start_run("0", stage="base", plan={SEQ: TASKS})
        for order in (1, 2, 3):
            r.task("0", SEQ, order, patch=P1)  # enough that the seed position lands inside run 1 once merged
    before = head(busy)
    with pytest.raises(LedgerError, match="memory.seeded at seq .* different point of run '1'"):
        merge_ledgers([seeded], busy)
    assert head(busy) == before
    # A shift that leaves the source's history before the seed position whole is fine
    # (here one event: the seed position had room to spare).
    nearly_empty = tmp_path / "nearly-empty.db"
    with Ledger.open(nearly_empty, create=True) as led:
        LedgerBuilder(led).start_run("0", stage="base", plan={SEQ: TASKS})
    merge_ledgers([seeded], nearly_empty)
    # Into an empty ledger every seq is kept, and the seed reads what it read in the shard.
    empty = tmp_path / "empty.db"
    merge_ledgers([seeded], empty)
    for merged, shift in ((empty, 0), (nearly_empty, 1)):
        with Ledger.open(merged, readonly=True) as led:
            (recall,) = [r for r in audit_task(led, "2", "acme__widgets-1").recalls if r.seq == seqs["recall_attempt2"] + shift]
        hits = {h.item_id: h for h in recall.hits}
        assert hits["v1-1"].known and hits["v1-1"].provenance.hops[0].source_run == "1"


def test_refusals_before_anything_is_read(shards: tuple[Path, Path], tmp_path: Path) -> None:
    a, _ = shards
    with pytest.raises(LedgerError, match="is the target ledger itself"):
        merge_ledgers([a], a)
    with pytest.raises(LedgerError, match="no such ledger file"):
        merge_ledgers([tmp_path / "missing.db"], tmp_path / "t.db")
    with pytest.raises(LedgerError, match="given twice"):
        merge_ledgers([a, a], tmp_path / "t.db")
    (tmp_path / "junk.db").write_bytes(b"not a database at all")
    with pytest.raises(LedgerError, match="not a swecl ledger"):
        merge_ledgers([tmp_path / "junk.db"], tmp_path / "t.db")
    assert not (tmp_path / "t.db").exists()


def test_cli_reports_each_shard(shards: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = shards
    out = CliRunner().invoke(merge_cmd, [str(a), str(b), "--into", str(tmp_path / "m.db")])
    assert out.exit_code == 0, out.output
    assert f"merged {a}" in out.output and "(created)" in out.output
