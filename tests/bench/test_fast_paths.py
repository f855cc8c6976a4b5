"""The read paths made fast answer exactly what the plain ones do.

- ranged reads (query-planner hints, flat range disjuncts, the rowid plan for short
  spans) return the same events as filtering every event in Python;
- a projection decoded narrowly (its `reads`) folds to the same state as one decoded in full;
- a `Projector` that remembers states folds, at any cursor in any order, what a fresh one does.
"""

from __future__ import annotations

import random
from typing import ClassVar

import msgspec
import pytest

from ledger import Ledger, StreamRange
from projections import OutcomeProjection, Projector, RunsProjection
from projections.memory import MemoryProjection, memory_projection, resolve_seed_chain

from .conftest import Built

enc = msgspec.msgpack.encode


def _matches(rec, after, upto, types, streams, ranges) -> bool:
    if rec.seq <= after or (upto is not None and rec.seq > upto):
        return False
    if types is not None and rec.type not in types:
        return False
    if streams is not None and rec.stream not in streams:
        return False
    if ranges is not None:
        return any(
            (rec.stream == r.prefix or rec.stream.startswith(r.prefix + "/")) and (r.upto is None or rec.seq <= r.upto)
            for r in ranges
        )
    return True


def test_ranged_reads_return_what_filtering_returns(fast_paths_ledger: Built) -> None:
    rng = random.Random(11)
    with Ledger.open(fast_paths_ledger.path, readonly=True) as led:
        everything = list(led.read())
        head = led.head()
        runs = sorted({r.stream.split("/")[1] for r in everything if r.stream.startswith("run/")})
        type_names = sorted({r.type for r in everything})
        for _ in range(120):
            after = rng.randrange(0, head)
            span = rng.choice([1, 5, 300, 2048, 2049, 5000, head])
            upto = rng.choice([None, min(head, after + span)])
            types = rng.choice([None, rng.sample(type_names, rng.randint(1, 4))])
            ranges = streams = None
            if rng.random() < 0.5:
                ranges = [StreamRange(f"run/{v}", upto=rng.choice([None, rng.randrange(0, head + 1)]))
                          for v in rng.sample(runs, rng.randint(1, 3))]
            elif rng.random() < 0.5:
                streams = sorted({r.stream for r in rng.sample(everything, 3)})
            got = [r.seq for r in led.read(after=after, upto=upto, types=types, streams=streams, ranges=ranges)]
            want = [r.seq for r in everything if _matches(r, after, upto, types, streams, ranges)]
            assert got == want, (after, upto, types, streams, ranges)
            raw = [row[0] for row in led.read_raw(after=after, upto=upto, types=types, streams=streams, ranges=ranges)]
            assert raw == want


class FullOutcomes(OutcomeProjection):
    reads: ClassVar = None


class FullMemory(MemoryProjection):
    reads: ClassVar = None


class FullRuns(RunsProjection):
    reads: ClassVar = None


def test_narrow_decoding_folds_the_same_states(fast_paths_ledger: Built) -> None:
    with Ledger.open(fast_paths_ledger.path, readonly=True) as led:
        p = Projector(led, memo=0)
        assert enc(p.run(RunsProjection()).state) == enc(p.run(FullRuns()).state)
        for version in ("2", "3", "4", "x2", "sl"):
            assert enc(p.run(OutcomeProjection(version)).state) == enc(p.run(FullOutcomes(version)).state)
            chain = resolve_seed_chain(led, version)
            assert enc(p.run(MemoryProjection(version, chain)).state) == enc(p.run(FullMemory(version, chain)).state)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_remembering_projector_folds_what_a_fresh_one_does(fast_paths_ledger: Built, seed: int) -> None:
    rng = random.Random(seed)
    with Ledger.open(fast_paths_ledger.path, readonly=True) as led:
        head = led.head()
        cursors = [rng.randrange(0, head + 1) for _ in range(12)] + [head, head]
        remembering = Projector(led)
        for cursor in cursors:
            for make in (lambda: OutcomeProjection("3"), lambda c=cursor: memory_projection(led, "x2", c)):
                got = remembering.run(make(), upto=cursor)
                want = Projector(led, memo=0).run(make(), upto=cursor)
                assert enc(got.state) == enc(want.state), cursor
                assert got.seq == want.seq == cursor
                got.state.version = "mutated by the caller"  # must not leak into later folds
