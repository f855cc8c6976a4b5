"""Benchmark 1: append throughput, against the eventsourcing library's SQLite recorder.

How it is kept fair:

- the same events: the synthetic stream of a real run (the generator of the rebuild
  benchmark, `event_stream`), in the same order, the same number of them;
- the same batches: each transaction holds the same `batch` consecutive events on both
  sides (a batch spans streams the way the 8 interleaved sequences do: ours through
  `Ledger.append_batches`, theirs through one `insert_events` call);
- the same payload bytes: both sides store the event encoded by the same msgspec
  encoder, and the encoding is timed on both sides (our append encodes; their loop
  encodes before `insert_events`);
- the same durability: both files in WAL mode with `synchronous=NORMAL` (our default for
  a plain append) or both `FULL` (our `durable=True`, what a finished task uses); the
  default WAL auto-checkpoint (1000 pages) and page size on both; the pragma is set on
  every connection eventsourcing's pool opens, and read back after the run;
- one process, one thread, fresh files in the same directory, repetitions interleaved
  (ours, theirs, ours, ...) and the fastest of each side kept.

Our side also pays for what the recorder does not do: a client-made event id per event
(UNIQUE, so a retried append is a no-op), the SHA-256 hash chain, the type index and the
stream index the reads rely on, and the append-only triggers. `details.append.wal_frames_per_commit`
measures the consequence: the pages each commit writes to the WAL, on both sides.

What SQLite alone can do is measured too (`append_*_sqlite_alone`): the reference's own
table (a rowid table and its primary-key index, nothing else) filled by apsw alone, one
`executemany` per transaction, the rows made before the clock starts: no ids, no hashes,
no Python per event. That is the most any store in an SQLite file can do with these
events, transactions and pragmas; its ratio to the reference is the ceiling of ours, and
swecl's share of it (`swecl_share_of_sqlite_alone` in the details, and in the row's text)
says how much of that ceiling swecl's guarantees leave.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import msgspec

from ledger import Ledger, NewEvent, StreamBatch

from ._core import Context, Result, ratio_at_least, timed
from ._synth import event_stream

TARGET = 1.0
_ENCODER = msgspec.json.Encoder(order="deterministic")

# (result name, events per transaction, synchronous)
CONFIGS = (
    ("append_batch1", 1, "NORMAL"),
    ("append_batch10", 10, "NORMAL"),
    ("append_batch100", 100, "NORMAL"),
    ("append_batch10_durable", 10, "FULL"),
)

Batch = list[StreamBatch]


def batches_of(stream: list[tuple[str, NewEvent]], size: int) -> list[Batch]:
    """Consecutive `size` events per transaction, grouped by stream inside it."""
    out: list[Batch] = []
    for start in range(0, len(stream), size):
        groups: list[tuple[str, list[NewEvent]]] = []
        for name, ev in stream[start : start + size]:
            if groups and groups[-1][0] == name:
                groups[-1][1].append(ev)
            else:
                groups.append((name, [ev]))
        out.append([StreamBatch(name, evs) for name, evs in groups])
    return out


def ours(path: Path, batches: list[Batch], durable: bool) -> int:
    with Ledger.open(path, create=True) as led:
        for batch in batches:
            led.append_batches(batch, durable=durable)
        return led.count()


class _Theirs:
    """eventsourcing's SQLiteApplicationRecorder on a pool whose connections get our pragmas."""

    def __init__(self, path: Path, synchronous: str, autocheckpoint: int | None = None) -> None:
        from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteConnectionPool, SQLiteDatastore

        pragmas = [f"PRAGMA synchronous={synchronous}"]
        if autocheckpoint is not None:
            pragmas.append(f"PRAGMA wal_autocheckpoint={autocheckpoint}")

        class Pool(SQLiteConnectionPool):
            def _create_connection(self):  # type: ignore[no-untyped-def]
                conn = super()._create_connection()
                for pragma in pragmas:
                    conn._sqlite_conn.execute(pragma)
                return conn

        self.datastore = SQLiteDatastore(str(path), originator_id_type="text")
        self.datastore.pool.close()
        self.datastore.pool = Pool(db_name=str(path))
        self.recorder = SQLiteApplicationRecorder(self.datastore)
        self.recorder.create_table()

    def pragmas(self) -> dict[str, Any]:
        with self.datastore.get_connection(commit=False) as conn:
            raw = conn._sqlite_conn
            return {
                "journal_mode": raw.execute("PRAGMA journal_mode").fetchone()[0],
                "synchronous": raw.execute("PRAGMA synchronous").fetchone()[0],
                "wal_autocheckpoint": raw.execute("PRAGMA wal_autocheckpoint").fetchone()[0],
                "page_size": raw.execute("PRAGMA page_size").fetchone()[0],
            }

    def close(self) -> None:
        self.datastore.close()


