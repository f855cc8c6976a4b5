"""Other task orders (`swecl run --order`): a sequence run in another order than the dataset's.

A continual-learning score depends on what came before each task, so one order is one
draw of it. `--order permute:SEED` (a seeded shuffle of each sequence), `reverse`, or a
FILE listing the instance ids (a JSON list, or whitespace-separated text; with several
sequences, each takes its tasks in the order the file lists them). The tasks of an
ordered run are renumbered 1..N in the run's order, so every event's `order`, the plan in
`run.started.tasks` and the a(i,j) matrix the metrics read all follow the run's order.

The plan in the ledger is the order: a resumed run (or a Ray job) reorders its sequence by
the recorded plan (`planned_order`), never by the spec again (a FILE may have changed).
"""

from __future__ import annotations

import random
import re
from dataclasses import replace
from pathlib import Path

from commands.inputs import Sequence, Task
from ledger import Ledger, SweclError

_PERMUTE = re.compile(r"permute:(\d{1,18})")


def check_order_spec(spec: str) -> None:
    """The spec's syntax, in one line (a FILE is read when the run starts)."""
    if spec.startswith("permute"):
        if not _PERMUTE.fullmatch(spec):
            raise SweclError(f"--order {spec!r}: give permute:SEED with SEED a non-negative integer")
    elif spec != "reverse" and not spec.strip():
        raise SweclError("--order: give permute:SEED, reverse, or a FILE of instance ids")


def recorded_spec(spec: str) -> str:
    """What `run.started.task_order` says: the spec, a FILE as `file:NAME` (the ids are the plan)."""
    return spec if spec == "reverse" or _PERMUTE.fullmatch(spec) else f"file:{Path(spec).name}"


def ordered(sequences: list[Sequence], spec: str) -> list[Sequence]:
    """`sequences` with their tasks in the order `spec` gives, renumbered 1..N."""
    check_order_spec(spec)
    if spec == "reverse":
        return [_renumbered(s, list(reversed(s.tasks))) for s in sequences]
    if match := _PERMUTE.fullmatch(spec):
        seed = int(match.group(1))
        out = []
        for s in sequences:
            tasks = list(s.tasks)
            # Seeded per sequence by name: one sequence's order does not depend on which others run.
            random.Random(f"{seed}/{s.id}").shuffle(tasks)
            out.append(_renumbered(s, tasks))
        return out
    return _from_file(sequences, spec)


def _from_file(sequences: list[Sequence], path: str) -> list[Sequence]:
    from graders import loads_limited, read_limited  # lazy: as the benchmark loaders

    label = f"--order {path}"
    raw = read_limited(path, label)
    text = raw.decode("utf-8", errors="replace")
    if text.lstrip()[:1] in ("[", "{"):
        ids = loads_limited(raw, label)
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise SweclError(f"{label}: a JSON list of instance ids (strings) is expected")
    else:
        ids = text.split()
    owner = {t.instance_id: s.id for s in sequences for t in s.tasks}
    seen: set[str] = set()
    for iid in ids:
        if iid not in owner:
            raise SweclError(f"{label}: {iid} is not a task of the sequences run "
                             f"({', '.join(s.id for s in sequences)})")
        if iid in seen:
            raise SweclError(f"{label}: {iid} is listed twice; each task once")
        seen.add(iid)
    if missing := [i for i in owner if i not in seen]:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        raise SweclError(f"{label}: {missing[0]}{more} missing; the file must list every task run, each once")
    out = []
    for s in sequences:
        by_id = {t.instance_id: t for t in s.tasks}
        out.append(_renumbered(s, [by_id[i] for i in ids if i in by_id]))
    return out


def _renumbered(sequence: Sequence, tasks: list[Task]) -> Sequence:
    return replace(sequence, tasks=tuple(replace(t, order=i) for i, t in enumerate(tasks, start=1)))


def planned_order(ledger: Ledger, version: str, sequence_id: str) -> list[tuple[str, int]] | None:
    """The recorded plan of an ordered run's sequence: (instance id, order) in run order;
    None for a run in the dataset's order (every run before `--order` existed)."""
    first = next(iter(ledger.read_stream(f"run/{version}")), None)
    event = None if first is None else first.event
    if event is None or getattr(event, "task_order", None) is None:
        return None
    return [(t.instance_id, t.order) for t in event.tasks.get(sequence_id, [])]


def follow_plan(sequence: Sequence, plan: list[tuple[str, int]]) -> Sequence:
    """`sequence` as an ordered run planned it (the tasks of the plan, in its order and numbering)."""
    by_id = {t.instance_id: t for t in sequence.tasks}
    absent = [iid for iid, _ in plan if iid not in by_id]
    if absent:
        raise SweclError(f"sequence {sequence.id}: the run planned {absent[0]}, which the dataset no longer has")
    return replace(sequence, tasks=tuple(replace(by_id[iid], order=order) for iid, order in plan))
