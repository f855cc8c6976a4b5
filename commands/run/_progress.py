"""Progress of a run: rich bars for people at a terminal, one plain line per task when
stderr is a file or a pipe (nohup, CI, `2> log`), JSON lines for machines, nothing with
--quiet. Each says how long the rest of its pass should take (ETA).

Workers (one process per sequence with --jobs) send plain tuples through a queue; only
the parent process draws, so bars never interleave.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol


def _shown(version: object) -> str:
    """`v3` for a numbered run, a named one as it is (`validate-2-gold`, not `vvalidate-2-gold`)."""
    text = str(version)
    return f"v{text}" if text.isdigit() else text


@dataclass
class TaskProgress:
    version: str
    sequence_id: str
    pass_: str
    order: int
    total: int
    instance_id: str
    status: str | None = None
    resolved: bool | None = None
    resolved_so_far: int = 0
    done_so_far: int = 0
    # Where the task ran, when not in this process: the Ray job of its sequence, or a Ray
    # task of its own (see _ray_tasks); shown in --json lines.
    where: str | None = None
    # Of done_so_far, the tasks with no valid verdict (agent_error, infra_error, ...): the
    # resolve rate is over the others, as the metrics count them (missing, never a 0).
    unscored_so_far: int = 0

    @property
    def scored_so_far(self) -> int:
        return self.done_so_far - self.unscored_so_far

    @property
    def rate(self) -> float:
        return self.resolved_so_far / self.scored_so_far if self.scored_so_far else 0.0

    @property
    def resolved_text(self) -> str:
        """`resolved R/S (P%)`, with how many were not scored when some were."""
        unscored = f", {self.unscored_so_far} not scored" if self.unscored_so_far else ""
        return f"resolved {self.resolved_so_far}/{self.scored_so_far} ({self.rate:.0%}){unscored}"


class _Eta:
    """Seconds left per (version, sequence, pass): the pass's mean wall time per finished
    task so far, times the tasks left. Wall time from the pass's first start, so tasks
    running side by side (--task-jobs) count once, as the user waits for them."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.began: dict[tuple[str, str, str], float] = {}

    def started(self, p: TaskProgress) -> None:
        self.began.setdefault((p.version, p.sequence_id, p.pass_), self.clock())

    def left(self, p: TaskProgress) -> float | None:
        began = self.began.setdefault((p.version, p.sequence_id, p.pass_), self.clock())
        if not p.done_so_far:
            return None
        return max(0.0, (self.clock() - began) / p.done_so_far * max(0, p.total - p.done_so_far))


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    s = round(seconds)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


class Reporter(Protocol):
    def run_started(self, version: str, stage: str, plan: dict[str, int], passes: tuple[str, ...]) -> None: ...
    def task_started(self, p: TaskProgress) -> None: ...
    def task_finished(self, p: TaskProgress) -> None: ...
    def note(self, text: str) -> None: ...
    def run_finished(self, version: str, status: str) -> None: ...
    def close(self) -> None: ...


class QuietReporter:
    def run_started(self, version: str, stage: str, plan: dict[str, int], passes: tuple[str, ...]) -> None:
        pass

    def task_started(self, p: TaskProgress) -> None:
        pass

    def task_finished(self, p: TaskProgress) -> None:
        pass

    def note(self, text: str) -> None:
        pass

    def run_finished(self, version: str, status: str) -> None:
        pass

    def close(self) -> None:
        pass


class JsonReporter:
    """One JSON object per line on stdout: run_started, task_finished, note, run_finished."""

    def __init__(self, out: Any = None) -> None:
        self.out = out or sys.stdout
        self.eta = _Eta()

    def _emit(self, obj: dict[str, Any]) -> None:
        self.out.write(json.dumps(obj, separators=(",", ":")) + "\n")
        self.out.flush()

    def run_started(self, version: str, stage: str, plan: dict[str, int], passes: tuple[str, ...]) -> None:
        self._emit({"event": "run_started", "version": version, "stage": stage, "sequences": plan, "passes": list(passes)})

    def task_started(self, p: TaskProgress) -> None:
        self.eta.started(p)

    def task_finished(self, p: TaskProgress) -> None:
        left = self.eta.left(p)
        self._emit(
            {
                "event": "task_finished",
                "version": p.version,
                "sequence": p.sequence_id,
                "pass": p.pass_,
                "order": p.order,
                "total": p.total,
                "instance_id": p.instance_id,
                "status": p.status,
                "resolved": p.resolved,
                "resolve_rate": round(p.rate, 4),
                "done": p.done_so_far,
                "not_scored": p.unscored_so_far,
                "eta_s": None if left is None else round(left, 1),
                **({"where": p.where} if p.where else {}),
            }
        )

    def note(self, text: str) -> None:
        self._emit({"event": "note", "text": text})

    def run_finished(self, version: str, status: str) -> None:
        self._emit({"event": "run_finished", "version": version, "status": status})

    def close(self) -> None:
        pass


