"""The memory projection: as-of folds, checkpoints, statuses, seed chains and provenance."""

from __future__ import annotations

import tempfile
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from commands.memory import seed_memory
from ledger import Ledger
from ledger.events import (
    DreamFinished,
    DreamStarted,
    MemoryMerged,
    MemoryPruned,
    MemoryRecalled,
    MemoryRejected,
    MemorySeeded,
    MemorySuperseded,
    RecallHit,
)
from projections import CheckpointStore, Projector
from projections.memory import MemoryProjection, load_memory, resolve_seed_chain

from .builders import OTHER_REPO, REPO, item, start_run, task_started, write


@pytest.fixture
def led(tmp_path: Path) -> Ledger:
    ledger = Ledger.open(tmp_path / "ledger.db", create=True)
    yield ledger
    ledger.close()


def fresh_fold(led: Ledger, version: str, k: int) -> bytes:
    """The state as of k by the definition: the chain as of k, every selected event <= k."""
    proj = MemoryProjection(version, resolve_seed_chain(led, version, k))
    sel = proj.selection()
    state = proj.fold(led.read(upto=k, types=sel.types, ranges=list(sel.ranges)))
    return msgspec.msgpack.encode(state)


IDS = [f"m{i}" for i in range(6)]
STREAMS = ["run/A", "run/A/s", "run/V", "run/V/s", "run/V/t"]

op = st.one_of(
    st.tuples(
        st.just("write"),
        st.sampled_from(IDS),
        st.sampled_from(STREAMS),
        st.sampled_from([REPO, OTHER_REPO]),
        st.integers(1, 5),
        st.sampled_from([None, 1, 2]),
    ),
    st.tuples(st.just("prune"), st.sampled_from(IDS), st.sampled_from(STREAMS)),
    st.tuples(
        st.just("merge"),
        st.sampled_from(IDS),
        st.lists(st.sampled_from(IDS), min_size=1, max_size=3),
        st.sampled_from(STREAMS),
    ),
    st.tuples(st.just("supersede"), st.sampled_from(IDS), st.sampled_from(IDS), st.sampled_from(STREAMS)),
    st.tuples(st.just("recall"), st.lists(st.sampled_from(IDS), max_size=3), st.sampled_from(STREAMS)),
    st.tuples(st.just("task"), st.integers(1, 5), st.sampled_from(["run/A/s", "run/V/s", "run/V/t"])),
    st.tuples(st.just("reject"), st.sampled_from(STREAMS)),
    st.tuples(st.just("dream"), st.sampled_from(["run/A", "run/V"])),
    st.tuples(
        st.just("seed"),
    ),
)


def play(led: Ledger, ops: list[tuple]) -> None:
    start_run(led, "A")
    start_run(led, "V")
    seeded = False
    for n, o in enumerate(ops):
        kind = o[0]
        if kind == "write":
            _, item_id, stream, repo, order, ttl = o
            seq_id = stream.split("/")[2] if stream.count("/") == 2 else "s"
            ev = item(item_id, stream.split("/")[1], order, repo=repo, sequence=seq_id, ttl_tasks=ttl)
            led.append(stream, [ev])
        elif kind == "prune":
            led.append(o[2], [MemoryPruned(item_id=o[1], reason="test")])
        elif kind == "merge":
            led.append(o[3], [MemoryMerged(into=o[1], from_=o[2], reason="test")])
        elif kind == "supersede":
            led.append(o[3], [MemorySuperseded(item_id=o[1], by=o[2], reason="test")])
        elif kind == "recall":
            hits = [RecallHit(item_id=i, score=1.0, rank=r) for r, i in enumerate(o[1], start=1)]
            led.append(
                o[2],
                [
                    MemoryRecalled(
                        sequence_id="s", instance_id="x", order=1, pass_="initial", query_hash="h", results=hits
                    )
                ],
            )
        elif kind == "task":
            _, order, stream = o
            task_started(led, stream.split("/")[1], order, sequence=stream.split("/")[2])
        elif kind == "reject":
            led.append(o[1], [MemoryRejected(reason="r", rule="secret")])
        elif kind == "dream":
            led.append(o[1], [DreamStarted(dream_id=f"d{n}"), DreamFinished(dream_id=f"d{n}", decisions=0)])
        elif kind == "seed" and not seeded:
            led.append("run/V", [MemorySeeded(item_count=0, source_run="A", source_seq=led.head())])
            seeded = True


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, max_size=22))
def test_state_as_of_any_seq_equals_a_fresh_fold(ops: list[tuple]) -> None:
    with tempfile.TemporaryDirectory() as d:
        led = Ledger.open(Path(d) / "ledger.db", create=True)
        play(led, ops)
        store = CheckpointStore(Path(d) / "projections.db")
        with_checkpoints = Projector(led, store)
        used = 0
        for k in range(led.head() + 1):
            expected = fresh_fold(led, "V", k)
            plain = load_memory(led, "V", upto=k)
            assert msgspec.msgpack.encode(plain.state) == expected
            # Checkpoints at every third seq, then folds that start from them.
            if k % 3 == 0:
                with_checkpoints.run(MemoryProjection("V", resolve_seed_chain(led, "V", k)), upto=k, save=True)
            resumed = load_memory(led, "V", upto=k, projector=with_checkpoints)
            assert msgspec.msgpack.encode(resumed.state) == expected
            used += resumed.from_checkpoint is not None
        assert used > 0 or led.head() < 3
        store.close()
        led.close()


