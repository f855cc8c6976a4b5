"""How far a run has got, and (while it runs) when it should be done.

Progress counts cells of the a(i,j) projection (`RunOutcomes`): a task of a planned pass
is done once its latest attempt finished, whatever the verdict. The estimate is the
run's own pace since it last (re)started: tasks finished since then over the time since
then, so a resumed run is not judged by the hours it lay interrupted, and sequences run
in parallel count at their joint pace.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from ledger import Ledger, StreamRange
from projections import RunOutcomes, RunSummary, read_views, retest_row
from projections.report import planned_passes


@dataclass(frozen=True)
class Progress:
    done: int
    """Tasks of the planned passes whose latest attempt finished."""
    total: int
    """Tasks the run's passes plan (every pass over every sequence)."""
    running: bool
    eta_s: float | None
    """Seconds left at the pace since the run last (re)started; None when not running or
    nothing finished yet since then."""
    pace_s: float | None
    """Seconds per finished task at that pace."""

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 1.0


def parse_time(text: str) -> datetime:
    """A ledger time (`2024-05-01T12:00:00.000000Z`) as an aware datetime."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@dataclass(frozen=True)
class ProgressFacts:
    """What the ledger says of a run's progress; the clock and the run's lock add the rest
    (`progress_now`), so the view can keep these while the ledger does not move."""

    done: int
    total: int
    last_start_time: str | None
    """When the run last started or resumed (ledger time)."""
    finished_since: int
    """Tasks finished since then."""


def progress_facts(ledger: Ledger, run: RunSummary, state: RunOutcomes) -> ProgressFacts:
    """The ledger's part of `run`'s progress, from its outcomes `state`."""
    started = None
    last_start_seq, last_start_time = 0, None
    for rec in ledger.read(types=["run.started", "run.resumed"], streams=[f"run/{run.version}"]):
        if rec.type == "run.started":
            started = rec.event
        last_start_seq, last_start_time = rec.seq, rec.time
    retest_every = started.retest_every if started is not None else None
    done = total = 0
    for sequence_id in run.sequences:
        cells = state.sequences.get(sequence_id)
        plan = cells.plan if cells is not None else (started.tasks.get(sequence_id, []) if started is not None else [])
        for pass_ in planned_passes(run, retest_every, len(plan)):
            orders = _pass_orders(pass_, [t.order for t in plan])
            total += len(orders)
            finished = cells.passes.get(pass_, {}) if cells is not None else {}
            done += sum(1 for o in orders if (c := finished.get(o)) is not None and c.done)
    since = 0
    if last_start_time is not None:
        since = sum(1 for _ in read_views(ledger, "task.finished", ("order",),
                                          ranges=[StreamRange(f"run/{run.version}")], after=last_start_seq))
    return ProgressFacts(done=done, total=total, last_start_time=last_start_time, finished_since=since)


def progress_now(facts: ProgressFacts, status: str, *, now: datetime | None = None) -> Progress:
    """Progress as of now: the pace since the run last (re)started, while `status` is running."""
    running = status == "running"
    eta = pace = None
    if running and facts.last_start_time is not None:
        elapsed = ((now or datetime.now(UTC)) - parse_time(facts.last_start_time)).total_seconds()
        if facts.finished_since and elapsed > 0:
            pace = elapsed / facts.finished_since
            eta = pace * max(0, facts.total - facts.done)
    return Progress(done=facts.done, total=facts.total, running=running, eta_s=eta, pace_s=pace)


def run_progress(ledger: Ledger, run: RunSummary, state: RunOutcomes, status: str, *,
                 now: datetime | None = None) -> Progress:
    """Progress of `run` from its outcomes `state`; `status` as `live_status` says it."""
    return progress_now(progress_facts(ledger, run, state), status, now=now)


def _pass_orders(pass_: str, orders: list[int]) -> list[int]:
    """The tasks a pass runs: a `retest-K` row re-tests the first K tasks, every other pass all of them."""
    row = retest_row(pass_)
    return orders if row is None else orders[:row]


def duration_text(seconds: float) -> str:
    """`1 h 05 min`, `4 min 10 s`, `12 s`, `0.4 s`."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    s = int(round(seconds))
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    if s >= 60:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s} s"
