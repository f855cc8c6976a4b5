"""Two runs' funnels side by side: per label the counts in each and B - A, and the tasks
whose label changed (tasks matched by sequence and instance id)."""

from __future__ import annotations

from ._model import LABELS, FunnelDifference, LabelChange, LabelDifference, RunFunnel, TaskFunnel

RESOLVED = "resolved"
NOT_RUN = "not run"


def label_of(t: TaskFunnel) -> str:
    """The task's label, "resolved" for a resolved one, "not run" for one without an attempt."""
    if t.attempt is None:
        return NOT_RUN
    return t.label or RESOLVED


def funnel_difference(a: RunFunnel, b: RunFunnel) -> FunnelDifference:
    """B against A over the tasks both plans hold; `na` when either has no funnel."""
    out = FunnelDifference(a=a.version, b=b.version)
    missing = [f"v{f.version}: {f.na}" for f in (a, b) if f.na]
    if missing:
        out.na = "; ".join(missing)
        return out
    tasks_a = {(s.sequence_id, t.instance_id): t for s in a.sequences for t in s.tasks}
    tasks_b = {(s.sequence_id, t.instance_id): t for s in b.sequences for t in s.tasks}
    both = [k for k in tasks_a if k in tasks_b]
    if not both:
        out.na = f"v{a.version} and v{b.version} share no task"
        return out
    for label in (*LABELS, RESOLVED):
        n_a = sum(1 for k in both if label_of(tasks_a[k]) == label)
        n_b = sum(1 for k in both if label_of(tasks_b[k]) == label)
        out.labels.append(LabelDifference(label=label, a=n_a, b=n_b, difference=n_b - n_a))
    for k in both:
        ta, tb = tasks_a[k], tasks_b[k]
        if label_of(ta) != label_of(tb):
            out.changed.append(LabelChange(sequence_id=k[0], order=tb.order, instance_id=k[1], a=label_of(ta),
                                           b=label_of(tb)))
    return out
