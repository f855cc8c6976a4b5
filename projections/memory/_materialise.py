"""Materialised memory: the substrate as the files of a folder, rebuilt from the ledger
(as data: `commands.memory.write_memory_folder` writes them).

`results/v{V}/_memory/` holds `.cookbook-memory/` (one Markdown file per live item,
front matter with its provenance), `memory.db` (every item with its status, and an
FTS5 index of the live ones, like recall's), `graph.db` (items, tasks, files and
symbols with derived_from / touches / supersedes / merged_into edges) and `items.json`
(the live items with full provenance and patch texts: what `--source-memory PATH`
imports on another machine). None of it is a source of truth: the same state always
gives the same bytes, and a rebuild rewrites only files whose bytes would change.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from ledger import Ledger, LedgerError, SweclError
from ledger import sqlite

from ._recall import FTS_DDL
from ._state import Hop, MemoryItem, MemoryState, StatusChange

MEMORY_DIR = "_memory"
COOKBOOK_DIR = ".cookbook-memory"
MEMORY_DB = "memory.db"
GRAPH_DB = "graph.db"
ITEMS_FILE = "items.json"
MATERIALISE_SCHEMA = 1
EXPORT_FORMAT = "swecl-memory"
EXPORT_FORMAT_VERSION = 1

# Front-matter keys, in file order. Values are JSON, which is also YAML (flow style).
FRONT_MATTER_KEYS = (
    "item_id",
    "kind",
    "status",
    "title",
    "repo",
    "outcome",
    "source_run",
    "sequence_id",
    "source_instance",
    "source_order",
    "source_pass",
    "files",
    "symbols",
    "tags",
    "ttl_tasks",
    "ttl_seconds",
    "extractor",
    "derived_from",
    "merged_from",
    "written_in",
    "written_seq",
    "written_at",
    "origin",
    "patch_sha256",
    "recall_count",
)

PatchReader = Callable[[str], "str | None"]


class ExportedItem(msgspec.Struct, kw_only=True, forbid_unknown_fields=False):
    """One live item in `items.json`: its MemoryWritten fields, patch text and provenance.

    Declared field by field rather than as a `MemoryContent`: this is a file format that
    other tools read, and it must not change when the event does (it also carries the
    patch as text, not as a blob reference)."""

    item_id: str
    kind: str
    title: str
    body: str
    repo: str
    source_run: str
    sequence_id: str | None = None
    source_instance: str | None = None
    source_order: int | None = None
    source_pass: str | None = None
    files: list[str] = msgspec.field(default_factory=list)
    symbols: list[str] = msgspec.field(default_factory=list)
    tags: list[str] = msgspec.field(default_factory=list)
    outcome: str | None = None
    ttl_tasks: int | None = None
    ttl_seconds: float | None = None
    extractor: str = "deterministic"
    derived_from: list[str] = msgspec.field(default_factory=list)
    patch_sha256: str | None = None
    patch_text: str | None = None
    written_in: str = ""
    written_seq: int = 0
    written_at: str = ""
    origin: list[Hop] = msgspec.field(default_factory=list)
    history: list[StatusChange] = msgspec.field(default_factory=list)
    merged_from: list[str] = msgspec.field(default_factory=list)
    recall_count: int = 0


class ExportFile(msgspec.Struct, kw_only=True):
    format: str
    format_version: int
    version: str
    as_of_seq: int
    ledger_id: str | None = None
    items: list[ExportedItem] = msgspec.field(default_factory=list)


@dataclass(frozen=True)
class MaterialiseReport:
    memory_dir: Path
    as_of_seq: int
    live_items: int
    total_items: int
    changed: tuple[str, ...]  # paths (relative to memory_dir) written or removed

    def lines(self) -> list[str]:
        what = f"{len(self.changed)} file(s) changed" if self.changed else "unchanged"
        return [
            f"memory of {self.memory_dir}: {self.live_items} live of {self.total_items} items as of seq {self.as_of_seq}; {what}"
        ]


def blob_patch_reader(ledger: Ledger) -> PatchReader:
    def read(digest: str) -> str | None:
        try:
            return ledger.get_blob(digest).decode("utf-8", errors="replace")
        except LedgerError:
            return None

    return read


@dataclass(frozen=True)
class MemoryFolder:
    """The memory folder of one state, as data; `commands.memory.write_memory_folder`
    writes it (this package writes no files).

    The databases are given as the statements that fill a fresh one, not as bytes: the
    writer builds each in a file database beside its target, whose header (change
    counter, library version) an in-memory database would not give the same bytes."""

    as_of_seq: int
    live_items: int
    total_items: int
    files: dict[str, bytes]
    """Path relative to the folder -> content: one `COOKBOOK_DIR/{item}.md` per live item, then `ITEMS_FILE`."""
    databases: dict[str, Callable[[sqlite.Connection], None]]
    """`MEMORY_DB`, `GRAPH_DB` -> what fills a fresh, empty database (one transaction)."""


def memory_folder(state: MemoryState, read_patch: PatchReader, *, ledger_id: str | None = None) -> MemoryFolder:
    """The files of `state`'s memory folder (see the module doc); the same state always
    gives the same bytes."""
    items = sorted(state.items.values(), key=lambda i: i.item_id)
    live = [i for i in items if i.live]
    patches = {i.item_id: (read_patch(i.patch) if i.patch else None) for i in items}
    files = {f"{COOKBOOK_DIR}/{i.item_id}.md": render_markdown(i, patches[i.item_id]).encode() for i in live}
    files[ITEMS_FILE] = export_bytes(state, live, patches, ledger_id)
    return MemoryFolder(
        as_of_seq=state.last_seq,
        live_items=len(live),
        total_items=len(items),
        files=files,
        databases={
            MEMORY_DB: lambda conn: _fill_memory_db(conn, state, items, patches),
            GRAPH_DB: lambda conn: _fill_graph_db(conn, state, items),
        },
    )


def export_bytes(
    state: MemoryState, live: list[MemoryItem], patches: dict[str, str | None], ledger_id: str | None
) -> bytes:
    items = []
    for i in live:
        raw = {f: getattr(i, f) for f in ExportedItem.__struct_fields__ if hasattr(i, f)}
        raw["patch_sha256"] = i.patch
        raw["patch_text"] = patches.get(i.item_id)
        items.append(ExportedItem(**raw))
    doc = ExportFile(
        format=EXPORT_FORMAT,
        format_version=EXPORT_FORMAT_VERSION,
        version=state.version,
        as_of_seq=state.last_seq,
        ledger_id=ledger_id,
        items=items,
    )
    return msgspec.json.format(msgspec.json.encode(doc), indent=2) + b"\n"


def decode_export(data: bytes, where: str) -> ExportFile:
    """Parse an `items.json`; a bad one is a one-line `SweclError` naming `where`."""
    try:
        doc = msgspec.json.decode(data, type=ExportFile)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise SweclError(f"{where}: not a swecl memory export ({exc})") from None
    except RecursionError:  # msgspec's answer to "[[[[..." nested thousands deep
        raise SweclError(f"{where}: not a swecl memory export (nested too deeply)") from None
    if doc.format != EXPORT_FORMAT:
        raise SweclError(f"{where}: format is {doc.format!r}, expected {EXPORT_FORMAT!r}")
    if doc.format_version > EXPORT_FORMAT_VERSION:
        raise SweclError(
            f"{where}: format_version {doc.format_version} is newer than this swecl reads ({EXPORT_FORMAT_VERSION}): upgrade swecl"
        )
    return doc


# -- Markdown -----------------------------------------------------------------------------


def front_matter(item: MemoryItem) -> dict[str, Any]:
    raw = msgspec.to_builtins(item)
    raw["patch_sha256"] = item.patch
    return {key: raw[key] for key in FRONT_MATTER_KEYS}


def render_markdown(item: MemoryItem, patch_text: str | None) -> str:
    lines = ["---"]
    for key, value in front_matter(item).items():
        lines.append(f"{key}: {json.dumps(value, ensure_ascii=False, sort_keys=True)}")
    lines += ["---", "", f"# {_one_line(item.title)}", "", item.body.rstrip(), ""]
    if patch_text:
        fence = "`" * max(3, _longest_backtick_run(patch_text) + 1)
        lines += ["## Patch", "", f"{fence}diff", patch_text.rstrip("\n"), fence, ""]
    return "\n".join(lines)


def parse_front_matter(text: str) -> dict[str, Any]:
    """The front matter of a rendered item (each line `key: <json>`)."""
    if not text.startswith("---\n"):
        raise ValueError("no front matter")
    head, sep, _ = text[4:].partition("\n---\n")
    if not sep:
        raise ValueError("unterminated front matter")
    out = {}
    for line in head.splitlines():
        key, _, value = line.partition(": ")
        out[key] = json.loads(value)
    return out


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _longest_backtick_run(text: str) -> int:
    return max((len(m) for m in re.findall(r"`+", text)), default=0)


# -- SQLite files -------------------------------------------------------------------------

MEMORY_DB_DDL = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
CREATE TABLE items (
    item_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    repo TEXT NOT NULL,
    outcome TEXT,
    source_run TEXT NOT NULL,
    sequence_id TEXT,
    source_instance TEXT,
    source_order INTEGER,
    source_pass TEXT,
    files TEXT NOT NULL,
    symbols TEXT NOT NULL,
    tags TEXT NOT NULL,
    ttl_tasks INTEGER,
    ttl_seconds REAL,
    extractor TEXT NOT NULL,
    derived_from TEXT NOT NULL,
    merged_from TEXT NOT NULL,
    merged_into TEXT,
    superseded_by TEXT,
    written_in TEXT NOT NULL,
    written_seq INTEGER NOT NULL,
    written_at TEXT NOT NULL,
    origin TEXT NOT NULL,
    history TEXT NOT NULL,
    patch_sha256 TEXT,
    patch_text TEXT,
    recall_count INTEGER NOT NULL
) STRICT;
CREATE INDEX items_repo_status ON items (repo, status);
"""

