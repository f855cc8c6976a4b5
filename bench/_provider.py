"""Benchmark 7: what `--memory-server` costs, per tool call and per snapshot.

Per call: the same MCP memory server, called with the MCP SDK's client directly (the
client starts the server over stdio) and then as an agent reaches it in a run: the
client starts swecl's recording proxy (`Door.proxy_argv`), which forwards over the
door's Unix socket to `ServerHost`, which calls the server and records every call as
`memory.provider.called` in a real ledger. Each side gets a fresh server on an empty
data directory and the same calls (create_entities and search_nodes, alternating), after
a few warm-up calls; the two sides are interleaved call by call (which goes first
alternating), each call timed at the client. The overhead is the proxied
median (p95) minus the direct one, in ms; the ratio is proxied over direct. Target: at
most 5 ms per call.

The server is the reference knowledge-graph server, npm `@modelcontextprotocol/server-memory`
(`$SWECL_SERVER_MEMORY_BIN`, else the install the tests' `server_memory_bin` fixture keeps
under `$SWECL_NPM_CACHE` or `.dev/npm`, installed there with npm when missing); without
npm, a small stdio server written with the installed `mcp` SDK, with the same two tools.
`details.provider.server` says which.

Per snapshot: `snapshot_server_data` of a data directory of 10 MB (2 MB quick) in files
of a few sizes (one of 40%, four of 10%, the rest in 64 KiB files) into a new ledger,
once cold (every file a new blob) and once unchanged (every blob already stored), in ms;
the files random bytes (nothing to compress: every byte is written), then JSON lines of
words (what a server's files hold: zstd's work, fewer bytes written; cold only). The
ratio is to reading, hashing and zstd-1 compressing the same files (the CPU work the
ledger does for a new blob), measured in the same run; the reference also says what
writing the compressed bytes into a bare SQLite table costs (one transaction, a new WAL
file, synchronous=NORMAL): the rest of a cold snapshot's floor. Target: at most 50 ms
per snapshot of 10 MB (a quick run's 2 MB is scaled to 10 MB for the target).

Per changed snapshot (what a run does after most tasks): a data directory of one 10 MB
file (2 MB quick) that changed a little since the last snapshot, into the ledger that
holds the earlier ones: server-memory's JSONL with 3 entities inserted before the
relations and 1 relation appended, and a database file of 4 KiB pages with page 1 and 4
others changed. The file is above the chunking threshold, so only its new chunks are
stored. The ratio is to reading and SHA-256 hashing the file (what any snapshot of a
changed file does at least); the reference also gives the same file stored whole, as
before chunking (one `put_blobs` of it, into a ledger of its own), measured in the same
repetition, and the ledger bytes each adds (new blobs as stored, plus the event).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import random
import shlex
import shutil
import subprocess
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import msgspec
import zstandard

from commands.run.memory import (
    SNAPSHOT_CHUNK_ABOVE,
    CallContext,
    LedgerRecorder,
    ServerHost,
    parse_memory_server,
    restore_server_data,
    server_snapshot_event,
    snapshot_server_data,
)
from ledger import Ledger, blob_hash
from ledger.sqlite import connect as sqlite_connect

from ._core import Context, Result, median, value_at_most

CALL_MS = 5.0
SNAPSHOT_MS = 50.0
SERVER_MEMORY = "@modelcontextprotocol/server-memory"
SERVER_MEMORY_VERSION = "2026.8.31"  # the version the tests pin (tests/agents/conftest.py)
REPO_ROOT = Path(__file__).resolve().parents[1]

# The fallback: the reference server's two tools used here, over a JSON-lines file.
SDK_SERVER = '''
import json, os
from mcp.server.mcpserver import MCPServer

server = MCPServer("bench-memory", log_level="WARNING")
PATH = os.environ["MEMORY_FILE_PATH"]

def _load():
    if not os.path.exists(PATH):
        return []
    with open(PATH) as fh:
        return [json.loads(line) for line in fh if line.strip()]

async def create_entities(entities: list[dict]) -> str:
    with open(PATH, "a") as fh:
        for e in entities:
            fh.write(json.dumps(e) + "\\n")
    return json.dumps(entities)

async def search_nodes(query: str) -> str:
    return json.dumps([e for e in _load() if query in json.dumps(e)])

server.add_tool(create_entities, name="create_entities", description="add entities", structured_output=False)
server.add_tool(search_nodes, name="search_nodes", description="find entities", structured_output=False)
server.run("stdio")
'''


def _npm_installed(binary: Path) -> bool:
    package = binary.parent.parent / "@modelcontextprotocol" / "server-memory" / "package.json"
    try:
        return binary.exists() and json.loads(package.read_text())["version"] == SERVER_MEMORY_VERSION
    except (OSError, ValueError, KeyError):
        return False


def find_server(ctx: Context) -> tuple[list[str], str]:
    """(argv, what it is) of the server to measure (see the module doc)."""
    explicit = os.environ.get("SWECL_SERVER_MEMORY_BIN")
    if explicit:
        return [explicit], f"{SERVER_MEMORY} ($SWECL_SERVER_MEMORY_BIN)"
    prefix = Path(os.environ.get("SWECL_NPM_CACHE") or REPO_ROOT / ".dev" / "npm") / f"server-memory-{SERVER_MEMORY_VERSION}"
    binary = prefix / "node_modules" / ".bin" / "mcp-server-memory"
    npm = shutil.which("npm")
    if not _npm_installed(binary) and npm is not None:
        ctx.log(f"installing {SERVER_MEMORY}@{SERVER_MEMORY_VERSION} with npm into {prefix}")
        staging = prefix.with_name(prefix.name + ".bench-partial")
        shutil.rmtree(staging, ignore_errors=True)
        done = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--fetch-retries=1", "--prefix", str(staging),
                               f"{SERVER_MEMORY}@{SERVER_MEMORY_VERSION}"],
                              capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        if done.returncode == 0 and _npm_installed(staging / "node_modules" / ".bin" / "mcp-server-memory"):
            if not _npm_installed(binary):  # another process may have installed it meanwhile
                shutil.rmtree(prefix, ignore_errors=True)
                staging.rename(prefix)
        shutil.rmtree(staging, ignore_errors=True)
    if _npm_installed(binary):
        return [str(binary)], f"{SERVER_MEMORY} {SERVER_MEMORY_VERSION} (npm)"
    script = ctx.work / "bench_memory_server.py"
    script.write_text(SDK_SERVER)
    return [sys.executable, str(script)], "a stdio server written with the mcp SDK (npm not available)"


def _calls(n: int, tag: str) -> list[tuple[str, dict[str, Any]]]:
    calls: list[tuple[str, dict[str, Any]]] = []
    for i in range(n):
        if i % 2 == 0:
            calls.append(("create_entities", {"entities": [{
                "name": f"{tag}-task-{i}", "entityType": "swecl-task",
                "observations": ["repo demo/pkg", "outcome resolved", f"lesson {i}: " + "x" * 200]}]}))
        else:
            calls.append(("search_nodes", {"query": f"{tag}-task-{i - 1}"}))
    return calls


async def _session(stack: AsyncExitStack, argv: list[str], env: dict[str, str] | None) -> Any:
    """`argv` started as an MCP stdio server by the SDK's client, after the handshake."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
    errlog = stack.enter_context(open(os.devnull, "w"))  # the server's banner on stderr
    read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    return session


