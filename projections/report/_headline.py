"""The report's headline chart as data: did memory help? Pure (no matplotlib): the figure
draws these bars, the page lists the same numbers under it, and the tests read them.

One group per memory run compared with its base (the report's comparisons, `_data`): the
base's, the run's and, where the efficiency found one, the oracle's initial-pass tasks
resolved, pooled over the compared sequences, each with a 95% Wilson score interval. A task
without a valid verdict counts as not resolved, as in the normalized gain and the
efficiency the verdict line quotes. Under each group: its normalized gain with its
bootstrap interval (the verdict's). Where the report compares nothing (no base run, or
groups of repeats), one group per run: its own resolved tasks and, for a memory run with a
base in its folder (`swecl metrics`' base, `_data.with_base`), the base's and the oracle's
beside them, from the efficiency's rates, and its gain.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from projections.compare import ORACLE_STAGE
from projections.metrics import wilson

if TYPE_CHECKING:
    from projections.compare import Assessment

    from ._data import ReportData
    from ._run_report import VersionReport

Role = Literal["base", "memory", "oracle", "run"]


@dataclass(frozen=True)
class Bar:
    role: Role
    versions: tuple[str, ...]
    label: str
    """`base`, `plugin-blank v2`, `oracle v5`."""
    resolved: int
    tasks: int
    memory_on: bool

    @property
    def rate(self) -> float | None:
        return self.resolved / self.tasks if self.tasks else None

    @property
    def ci(self) -> tuple[float, float] | None:
        return wilson(self.resolved, self.tasks)


@dataclass(frozen=True)
class BarGroup:
    version: str
    label: str
    bars: tuple[Bar, ...]
    sequences: tuple[str, ...]
    gain: float | None = None
    gain_ci: tuple[float, float] | None = None


@dataclass(frozen=True)
class Headline:
    groups: tuple[BarGroup, ...]
    compared: bool
    """True: each group a memory run against its base; False: one group per run."""


def _resolved(vr: VersionReport, sequences: Sequence[str]) -> tuple[int, int]:
    resolved = tasks = 0
    for name in sequences:
        seq = vr.sequences.get(name)
        inputs = seq.inputs if seq is not None else None
        if inputs is None:
            continue
        tasks += len(inputs.initial)
        resolved += sum(1 for v in inputs.initial if v == 1)
    return resolved, tasks


def _found_bar(vr: VersionReport, assessment: Assessment | None, sequences: Sequence[str],
               role: Literal["base", "oracle"]) -> Bar | None:
    """The base's or the oracle's resolved tasks over `sequences`, from the efficiency's rates
    (resolved / planned); None unless every sequence has one."""
    if assessment is None:
        return None
    found = assessment.efficiency.sequences
    resolved = tasks = 0
    versions: list[str] = []
    for name in sequences:
        r = found.get(name)
        seq = vr.sequences.get(name)
        rate, version = (None, None) if r is None else (
            (r.oracle_rate, r.oracle_version) if role == "oracle" else (r.base_rate, r.base_version))
        if rate is None or version is None or seq is None or seq.inputs is None:
            return None
        n = len(seq.inputs.initial)
        resolved += round(rate * n)
        tasks += n
        if version not in versions:
            versions.append(version)
    if not tasks:
        return None
    label = f"{role} " + ", ".join(f"v{v}" if v.isdigit() else v for v in versions)
    return Bar(role=role, versions=tuple(versions), label=label, resolved=resolved, tasks=tasks,
               memory_on=role == "oracle")


def headline(data: ReportData) -> Headline:
    by_version = {vr.run.version: vr for vr in data.versions}
    groups: list[BarGroup] = []
    for rc in data.comparisons:
        c = rc.comparison
        if c is None or c.grouped or c.a.version not in by_version or c.b.version not in by_version:
            continue
        base, vr = by_version[c.a.version], by_version[c.b.version]
        sequences = tuple(c.sequences)
        bars = [
            Bar(role="base", versions=(base.run.version,), label=base.label, memory_on=False,
                **dict(zip(("resolved", "tasks"), _resolved(base, sequences), strict=True))),
            Bar(role="memory", versions=(vr.run.version,), label=vr.label, memory_on=True,
                **dict(zip(("resolved", "tasks"), _resolved(vr, sequences), strict=True))),
        ]
        oracle = _found_bar(vr, rc.assessment, sequences, "oracle")
        if oracle is not None:
            bars.append(oracle)
        groups.append(BarGroup(version=vr.run.version, label=vr.label, bars=tuple(bars), sequences=sequences,
                               gain=c.macro.gain, gain_ci=None if rc.assessment is None else rc.assessment.gain_macro_ci))
    # An oracle run compared with the base is already each memory run's third bar.
    memory = [g for g in groups if by_version[g.version].run.stage != ORACLE_STAGE]
    if memory:
        return Headline(groups=tuple(memory), compared=True)
    if groups:
        return Headline(groups=tuple(groups), compared=True)
    for vr in data.versions:
        sequences = tuple(s for s, seq in vr.sequences.items() if seq.inputs is not None)
        resolved, tasks = _resolved(vr, sequences)
        bars = [Bar(role="run", versions=(vr.run.version,), label=vr.label, resolved=resolved, tasks=tasks,
                    memory_on=vr.memory_on)]
        gain = gain_ci = None
        if vr.assessed is not None:  # against the base of its folder, as `swecl metrics` finds it
            found, assessment = vr.assessed
            gain, gain_ci = found.macro, assessment.gain_macro_ci
            base = _found_bar(vr, assessment, sequences, "base")
            oracle = _found_bar(vr, assessment, sequences, "oracle")
            bars = [*([base] if base else []), *bars, *([oracle] if oracle else [])]
        groups.append(BarGroup(version=vr.run.version, label=vr.label, bars=tuple(bars), sequences=sequences,
                               gain=gain, gain_ci=gain_ci))
    return Headline(groups=tuple(groups), compared=False)
