"""`merge_branch`: a shard cut from a copy of a ledger that kept appending to the same stream
(a Ray task's events, merged into its sequence job's ledger)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger import Ledger, LedgerError, NewEvent, blob_hash, merge_branch, merge_ledgers
from ledger.events import TaskStarted

STREAM = "run/1/s"


def started(order: int, pass_: str = "initial") -> NewEvent:
    event = TaskStarted(sequence_id="s", instance_id=f"i-{order}", repo="o/r", order=order, pass_=pass_)
    return NewEvent(event, f"{pass_}-{order}")


def branch(tmp_path: Path) -> tuple[Path, Path]:
    """A ledger and a shard of what a copy of it appended, after the ledger moved on."""
    main, copy, shard = tmp_path / "main.db", tmp_path / "copy.db", tmp_path / "shard.db"
    with Ledger.open(main, create=True) as led:
        led.append(STREAM, [started(1)])
    Ledger.snapshot_file(main, copy)
    with Ledger.open(main) as led:
        led.append(STREAM, [started(2)])  # the coordinator's next task, meanwhile
    with Ledger.open(copy) as led:
        after = led.head()
        led.append(STREAM, [started(1, "baseline"), started(2, "baseline")], blobs=[b"a log"])
        rows = list(led.read(after=after))
    with Ledger.open(shard, create=True) as out:
        out.append_batches([], blobs=[b"a log"])
        out.import_recorded(rows)
    return main, shard


def test_the_copys_events_take_the_next_stream_versions(tmp_path: Path) -> None:
    main, shard = branch(tmp_path)
    with pytest.raises(LedgerError, match="already taken"):
        merge_ledgers([shard], main)  # their stream versions are taken in the ledger

    with Ledger.open(main) as led:
        report = merge_branch(shard, led, streams=[STREAM])
        assert (report.added, report.skipped) == (2, 0)
        assert led.has_blob(blob_hash(b"a log"))  # (the refused merge copied it already: blobs go first)
        # The same connection appends on: what it remembered of the head is not reused.
        led.append(STREAM, [started(3)])
        rows = list(led.read())
        assert [(r.event_id, r.stream_version) for r in rows] == [
            ("initial-1", 0), ("initial-2", 1), ("baseline-1", 2), ("baseline-2", 3), ("initial-3", 4)
        ]
        assert led.verify().events == 5
        again = merge_branch(shard, led, streams=[STREAM])
        assert (again.added, again.skipped) == (0, 2)  # idempotent by event id


def test_a_shard_outside_its_streams_is_refused(tmp_path: Path) -> None:
    main, shard = branch(tmp_path)
    with Ledger.open(main) as led:
        with pytest.raises(LedgerError, match="outside run/1/other"):
            merge_branch(shard, led, streams=["run/1/other"])
        assert led.head() == 2
