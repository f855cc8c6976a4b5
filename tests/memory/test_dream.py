"""Dream: each decision on crafted items, recorded with its reason; a second dream decides nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest

from commands.memory import DreamPolicy, dream, jaccard, plan_dream, shingles
from ledger import Ledger, SweclError
from projections.memory import load_memory, parse_time

from .builders import OTHER_REPO, item, start_run, task_started, write

ISSUE_A = (
    "Issue (w-1): QuerySet.union() drops the ordering of the second queryset when it is sliced, so paginated "
    "results come back in insertion order. Reproduce with two filtered querysets ordered by name."
)
ISSUE_B = (
    "Issue (w-7): the admin changelist shows a stale count after a bulk delete because the cached paginator "
    "is reused across requests; the count should be recomputed."
)


def statuses(led: Ledger) -> dict[str, str]:
    return {i.item_id: i.status for i in load_memory(led, "V").state.items.values()}


def test_ttl_prune_by_tasks_and_by_time(led: Ledger) -> None:
    task_started(led, "V", 1)
    rec = write(
        led,
        "V",
        item("by-tasks", "V", 1, ttl_tasks=1),
        item("by-time", "V", 1, ttl_seconds=60),
        item("keeps", "V", 1, ttl_tasks=5),
    )[0]
    for order in (2, 3):
        task_started(led, "V", order)
    report = dream(led, "V", now=parse_time(rec.time) + timedelta(hours=1))
    assert [(d.action, d.item_id) for d in report.decisions] == [("pruned", "by-tasks"), ("pruned", "by-time")]
    assert "ttl_tasks=1 exceeded: 2 tasks since written" in report.decisions[0].reason
    assert "ttl_seconds=60 exceeded" in report.decisions[1].reason
    assert statuses(led) == {"by-tasks": "pruned", "by-time": "pruned", "keeps": "live"}


def test_near_duplicates_are_merged_into_the_most_valuable(led: Ledger) -> None:
    write(
        led,
        "V",
        item(
            "old-fix",
            "V",
            1,
            title="w-1: union drops ordering",
            body=ISSUE_A + "\nOutcome: resolved",
            outcome="resolved",
        ),
        item("other", "V", 2, title="w-7: stale count", body=ISSUE_B),
        item(
            "new-try",
            "V",
            3,
            title="w-1: union drops ordering",
            body=ISSUE_A + "\nOutcome: unresolved",
            outcome="unresolved",
        ),
        item("far-repo", "V", 3, title="w-1: union drops ordering", body=ISSUE_A, repo=OTHER_REPO),
    )
    state = load_memory(led, "V").state
    sim = jaccard(shingles(state.items["old-fix"]), shingles(state.items["new-try"]))
    assert 0.7 <= sim < 1.0
    assert jaccard(shingles(state.items["old-fix"]), shingles(state.items["other"])) < 0.1
    report = dream(led, "V", policy=DreamPolicy(contradictions=False))
    assert [(d.action, d.item_id, d.by) for d in report.decisions] == [("merged", "new-try", "old-fix")]
    merged = [r.event for r in report.recorded if r.type == "memory.merged"]
    assert (
        merged[0].into == "old-fix"
        and merged[0].from_ == ["new-try"]
        and merged[0].similarity == pytest.approx(sim, abs=1e-6)
    )
    assert statuses(led)["new-try"] == "merged" and statuses(led)["far-repo"] == "live"
    assert load_memory(led, "V").state.items["old-fix"].merged_from == ["new-try"]


def test_exact_duplicates_merge_into_the_newest(led: Ledger) -> None:
    write(led, "V", item("first", "V", 1, body=ISSUE_A), item("second", "V", 2, body=ISSUE_A))
    report = dream(led, "V")
    assert [(d.action, d.item_id, d.by) for d in report.decisions] == [("merged", "first", "second")]


def test_contradiction_newer_supersedes_older_on_the_same_subject(led: Ledger) -> None:
    write(
        led,
        "V",
        item("old", "V", 1, body="first account", files=["w/q.py"], symbols=["union"]),
        item("unrelated", "V", 2, body="different subject", files=["w/q.py"], symbols=["count"]),
        item("kept-fix", "V", 2, body="the fix", files=["w/a.py"], symbols=["save"], outcome="resolved"),
        item("failed-later", "V", 3, body="a failed try", files=["w/a.py"], symbols=["save"], outcome="unresolved"),
        item("new", "V", 4, body="second account", files=["w/q.py"], symbols=["union", "other"]),
    )
    report = dream(led, "V")
    assert [(d.action, d.item_id, d.by) for d in report.decisions] == [("superseded", "old", "new")]
    assert "w/q.py: union" in report.decisions[0].reason
    s = statuses(led)
    assert s["old"] == "superseded" and s["kept-fix"] == "live" and s["failed-later"] == "live"
    # Invalidated, not deleted: still in the substrate with its history.
    old = load_memory(led, "V").state.items["old"]
    assert old.superseded_by == "new" and [h.status for h in old.history] == ["live", "superseded"]


def test_caps_prune_the_lowest_value(led: Ledger) -> None:
    write(
        led,
        "V",
        item("a-resolved-old", "V", 1, body="alpha words here", outcome="resolved"),
        item("b-unresolved", "V", 2, body="beta words there", outcome="unresolved"),
        item("c-resolved", "V", 3, body="gamma other text", outcome="resolved"),
        item("d-unresolved-new", "V", 4, body="delta more prose", outcome="unresolved"),
        item("elsewhere", "V", 4, body="epsilon", repo=OTHER_REPO),
    )
    report = dream(led, "V", policy=DreamPolicy(max_live_per_repo=2))
    assert [(d.action, d.item_id) for d in report.decisions] == [
        ("pruned", "b-unresolved"),
        ("pruned", "d-unresolved-new"),
    ]
    assert "over the cap of 2" in report.decisions[0].reason
    assert len(load_memory(led, "V").state.live_items()) == 3


def test_governance_prunes_what_slipped_in(led: Ledger) -> None:
    write(led, "V", item("leaky", "V", 1, body="ANTHROPIC_API_KEY=abc123def456ghi"), item("fine", "V", 2))
    report = dream(led, "V")
    assert [(d.action, d.item_id) for d in report.decisions] == [("pruned", "leaky")]
    assert report.decisions[0].reason.startswith("governance (secret)")
    assert "abc123" not in report.decisions[0].reason


def test_events_are_one_batch_on_the_header_and_a_second_dream_decides_nothing(led: Ledger) -> None:
    write(led, "V", item("first", "V", 1, body=ISSUE_A), item("second", "V", 2, body=ISSUE_A))
    first = dream(led, "V", reason="pre-eval")
    types = [r.type for r in first.recorded]
    assert types == ["dream.started", "memory.merged", "dream.finished"]
    assert {r.stream for r in first.recorded} == {"run/V"}
    assert first.recorded[0].event.reason == "pre-eval" and first.recorded[-1].event.decisions == 1
    assert all(getattr(r.event, "dream_id", first.dream_id) == first.dream_id for r in first.recorded)
    assert first.live_before == 2 and first.live_after == 1
    second = dream(led, "V")
    assert second.decisions == () and [r.type for r in second.recorded] == ["dream.started", "dream.finished"]
    assert second.recorded[-1].event.decisions == 0 and second.dream_id != first.dream_id
    assert plan_dream(load_memory(led, "V").state) == []
    dreams = load_memory(led, "V").state.dreams
    assert [(d.reason, d.decisions) for d in dreams] == [("pre-eval", 1), ("manual", 0)]
    assert "1 decision(s)" in first.lines()[0]


def test_a_dream_on_seeded_memory_leaves_the_source_alone(led: Ledger) -> None:
    from commands.memory import seed_memory

    start_run(led, "A")
    write(led, "A", item("a1", "A", 1, body=ISSUE_A), item("a2", "A", 2, body=ISSUE_A))
    start_run(led, "B")
    seed_memory(led, "B", "A")
    report = dream(led, "B", reason="pre-eval")
    assert [(d.action, d.item_id) for d in report.decisions] == [("merged", "a1")]
    assert load_memory(led, "B").state.items["a1"].status == "merged"
    assert load_memory(led, "A").state.items["a1"].status == "live"


def test_bad_requests(led: Ledger) -> None:
    with pytest.raises(SweclError, match="no run version 'nope'"):
        dream(led, "nope")
    with pytest.raises(SweclError, match="reason"):
        dream(led, "V", reason="nightly")
