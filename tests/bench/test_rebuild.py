"""The one-pass rebuild gives, state for state, what each projection gives on its own."""

from __future__ import annotations

import msgspec
import pytest

from ledger import Ledger
from projections import OutcomeProjection, Projector, RunsProjection
from projections._rebuild import rebuild
from projections.memory import load_memory
from projections.metrics import compute

from .conftest import Built

enc = msgspec.msgpack.encode


def per_projection(led: Ledger, cursor: int, versions: list[str]) -> dict:
    projector = Projector(led, memo=0)
    runs = projector.run(RunsProjection(), upto=cursor).state
    return {
        "runs": runs,
        "outcomes": {v: projector.run(OutcomeProjection(v), upto=cursor).state for v in versions},
        "memory": {v: load_memory(led, v, upto=cursor, projector=projector).state for v in versions},
    }


def test_rebuild_equals_each_projection_at_every_cursor(fast_paths_ledger: Built) -> None:
    with Ledger.open(fast_paths_ledger.path, readonly=True) as led:
        for cursor in fast_paths_ledger.cursors:
            rebuilt = rebuild(led, upto=cursor)
            versions = sorted(set(rebuilt.versions) | {"x2", "p", "sl", "c1", "c2", "a", "nobody"})
            slow = per_projection(led, cursor, versions)
            assert enc(rebuilt.runs) == enc(slow["runs"]), cursor
            for v in versions:
                assert enc(rebuilt.outcomes_of(v)) == enc(slow["outcomes"][v]), (cursor, v)
                assert enc(rebuilt.memory_of(v)) == enc(slow["memory"][v]), (cursor, v)
            for v in slow["runs"].runs:
                expected = compute(slow["outcomes"][v].to_metric_inputs())
                assert enc(rebuilt.metrics[v]) == enc(expected), (cursor, v)
            assert rebuilt.seq == cursor


def test_rebuild_covers_the_shapes_it_was_built_for(fast_paths_ledger: Built) -> None:
    """Guard the fixture: the rare shapes are really in it (else the test above proves less)."""
    with Ledger.open(fast_paths_ledger.path, readonly=True) as led:
        rebuilt = rebuild(led)
        assert len(rebuilt.chains["x2"]) == 2  # x2 <- 3 <- 2
        assert {"imported-1", "imported-2"} <= set(rebuilt.memory["p"].items)
        assert "slash-item" in rebuilt.memory["sl"].items
        assert rebuilt.runs.runs["2"].status == "failed" and rebuilt.runs.runs["2"].resumed == 1
        assert rebuilt.decoded < rebuilt.rows  # pass.* and the unknown type are not decoded
        abandoned = sum(1 for r in led.read(types=["task.abandoned"]))
        assert abandoned > 0
        dream = [m for m in rebuilt.memory.values() if m.dreams]
        assert dream and any(i.status != "live" for m in dream for i in m.items.values())


def test_rebuild_can_be_limited_to_some_runs(fast_paths_ledger: Built) -> None:
    with Ledger.open(fast_paths_ledger.path, readonly=True) as led:
        full = rebuild(led)
        some = rebuild(led, versions=["3", "x2"])
        assert set(some.outcomes) == {"3", "x2"}
        for v in ("3", "x2"):
            assert enc(some.outcomes_of(v)) == enc(full.outcomes_of(v))
            assert enc(some.memory_of(v)) == enc(full.memory_of(v))


@pytest.mark.parametrize("cursor", [0, 1])
def test_rebuild_of_an_empty_prefix(fast_paths_ledger: Built, cursor: int) -> None:
    with Ledger.open(fast_paths_ledger.path, readonly=True) as led:
        rebuilt = rebuild(led, upto=cursor)
        assert rebuilt.rows == cursor
        assert enc(rebuilt.runs) == enc(Projector(led).run(RunsProjection(), upto=cursor).state)