async def _interleaved(sides: dict[str, tuple[list[str], dict[str, str] | None]],
                       calls: list[tuple[str, dict[str, Any]]], warmup: int) -> dict[str, list[float]]:
    """Each call made on every side in turn (the order alternating), timed at the client;
    the first `warmup` not kept. Interleaved, a burst of the machine's other work falls
    on both sides alike. Seconds."""
    samples: dict[str, list[float]] = {name: [] for name in sides}
    async with AsyncExitStack() as stack:
        sessions = {name: await _session(stack, argv, env) for name, (argv, env) in sides.items()}
        order = list(sessions)
        for i, (tool, args) in enumerate(calls):
            for name in order if i % 2 == 0 else reversed(order):
                start = time.perf_counter()
                result = await sessions[name].call_tool(tool, args)
                took = time.perf_counter() - start
                if result.is_error:
                    raise RuntimeError(f"{name}: {tool} failed: {result.content}")
                if i >= warmup:
                    samples[name].append(took)
    return samples


def _p95(xs: list[float]) -> float:
    ordered = sorted(xs)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def measure_calls(ctx: Context, argv: list[str], n: int, warmup: int) -> dict[str, list[float]]:
    """Seconds per call, direct and through the recording proxy, the same calls each."""
    direct_dir = ctx.work / "provider-direct"
    direct_dir.mkdir(parents=True, exist_ok=True)
    env = {**{k: os.environ[k] for k in ("HOME", "PATH", "LANG") if k in os.environ},
           "MEMORY_FILE_PATH": str(direct_dir / "memory.jsonl")}
    calls = _calls(n + warmup, "bench")

    ledger_path = ctx.work / "provider-ledger.db"
    Ledger.open(ledger_path, create=True).close()
    spec = parse_memory_server(shlex.join(argv), ["MEMORY_FILE_PATH={data}/memory.jsonl"])
    context = CallContext(sequence_id="bench", instance_id="bench__pkg-1", order=1)
    # Unconfined (no sandbox): bubblewrap's start costs once per server, not per call.
    with ServerHost(spec, ctx.work / "provider-proxied" / "data", LedgerRecorder(ledger_path, "bench", "bench"),
                    sequence_id="bench", call_timeout_s=60) as host:
        with host.door(ctx.work / "provider-door", context) as door:
            sides = {"direct": (argv, env), "proxied": (door.proxy_argv, None)}
            try:
                timed = asyncio.run(_interleaved(sides, calls, warmup))
            finally:
                gc.collect()  # the SDK's transports, collected here rather than in a later import
        if host.failures:
            raise RuntimeError(f"the proxied calls failed: {list(host.failures)}")
    with Ledger.open(ledger_path, readonly=True) as led:
        recorded = sum(1 for _ in led.read(types=["memory.provider.called"]))
    if recorded != len(calls):
        raise RuntimeError(f"{recorded} calls recorded, {len(calls)} made")
    return timed