class LineReporter:
    """One whole line per finished task on stderr, flushed at once: what a log file, `nohup`
    or CI shows while the run goes (a live bar there prints nothing until the end)."""

    def __init__(self, out: Any = None) -> None:
        self.out = out or sys.stderr
        self.eta = _Eta()

    def _line(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def run_started(self, version: str, stage: str, plan: dict[str, int], passes: tuple[str, ...]) -> None:
        tasks = ", ".join(f"{name} ({n})" for name, n in plan.items())
        self._line(f"run {version} ({stage}): {tasks}; passes {', '.join(passes)}")

    def task_started(self, p: TaskProgress) -> None:
        self.eta.started(p)

    def task_finished(self, p: TaskProgress) -> None:
        outcome = "resolved" if p.resolved else (p.status or "unresolved")
        self._line(
            f"{_shown(p.version)} {p.sequence_id} {p.pass_} {p.done_so_far}/{p.total}: {p.order}: {p.instance_id} {outcome}; "
            f"{p.resolved_text}, {format_duration(self.eta.left(p))} left in this pass"
        )

    def note(self, text: str) -> None:
        self._line(text)

    def run_finished(self, version: str, status: str) -> None:
        self._line(f"run {version}: {status}")

    def close(self) -> None:
        pass


@dataclass
class _Bar:
    task_id: Any
    total: int
    done: int = 0
    resolved: int = 0


class RichReporter:
    """A bar per (version, sequence, pass) with the running resolve rate."""

    def __init__(self) -> None:
        # lazy: rich.progress costs about 0.2 s, paid only when a run draws its bars
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.console = Console(stderr=True)
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TextColumn("{task.fields[last]}", style="dim"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=self.console,
            transient=False,
        )
        self.bars: dict[tuple[str, str, str], _Bar] = {}
        self.started = False  # the live display starts with the first task: an early error prints alone

    def run_started(self, version: str, stage: str, plan: dict[str, int], passes: tuple[str, ...]) -> None:
        self.console.print(f"[bold]run {version}[/bold] ({stage}): {', '.join(plan)}; passes {', '.join(passes)}")

    def _bar(self, p: TaskProgress) -> _Bar:
        if not self.started:
            self.progress.start()
            self.started = True
        key = (p.version, p.sequence_id, p.pass_)
        bar = self.bars.get(key)
        if bar is None:
            tid = self.progress.add_task(
                f"{_shown(p.version)} {p.sequence_id} [cyan]{p.pass_}[/cyan]", total=p.total, rate="", last=""
            )
            bar = self.bars[key] = _Bar(tid, p.total)
        return bar

    def task_started(self, p: TaskProgress) -> None:
        bar = self._bar(p)
        self.progress.update(bar.task_id, last=f"{p.order}: {p.instance_id}")

    def task_finished(self, p: TaskProgress) -> None:
        bar = self._bar(p)
        bar.done = p.done_so_far
        bar.resolved = p.resolved_so_far
        mark = {True: "[green]resolved[/green]", False: "[red]" + (p.status or "unresolved") + "[/red]"}.get(
            p.resolved, f"[yellow]{p.status}[/yellow]"
        )
        self.progress.update(
            bar.task_id,
            completed=bar.done,
            rate=p.resolved_text,
            last=f"{p.order}: {p.instance_id} {mark}",
        )

    def note(self, text: str) -> None:
        self.console.print(text)

    def run_finished(self, version: str, status: str) -> None:
        self.console.print(f"run {version}: {status}")

    def close(self) -> None:
        if self.started:
            self.progress.stop()


def make_reporter(*, quiet: bool, as_json: bool, json_to_stderr: bool = False) -> Reporter:
    """`json_to_stderr` is for commands whose stdout holds one final document (`swecl
    grade --json`): their progress lines go to stderr."""
    if as_json:
        return JsonReporter(sys.stderr if json_to_stderr else None)
    if quiet:
        return QuietReporter()
    if not sys.stderr.isatty():
        return LineReporter()
    return RichReporter()


@dataclass
class QueueDrain:
    """Forward progress messages from worker processes to the parent's reporter."""

    queue: Any
    reporter: Reporter
    _thread: threading.Thread | None = None
    handlers: dict[str, Callable[..., None]] = field(default_factory=dict)

    def start(self) -> None:
        self.handlers = {
            "task_started": lambda p: self.reporter.task_started(TaskProgress(**p)),
            "task_finished": lambda p: self.reporter.task_finished(TaskProgress(**p)),
            "note": self.reporter.note,
        }
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            item = self.queue.get()
            if item is None:
                return
            kind, payload = item
            self.handlers[kind](payload)

    def stop(self) -> None:
        self.queue.put(None)
        if self._thread is not None:
            self._thread.join(10)


class QueueReporter:
    """The worker side: a Reporter that only enqueues."""

    def __init__(self, queue: Any) -> None:
        self.queue = queue

    def run_started(self, version: str, stage: str, plan: dict[str, int], passes: tuple[str, ...]) -> None:
        pass

    def task_started(self, p: TaskProgress) -> None:
        self.queue.put(("task_started", p.__dict__.copy()))

    def task_finished(self, p: TaskProgress) -> None:
        self.queue.put(("task_finished", p.__dict__.copy()))

    def note(self, text: str) -> None:
        self.queue.put(("note", text))

    def run_finished(self, version: str, status: str) -> None:
        pass

    def close(self) -> None:
        pass
