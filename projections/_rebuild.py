"""Every projection rebuilt in one scan of the ledger: runs, a(i,j) and memory of every run, metrics.

Running each projection on its own (`Projector.run`) reads the ledger once per run and
projection, and decodes every payload in full. A full rebuild (after a formula change,
for a report of every run, to check a ledger) instead reads each row once, in seq order,
and hands it to every fold that selects it:

- dispatch by event type: a type no projection folds (`pass.started`, ...) is skipped
  without decoding its payload;
- narrow decoding: a type whose folds read a few fields (`grade.finished` needs the
  verdict, not the per-test maps; `agent.finished` its turns and cost, not the tool
  calls) is decoded into a view Struct holding only those fields, same names, defaults
  and wire names as the event, so the folds' own `apply` runs on it unchanged. A row of an
  older payload schema goes through the full decode and its upcasters, as `read` does;
- memory seed chains: each run's chain is resolved first (from the few `memory.seeded`
  events, as `resolve_seed_chain` would at the same cursor), and a memory event of run R
  is applied to R's substrate and to every run whose chain reads R up to at least its seq.

The result is, state for state, what each projection gives on its own at the same
cursor (`tests/bench/test_rebuild.py` checks that on a realistic ledger). One difference
is deliberate: a payload field no fold reads is not validated, so a malformed field of
that kind fails `Ledger.verify`, not the rebuild.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable
from dataclasses import dataclass, field

from ledger import PAYLOAD_ERRORS, Ledger, Recorded, decode_payload

from ._outcomes import OutcomeProjection, RunOutcomes
from ._runs import RunsProjection, RunsState
from ._views import decoders_for, merge_reads
from .memory import MEMORY_TYPES, MemoryProjection, MemoryState, SeedLink, header_stream, run_of, seed_chain
from .metrics import DEFAULT_FORMULA, Lambdas, MetricsResult, compute

__all__ = ["Rebuilt", "rebuild"]

_RUNS = 1
_OUTCOMES = 2
_MEMORY = 4

# The three folds: what each selects and reads (their `reads`, see `_views`).
_FOLDS = (
    (_RUNS, RunsProjection.reads, RunsProjection().selection().types),
    (_OUTCOMES, OutcomeProjection.reads, OutcomeProjection._TYPES),
    (_MEMORY, MemoryProjection.reads, MEMORY_TYPES),
)
_ROUTES: dict[str, int] = {}
for _bit, _reads, _types in _FOLDS:
    for _t in _types or ():
        _ROUTES[_t] = _ROUTES.get(_t, 0) | _bit
_PLAN = merge_reads([(_types, _reads) for _, _reads, _types in _FOLDS])
"""Per type: the union of the fields the folds selecting it read (None: decoded in full)."""

_Targets = tuple["RunOutcomes | None", tuple[tuple[MemoryState, "int | None"], ...]]


@dataclass
class Rebuilt:
    """Every projection as of `seq`. States of a run with no event of a projection's
    types are left out; `outcomes_of`/`memory_of` give the initial state for them."""

    seq: int
    runs: RunsState
    outcomes: dict[str, RunOutcomes]
    memory: dict[str, MemoryState]
    chains: dict[str, tuple[SeedLink, ...]]
    metrics: dict[str, MetricsResult]
    rows: int = 0  # rows read
    decoded: int = 0  # payloads decoded (rows of types no projection folds are not)
    applied: int = 0  # fold steps (a memory event counts once per substrate it reaches)
    versions: list[str] = field(default_factory=list)  # every run version with an event

    def outcomes_of(self, version: str) -> RunOutcomes:
        return self.outcomes.get(version) or OutcomeProjection(version).initial()

    def memory_of(self, version: str) -> MemoryState:
        return self.memory.get(version) or MemoryState(version=version)


def _seeds(ledger: Ledger, cursor: int) -> dict[str, list[Recorded]]:
    by_stream: dict[str, list[Recorded]] = {}
    for rec in ledger.read(types=["memory.seeded"], upto=cursor):
        by_stream.setdefault(rec.stream, []).append(rec)
    return by_stream


def _subscriptions(
    chains: dict[str, tuple[SeedLink, ...]],
) -> tuple[dict[str, list[tuple[str, int]]], list[tuple[str, str, int]]]:
    """source run -> [(target run, read up to seq)]: whose substrate reads the source's events.

    A target reads its own streams whole (not listed here) and each source of its chain
    up to that link's `source_seq` (the largest, if several links name the same source).
    Sources whose name holds a '/' cannot be found by `run_of`; they are matched by
    prefix instead (the second list; never made by `swecl`, whose versions are slugs).
    """
    by_source: dict[str, list[tuple[str, int]]] = {}
    by_prefix: list[tuple[str, str, int]] = []
    for target, links in chains.items():
        upto: dict[str, int] = {}
        for link in links:
            upto[link.source] = max(upto.get(link.source, -1), link.source_seq)
        for source, seq in upto.items():
            if source == target:
                continue  # its own streams are read whole already
            if "/" in source:
                by_prefix.append((header_stream(source), target, seq))
            else:
                by_source.setdefault(source, []).append((target, seq))
    return by_source, by_prefix


def rebuild(
    ledger: Ledger,
    *,
    upto: int | None = None,
    formula: str = DEFAULT_FORMULA,
    lambdas: Lambdas | None = None,
    versions: Iterable[str] | None = None,
) -> Rebuilt:
    """Runs, and the outcomes, memory substrate and metrics of every run, as of `upto`.

    `versions` limits the per-run states to those runs (default: every run version with
    an event of a projection's types); the scan is one pass over the ledger either way.
    """
    head = ledger.head()
    cursor = head if upto is None else max(0, min(upto, head))
    only = set(versions) if versions is not None else None
    chains = _chains(ledger, cursor, only)
    routing = _Routing(only, *_subscriptions(chains))
    runs_state = RunsProjection().initial()
    rows, decoded, applied = _fold_rows(ledger, cursor, runs_state, routing)

    outcomes, memory = routing.outcomes, routing.memory
    seen = list(dict.fromkeys([*outcomes, *memory]))
    metrics = {
        version: compute(outcomes[version].to_metric_inputs(), formula, lambdas)
        for version in runs_state.runs
        if version in outcomes
    }
    return Rebuilt(
        seq=cursor,
        runs=runs_state,
        outcomes=outcomes,
        memory=memory,
        chains={v: chains.get(v, ()) for v in seen},
        metrics=metrics,
        rows=rows,
        decoded=decoded,
        applied=applied,
        versions=seen,
    )


def _chains(ledger: Ledger, cursor: int, only: set[str] | None) -> dict[str, tuple[SeedLink, ...]]:
    """Each seeded run's chain, from the few seed events (index-driven), as the run's own
    `resolve_seed_chain` would resolve it at this cursor; a run without seeds of its own
    has none (and is left out)."""
    seeds = _seeds(ledger, cursor)

    def seeds_of(target: str, limit: int | None) -> list[Recorded]:
        found = seeds.get(header_stream(target), [])
        return found if limit is None else [r for r in found if r.seq <= limit]

    seeded = {run_of(stream) for stream in seeds if stream == header_stream(run_of(stream))}
    return {v: seed_chain(v, cursor, seeds_of) for v in sorted(seeded) if only is None or v in only}


@dataclass
class _Routing:
    """Where a stream's events go: the per-run states the scan fills (made as their runs'
    first events arrive), and which substrates read which runs (`_subscriptions`)."""

    only: set[str] | None
    by_source: dict[str, list[tuple[str, int]]]
    by_prefix: list[tuple[str, str, int]]
    outcomes: dict[str, RunOutcomes] = field(default_factory=dict)
    memory: dict[str, MemoryState] = field(default_factory=dict)

    def memory_state(self, version: str) -> MemoryState:
        mem = self.memory.get(version)
        if mem is None:
            mem = self.memory[version] = MemoryState(version=version)
        return mem

    def targets_of(self, stream: str) -> _Targets:
        """Where an event of `stream` goes: its run's outcome state, and the substrates
        that read it with the highest seq each may take (None: every seq)."""
        run = run_of(stream)
        if not run:
            return None, ()
        mine = self.only is None or run in self.only
        out = None
        if mine:
            out = self.outcomes.get(run)
            if out is None:
                out = self.outcomes[run] = RunOutcomes(version=run)
        readers: list[tuple[MemoryState, int | None]] = [(self.memory_state(run), None)] if mine else []
        readers += [(self.memory_state(target), limit) for target, limit in self.by_source.get(run, ())]
        readers += [
            (self.memory_state(target), limit)
            for prefix, target, limit in self.by_prefix
            if stream == prefix or stream.startswith(prefix + "/")
        ]
        return out, tuple(readers)


def _fold_rows(ledger: Ledger, cursor: int, runs_state: RunsState, routing: _Routing) -> tuple[int, int, int]:
    """The one scan: every row up to `cursor` handed to the folds that select it. Returns
    the rows read, the payloads decoded and the fold steps taken."""
    # `apply` of these two reads nothing of the instance but the state and the event
    # (OutcomeProjection's cut-off options are unset here), so one instance serves all runs.
    outcome_apply = OutcomeProjection("").apply
    memory_apply = MemoryProjection("").apply
    runs_apply = RunsProjection().apply
    targets_of = routing.targets_of

    # type -> (route, schema of the decoder, decoder); rows of another schema (and types
    # this catalog does not know) take the full decode with upcasters, as `Ledger.read` does.
    decoders = decoders_for(_PLAN)
    dispatch = {type_: (route, *decoders.get(type_, (-1, None))) for type_, route in _ROUTES.items()}
    streams: dict[str, _Targets] = {}
    rows = decoded = applied = 0
    collecting = gc.isenabled()
    # The folds build long-lived state and no reference cycles: the cyclic collector would
    # only rescan that growing state again and again (a sixth of the time, measured).
    gc.disable()
    try:
        for row in ledger.read_raw(upto=cursor):
            rows += 1
            entry = dispatch.get(row[4])
            if entry is None:
                continue  # no projection folds this type: its payload is never decoded
            seq, event_id, stream, stream_version, type_, schema, time, payload, prev_hash, digest = row
            route, current, decode = entry
            try:
                event = decode(payload) if schema == current else decode_payload(type_, schema, payload)
            except PAYLOAD_ERRORS as exc:
                raise ledger.undecodable(seq, exc) from None
            decoded += 1
            rec = Recorded(seq, event_id, stream, stream_version, type_, schema, time, event, prev_hash, digest)
            if route & _RUNS:
                runs_apply(runs_state, rec)
                applied += 1
            if route & (_OUTCOMES | _MEMORY):
                targets = streams.get(stream)
                if targets is None:
                    targets = streams[stream] = targets_of(stream)
                out, readers = targets
                if route & _OUTCOMES and out is not None:
                    outcome_apply(out, rec)
                    applied += 1
                if route & _MEMORY:
                    for mem, limit in readers:
                        if limit is None or seq <= limit:
                            memory_apply(mem, rec)
                            applied += 1
    finally:
        if collecting:
            gc.enable()
    return rows, decoded, applied