def _data_dir(root: Path, total: int, text: bool = False) -> dict[str, int]:
    """Files of a few sizes adding up to `total` bytes (see the module doc); name -> size.
    Random bytes, or with `text` JSON lines of words (what a server's files hold)."""
    rng = random.Random(7)
    sizes = {"graph/big.bin": total * 4 // 10}
    sizes.update({f"graph/mid-{i}.bin": total // 10 for i in range(4)})
    rest, i = total - sum(sizes.values()), 0
    while rest > 0:
        size = min(64 * 1024, rest)
        sizes[f"notes/{i // 32:02d}/small-{i}.bin"] = size
        rest -= size
        i += 1
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 10)))
             for _ in range(5000)]
    for name, size in sizes.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(_text(rng, words, size) if text else rng.randbytes(size))
    return sizes


def _text(rng: random.Random, words: list[str], size: int) -> bytes:
    lines, n = [], 0
    while n < size:
        line = json.dumps({"type": "entity", "name": f"task-{len(lines)}", "entityType": "swecl-task",
                           "observations": [" ".join(rng.choices(words, k=rng.randint(5, 40))) for _ in range(3)]})
        lines.append(line)
        n += len(line) + 1
    return ("\n".join(lines) + "\n").encode()[:size]


def _reference(files: list[Path], work: Path) -> tuple[float, float, float]:
    """Seconds to read and SHA-256 the files; to read, hash and zstd-1 them (the CPU work
    the ledger does for a new blob); and to write those compressed bytes into a bare
    SQLite table of a new WAL file in one transaction (what storing them costs at least)."""
    start = time.perf_counter()
    for file in files:
        blob_hash(file.read_bytes())
    hashing = time.perf_counter() - start
    start = time.perf_counter()
    packer = zstandard.ZstdCompressor(level=1, write_checksum=True)
    rows = []
    for file in files:
        raw = file.read_bytes()
        rows.append((blob_hash(raw), packer.compress(raw)))
    cpu = time.perf_counter() - start
    path = work / "snapshot-sqlite-alone.db"
    conn = sqlite_connect(path)
    try:
        conn.pragma("journal_mode", "wal")
        conn.pragma("synchronous", "NORMAL")
        conn.execute("CREATE TABLE b (sha256 TEXT PRIMARY KEY, data BLOB NOT NULL) STRICT")
        start = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("INSERT INTO b VALUES (?, ?)", rows)
        conn.execute("COMMIT")
        store = time.perf_counter() - start
    finally:
        conn.close()
    for leftover in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        leftover.unlink(missing_ok=True)
    return hashing, cpu, store