def theirs(
    path: Path, batches: list[Batch], synchronous: str, autocheckpoint: int | None = None, *, keep_open: bool = False
) -> Any:
    """Insert the batches; returns the pragmas read back (or, with keep_open, the open store)."""
    from eventsourcing.persistence import StoredEvent

    store = _Theirs(path, synchronous, autocheckpoint)
    versions: dict[str, int] = {}
    encode = _ENCODER.encode
    insert = store.recorder.insert_events
    for batch in batches:
        stored = []
        for sb in batch:
            version = versions.get(sb.stream, -1)
            for ne in sb.events:
                version += 1
                event = ne.event if isinstance(ne, NewEvent) else ne
                stored.append(
                    StoredEvent(originator_id=sb.stream, originator_version=version, topic=event.type_name(), state=encode(event))
                )
            versions[sb.stream] = version
        insert(stored)
    if keep_open:
        return store
    pragmas = store.pragmas()
    store.close()
    return pragmas


_ALONE_DDL = (
    "CREATE TABLE stored_events (originator_id TEXT, originator_version INTEGER, topic TEXT, state BLOB,"
    " PRIMARY KEY (originator_id, originator_version))"
)


def alone_rows(batches: list[Batch]) -> list[list[tuple[str, int, str, bytes]]]:
    """The reference's rows of every transaction, made (and encoded) before timing.

    The same numbering as `theirs` does, written out again on purpose: there it is timed
    and must stay the reference's own inline loop, with no helper of ours in it."""
    versions: dict[str, int] = {}
    out = []
    for batch in batches:
        rows = []
        for sb in batch:
            version = versions.get(sb.stream, -1)
            for ne in sb.events:
                version += 1
                event = ne.event if isinstance(ne, NewEvent) else ne
                rows.append((sb.stream, version, event.type_name(), _ENCODER.encode(event)))
            versions[sb.stream] = version
        out.append(rows)
    return out


def sqlite_alone(path: Path, txns: list[list[tuple[str, int, str, bytes]]], synchronous: str) -> None:
    """SQLite alone: the rows inserted into the reference's table, nothing else done."""
    import apsw

    conn = apsw.Connection(str(path))
    conn.pragma("journal_mode", "wal")
    conn.pragma("synchronous", synchronous)
    conn.execute(_ALONE_DDL)
    insert = "INSERT INTO stored_events VALUES (?, ?, ?, ?)"
    for rows in txns:
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(insert, rows)
        conn.execute("COMMIT")
    conn.close()


def _wal_frames(path: Path) -> float:
    wal = Path(str(path) + "-wal")
    size = wal.stat().st_size if wal.exists() else 0
    return max(0, size - 32) / (4096 + 24)


def frames_per_commit(ctx: Context, stream: list[tuple[str, NewEvent]], size: int, have_theirs: bool) -> dict[str, float]:
    """WAL pages written per commit, auto-checkpoint off, on both sides (not timed)."""
    batches = batches_of(stream, size)
    folder = ctx.work / f"frames-{size}"
    folder.mkdir(parents=True, exist_ok=True)
    with Ledger.open(folder / "ours.db", create=True) as led:
        led._conn.pragma("wal_autocheckpoint", 0)  # noqa: SLF001 - a measurement, not a setting we ship
        for batch in batches:
            led.append_batches(batch)
        out = {"ours": round(_wal_frames(folder / "ours.db") / len(batches), 2)}
    if have_theirs:
        path = folder / "theirs.db"
        store = theirs(path, batches, "NORMAL", autocheckpoint=0, keep_open=True)
        out["eventsourcing"] = round(_wal_frames(path) / len(batches), 2)  # before closing folds the WAL in
        store.close()
    return out


