"""The parts of a bundle's manifest read from outside its events: the task rows the runs
used, the environments' locks, the memory servers, and the ATIF trajectories.

Each part's large content is stored as a blob of the bundle (content-addressed: the same
rows or lock carried twice is one blob) and the manifest names it by hash.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ledger import Ledger, StreamRange, SweclError

if TYPE_CHECKING:
    from projections import RunSummary

    from .inputs import Benchmark


def _benchmark_of(run: RunSummary, dataset: str | None, rows: str | None) -> Benchmark:
    """The benchmark run `run` was recorded over: `dataset`/`rows` when given, else the
    source its options recorded (the built-in demo when none); its content hash must be
    the run's."""
    from .inputs import demo_benchmark, load_benchmark, run_dataset_source

    source, rows_source = run_dataset_source(run.config or {}, run.benchmark, dataset, rows)
    label = source or "the built-in demo benchmark"
    try:
        benchmark = demo_benchmark(materialise=False) if source is None else load_benchmark(source, rows_source)
    except (SweclError, OSError) as exc:
        raise SweclError(f"run {run.version}'s dataset is not available here ({' '.join(str(exc).split())}); "
                         "give it with --dataset (and --rows); nothing was bundled") from None
    if benchmark.content_hash != run.dataset_hash:
        raise SweclError(f"{label} has content hash {benchmark.content_hash[:12]}, run {run.version} ran on "
                         f"{run.dataset_hash[:12]}: give the dataset it ran on with --dataset; nothing was bundled")
    return benchmark


def dataset_part(copy: Ledger, known: dict[str, RunSummary], versions: Sequence[str], *,
                 dataset: str | None, rows: str | None) -> list[dict[str, Any]]:
    """Per dataset of the bundled runs: its recorded content hash, and the whole sequences
    they used as a curriculum JSON blob (no repository paths: `repo_sources` empty) with
    that subset's own content hash (`rows_hash`; equal to `content_hash` when every
    sequence was used)."""
    from .inputs import Benchmark, dump_curriculum

    by_hash: dict[str, list[str]] = {}
    for v in versions:
        by_hash.setdefault(known[v].dataset_hash, []).append(v)
    parts = []
    for content_hash, runs_of in by_hash.items():
        benchmark = _benchmark_of(known[runs_of[0]], dataset, rows)
        used = {s for v in runs_of for s in known[v].sequences}
        subset = Benchmark(name=benchmark.name, source=benchmark.source,
                           sequences=tuple(s for s in benchmark.sequences if s.id in used))
        text = json_text(dump_curriculum(subset, repo_sources={}))
        parts.append({
            "name": benchmark.name, "source": benchmark.source, "content_hash": content_hash,
            "rows_hash": subset.content_hash, "rows": copy.put_blob(text), "runs": runs_of,
            "sequences": [s.id for s in subset.sequences], "tasks": len(subset.tasks()),
        })
    return parts


def json_text(document: Any) -> str:
    import json

    return json.dumps(document, indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def _cache_of(known_cache: str | None) -> Path:
    from graders.host import default_cache_dir

    return Path(known_cache) if known_cache else default_cache_dir()


def locks_part(copy: Ledger, source: Ledger, carried: Sequence[str], *, cache_dir: str | None) -> dict[str, Any]:
    """env_key -> its lock (`uv pip sync --require-hashes` input) as a blob, from this
    host's environment cache, or null with why when the cache no longer holds it."""
    keys: set[str] = set()
    for v in carried:
        for rec in source.read(types=["grade.finished"], ranges=[StreamRange(f"run/{v}")]):
            if rec.event.env_key:
                keys.add(rec.event.env_key)
    cache = _cache_of(cache_dir)
    out: dict[str, Any] = {}
    for key in sorted(keys):
        lock = cache / "envs" / key / "lock.txt"
        try:
            out[key] = {"lock": copy.put_blob(lock.read_bytes())}
        except OSError:
            out[key] = {"lock": None, "why": "not in this host's environment cache (--cache-dir names another)"}
    return out


def servers_part(source: Ledger, carried: Sequence[str]) -> dict[str, Any]:
    """run -> the memory servers it talked to: name, version, protocol, how started."""
    out: dict[str, Any] = {}
    for v in carried:
        seen = {}
        for rec in source.read(types=["memory.provider.started"], ranges=[StreamRange(f"run/{v}")]):
            ev = rec.event
            seen[(ev.server_name, ev.server_version)] = {
                "server_name": ev.server_name, "server_version": ev.server_version,
                "protocol_version": ev.protocol_version, "transport": ev.transport, "spec": ev.spec,
            }
        if seen:
            out[v] = list(seen.values())
    return out


def trajectories_part(copy: Ledger, versions: Sequence[str]) -> dict[str, dict[str, str]]:
    """run -> ATIF file name -> blob of the trajectory (one per attempt, as `swecl export
    --format atif` writes them), so a bundle's attempts are read by any tool that reads ATIF."""
    import json

    from projections import atif_trajectories

    out: dict[str, dict[str, str]] = {}
    for v in versions:
        out[v] = {name: copy.put_blob(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
                  for name, doc in atif_trajectories(copy, v)}
    return out