GRAPH_DB_DDL = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
CREATE TABLE nodes (id TEXT PRIMARY KEY, kind TEXT NOT NULL, label TEXT NOT NULL, data TEXT NOT NULL) STRICT;
CREATE TABLE edges (src TEXT NOT NULL, dst TEXT NOT NULL, kind TEXT NOT NULL, PRIMARY KEY (src, dst, kind)) STRICT;
CREATE INDEX edges_dst ON edges (dst, kind);
"""


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _meta_rows(state: MemoryState, kind: str) -> list[tuple[str, str]]:
    return [
        ("kind", kind),
        ("schema", str(MATERIALISE_SCHEMA)),
        ("version", state.version),
        ("as_of_seq", str(state.last_seq)),
        ("seeds", _dumps(msgspec.to_builtins(state.seeds))),
    ]


def _fill_memory_db(
    conn: sqlite.Connection, state: MemoryState, items: list[MemoryItem], patches: dict[str, str | None]
) -> None:
    conn.execute(MEMORY_DB_DDL)
    conn.execute(FTS_DDL)
    conn.executemany("INSERT INTO meta VALUES (?, ?)", _meta_rows(state, "memory"))
    marks = ", ".join("?" * 30)
    for i in items:
        conn.execute(
            f"INSERT INTO items VALUES ({marks})",
            (
                i.item_id,
                i.kind,
                i.status,
                i.title,
                i.body,
                i.repo,
                i.outcome,
                i.source_run,
                i.sequence_id,
                i.source_instance,
                i.source_order,
                i.source_pass,
                _dumps(i.files),
                _dumps(i.symbols),
                _dumps(i.tags),
                i.ttl_tasks,
                i.ttl_seconds,
                i.extractor,
                _dumps(i.derived_from),
                _dumps(i.merged_from),
                i.merged_into,
                i.superseded_by,
                i.written_in,
                i.written_seq,
                i.written_at,
                _dumps(msgspec.to_builtins(i.origin)),
                _dumps(msgspec.to_builtins(i.history)),
                i.patch,
                patches.get(i.item_id),
                i.recall_count,
            ),
        )
        if i.live:
            conn.execute(
                "INSERT INTO items_fts (item_id, title, body, files, symbols, tags) VALUES (?, ?, ?, ?, ?, ?)",
                (i.item_id, i.title, i.body, " ".join(i.files), " ".join(i.symbols), " ".join(i.tags)),
            )


def node_id(kind: str, *parts: str) -> str:
    return ":".join((kind, *parts))


def _fill_graph_db(conn: sqlite.Connection, state: MemoryState, items: list[MemoryItem]) -> None:
    conn.execute(GRAPH_DB_DDL)
    conn.executemany("INSERT INTO meta VALUES (?, ?)", _meta_rows(state, "graph"))
    nodes: dict[str, tuple[str, str, str]] = {}
    edges: set[tuple[str, str, str]] = set()
    known = {i.item_id for i in items}
    for i in items:
        me = node_id("item", i.item_id)
        nodes[me] = (
            "item",
            i.title,
            _dumps({"status": i.status, "repo": i.repo, "outcome": i.outcome, "written_in": i.written_in}),
        )
        if i.source_instance:
            task = node_id("task", i.source_instance)
            nodes.setdefault(task, ("task", i.source_instance, _dumps({"repo": i.repo})))
            edges.add((me, task, "derived_from"))
        for parent in i.derived_from:
            edges.add((me, node_id("item", parent), "derived_from"))
        for path in i.files:
            f = node_id("file", i.repo, path)
            nodes.setdefault(f, ("file", path, _dumps({"repo": i.repo})))
            edges.add((me, f, "touches"))
        for name in i.symbols:
            s = node_id("symbol", i.repo, name)
            nodes.setdefault(s, ("symbol", name, _dumps({"repo": i.repo})))
            edges.add((me, s, "touches"))
        if i.superseded_by:
            edges.add((node_id("item", i.superseded_by), me, "supersedes"))
        if i.merged_into:
            edges.add((me, node_id("item", i.merged_into), "merged_into"))
    # An edge to an item outside this substrate (a derived_from of another ledger) still
    # gets a node, so every edge resolves.
    for src, dst, _ in sorted(edges):
        for end in (src, dst):
            if end not in nodes and end.startswith("item:") and end[5:] not in known:
                nodes[end] = ("item", end[5:], _dumps({"status": "unknown"}))
    conn.executemany("INSERT INTO nodes VALUES (?, ?, ?, ?)", [(k, *v) for k, v in sorted(nodes.items())])
    conn.executemany("INSERT INTO edges VALUES (?, ?, ?)", sorted(edges))