def measure_snapshots(ctx: Context, total: int, reps: int) -> dict[str, list[float]]:
    """Seconds per snapshot of a `total`-byte directory: cold (a new ledger each time),
    then unchanged (into the same ledger again); random bytes, then text (cold only)."""
    out: dict[str, list[float]] = {}
    for shape in ("random", "text"):
        data = ctx.work / f"snapshot-data-{shape}"
        sizes = _data_dir(data, total, text=shape == "text")
        ctx.details.setdefault("provider", {})["snapshot_files"] = len(sizes)
        files = sorted(p for p in data.rglob("*") if p.is_file())
        sfx = "" if shape == "random" else "_text"
        for rep in range(reps):
            hashing, cpu, store = _reference(files, ctx.work)
            for key, value in (("hashing", hashing), ("floor", cpu), ("sqlite_alone", store)):
                out.setdefault(key + sfx, []).append(value)
            path = ctx.work / f"snapshot-{rep}.db"
            with Ledger.open(path, create=True) as led:
                start = time.perf_counter()
                manifest = snapshot_server_data(led, data)
                out.setdefault("cold" + sfx, []).append(time.perf_counter() - start)
                start = time.perf_counter()
                again = snapshot_server_data(led, data)
                out.setdefault("unchanged" + sfx, []).append(time.perf_counter() - start)
            if sum(f.size for f in manifest) != total or again != manifest:
                raise RuntimeError("the snapshot does not hold the directory")
            for leftover in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
                leftover.unlink(missing_ok=True)
    return out


def _stored_bytes(path: Path) -> int:
    """Bytes the ledger's blobs take as stored (compressed), read beside the open ledger."""
    conn = sqlite_connect(path, readonly=True)
    try:
        return int(conn.execute("SELECT COALESCE(SUM(length(data)), 0) FROM blobs").fetchone()[0])
    finally:
        conn.close()


def _jsonl_lines(rng: random.Random, words: list[str], n: int, kind: str, start: int) -> list[bytes]:
    return [json.dumps({"type": kind, "name": f"task-{start + i}", "entityType": "swecl-task",
                        "observations": [" ".join(rng.choices(words, k=rng.randint(5, 40))) for _ in range(3)]}
                       ).encode() + b"\n" for i in range(n)]


