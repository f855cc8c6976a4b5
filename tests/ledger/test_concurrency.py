"""Several processes appending to one ledger file at once."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

from ledger import ConcurrencyConflict, Ledger
from ledger.events import TaskStarted

BATCH = 5


def _events(writer: int, batch: int) -> list[TaskStarted]:
    return [
        TaskStarted(sequence_id=f"w{writer}", instance_id=f"{writer}-{batch}-{i}", repo="o/r", order=batch * BATCH + i, pass_="initial")
        for i in range(BATCH)
    ]


def _writer(path: str, writer: int, batches: int, start: mp.synchronize.Barrier) -> None:
    start.wait()
    led = Ledger.open(path)
    for b in range(batches):
        led.append(f"run/x/w{writer}", _events(writer, b), expected_version=b * BATCH - 1)
    led.close()


def _racer(path: str, writer: int, start: mp.synchronize.Barrier, results: mp.Queue) -> None:
    led = Ledger.open(path)
    start.wait()
    try:
        led.append("run/race", _events(writer, 0), expected_version=-1)
        results.put(("won", writer))
    except ConcurrencyConflict as exc:
        results.put(("lost", str(exc)))
    finally:
        led.close()


def test_concurrent_writers_never_interleave_a_batch(tmp_path: Path) -> None:
    path = str(tmp_path / "ledger.db")
    Ledger.open(path, create=True).close()
    ctx = mp.get_context("spawn")
    writers, batches = 4, 25
    barrier = ctx.Barrier(writers)
    procs = [ctx.Process(target=_writer, args=(path, w, batches, barrier)) for w in range(writers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    led = Ledger.open(path)
    rows = list(led.read())
    assert [r.seq for r in rows] == list(range(1, writers * batches * BATCH + 1))
    # Each batch's five events sit at five consecutive seqs, in order.
    by_batch: dict[tuple[str, int], list[int]] = {}
    for r in rows:
        by_batch.setdefault((r.stream, r.stream_version // BATCH), []).append(r.seq)
    assert len(by_batch) == writers * batches
    for seqs in by_batch.values():
        assert seqs == list(range(seqs[0], seqs[0] + BATCH))
    assert led.verify().events == len(rows)


def test_version_race_has_one_winner_and_losers_write_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "ledger.db")
    Ledger.open(path, create=True).close()
    ctx = mp.get_context("spawn")
    racers = 4
    barrier = ctx.Barrier(racers)
    results = ctx.Queue()
    procs = [ctx.Process(target=_racer, args=(path, w, barrier, results)) for w in range(racers)]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(60)
    won = [o for o in outcomes if o[0] == "won"]
    lost = [o for o in outcomes if o[0] == "lost"]
    assert len(won) == 1 and len(lost) == racers - 1
    assert all("nothing of this batch was written" in msg for _, msg in lost)
    led = Ledger.open(path)
    rows = list(led.read())
    assert len(rows) == BATCH
    assert {r.event.sequence_id for r in rows} == {f"w{won[0][1]}"}