def _have_eventsourcing() -> bool:
    try:
        import eventsourcing.sqlite  # noqa: F401
    except ImportError:
        return False
    return True


def run(ctx: Context) -> list[Result]:
    events = 3_000 if ctx.quick else 30_000
    reps = 2 if ctx.quick else 3
    have = _have_eventsourcing()
    ctx.log(f"append: {events} events of the synthetic stream per pass, {reps} passes per side"
            + ("" if have else " (eventsourcing is not installed: no reference)"))
    stream = event_stream(events)
    sizes = [len(_ENCODER.encode(ne.event)) for _, ne in stream]
    results: list[Result] = []
    detail: dict[str, Any] = {
        "events": events,
        "payload_bytes_mean": round(sum(sizes) / len(sizes), 1),
        "reference": "eventsourcing SQLiteApplicationRecorder" if have else None,
        "configs": {},
    }
    for name, size, sync in CONFIGS:
        n = events if sync == "NORMAL" else events // 4  # an fsync per commit: fewer events
        batches = batches_of(stream[:n], size)
        folder = ctx.work / name
        folder.mkdir(parents=True, exist_ok=True)
        txns = alone_rows(batches)
        mine: list[float] = []
        other: list[float] = []
        alone: list[float] = []
        pragmas: dict[str, Any] = {}
        for rep in range(reps):
            path = folder / f"ours-{rep}.db"
            seconds, stored = timed(partial(ours, path, batches, durable=sync == "FULL"))
            assert stored == n, (stored, n)
            mine.append(n / seconds)
            if have:
                their_path = folder / f"theirs-{rep}.db"
                seconds, pragmas = timed(partial(theirs, their_path, batches, sync))
                other.append(n / seconds)
            seconds, _ = timed(partial(sqlite_alone, folder / f"alone-{rep}.db", txns, sync))
            alone.append(n / seconds)
            for leftover in folder.iterdir():
                leftover.unlink()
        best_ours, best_alone = max(mine), max(alone)
        best_theirs = max(other) if other else None
        ratio = best_ours / best_theirs if best_theirs else None
        target, ok = ratio_at_least(ratio, TARGET)
        what = f"{size}/txn, synchronous={sync}"
        results.append(
            Result(name, best_ours, "events/s", ratio, target, ok,
                   reference=f"eventsourcing SQLite recorder, same events, {what}")
        )
        share = best_ours / best_alone
        results.append(
            Result(f"{name}_sqlite_alone", best_alone, "events/s", best_alone / best_theirs if best_theirs else None,
                   None, None, reference=f"eventsourcing recorder; this row: its table filled by SQLite alone, {what};"
                   f" swecl: {share:.0%} of it")
        )
        detail["configs"][name] = {
            "events": n, "batch": size, "synchronous": sync,
            "ours_events_per_s": [round(x) for x in mine],
            "eventsourcing_events_per_s": [round(x) for x in other],
            "sqlite_alone_events_per_s": [round(x) for x in alone],
            "swecl_share_of_sqlite_alone": round(share, 3),
            "eventsourcing_pragmas": pragmas,
        }
        ctx.log(f"  {name}: ours {best_ours:,.0f}/s, SQLite alone {best_alone:,.0f}/s ({share:.0%} of it)"
                + (f", eventsourcing {best_theirs:,.0f}/s, ratio {ratio:.2f}" if best_theirs else ""))
    n = min(len(stream), 1000)
    detail["wal_frames_per_commit"] = {
        f"batch{size}": frames_per_commit(ctx, stream[:n], size, have) for size in (1, 100)
    }
    ctx.details["append"] = detail
    return results