def test_statuses_and_history(led: Ledger) -> None:
    start_run(led, "V")
    write(led, "V", item("a", "V", 1), item("b", "V", 2), item("c", "V", 3), item("d", "V", 4))
    led.append("run/V", [MemoryPruned(item_id="a", reason="expired", dream_id="d1")])
    led.append("run/V", [MemoryMerged(into="d", from_=["b"], reason="dup", dream_id="d1")])
    led.append("run/V", [MemorySuperseded(item_id="c", by="d", reason="newer", dream_id="d1")])
    state = load_memory(led, "V").state
    assert {i.item_id: i.status for i in state.items.values()} == {
        "a": "pruned",
        "b": "merged",
        "c": "superseded",
        "d": "live",
    }
    assert [i.item_id for i in state.live_items()] == ["d"]
    assert state.items["b"].merged_into == "d" and state.items["d"].merged_from == ["b"]
    assert state.items["c"].superseded_by == "d"
    assert [(h.status, h.reason) for h in state.items["a"].history] == [("live", "written"), ("pruned", "expired")]
    assert state.items["a"].written_seq == 2 and state.items["a"].history[1].seq == 6
    # As of the seq before the prune, `a` was live.
    assert load_memory(led, "V", upto=5).state.items["a"].status == "live"


def test_task_clock_counts_initial_tasks_across_the_chain(led: Ledger) -> None:
    start_run(led, "A")
    for order in (1, 2, 3):
        task_started(led, "A", order)
    task_started(led, "A", 2, pass_="retest")  # retests do not advance the clock
    write(led, "A", item("a1", "A", 1, ttl_tasks=5))
    start_run(led, "B")
    seed_memory(led, "B", "A")
    task_started(led, "B", 1)
    task_started(led, "B", 1)  # a resumed task is the same tick
    state = load_memory(led, "B").state
    assert state.task_clock("s") == 4
    a1 = state.items["a1"]
    assert a1.written_clock == 3  # written after A's task 3 started
    assert state.task_age(a1) == 1


def test_seed_chain_of_three_runs(led: Ledger) -> None:
    start_run(led, "A")
    write(led, "A", item("a1", "A", 1), item("a2", "A", 2))
    source_seq = led.head()
    write(led, "A", item("a3", "A", 3))  # after B's source_seq: never in B
    start_run(led, "B")
    seeded = seed_memory(led, "B", f"A@{source_seq}")
    assert seeded.plan.item_count == 2
    led.append("run/A", [MemoryPruned(item_id="a1", reason="later decision in A")])  # A's business only
    write(led, "B", item("b1", "B", 1))
    start_run(led, "C")
    seed_memory(led, "C", "B")
    write(led, "B", item("b2", "B", 2))  # after C's seed: never in C

    b = load_memory(led, "B").state
    assert sorted(i.item_id for i in b.live_items()) == ["a1", "a2", "b1", "b2"]
    c = load_memory(led, "C").state
    assert sorted(i.item_id for i in c.live_items()) == ["a1", "a2", "b1"]
    assert "a3" not in c.items and "b2" not in c.items
    assert [(h.run, h.via) for h in c.items["a1"].origin] == [("A", "written"), ("B", "seeded"), ("C", "seeded")]
    assert [(h.run, h.via) for h in c.items["b1"].origin] == [("B", "written"), ("C", "seeded")]
    chain = resolve_seed_chain(led, "C")
    assert [(l.target, l.source, l.source_seq) for l in chain] == [
        ("C", "B", chain[0].source_seq),
        ("B", "A", source_seq),
    ]
    a = load_memory(led, "A").state
    assert a.items["a1"].status == "pruned" and "a3" in a.items
    # Before B was seeded, B's substrate was empty even though A's items exist.
    before = seeded.recorded[0].seq - 1
    assert load_memory(led, "B", upto=before).state.items == {}


def test_a_cycle_in_a_hand_made_ledger_is_cut(led: Ledger) -> None:
    start_run(led, "A")
    start_run(led, "B")
    write(led, "A", item("a1", "A", 1))
    led.append("run/B", [MemorySeeded(item_count=1, source_run="A", source_seq=led.head())])
    led.append("run/A", [MemorySeeded(item_count=1, source_run="B", source_seq=led.head())])
    chain = resolve_seed_chain(led, "A")
    assert {(l.target, l.source) for l in chain} == {("A", "B"), ("B", "A")}
    assert "a1" in load_memory(led, "A").state.items
