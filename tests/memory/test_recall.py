"""Recall: deterministic ranking, every visibility filter, and the recorded event."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest

from agents._recall import RecallService, query_hash
from commands.memory import seed_memory
from ledger import Ledger, SweclError
from ledger.events import MemoryMerged, MemoryPruned, MemorySuperseded, PassFinished
from projections.memory import (
    HashingEmbedder,
    fts_query,
    load_embedder,
    load_memory,
    parse_time,
    rank_items,
)

from .builders import OTHER_REPO, REPO, item, start_run, task_started, write


def service(led: Ledger, order: int, *, pass_: str = "initial", repo: str | None = REPO, **kw) -> RecallService:
    return RecallService(led, "V", "s", pass_, order, f"s-{order}", 1, repo, **kw)


def ids(results) -> list[str]:
    return [r.item_id for r in results]


def test_ranking_is_deterministic_and_ties_break_by_id(led: Ledger) -> None:
    same = "Parser crashes on an empty header line"
    # Written in reverse id order: the order of writing must not decide a tie.
    write(
        led,
        "V",
        item("m-c", "V", 1, title="header parser", body=same),
        item("m-b", "V", 1, title="header parser", body=same),
        item("m-a", "V", 1, title="header parser", body=same),
        item("m-z", "V", 1, title="unrelated", body="colour of the logo"),
        item("m-y", "V", 1, title="header parser crash on empty header", body=same + " header header"),
    )
    svc = service(led, 2)
    first = svc.recall("empty header crashes the parser", k=4)
    second = svc.recall("empty header crashes the parser", k=4)
    assert [(r.item_id, r.score, r.rank) for r in first] == [(r.item_id, r.score, r.rank) for r in second]
    assert ids(first) == ["m-y", "m-a", "m-b", "m-c"]
    assert first[1].score == first[2].score == first[3].score > 0
    assert first[0].score > first[1].score
    assert [r.rank for r in first] == [1, 2, 3, 4]
    assert "m-z" not in ids(svc.recall("empty header crashes the parser", k=10))


def test_each_recall_is_an_event_with_its_results(led: Ledger) -> None:
    patch = "diff --git a/w.py b/w.py\n--- a/w.py\n+++ b/w.py\n@@ -1 +1 @@\n-a\n+b\n"
    digest = led.put_blob(patch)
    write(led, "V", item("m1", "V", 1, title="widget spin", body="the widget spins", patch=digest))
    svc = service(led, 2)
    long_query = "widget spin " + "x" * 5000
    got = svc.recall(long_query, k=3)
    assert got[0].patch == patch and got[0].outcome == "resolved" and got[0].source_run == "V"
    recs = list(led.read(types=["memory.recalled"]))
    assert len(recs) == 1 and recs[0].stream == "run/V/s"
    ev = recs[0].event
    assert ev.query_hash == query_hash(long_query) and len(ev.query) == 2000
    assert (ev.instance_id, ev.order, ev.pass_, ev.attempt, ev.repo, ev.k, ev.via) == (
        "s-2",
        2,
        "initial",
        1,
        REPO,
        3,
        "inproc",
    )
    assert [(h.item_id, h.rank, h.score) for h in ev.results] == [("m1", 1, got[0].score)]
    assert load_memory(led, "V").state.items["m1"].recall_count == 1


def test_other_repo_is_invisible_unless_asked_for(led: Ledger) -> None:
    write(
        led,
        "V",
        item("mine", "V", 1, body="shared words"),
        item("theirs", "V", 1, body="shared words", repo=OTHER_REPO),
    )
    svc = service(led, 2)
    assert ids(svc.recall("shared words")) == ["mine"]
    assert ids(svc.recall("shared words", repo=OTHER_REPO)) == ["theirs"]


def test_later_items_of_this_pass_are_invisible(led: Ledger) -> None:
    # A resumed or parallel writer may have recorded items of tasks 3 and 4 already.
    write(
        led,
        "V",
        item("t1", "V", 1, body="common"),
        item("t3", "V", 3, body="common"),
        item("t4", "V", 4, body="common"),
    )
    assert ids(service(led, 3).recall("common")) == ["t1"]
    assert ids(service(led, 4).recall("common")) == ["t1", "t3"]
    assert ids(service(led, 2, pass_="retest-3").recall("common")) == ["t1", "t3"]
    assert ids(service(led, 1, pass_="retest").recall("common")) == ["t1", "t3", "t4"]


def test_seeded_items_are_not_later_items(led: Ledger) -> None:
    start_run(led, "A")
    write(led, "A", item("from-a", "A", 9, body="common"))
    start_run(led, "W")
    seed_memory(led, "W", "A")
    svc = RecallService(led, "W", "s", "initial", 1, "s-1", 1, REPO)
    assert ids(svc.recall("common")) == ["from-a"]


def test_pruned_merged_superseded_are_invisible(led: Ledger) -> None:
    write(led, "V", *(item(f"m{i}", "V", 1, body="common") for i in range(4)))
    led.append("run/V", [MemoryPruned(item_id="m0", reason="r")])
    led.append("run/V", [MemoryMerged(into="m3", from_=["m1"], reason="r")])
    led.append("run/V", [MemorySuperseded(item_id="m2", by="m3", reason="r")])
    assert ids(service(led, 2).recall("common")) == ["m3"]


def test_ttl_tasks_counts_tasks_since_written(led: Ledger) -> None:
    task_started(led, "V", 1)
    write(led, "V", item("short", "V", 1, body="common", ttl_tasks=1), item("long", "V", 1, body="common", ttl_tasks=2))
    assert ids(service(led, 2).recall("common")) == ["long", "short"]
    assert ids(service(led, 3).recall("common")) == ["long"]
    assert ids(service(led, 4).recall("common")) == []


def test_ttl_seconds_counts_from_the_event_time(led: Ledger) -> None:
    rec = write(led, "V", item("brief", "V", 1, body="common", ttl_seconds=60), item("lasting", "V", 1, body="common"))[
        0
    ]
    written = parse_time(rec.time)
    assert written is not None
    svc = service(led, 2)
    assert ids(svc.recall("common", now=written + timedelta(seconds=30))) == ["brief", "lasting"]
    assert ids(svc.recall("common", now=written + timedelta(seconds=120))) == ["lasting"]


def test_retest_sees_memory_frozen_at_the_end_of_the_initial_pass(led: Ledger) -> None:
    write(led, "V", item("during", "V", 1, body="common"))
    led.append("run/V/s", [PassFinished(sequence_id="s", pass_="initial")])
    write(led, "V", item("after", "V", 2, body="common"))  # never visible to the retest
    led.append("run/V", [MemoryPruned(item_id="during", reason="after the pass")])
    assert ids(service(led, 1, pass_="retest").recall("common")) == ["during"]
    assert ids(service(led, 3).recall("common")) == ["after"]


def test_baseline_recalls_nothing_but_is_recorded(led: Ledger) -> None:
    write(led, "V", item("m1", "V", 1, body="common"))
    assert service(led, 2, pass_="baseline").recall("common") == []
    assert [r.event.pass_ for r in led.read(types=["memory.recalled"])] == ["baseline"]


def test_the_service_folds_incrementally_and_sees_new_items(led: Ledger) -> None:
    svc = service(led, 5)
    assert svc.recall("common") == []
    write(led, "V", item("m1", "V", 1, body="common"))
    assert ids(svc.recall("common")) == ["m1"]


def test_any_text_is_a_safe_query(led: Ledger) -> None:
    write(led, "V", item("m1", "V", 1, body="near the header"))
    svc = service(led, 2)
    for q in ['"unbalanced', "NEAR(header", "header* ^near - AND OR NOT", "", "   ", "ünïcödé header"]:
        svc.recall(q)
    assert fts_query('a "b" c_d the') == '"b" OR "c" OR "d"'
    assert ids(svc.recall("NEAR(header")) == ["m1"]


def test_vector_and_hybrid_rankers(led: Ledger) -> None:
    write(
        led,
        "V",
        item("m1", "V", 1, title="header parsing", body="empty header crashes parser"),
        item("m2", "V", 1, title="logo colour", body="the logo is the wrong colour"),
    )
    emb = HashingEmbedder(64)
    vec = service(led, 2, ranker="vector", embedder=emb)
    first = vec.recall("parser crashes on empty header")
    assert ids(first)[0] == "m1"
    assert [(r.item_id, r.score) for r in first] == [
        (r.item_id, r.score) for r in vec.recall("parser crashes on empty header")
    ]
    hybrid = service(led, 2, ranker="hybrid", embedder_spec="hashing:64")
    assert ids(hybrid.recall("parser crashes on empty header"))[0] == "m1"
    assert [r.event.ranker for r in led.read(types=["memory.recalled"])][-1] == "hybrid:hashing-64"
    v = emb.embed(["some text here"])[0]
    assert math.isclose(sum(x * x for x in v), 1.0) and v == HashingEmbedder(64).embed(["some text here"])[0]


def test_bad_ranker_settings_are_one_line_errors(led: Ledger) -> None:
    with pytest.raises(SweclError, match="needs an embedder"):
        service(led, 1, ranker="vector")
    with pytest.raises(SweclError, match="hashing:DIM"):
        load_embedder("word2vec")
    with pytest.raises(SweclError, match="not a directory"):
        load_embedder("local:/nonexistent/model")
    with pytest.raises(SweclError, match="ranker"):
        rank_items([], "q", ranker="magic")
