"""A reusable test suite every ledger storage backend must pass.

In the spirit of the eventsourcing library's recorder tests: a backend test module
subclasses `LedgerContract` and provides the `open_ledger` fixture; every promise of
the store (atomic batches, gapless positions, optimistic concurrency, idempotent
retries, immutability, tamper evidence, upcasting) is checked the same way for each.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import apsw
import msgspec
import pytest

from ledger import (
    BY_TYPE,
    ConcurrencyConflict,
    Event,
    IntegrityError,
    Ledger,
    LedgerError,
    NewEvent,
    StreamBatch,
    StreamRange,
    upcaster,
)
from ledger import _upcasting
from ledger.events import PassStarted, RunFinished, TaskStarted

OpenLedger = Callable[[], Ledger]


def task(order: int, seq_id: str = "s") -> TaskStarted:
    return TaskStarted(sequence_id=seq_id, instance_id=f"{seq_id}-{order}", repo="o/r", order=order, pass_="initial")


class LedgerContract:
    @pytest.fixture
    def open_ledger(self, tmp_path: Path) -> OpenLedger:  # pragma: no cover - overridden
        raise NotImplementedError

    # -- append and read ------------------------------------------------------------------

    def test_append_then_read_in_order(self, open_ledger: OpenLedger) -> None:
        led = open_ledger()
        recs = led.append("run/1/s", [task(1), task(2)], expected_version=-1)
        assert [r.seq for r in recs] == [1, 2]
        assert [r.stream_version for r in recs] == [0, 1]
        read = list(open_ledger().read())
        assert [r.event for r in read] == [task(1), task(2)]
        assert read[0].hash == recs[0].hash and read[1].prev_hash == recs[0].hash

    def test_batches_are_atomic(self, open_ledger: OpenLedger) -> None:
        led = open_ledger()
        led.append("b", [task(1)], expected_version=-1)
        with pytest.raises(ConcurrencyConflict):
            led.append_batches(
                [
                    StreamBatch("a", [task(1), task(2)], expected_version=-1),
                    StreamBatch("b", [task(3)], expected_version=-1),  # b is at 0: conflict
                ]
            )
        assert led.count() == 1
        assert led.stream_version("a") == -1

    def test_positions_are_gapless_after_failures(self, open_ledger: OpenLedger) -> None:
        led = open_ledger()
        for i in range(5):
            led.append("x", [task(i)], expected_version=i - 1)
            with pytest.raises(ConcurrencyConflict):
                led.append("x", [task(100 + i)], expected_version=i - 1)
        seqs = [r.seq for r in open_ledger().read()]
        assert seqs == list(range(1, 6))

    def test_version_conflict_writes_nothing(self, open_ledger: OpenLedger) -> None:
        led = open_ledger()
        led.append("run/v", [RunFinished(status="finished")], expected_version=-1)
        with pytest.raises(ConcurrencyConflict) as err:
            led.append("run/v", [RunFinished(status="failed"), RunFinished(status="x")], expected_version=-1)
        assert "nothing of this batch was written" in str(err.value)
        assert err.value.actual == 0
        assert led.count() == 1

    def test_append_at_head_without_expected_version(self, open_ledger: OpenLedger) -> None:
        led = open_ledger()
        led.append("s", [task(1)])
        led.append("s", [task(2)])
        assert led.stream_version("s") == 1

    def test_retry_with_same_event_ids_is_a_noop(self, open_ledger: OpenLedger) -> None:
        led = open_ledger()
        batch = [NewEvent(task(1), "id-1"), NewEvent(task(2), "id-2")]
        first = led.append("s", batch, expected_version=-1)
        again = open_ledger().append("s", batch, expected_version=-1)
        assert [r.seq for r in again] == [r.seq for r in first]
        assert open_ledger().count() == 2

    def test_event_id_reused_for_another_event_is_refused(self, open_ledger: OpenLedger) -> None:
        led = open_ledger()
        led.append("s", [NewEvent(task(1), "same")])
        with pytest.raises(LedgerError, match="different event"):
            led.append("s", [NewEvent(task(2), "same")])
        with pytest.raises(LedgerError, match="same batch"):
            led.append("s", [NewEvent(task(1), "same"), NewEvent(task(3), "new")])
        assert led.count() == 1

    def test_read_filters(self, open_ledger: OpenLedger) -> None:
        led = open_ledger()
        led.append("run/1", [RunFinished(status="finished")])
        led.append("run/1/a", [task(1, "a"), PassStarted(sequence_id="a", pass_="initial")])
        led.append("run/10/a", [task(1, "a")])
        led.append("run/1/b", [task(1, "b")])
        assert [r.seq for r in led.read(types=["task.started"])] == [2, 4, 5]
        assert [r.seq for r in led.read(ranges=[StreamRange("run/1")])] == [1, 2, 3, 5]
        assert [r.seq for r in led.read(ranges=[StreamRange("run/1", upto=2), StreamRange("run/10")])] == [1, 2, 4]
        assert [r.seq for r in led.read(streams=["run/1/b"])] == [5]
        assert [r.seq for r in led.read(after=2, upto=4)] == [3, 4]
        assert [r.stream_version for r in led.read_stream("run/1/a")] == [0, 1]
        assert led.task_position("1", 1, sequence_id="b") == 5
        assert led.task_position("1", 1) == 2
        assert led.task_position("1", 7) is None

    def test_blobs_are_content_addressed(self, open_ledger: OpenLedger) -> None:
        led = open_ledger()
        big = ("line of a test log\n" * 5000).encode()
        h1 = led.put_blob(big)
        h2 = led.put_blob(big)
        assert h1 == h2
        assert open_ledger().get_blob(h1) == big
        assert led.put_blob("small") == led.put_blob(b"small")
        assert led.verify().blobs == 2

    def test_put_blobs_stores_the_missing_ones_by_the_same_address(self, open_ledger: OpenLedger) -> None:
        """The bulk path (a memory server's snapshot): the same content addresses as
        `put_blob`, whatever codec stores them, and nothing written twice."""
        led = open_ledger()
        text = ("".join(f'{{"name": "task-{i}", "observation": "lesson {i}"}}\n' for i in range(20000))).encode()
        noise = bytes(range(256)) * 4096  # compresses, but is no text
        small = b"tiny"
        stored = led.put_blob(small)
        digests = led.put_blobs([text, noise, small, text])
        assert digests == [hashlib.sha256(d).hexdigest() for d in (text, noise, small, text)]
        assert digests[2] == stored
        assert [open_ledger().get_blob(d) for d in digests[:3]] == [text, noise, small]
        assert led.put_blobs([noise, small]) == digests[1:3]
        assert led.verify().blobs == 3

    # -- immutability and tamper evidence -------------------------------------------------

    def test_update_and_delete_are_refused_by_the_database(self, open_ledger: OpenLedger) -> None:
        led = open_ledger()
        led.append("s", [task(1)])
        h = led.put_blob(b"x" * 10)
        raw = apsw.Connection(str(led.path))
        for sql in (
            "UPDATE events SET type = 'x'",
            "DELETE FROM events",
            "UPDATE blobs SET size = 0",
            "DELETE FROM blobs",
            "INSERT INTO events SELECT seq + 5, 'e2', stream, 9, type, schema, time, payload, prev_hash, hash FROM events",
        ):
            with pytest.raises(apsw.ConstraintError):
                raw.execute(sql)
        raw.close()
        assert led.verify().events == 1 and led.get_blob(h) == b"x" * 10

    def test_tampered_payload_is_found_at_its_seq(self, open_ledger: OpenLedger) -> None:
        led = open_ledger()
        for i in range(1, 6):
            led.append("s", [task(i)])
        tamper(led.path, seq=3)
        with pytest.raises(IntegrityError) as err:
            open_ledger().verify()
        assert err.value.seq == 3
        assert "seq 3" in str(err.value)

    def test_tampered_blob_is_found(self, open_ledger: OpenLedger) -> None:
        led = open_ledger()
        h = led.put_blob(b"original")
        raw = apsw.Connection(str(led.path))
        raw.execute("DROP TRIGGER blobs_no_update")
        raw.execute("UPDATE blobs SET data = ? WHERE sha256 = ?", (b"forged!!", h))
        raw.close()
        with pytest.raises(IntegrityError, match=h):
            open_ledger().verify()

    # -- schema evolution -----------------------------------------------------------------

    def test_upcaster_is_applied_on_read(self, open_ledger: OpenLedger, monkeypatch: pytest.MonkeyPatch) -> None:
        led = open_ledger()
        old = Widget1(size=3)
        led.append("w", [old])  # written at schema 1 by "an older swecl"
        monkeypatch.setitem(BY_TYPE, "test.widget", Widget2)

        @upcaster("test.widget", 1)
        def _v1_to_v2(p: dict) -> dict:
            p["width"] = p.pop("size")
            p["unit"] = "px"
            return p

        try:
            (rec,) = list(open_ledger().read())
            assert rec.schema == 1  # the row is unchanged...
            assert rec.event == Widget2(width=3, unit="px")  # ...and read as schema 2
            assert open_ledger().verify().events == 1
        finally:
            _upcasting.unregister("test.widget", 1)


class Widget1(Event, tag="test.widget", kw_only=True):
    size: int


class Widget2(Event, tag="test.widget", kw_only=True):
    SCHEMA = 2
    width: int
    unit: str


def tamper(path: Path, seq: int) -> None:
    """Change one payload byte behind the triggers' back, as an attacker with the file would."""
    raw = apsw.Connection(str(path))
    raw.execute("DROP TRIGGER events_no_update")
    payload = bytes(raw.execute("SELECT payload FROM events WHERE seq = ?", (seq,)).fetchone()[0])
    forged = payload.replace(b'"order":', b'"order": ', 1)
    assert forged != payload
    assert msgspec.json.decode(forged)  # still valid JSON: only the hash can tell
    raw.execute("UPDATE events SET payload = ? WHERE seq = ?", (forged, seq))
    raw.close()
