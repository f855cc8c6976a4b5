"""One way to name a task, read and printed the same by every command.

A task is named by its instance id (`swecl-demo__spans-24`), or `SEQUENCE#ORDER` (`spans#4`:
the full sequence id, or any unambiguous short form of it: the name `short_sequence_names`
gives, the id without `_sequence`, or the repository), or `#ORDER` / `ORDER` when one
sequence is in play. `task_label` prints it: the `SEQ#ORDER` form, with short sequence names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

from ledger import SweclError

T = TypeVar("T")

__all__ = ["resolve_task_name", "sequence_short_names", "task_label", "task_heading"]


def sequence_short_names(names: Sequence[str]) -> dict[str, str]:
    """`swecl-demo_spans_sequence` -> `spans`: the part after the last `_` (the repository),
    unless two sequences would then read alike (then the whole id minus `_sequence`)."""
    stripped = {n: n.removesuffix("_sequence") for n in names}
    short = {n: s.rsplit("_", 1)[-1] or s for n, s in stripped.items()}
    if len(set(short.values())) < len(set(names)):
        return stripped
    return short


def task_label(sequence_id: str, order: int, sequences: Sequence[str] | None = None) -> str:
    """`spans#4`: the task's SEQ#ORDER name, the sequence named short among `sequences`
    (the sequences in play; by default the sequence alone)."""
    names = sequence_short_names(list(sequences) if sequences else [sequence_id])
    return f"{names.get(sequence_id, sequence_id)}#{order}"


def task_heading(sequence_id: str, order: int, instance_id: str, sequences: Sequence[str] | None = None) -> str:
    """`spans#4 swecl-demo__spans-24`: the one printed form of a task, both names."""
    return f"{task_label(sequence_id, order, sequences)} {instance_id}"


def _sequence_keys(sequence_id: str, short: str, repo: str | None) -> set[str]:
    stripped = sequence_id.removesuffix("_sequence")
    keys = {sequence_id, stripped, stripped.rsplit("_", 1)[-1], short}
    if repo:
        keys |= {repo, repo.rsplit("/", 1)[-1]}
    return {k.lower() for k in keys if k}


def resolve_task_name(plans: Mapping[str, Sequence[T]], text: str, *, where: str,
                      instance_id: str = "instance_id", order: str = "order",
                      repos: Mapping[str, str] | None = None) -> tuple[str, T]:
    """(sequence_id, task) named by `text` among `plans` (sequence id -> its tasks, each
    with an instance id and an order attribute), or a one-line SweclError. `where` names
    the plan in the error ("the plan of v2", "benchmark 'swecl-demo'")."""
    text = text.strip()
    for seq, tasks in plans.items():
        for task in tasks:
            if getattr(task, instance_id) == text:
                return seq, task
    short = sequence_short_names(list(plans))
    forms = [task_label(s, getattr(t, order), list(plans)) for s, tasks in plans.items() for t in tasks[:1]]
    head, sep, tail = text.rpartition("#")
    if not sep and text.isdigit():
        head, tail = "", text
    if tail.isdigit():
        if head:
            seqs = [s for s in plans if head.lower() in _sequence_keys(s, short[s], (repos or {}).get(s))]
            if len(seqs) > 1:
                raise SweclError(f"task {text!r}: {head!r} names {len(seqs)} sequences of {where} "
                                 f"; use {', '.join(short[s] + '#' + tail for s in seqs)}")
            if not seqs:
                raise SweclError(f"task {text!r}: no sequence {head!r} in {where} (its sequences: "
                                 f"{', '.join(short[s] for s in plans)}; e.g. {', '.join(forms[:3])})")
        else:
            seqs = list(plans)
            if len(seqs) > 1:
                raise SweclError(f"task {text!r}: {where} has {len(seqs)} sequences; name one: "
                                 f"{', '.join(f'{short[s]}#{tail}' for s in seqs)}")
        seq = seqs[0]
        found = [t for t in plans[seq] if getattr(t, order) == int(tail)]
        if found:
            return seq, found[0]
        raise SweclError(f"task {text!r}: {short[seq]} has no task {tail} in {where} "
                         f"(orders {min((getattr(t, order) for t in plans[seq]), default=0)}"
                         f"-{max((getattr(t, order) for t in plans[seq]), default=0)})")
    ids = [getattr(t, instance_id) for tasks in plans.values() for t in tasks]
    shown = ", ".join(ids[:3]) + (" ..." if len(ids) > 3 else "")
    raise SweclError(f"task {text!r} is not in {where} ({len(ids)} tasks: {shown}; or SEQ#ORDER: "
                     f"{', '.join(forms[:3])})")