def measure_changed(ctx: Context, total: int, reps: int) -> dict[str, list[float]]:
    """A data directory of one `total`-byte file that changes a little between snapshots,
    snapshotted after each change into a ledger holding the earlier ones: server-memory's
    JSONL (entities, then relations: each save puts 3 new entities before the relations
    and 1 relation at the end), and a database file of 4 KiB pages (page 1, whose header
    SQLite rewrites at every commit, and 4 other pages changed). Per rep: seconds of the
    snapshot, and ledger bytes added (the new blobs as stored, plus the snapshot event);
    beside it, in the same rep, the same file stored whole as before chunking (one
    `put_blobs` of its bytes, into a ledger of its own holding the earlier versions), and
    reading and hashing it (what any snapshot of a changed file does at least)."""
    out: dict[str, list[float]] = {}
    rng = random.Random(11)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 10)))
             for _ in range(5000)]
    for shape in ("jsonl", "pages"):
        data = ctx.work / f"changed-{shape}"
        data.mkdir(parents=True, exist_ok=True)
        file = data / ("memory.jsonl" if shape == "jsonl" else "memory.db")
        if shape == "jsonl":
            entities = _jsonl_lines(rng, words, total // 500, "entity", 0)
            relations = _jsonl_lines(rng, words, total // 2000, "relation", 10**6)
            while sum(map(len, entities)) + sum(map(len, relations)) > total:
                entities.pop()
            file.write_bytes(b"".join(entities + relations))
        else:
            pages = bytearray(rng.randbytes(total))
            file.write_bytes(pages)
        chunked, whole = ctx.work / f"changed-{shape}.db", ctx.work / f"changed-{shape}-whole.db"
        with Ledger.open(chunked, create=True) as led, Ledger.open(whole, create=True) as flat:
            snapshot_server_data(led, data)
            flat.put_blobs([file.read_bytes()])
            for rep in range(reps):
                if shape == "jsonl":
                    entities[len(entities):] = _jsonl_lines(rng, words, 3, "entity", 10**5 + 3 * rep)
                    relations += _jsonl_lines(rng, words, 1, "relation", 2 * 10**6 + rep)
                    file.write_bytes(b"".join(entities + relations))
                else:
                    for page in [0, *rng.sample(range(1, total // 4096), 4)]:
                        pages[page * 4096:(page + 1) * 4096] = rng.randbytes(4096)
                    file.write_bytes(pages)
                gc.collect()
                sides = ["chunked", "whole"] if rep % 2 == 0 else ["whole", "chunked"]
                for side in sides:
                    if side == "chunked":
                        stored = _stored_bytes(chunked)
                        start = time.perf_counter()
                        manifest = snapshot_server_data(led, data)
                        out.setdefault(shape, []).append(time.perf_counter() - start)
                        event = server_snapshot_event(manifest, sequence_id="bench", instance_id=None, order=rep)
                        led.append("run/bench/bench", [event])
                        out.setdefault(shape + "_bytes", []).append(
                            _stored_bytes(chunked) - stored + len(msgspec.json.encode(event)))
                        out.setdefault(shape + "_chunks", []).append(sum(len(f.chunks) for f in manifest))
                    else:
                        stored = _stored_bytes(whole)
                        start = time.perf_counter()
                        flat.put_blobs([file.read_bytes()])
                        out.setdefault(shape + "_whole", []).append(time.perf_counter() - start)
                        out.setdefault(shape + "_whole_bytes", []).append(_stored_bytes(whole) - stored)
                start = time.perf_counter()
                blob_hash(file.read_bytes())
                out.setdefault(shape + "_hashing", []).append(time.perf_counter() - start)
            if sum(f.size for f in manifest) != file.stat().st_size:
                raise RuntimeError("the snapshot does not hold the directory")
            restored = ctx.work / f"changed-{shape}-restored"
            shutil.rmtree(restored, ignore_errors=True)
            restore_server_data(led, manifest, restored)
            if (restored / file.name).read_bytes() != file.read_bytes():
                raise RuntimeError("the chunked snapshot does not restore the file")
        for leftover in (chunked, whole):
            for path in (leftover, leftover.with_name(leftover.name + "-wal"), leftover.with_name(leftover.name + "-shm")):
                path.unlink(missing_ok=True)
    return out


def run(ctx: Context) -> list[Result]:
    n, warmup = (20, 3) if ctx.quick else (400, 20)
    total = (2 if ctx.quick else 10) * 1024 * 1024
    reps = 2 if ctx.quick else 7
    argv, what = find_server(ctx)
    ctx.log(f"provider: {n} calls each way to {what}")
    calls = measure_calls(ctx, argv, n, warmup)
    ctx.log(f"provider: snapshots of {total // (1024 * 1024)} MB, {reps} times")
    snaps = measure_snapshots(ctx, total, reps)
    ctx.log(f"provider: snapshots of a {total // (1024 * 1024)} MB file changed a little, {reps * 2} times each")
    changed = measure_changed(ctx, total, reps * 2)
    snaps.update({k: v for k, v in changed.items() if not k.endswith(("_bytes", "_chunks"))})

    ms = {k: [s * 1000 for s in v] for k, v in {**calls, **snaps}.items()}
    direct_med, proxied_med = median(ms["direct"]), median(ms["proxied"])
    direct_p95, proxied_p95 = _p95(ms["direct"]), _p95(ms["proxied"])
    ctx.details["provider"] = {
        **ctx.details.get("provider", {}),
        "server": what, "calls_each_way": n, "warmup_calls": warmup,
        "direct_ms": {"median": direct_med, "p95": direct_p95},
        "proxied_ms": {"median": proxied_med, "p95": proxied_p95},
        "snapshot_bytes": total,
        "snapshot_cold_ms": ms["cold"], "snapshot_unchanged_ms": ms["unchanged"],
        "read_hash_compress_ms": ms["floor"], "read_hash_ms": ms["hashing"], "sqlite_alone_ms": ms["sqlite_alone"],
        "text": {"snapshot_cold_ms": ms["cold_text"], "snapshot_unchanged_ms": ms["unchanged_text"],
                 "read_hash_compress_ms": ms["floor_text"], "read_hash_ms": ms["hashing_text"],
                 "sqlite_alone_ms": ms["sqlite_alone_text"]},
        "chunk_above_bytes": SNAPSHOT_CHUNK_ABOVE,
        **{f"changed_{shape}": {
            "snapshot_ms": ms[shape], "whole_file_ms": ms[shape + "_whole"], "read_hash_ms": ms[shape + "_hashing"],
            "ledger_bytes_added": changed[shape + "_bytes"], "whole_file_bytes_added": changed[shape + "_whole_bytes"],
            "chunks": changed[shape + "_chunks"]} for shape in ("jsonl", "pages")},
    }
    size = f"{total // (1024 * 1024)} MB"
    results = []
    for stat, direct_v, proxied_v in (("median", direct_med, proxied_med), ("p95", direct_p95, proxied_p95)):
        overhead = proxied_v - direct_v
        target, ok = value_at_most(overhead, CALL_MS, "ms")
        results.append(Result(
            f"provider_call_overhead_{stat}", overhead, "ms", proxied_v / direct_v if direct_v > 0 else None,
            target, ok, reference=f"{stat} of {n} calls: proxied and recorded {proxied_v:.2f} ms, direct "
                                  f"{direct_v:.2f} ms; ratio proxied/direct; {what}"))
    for kind, sfx, what in (("cold", "", "random bytes, every file a new blob"),
                            ("unchanged", "", "random bytes, every blob already stored"),
                            ("cold_text", "_text", "JSON-lines text, every file a new blob")):
        value, floor = median(ms[kind]), median(ms["floor" + sfx])
        alone = median(ms["sqlite_alone" + sfx])
        # The target is for 10 MB; a quick run's smaller directory is scaled up to it.
        scaled = value * (10 * 1024 * 1024) / total
        target, ok = value_at_most(scaled, SNAPSHOT_MS, "ms per 10 MB")
        results.append(Result(
            f"provider_snapshot_{kind}", value, "ms", value / floor if floor > 0 else None, target, ok,
            reference=f"read + SHA-256 + zstd-1 of the same {size} ({floor:.1f} ms; writing the stored bytes "
                      f"into a bare SQLite table, one transaction: {alone:.1f} ms more); median of {reps} "
                      f"snapshots, {what}"))
    for shape, what in (("jsonl", "JSON lines, 3 entities inserted mid-file and 1 relation appended"),
                        ("pages", "4 KiB pages, page 1 and 4 others changed")):
        value, hashing, whole = median(ms[shape]), median(ms[shape + "_hashing"]), median(ms[shape + "_whole"])
        added, whole_added = median(changed[shape + "_bytes"]), median(changed[shape + "_whole_bytes"])
        target, ok = value_at_most(value * (10 * 1024 * 1024) / total, SNAPSHOT_MS, "ms per 10 MB")
        results.append(Result(
            f"provider_snapshot_changed_{shape}", value, "ms", value / hashing if hashing > 0 else None, target, ok,
            reference=f"read + SHA-256 of the same {size} file ({hashing:.1f} ms); stored whole as before chunking: "
                      f"{whole:.1f} ms and {whole_added / 1024:.0f} KiB; the ledger grew {added / 1024:.0f} KiB "
                      f"(new chunks as stored + the event); median of {len(ms[shape])} snapshots, one {size} file, "
                      f"{what}"))
    return results
