"""Materialised memory agrees with the projection, and is rebuilt byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import apsw
import msgspec
import pytest

from commands.memory import materialise_version
from ledger import Ledger
from ledger.events import MemoryMerged, MemoryPruned, MemorySuperseded
from projections.memory import (
    COOKBOOK_DIR,
    GRAPH_DB,
    ITEMS_FILE,
    MEMORY_DB,
    MEMORY_DIR,
    decode_export,
    load_memory,
    parse_front_matter,
)

from .builders import item, start_run, write

PATCH = "diff --git a/w/core.py b/w/core.py\n--- a/w/core.py\n+++ b/w/core.py\n@@ -1 +1 @@\n-x = 1\n+x = 2  # ```fenced```\n"


@pytest.fixture
def led(tmp_path: Path) -> Ledger:
    ledger = Ledger.open(tmp_path / "ledger.db", create=True)
    start_run(ledger, "V")
    digest = ledger.put_blob(PATCH)
    write(
        ledger,
        "V",
        item("m1", "V", 1, files=["w/core.py"], symbols=["spin"], patch=digest, title='Quotes " and: colons'),
        item("m2", "V", 2, files=["w/core.py"], symbols=["spin"]),
        item("m3", "V", 3, files=["w/io.py"], body="multi\nline\nbody"),
        item("m4", "V", 4),
        item("m5", "V", 5, outcome="unresolved"),
    )
    ledger.append("run/V", [MemorySuperseded(item_id="m1", by="m2", reason="newer")])
    ledger.append("run/V", [MemoryMerged(into="m4", from_=["m3"], reason="dup")])
    ledger.append("run/V", [MemoryPruned(item_id="m5", reason="cap")])
    yield ledger
    ledger.close()


def rows(path: Path, sql: str) -> list[tuple]:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_files_and_databases_agree_with_the_projection(led: Ledger, tmp_path: Path) -> None:
    state = load_memory(led, "V").state
    report = materialise_version(led, "V", tmp_path / "vV")
    mem = tmp_path / "vV" / MEMORY_DIR
    assert report.memory_dir == mem and report.live_items == 2 and report.total_items == 5

    # One Markdown file per live item; its front matter is the item's provenance.
    md = {p.stem: p.read_text() for p in (mem / COOKBOOK_DIR).glob("*.md")}
    assert sorted(md) == ["m2", "m4"]
    for item_id, text in md.items():
        fm = parse_front_matter(text)
        it = state.items[item_id]
        for key in (
            "item_id",
            "kind",
            "status",
            "title",
            "repo",
            "source_run",
            "source_order",
            "files",
            "symbols",
            "written_seq",
            "merged_from",
        ):
            assert fm[key] == msgspec.to_builtins(getattr(it, key)), key
        assert fm["origin"] == msgspec.to_builtins(it.origin)
        assert f"# {it.title}" in text and it.body in text
    assert parse_front_matter(md["m4"])["merged_from"] == ["m3"]

    # memory.db: every item with its status; FTS over the live ones only.
    db = rows(
        mem / MEMORY_DB,
        "SELECT item_id, status, merged_into, superseded_by, patch_text, json(history) FROM items ORDER BY item_id",
    )
    assert [(r[0], r[1], r[2], r[3]) for r in db] == [
        ("m1", "superseded", None, "m2"),
        ("m2", "live", None, None),
        ("m3", "merged", "m4", None),
        ("m4", "live", None, None),
        ("m5", "pruned", None, None),
    ]
    assert db[0][4] == PATCH
    assert [h["status"] for h in json.loads(db[0][5])] == ["live", "superseded"]
    assert rows(mem / MEMORY_DB, "SELECT item_id FROM items_fts ORDER BY item_id") == [("m2",), ("m4",)]
    assert rows(mem / MEMORY_DB, "SELECT item_id FROM items_fts WHERE items_fts MATCH 'spin'") == [("m2",)]
    meta = dict(rows(mem / MEMORY_DB, "SELECT key, value FROM meta"))
    assert meta["version"] == "V" and int(meta["as_of_seq"]) == state.last_seq

    # graph.db: nodes for items, tasks, files, symbols; the four edge kinds.
    edges = set(rows(mem / GRAPH_DB, "SELECT src, dst, kind FROM edges"))
    assert ("item:m2", "item:m1", "supersedes") in edges
    assert ("item:m3", "item:m4", "merged_into") in edges
    assert ("item:m1", "task:s-1", "derived_from") in edges
    assert ("item:m1", "file:acme/widgets:w/core.py", "touches") in edges
    assert ("item:m1", "symbol:acme/widgets:spin", "touches") in edges
    nodes = {r[0]: r[1] for r in rows(mem / GRAPH_DB, "SELECT id, kind FROM nodes")}
    assert all(src in nodes and dst in nodes for src, dst, _ in edges)
    assert {k for k in nodes.values()} == {"item", "task", "file", "symbol"}

    # items.json: the live items, exportable.
    doc = decode_export((mem / ITEMS_FILE).read_bytes(), "items.json")
    assert [i.item_id for i in doc.items] == ["m2", "m4"] and doc.as_of_seq == state.last_seq


def test_rebuilds_are_idempotent_and_byte_stable(led: Ledger, tmp_path: Path) -> None:
    first = materialise_version(led, "V", tmp_path / "one")
    assert first.changed
    again = materialise_version(led, "V", tmp_path / "one")
    assert again.changed == ()
    materialise_version(led, "V", tmp_path / "two")

    def snapshot(root: Path) -> dict[str, bytes]:
        return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}

    assert snapshot(tmp_path / "one") == snapshot(tmp_path / "two")
    # A damaged copy is repaired; a stale item file disappears when the item leaves the live set.
    mem = tmp_path / "one" / MEMORY_DIR
    (mem / MEMORY_DB).write_bytes(b"junk")
    (mem / COOKBOOK_DIR / "m2.md").unlink()
    (mem / COOKBOOK_DIR / "zzz.md").write_text("stale")
    repaired = materialise_version(led, "V", tmp_path / "one")
    assert set(repaired.changed) == {MEMORY_DB, f"{COOKBOOK_DIR}/m2.md", f"{COOKBOOK_DIR}/zzz.md"}
    assert snapshot(tmp_path / "one") == snapshot(tmp_path / "two")
    led.append("run/V", [MemoryPruned(item_id="m2", reason="later")])
    materialise_version(led, "V", tmp_path / "one")
    assert sorted(p.stem for p in (mem / COOKBOOK_DIR).glob("*.md")) == ["m4"]


def test_as_of_an_earlier_seq(led: Ledger, tmp_path: Path) -> None:
    before_decisions = next(led.read(types=["memory.superseded"])).seq - 1
    report = materialise_version(led, "V", tmp_path / "old", upto=before_decisions)
    assert report.live_items == 5


def test_patch_fences_survive_backticks(led: Ledger, tmp_path: Path) -> None:
    digest = led.put_blob(PATCH)
    write(led, "V", item("m6", "V", 6, patch=digest))
    materialise_version(led, "V", tmp_path / "f")
    text = (tmp_path / "f" / MEMORY_DIR / COOKBOOK_DIR / "m6.md").read_text()
    assert "````diff\n" + PATCH.rstrip("\n") + "\n````" in text
