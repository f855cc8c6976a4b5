"""`swecl run --fork V@K`: a new run whose initial pass takes V's tasks before order K as
they were and runs from K on with the options given (the others are V's).

Everything is checked before a version is claimed (one line each). The claim appends
run.started and run.forked in one batch, so a fork is never recorded without its source;
the memory seed (`memory.seeded`, chosen "fork") and the dream of `--dream-at-fork` follow
on the header stream before the first task, as a seeded run's do. What the fork skips is
read, not decided here: its outcome projection holds V's tasks before K (`projections._fork`),
so the run machinery finds them done and starts at K.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec

from commands.inputs import Sequence
from ledger import Ledger, NewEvent, SweclError, event_id_for
from ledger.events import MemorySeeded, RunForked, RunStarted
from projections import Projector, canonical_version, fork_of, outcome_projection, sequence_cutoffs

from ._options import RunOptions, parse_fork
from ._stages import get_stage
from .memory import NOT_INHERITED, memory_backend, memory_of

# What makes the plan: a fork runs V's tasks in V's order, so these come from V only.
PLAN_OPTIONS = {"dataset": "--dataset", "rows": "--rows", "sequences": "--sequence", "instances": "--instance",
                "order": "--order", "orders": "--orders", "source_memory": "--source-memory"}
# What a fork never takes from V: it names its own version, its own fork, and the values
# of the memory's options, what its backend says (`memory.NOT_INHERITED`).
_NOT_INHERITED = {"version", "fork", "dream_at_fork", *NOT_INHERITED}


@dataclass(frozen=True)
class ForkPlan:
    source: str  # V
    order: int  # K
    memory_source: str  # the run whose streams hold V's memory before K (V, or up V's own fork chain)
    cuts: dict[str, int] = field(default_factory=dict)  # sequence -> seq before memory_source's task K started
    # The memory's own state as of the cut (`MemoryBackend.fork_snapshots`): sequence -> event seq.
    memory_state: dict[str, int] = field(default_factory=dict)

    def describe(self) -> str:
        return f"forked from v{self.source} at task {self.order}: tasks 1..{self.order - 1} are v{self.source}'s"


def fork_options(ledger: Ledger, text: str, given: dict[str, Any]) -> RunOptions:
    """The fork's options: V's recorded ones, with those `given` on this command line
    instead (RunOptions fields). The plan's options are V's: giving one is refused."""
    version, _ = parse_fork(text)
    source = _source_started(ledger, text, version)
    for name, flag in PLAN_OPTIONS.items():
        if given.get(name) not in (None, [], ()):
            raise SweclError(f"--fork runs {source.version}'s tasks in its order: drop {flag}")
    recorded = {k: v for k, v in source.config.items() if k not in _NOT_INHERITED}
    opts = RunOptions.from_config({**recorded, **given, "fork": text.strip(),
                                   "dream_at_fork": bool(given.get("dream_at_fork"))})
    return opts


def _source_started(ledger: Ledger, text: str, version: str) -> RunStarted:
    try:
        version = canonical_version(ledger, version)
    except SweclError:
        pass
    rec = next(ledger.read_stream(f"run/{version}"), None)
    if rec is None or not isinstance(rec.event, RunStarted):
        raise SweclError(f"--fork {text}: no run version {version!r} in {ledger.path}")
    return rec.event


def resolve_fork(ledger: Ledger, opts: RunOptions, sequences: list[Sequence], dataset_hash: str) -> ForkPlan:
    """`opts.fork` checked against the ledger: V exists, 1 < K <= the tasks of each
    sequence, V's initial pass finished every task before K in each, the plan is V's."""
    assert opts.fork is not None
    version, order = parse_fork(opts.fork)
    started = _source_started(ledger, opts.fork, version)
    version = started.version
    memory, source_memory = memory_of(opts), memory_backend(get_stage(started.stage),
                                                            RunOptions.from_config({**started.config, "stage": started.stage}))
    memory.check_fork(opts.fork, version, source_memory)
    if dataset_hash != started.dataset_hash:
        raise SweclError(f"--fork {opts.fork}: run {version}'s dataset changed since (hash "
                         f"{started.dataset_hash[:12]}, now {dataset_hash[:12]}): its tasks cannot be taken as they were")
    plan = {s.id: [(t.instance_id, t.order) for t in s.tasks] for s in sequences}
    if plan != {s: [(t.instance_id, t.order) for t in refs] for s, refs in started.tasks.items()}:
        raise SweclError(f"--fork {opts.fork}: the tasks to run are not run {version}'s (report this)")
    if "initial" not in started.passes or "initial" not in opts.pass_list:
        raise SweclError(f"--fork {opts.fork}: a fork takes and continues the initial pass; give --passes with initial")
    # One K for every sequence: each must have a task K and have finished every task before it.
    state = Projector(ledger).run(outcome_projection(ledger, version)).state
    for sequence_id, refs in started.tasks.items():
        orders = [t.order for t in refs]
        if not 1 < order <= max(orders, default=0):
            raise SweclError(f"--fork {opts.fork}: K must be within 2..{max(orders, default=0)} (the tasks of "
                             f"sequence {sequence_id}; one K applies to each sequence of the run)")
        for ref in refs:
            cell = state.cell(sequence_id, "initial", ref.order)
            if ref.order < order and (cell is None or not cell.done):
                raise SweclError(f"--fork {opts.fork}: run {version} has not finished initial task {ref.order} "
                                 f"({ref.instance_id}) of sequence {sequence_id}: nothing to fork at {order}")
    memory_source = version
    while (parent := fork_of(ledger, memory_source)) is not None and order <= parent[1]:
        memory_source = parent[0]  # V's tasks before K are its source's: so is its memory
    starts = sequence_cutoffs(ledger, memory_source, order)
    head = ledger.head()
    cuts = {s: (starts[s] - 1 if s in starts else head) for s in started.tasks}
    snapshots: dict[str, int] = {}
    if memory.kind == source_memory.kind:  # the memory's own state, as of the cut (a server's data)
        snapshots = memory.fork_snapshots(ledger, opts.fork, memory_source, cuts)
    return ForkPlan(source=version, order=order, memory_source=memory_source, cuts=cuts, memory_state=snapshots)


def forked_event(plan: ForkPlan) -> RunForked:
    return RunForked(source_run=plan.source, order=plan.order)


def apply_fork_seed(ledger: Ledger, version: str, plan: ForkPlan, what: str = "its memory") -> str:
    """The fork's memory as its source's stood before task K, recorded as `memory.seeded`."""
    event = MemorySeeded(item_count=0, source_run=plan.memory_source, source_seq=min(plan.cuts.values()),
                         chosen="fork", sequence_seqs=dict(plan.cuts),
                         provider_snapshots=dict(plan.memory_state))  # the recorded name: a server's snapshots
    ledger.append(f"run/{version}", [NewEvent(event, event_id_for("memory.seeded", version, "fork", plan.memory_source))],
                  expected_version=ledger.stream_version(f"run/{version}"), durable=True)
    return f"v{version} {what} as v{plan.memory_source}'s stood before task {plan.order}"


def fork_run_options(opts: RunOptions) -> RunOptions:
    """Checks of the fork's own options that need no ledger."""
    if opts.fork is None:
        return opts
    parse_fork(opts.fork)
    return msgspec.structs.replace(opts, source_memory=None)
