"""Copy-seeding: resolution, refusals, and export/import between machines."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from agents._recall import RecallService
from commands.memory import (
    apply_seed,
    dream,
    export_memory,
    import_seed,
    resolve_seed,
    seed_memory,
)
from ledger import Ledger, SweclError
from ledger.events import MemoryPruned
from projections.memory import ITEMS_FILE, load_memory

from .builders import REPO, item, start_run, write

PATCH = "diff --git a/w/a.py b/w/a.py\n--- a/w/a.py\n+++ b/w/a.py\n@@ -1 +1 @@\n-a\n+b\n"


@pytest.fixture
def led(tmp_path: Path) -> Ledger:
    ledger = Ledger.open(tmp_path / "ledger.db", create=True)
    yield ledger
    ledger.close()


def test_a_run_cannot_seed_from_its_own_version(led: Ledger) -> None:
    start_run(led, "A")
    write(led, "A", item("a1", "A", 1))
    with pytest.raises(SweclError, match="different version than its source"):
        seed_memory(led, "A", "A")
    with pytest.raises(SweclError, match="different version than its source"):
        resolve_seed(led, "A", f"A@{led.head()}")
    assert list(led.read(types=["memory.seeded"])) == []


def test_a_seed_loop_is_refused(led: Ledger) -> None:
    start_run(led, "A")
    write(led, "A", item("a1", "A", 1))
    start_run(led, "B")
    seed_memory(led, "B", "A")
    start_run(led, "C")
    seed_memory(led, "C", "B")
    with pytest.raises(SweclError, match="loop"):
        resolve_seed(led, "A", "C")


def test_newest_prior_run_with_memory_of_the_same_benchmark(led: Ledger) -> None:
    start_run(led, "old")
    write(led, "old", item("o1", "old", 1))
    start_run(led, "empty")  # newer, same benchmark, but no memory items
    start_run(led, "other-data", dataset_hash="e" * 64)
    write(led, "other-data", item("x1", "other-data", 1))
    start_run(led, "other-seqs", sequences=("s", "t"))
    write(led, "other-seqs", item("y1", "other-seqs", 1))
    start_run(led, "new")
    result = seed_memory(led, "new")
    assert (result.plan.source_run, result.plan.chosen, result.plan.item_count) == ("old", "newest-prior", 1)
    ev = result.recorded[0].event
    assert (ev.source_run, ev.source_seq, ev.chosen, ev.item_count) == (
        "old",
        result.plan.source_seq,
        "newest-prior",
        1,
    )
    assert result.recorded[0].stream == "run/new"
    # A run started after `new` is not "prior" to it.
    start_run(led, "later")
    write(led, "later", item("l1", "later", 1))
    start_run(led, "fresh", dataset_hash="f" * 64)
    with pytest.raises(SweclError, match="no prior run"):
        seed_memory(led, "fresh")


def test_a_version_is_seeded_once(led: Ledger) -> None:
    start_run(led, "A")
    write(led, "A", item("a1", "A", 1))
    start_run(led, "Z")
    write(led, "Z", item("z1", "Z", 1))
    start_run(led, "B")
    first = seed_memory(led, "B", "A")
    again = seed_memory(led, "B", "A")
    assert again.already and again.recorded == [] and again.plan.source_run == "A"
    assert seed_memory(led, "B").already  # a resumed run asking again
    with pytest.raises(SweclError, match="already seeded"):
        seed_memory(led, "B", "Z")
    assert len(list(led.read(types=["memory.seeded"]))) == 1 and first.recorded


def test_bad_sources(led: Ledger, tmp_path: Path) -> None:
    start_run(led, "A")
    start_run(led, "B")
    with pytest.raises(SweclError, match="no live memory items"):
        seed_memory(led, "B", "A")
    with pytest.raises(SweclError, match="no run version 'nope'"):
        seed_memory(led, "B", "nope")
    with pytest.raises(SweclError, match="no items.json"):
        seed_memory(led, "B", str(tmp_path / "missing" / "dir"))
    with pytest.raises(SweclError, match="past the ledger's head"):
        seed_memory(led, "B", "A@999")
    with pytest.raises(SweclError, match="start the run"):
        write(led, "A", item("a1", "A", 1))
        apply_seed(led, resolve_seed(led, "unstarted", "A"))


def test_export_then_import_round_trips(led: Ledger, tmp_path: Path) -> None:
    start_run(led, "A")
    digest = led.put_blob(PATCH)
    write(
        led,
        "A",
        item("a1", "A", 1, files=["w/a.py"], symbols=["f"], patch=digest, ttl_tasks=9),
        item("a2", "A", 2, body="gone soon"),
    )
    write(led, "A", item("a3", "A", 3, body="another"))
    led.append("run/A", [MemoryPruned(item_id="a2", reason="test")])
    report = export_memory(led, "A", tmp_path / "export")
    assert report.item_count == 2 and (tmp_path / "export" / ITEMS_FILE).is_file()
    assert sorted(p.stem for p in (tmp_path / "export" / ".cookbook-memory").glob("*.md")) == ["a1", "a3"]

    # Another machine: another ledger, a run there imports the folder.
    other = Ledger.open(tmp_path / "other.db", create=True)
    start_run(other, "X")
    result = import_seed(other, "X", tmp_path / "export")
    assert [r.type for r in result.recorded] == ["memory.seeded", "memory.written", "memory.written"]
    seeded = result.recorded[0].event
    assert seeded.source_path == str((tmp_path / "export").resolve()) and seeded.item_count == 2
    assert other.get_blob(seeded.items) == (tmp_path / "export" / ITEMS_FILE).read_bytes()

    src = load_memory(led, "A").state.items
    dst = load_memory(other, "X").state.items
    assert sorted(dst) == ["a1", "a3"]
    for item_id in dst:
        a, x = src[item_id], dst[item_id]
        for field in (
            "kind",
            "title",
            "body",
            "repo",
            "source_run",
            "sequence_id",
            "source_instance",
            "source_order",
            "source_pass",
            "files",
            "symbols",
            "tags",
            "outcome",
            "patch",
            "ttl_tasks",
            "ttl_seconds",
            "extractor",
            "derived_from",
        ):
            assert getattr(x, field) == getattr(a, field), field
        assert [(h.run, h.via) for h in x.origin] == [("A", "written"), ("X", "imported")]
    assert other.get_blob(dst["a1"].patch).decode() == PATCH
    # Imported items are not "later items" of X's own initial pass.
    got = RecallService(other, "X", "s", "initial", 1, "s-1", 1, REPO).recall("another", k=5)
    assert [r.item_id for r in got] == ["a3"]

    # The same import again is a no-op; exporting X gives the same items back.
    assert import_seed(other, "X", tmp_path / "export").already
    export_memory(other, "X", tmp_path / "export2")
    one = json.loads((tmp_path / "export" / ITEMS_FILE).read_text())["items"]
    two = json.loads((tmp_path / "export2" / ITEMS_FILE).read_text())["items"]
    keep = (
        "item_id",
        "title",
        "body",
        "repo",
        "files",
        "symbols",
        "outcome",
        "patch_sha256",
        "patch_text",
        "source_run",
    )
    assert [{k: i[k] for k in keep} for i in one] == [{k: i[k] for k in keep} for i in two]
    # A path through --source-memory resolves to the same import.
    start_run(other, "Y")
    via_cli = seed_memory(other, "Y", str(tmp_path / "export"))
    assert via_cli.plan.source_path == (tmp_path / "export").resolve() and len(via_cli.recorded) == 3
    other.close()


def test_imports_refuse_bad_folders_and_clashing_ids(led: Ledger, tmp_path: Path) -> None:
    start_run(led, "A")
    write(led, "A", item("a1", "A", 1))
    export_memory(led, "A", tmp_path / "exp")
    start_run(led, "B")
    write(led, "B", item("a1", "B", 1))  # B already holds an item with that id
    with pytest.raises(SweclError, match="already holds item a1"):
        import_seed(led, "B", tmp_path / "exp")

    bad = tmp_path / "bad"
    bad.mkdir()
    cases = {
        "not json{": "not a swecl memory export",
        json.dumps({"format": "other", "format_version": 1, "version": "A", "as_of_seq": 1}): "format is 'other'",
        json.dumps({"format": "swecl-memory", "format_version": 99, "version": "A", "as_of_seq": 1}): "upgrade swecl",
        json.dumps(
            {"format": "swecl-memory", "format_version": 1, "version": "A", "as_of_seq": 1, "items": [{"item_id": 3}]}
        ): r"items\[0\]",
    }
    start_run(led, "C")
    for text, message in cases.items():
        (bad / ITEMS_FILE).write_text(text)
        with pytest.raises(SweclError, match=message):
            import_seed(led, "C", bad)
    doc = json.loads((tmp_path / "exp" / ITEMS_FILE).read_text())
    doc["items"] = doc["items"] * 2
    (bad / ITEMS_FILE).write_text(json.dumps(doc))
    with pytest.raises(SweclError, match="appears twice"):
        import_seed(led, "C", bad)
    doc["items"] = doc["items"][:1]
    doc["items"][0]["patch_text"], doc["items"][0]["patch_sha256"] = "edited", "0" * 64
    (bad / ITEMS_FILE).write_text(json.dumps(doc))
    with pytest.raises(SweclError, match="does not match"):
        import_seed(led, "C", bad)
    assert load_memory(led, "C").state.items == {}


def test_dream_governance_catches_secrets_in_imported_memory(led: Ledger, tmp_path: Path) -> None:
    start_run(led, "A")
    write(led, "A", item("a1", "A", 1))
    export_memory(led, "A", tmp_path / "exp")
    doc = msgspec.json.decode((tmp_path / "exp" / ITEMS_FILE).read_bytes())
    doc["items"][0]["body"] = "remember AKIAIOSFODNN7EXAMPLE"
    (tmp_path / "exp" / ITEMS_FILE).write_bytes(msgspec.json.encode(doc))
    start_run(led, "B")
    import_seed(led, "B", tmp_path / "exp")
    report = dream(led, "B", reason="pre-eval")
    assert [(d.action, d.item_id) for d in report.decisions] == [("pruned", "a1")]
