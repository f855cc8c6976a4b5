"""The projection runner: folds to any cursor, checkpoints, invalidation."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger import Ledger, Recorded
from ledger.events import TaskFinished
from projections import CheckpointStore, Projection, Projector, Selection


class Tally(msgspec.Struct):
    resolved: dict[str, int] = msgspec.field(default_factory=dict)
    seen: list[int] = msgspec.field(default_factory=list)


class ResolvedPerSequence(Projection[Tally]):
    name: ClassVar[str] = "test.resolved"
    version: ClassVar[int] = 1
    state_type: ClassVar[type] = Tally

    def __init__(self) -> None:
        self.calls = 0

    def selection(self) -> Selection:
        return Selection(types=frozenset({"task.finished"}))

    def initial(self) -> Tally:
        return Tally()

    def apply(self, state: Tally, rec: Recorded) -> Tally:
        self.calls += 1
        ev = rec.event
        state.resolved[ev.sequence_id] = state.resolved.get(ev.sequence_id, 0) + int(bool(ev.resolved))
        state.seen.append(rec.seq)
        return state


class ResolvedPerSequenceV2(ResolvedPerSequence):
    version: ClassVar[int] = 2


def finished(seq_id: str, order: int, resolved: bool) -> TaskFinished:
    return TaskFinished(sequence_id=seq_id, instance_id=f"{seq_id}-{order}", order=order, pass_="initial", resolved=resolved)


def fill(led: Ledger, outcomes: list[tuple[str, bool]]) -> None:
    for i, (seq_id, resolved) in enumerate(outcomes):
        led.append(f"run/1/{seq_id}", [finished(seq_id, i + 1, resolved)])


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    led = Ledger.open(tmp_path / "ledger.db", create=True)
    yield led
    led.close()


def test_fold_up_to_any_cursor(ledger: Ledger) -> None:
    fill(ledger, [("a", True), ("b", False), ("a", True), ("b", True)])
    proj = Projector(ledger)
    assert proj.run(ResolvedPerSequence(), upto=2).state.resolved == {"a": 1, "b": 0}
    assert proj.run(ResolvedPerSequence()).state.resolved == {"a": 2, "b": 1}
    assert proj.run(ResolvedPerSequence(), upto=0).state.resolved == {}


def test_checkpoint_is_used_then_caught_up_incrementally(ledger: Ledger, tmp_path: Path) -> None:
    fill(ledger, [("a", True)] * 10)
    store = CheckpointStore(tmp_path / "projections.db")
    first = Projector(ledger, store).run(ResolvedPerSequence(), save=True)
    assert first.from_checkpoint is None and first.applied == 10
    fill(ledger, [("a", False)] * 2)
    p = ResolvedPerSequence()
    again = Projector(ledger, store).run(p)
    assert again.from_checkpoint == 10
    assert again.applied == 2 and p.calls == 2
    assert again.state.resolved == {"a": 10}
    assert again.state.seen == list(range(1, 13))


def test_checkpoint_ignored_after_version_bump(ledger: Ledger, tmp_path: Path) -> None:
    fill(ledger, [("a", True)] * 5)
    store = CheckpointStore(tmp_path / "projections.db")
    Projector(ledger, store).run(ResolvedPerSequence(), save=True)
    v2 = ResolvedPerSequenceV2()
    folded = Projector(ledger, store).run(v2)
    assert folded.from_checkpoint is None and v2.calls == 5


def test_checkpoint_of_another_history_is_ignored(tmp_path: Path) -> None:
    """Same ledger_id (a copied file) but a different event at the checkpoint's seq."""
    path_a = tmp_path / "a.db"
    led = Ledger.open(path_a, create=True)
    fill(led, [("a", True)] * 3)
    led.close()
    path_b = tmp_path / "b.db"
    path_b.write_bytes(path_a.read_bytes())
    (tmp_path / "a.db-wal").exists() and path_b.with_name("b.db-wal").write_bytes((tmp_path / "a.db-wal").read_bytes())
    store = CheckpointStore(tmp_path / "projections.db")
    led_a = Ledger.open(path_a)
    fill(led_a, [("a", True)])
    Projector(led_a, store).run(ResolvedPerSequence(), save=True)
    led_b = Ledger.open(path_b)
    assert led_b.ledger_id == led_a.ledger_id
    fill(led_b, [("b", False)])
    p = ResolvedPerSequence()
    folded = Projector(led_b, store).run(p)
    assert folded.from_checkpoint is None
    assert folded.state.resolved == {"a": 3, "b": 0}


def test_unwritable_checkpoint_store_does_not_fail_the_fold(ledger: Ledger, tmp_path: Path) -> None:
    fill(ledger, [("a", True)] * 3)
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    store = CheckpointStore(blocker / "projections.db")
    assert Projector(ledger, store).run(ResolvedPerSequence(), save=True).state.resolved == {"a": 3}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    outcomes=st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.booleans()), min_size=1, max_size=30),
    data=st.data(),
)
def test_fold_from_any_checkpoint_equals_full_fold(tmp_path_factory: pytest.TempPathFactory, outcomes, data) -> None:
    root = tmp_path_factory.mktemp("prop")
    led = Ledger.open(root / "ledger.db", create=True)
    fill(led, outcomes)
    k = data.draw(st.integers(min_value=0, max_value=len(outcomes)))
    full = Projector(led).run(ResolvedPerSequence())
    store = CheckpointStore(root / "projections.db")
    Projector(led, store).run(ResolvedPerSequence(), upto=k, save=True)
    resumed = Projector(led, store).run(ResolvedPerSequence())
    assert resumed.from_checkpoint == (k or None)
    assert msgspec.msgpack.encode(resumed.state) == msgspec.msgpack.encode(full.state)
    store.close()
    led.close()


@settings(max_examples=30, deadline=None)
@given(
    outcomes=st.lists(st.tuples(st.sampled_from(["a", "b"]), st.booleans()), min_size=1, max_size=20),
    data=st.data(),
)
def test_run_through_observes_each_cursor_as_run_would(tmp_path_factory: pytest.TempPathFactory, outcomes, data) -> None:
    """One fold observed at several cursors sees, at each, the state `run` gives there,
    starting from a checkpoint below the first cursor when there is one."""
    root = tmp_path_factory.mktemp("through")
    led = Ledger.open(root / "ledger.db", create=True)
    fill(led, outcomes)
    cursors = data.draw(st.lists(st.integers(min_value=0, max_value=len(outcomes) + 2), min_size=1, max_size=5))
    points = sorted({min(c, led.head()) for c in cursors})  # a cursor past the head is the head
    store = CheckpointStore(root / "projections.db")
    saved = data.draw(st.integers(min_value=0, max_value=points[0]))
    if saved:
        Projector(led, store).run(ResolvedPerSequence(), upto=saved, save=True)
    seen: list[tuple[int, bytes]] = []
    projection = ResolvedPerSequence()
    final = Projector(led, store).run_through(
        projection, cursors, lambda c, state: seen.append((c, msgspec.msgpack.encode(state)))
    )
    assert [c for c, _ in seen] == points
    for cursor, encoded in seen:
        assert encoded == msgspec.msgpack.encode(Projector(led).run(ResolvedPerSequence(), upto=cursor).state)
    assert final.seq == points[-1] and final.from_checkpoint == (saved or None)
    assert projection.calls == points[-1] - saved  # each event applied once, none before the checkpoint
    store.close()
    led.close()
