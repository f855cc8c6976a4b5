"""Resolve rates the report shows: tallies pooled over sequences, the running mean of a
learning curve, and each run's memory-on vs memory-off contrast."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from ._run_report import VersionReport


@dataclass(frozen=True)
class Tally:
    """Resolved tasks of one pass, pooled over sequences; missing verdicts are left out of the rate."""

    resolved: int
    valid: int
    """Tasks with a verdict (resolved or not)."""
    tasks: int

    @property
    def rate(self) -> float | None:
        return self.resolved / self.valid if self.valid else None

    @property
    def missing(self) -> int:
        return self.tasks - self.valid


def tally(vectors: Iterable[Sequence[int | None]]) -> Tally:
    resolved = valid = tasks = 0
    for vector in vectors:
        tasks += len(vector)
        valid += sum(1 for v in vector if v is not None)
        resolved += sum(1 for v in vector if v == 1)
    return Tally(resolved=resolved, valid=valid, tasks=tasks)


@dataclass(frozen=True)
class ContrastRow:
    """One memory-on vs memory-off comparison of a run, pooled over `sequences`."""

    version: str
    label: str
    memory_on: bool
    on: Tally | None
    """The run's initial pass with memory; None for a run whose stage has no memory."""
    off: Tally | None
    """The memory-off side: the run's baseline pass, the control's initial pass, or (a
    memory-off run) its own initial pass; None when there is none (`off_from` says why)."""
    off_from: str
    """What the memory-off side is, in words."""
    kind: Literal["baseline", "control", "self"]
    sequences: tuple[str, ...]

    @property
    def delta(self) -> float | None:
        if self.on is None or self.off is None or self.on.rate is None or self.off.rate is None:
            return None
        return self.on.rate - self.off.rate


def _vectors(vr: VersionReport, pass_: Literal["initial", "baseline"], sequences: Iterable[str]) -> list[list[int | None]]:
    out = []
    for name in sequences:
        inputs = vr.sequences[name].inputs if name in vr.sequences else None
        if inputs is None:
            continue
        vector = inputs.initial if pass_ == "initial" else inputs.baseline
        if vector is not None:
            out.append(list(vector))
    return out


def contrast_rows(versions: Sequence[VersionReport]) -> list[ContrastRow]:
    """Memory on vs memory off for each run: against its own baseline pass (same run, memory
    off) and, for a run with memory, against the control: the first reported run whose stage
    has no memory (base), over the sequences both ran. A run without memory is the off side only."""
    control = next((vr for vr in versions if not vr.memory_on), None)
    rows: list[ContrastRow] = []
    for vr in versions:
        own = tuple(s for s in vr.sequences if vr.sequences[s].inputs is not None)
        if not vr.memory_on:
            rows.append(ContrastRow(
                version=vr.run.version, label=vr.label, memory_on=False, on=None,
                off=tally(_vectors(vr, "initial", own)), kind="self", sequences=own,
                off_from=f"its initial pass (stage {vr.run.stage} has no memory)",
            ))
            continue
        baseline = _vectors(vr, "baseline", own)
        rows.append(ContrastRow(
            version=vr.run.version, label=vr.label, memory_on=True, on=tally(_vectors(vr, "initial", own)),
            off=tally(baseline) if baseline else None, kind="baseline", sequences=own,
            off_from="its baseline pass b(j): the same tasks, memory off" if baseline
            else "no baseline pass was run (--passes without baseline)",
        ))
        if control is None:
            continue
        shared = tuple(s for s in own if s in control.sequences and control.sequences[s].inputs is not None)
        if shared:
            rows.append(ContrastRow(
                version=vr.run.version, label=vr.label, memory_on=True, on=tally(_vectors(vr, "initial", shared)),
                off=tally(_vectors(control, "initial", shared)), kind="control", sequences=shared,
                off_from=f"the control {control.label}: its initial pass on the same {len(shared)} sequence(s)",
            ))
    return rows


def running_mean(vector: Sequence[int | None]) -> list[float | None]:
    """Cumulative resolve rate after each task: the mean of the valid outcomes so far.

    A missing outcome is left out (never counted as 0); before the first valid outcome
    the rate is undefined (None).
    """
    out: list[float | None] = []
    total = valid = 0
    for value in vector:
        if value is not None:
            total += value
            valid += 1
        out.append(total / valid if valid else None)
    return out
