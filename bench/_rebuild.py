"""Benchmark 2: full rebuild of every projection, against the floor of reading the ledger.

The ledger: the synthetic one of 1,000,000 events (`_synth`: ~295 runs over the 273
tasks, seeds, dreams, recalls). The rebuild: `projections._rebuild.rebuild`, one scan
that folds the runs projection, a(i,j) and the memory substrate (with its seed chain) of
every run, then computes every run's metrics.

The floor, measured in the same process on the same file: read every row (all the
columns a fold is handed) and decode every payload with msgspec into its event type,
nothing else. The ratio rebuild / floor is the cost of the folds over what any reader
pays; the target is at most 2.

For the record, the same states are also computed the way the CLI did before, each
projection on its own through `Projector` (one run at a time), and compared with the
one-pass result: `details.rebuild.matches_per_projection` must be true.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ledger import Ledger
from ledger.events import BY_TYPE
from projections import OutcomeProjection, Projector, RunsProjection
from projections import Rebuilt, rebuild
from projections.memory import load_memory
from projections.metrics import compute

from ._core import Context, Result, ratio_at_most, size_label, timed
from ._synth import Generated, LedgerSpec, cached_ledger, is_cached

TARGET = 2.0


def big_spec(quick: bool) -> LedgerSpec:
    return LedgerSpec("std", events=20_000, task_scale=0.1) if quick else LedgerSpec("std", events=1_000_000)


def small_spec(quick: bool) -> LedgerSpec:
    return LedgerSpec("std", events=5_000, task_scale=0.1) if quick else LedgerSpec("std", events=100_000)


def floor(ledger: Ledger) -> int:
    """Read every row and decode every payload: what any reader of the whole ledger pays."""
    decoders = {type_: msgspec.json.Decoder(cls).decode for type_, cls in BY_TYPE.items()}
    n = 0
    for row in ledger.read_raw():
        decoders[row[4]](row[7])
        n += 1
    return n


def per_projection(ledger: Ledger, versions: list[str]) -> dict[str, Any]:
    """Every state the slow way: each projection on its own, run by run."""
    projector = Projector(ledger, memo=0)
    runs = projector.run(RunsProjection()).state
    outcomes = {v: projector.run(OutcomeProjection(v)).state for v in versions}
    memory = {v: load_memory(ledger, v, projector=projector).state for v in versions}
    metrics = {v: compute(outcomes[v].to_metric_inputs()) for v in runs.runs if v in outcomes}
    return {"runs": runs, "outcomes": outcomes, "memory": memory, "metrics": metrics}


def same_states(rebuilt: Rebuilt, slow: dict[str, Any]) -> list[str]:
    """Where the one-pass rebuild differs from the per-projection states (empty: nowhere)."""
    enc = msgspec.msgpack.encode
    diffs = []
    if enc(rebuilt.runs) != enc(slow["runs"]):
        diffs.append("runs")
    for v, state in slow["outcomes"].items():
        if enc(rebuilt.outcomes_of(v)) != enc(state):
            diffs.append(f"outcomes {v}")
    for v, state in slow["memory"].items():
        if enc(rebuilt.memory_of(v)) != enc(state):
            diffs.append(f"memory {v}")
    for v, result in slow["metrics"].items():
        if v not in rebuilt.metrics or enc(rebuilt.metrics[v]) != enc(result):
            diffs.append(f"metrics {v}")
    return diffs


def run(ctx: Context) -> list[Result]:
    spec = big_spec(ctx.quick)
    gen = ledger_for(ctx, spec)
    label = size_label(gen.events)
    reps = 3 if ctx.quick else 2
    floors: list[float] = []
    rebuilds: list[float] = []
    rebuilt: Rebuilt | None = None
    with Ledger.open(gen.path, readonly=True) as ledger:
        floor(ledger)  # the file into the page cache: neither side pays a cold read
        for _ in range(reps):  # interleaved, fastest of each kept
            seconds, rows = timed(lambda: floor(ledger))
            floors.append(seconds)
            seconds, rebuilt = timed(lambda: rebuild(ledger))
            rebuilds.append(seconds)
            ctx.log(f"rebuild {label}: floor {floors[-1]:.2f}s, one-pass rebuild {rebuilds[-1]:.2f}s")
        assert rebuilt is not None
        slow_seconds, slow = timed(lambda: per_projection(ledger, rebuilt.versions))
        ctx.log(f"rebuild {label}: each projection on its own {slow_seconds:.2f}s")
        diffs = same_states(rebuilt, slow)
    best_floor, best_rebuild = min(floors), min(rebuilds)
    ratio = best_rebuild / best_floor
    target, ok = ratio_at_most(ratio, TARGET)
    ctx.details["rebuild"] = {
        "ledger": {"events": gen.events, "runs": len(gen.runs), "bytes": gen.path.stat().st_size,
                   "generated_in_s": round(gen.seconds, 1), "from_cache": gen.cached},
        "floor_s": [round(x, 3) for x in floors],
        "rebuild_s": [round(x, 3) for x in rebuilds],
        "per_projection_s": round(slow_seconds, 3),
        "rows": rebuilt.rows,
        "decoded": rebuilt.decoded,
        "fold_steps": rebuilt.applied,
        "run_versions": len(rebuilt.versions),
        "memory_items": sum(len(m.items) for m in rebuilt.memory.values()),
        "outcome_cells": sum(
            len(cells) for o in rebuilt.outcomes.values() for s in o.sequences.values() for cells in s.passes.values()
        ),
        "matches_per_projection": not diffs,
        "differences": diffs[:20],
    }
    return [
        Result(f"rebuild_{label}", best_rebuild, "s", ratio, target, ok and not diffs,
               reference=f"floor: read + msgspec-decode every row ({best_floor:.2f} s)"),
        Result(f"rebuild_{label}_per_projection", slow_seconds, "s", slow_seconds / best_floor, None, None,
               reference="floor; each projection on its own, run by run (for comparison)"),
    ]


def ledger_for(ctx: Context, spec: LedgerSpec) -> Generated:
    if not is_cached(spec, ctx.cache):
        ctx.log(f"generating the {spec.name} ledger {spec.key()} (cached for later runs)")
    gen = cached_ledger(spec, ctx.cache)
    if not gen.cached:
        ctx.log(f"generated {gen.path.name}: {gen.events:,} events in {gen.seconds:.1f}s")
    return gen
