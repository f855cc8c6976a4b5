"""`swecl bundle`: runs and everything their numbers stand on, in one file another person
can check (`swecl check`, `_bundle_check`).

A bundle is a swecl ledger (any read command opens it) whose last event is
`bundle.sealed`. Its events are, in the source's order: every event up to the highest
seed position any carried run names (kept verbatim, so seeds mean what they meant; see
`ledger.copy_subset`), then the events of the carried runs, of every validation, and of
the environment checks of the runs' repositories. The carried runs are the runs asked
for, the runs their numbers are computed against (every base- and oracle-stage candidate
`swecl metrics` would consider, so it picks the same ones), the runs they were seeded or
forked from, transitively, and any named with `--with`.

The manifest (a blob the seal names) records: the bundle's head before the seal, the
source ledger's id and head, swecl's version, the dataset's content hash and the task
rows of every sequence the runs used (a curriculum JSON without repository paths, so the
bundle can be graded again without the original files), each environment's lock where
this host's cache holds it, the memory servers' names and versions, the metrics as
`swecl metrics --json` printed them, and the ATIF trajectories' blobs. Before sealing,
the metrics are computed again from the bundle alone and must equal the source's: a
bundle never claims a number its own events do not give.

A bundle never holds secrets: every event and blob is scanned with the agents' scrubber
(the environment's secret values and key patterns) and a hit refuses the bundle.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ledger import Ledger, Recorded, SweclError, copy_subset, utc_now
from ledger.events import BundleSealed

from ._bundle_keys import sign

if TYPE_CHECKING:
    from projections import RunSummary

BUNDLE_FORMAT = "swecl-bundle/1"
# The application over a results folder (`Experiment`), handed in by its own bundle jobs:
# imported here it would close a cycle (the application imports these jobs).
FolderOf = Callable[[Path], Any]
SEAL_STREAM = "bundle"


@dataclass(frozen=True)
class BundleReport:
    path: Path
    runs: list[str]  # asked for
    carried: dict[str, str]  # every run in the bundle -> why (bundled, base, oracle, seed source, with, prefix)
    events: int
    blobs: int
    size: int
    head_hash: str
    fingerprint: str | None
    notes: list[str] = field(default_factory=list)

    def document(self) -> dict[str, Any]:
        return {"path": str(self.path), "runs": self.runs, "carried": self.carried, "events": self.events,
                "blobs": self.blobs, "bytes": self.size, "head_hash": self.head_hash,
                "key_fingerprint": self.fingerprint, "notes": self.notes}


def canonical_json(document: Any) -> bytes:
    """The manifest's bytes: what is hashed and signed (sorted keys, no spaces, UTF-8)."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def _in_run(stream: str, version: str) -> bool:
    return stream == f"run/{version}" or stream.startswith(f"run/{version}/")


def _seed_positions(ledger: Ledger, version: str) -> tuple[set[str], int]:
    """The runs `version` was seeded or forked from, and the highest seq its seeds name."""
    sources: set[str] = set()
    highest = 0
    for rec in ledger.read(types=["memory.seeded"], streams=[f"run/{version}"]):
        ev = rec.event
        if ev.source_run is None:
            continue  # a folder seed: its items are a blob of the bundle
        sources.add(ev.source_run)
        named = [rec.seq - 1 if ev.source_seq is None else ev.source_seq,
                 *ev.sequence_seqs.values(), *ev.provider_snapshots.values()]
        highest = max(highest, *named)
    return sources, highest


def carried_runs(ledger: Ledger, known: dict[str, RunSummary], versions: Sequence[str],
                 with_runs: Sequence[str] = ()) -> tuple[dict[str, str], int]:
    """Every run the bundle must hold, with why, and the verbatim prefix's end (see the
    module doc)."""
    from projections.compare import base_candidates, oracle_candidates

    carried: dict[str, str] = {v: "bundled" for v in versions}
    for v in with_runs:
        carried.setdefault(v, "with")
    prefix = 0
    todo = list(carried)
    while todo:
        v = todo.pop(0)
        run = known[v]
        sources, highest = _seed_positions(ledger, v)
        prefix = max(prefix, highest)
        found = [(s, "seed source") for s in sorted(sources)]
        if carried[v] in ("bundled", "with"):
            found += [(b, "base") for b in base_candidates(run, known)]
            found += [(o, "oracle") for o in oracle_candidates(run, known)]
        for other, why in found:
            if other not in carried and other in known:
                carried[other] = why
                todo.append(other)
    return carried, prefix


def _keep(carried: Iterable[str], repos: set[str]) -> Any:
    versions = tuple(carried)
    env_prefixes = tuple(f"env/{repo}@" for repo in repos)

    def keep(rec: Recorded) -> bool:
        stream = rec.stream
        if stream.startswith("validation/") or stream.startswith(env_prefixes):
            return True
        return any(_in_run(stream, v) for v in versions)

    return keep


def _not_a_secret(ledger: Ledger) -> None:
    """Refuse, in one line, a bundle whose events or blobs hold what the scrubber would
    redact (a secret value of this environment, an API key's pattern, a URL password)."""
    from agents import Scrubber

    scrubber = Scrubber(os.environ)
    for raw in ledger.read_raw():
        seq, type_, payload = raw[0], raw[4], bytes(raw[7])
        text = payload.decode("utf-8", "replace")
        if scrubber.text(text) != text:
            raise SweclError(f"event {seq} ({type_}) holds what looks like a secret; nothing was bundled")
    for digest, _, data in ledger.iter_blobs():
        if scrubber.bytes(data) != data:
            raise SweclError(f"blob {digest[:12]} holds what looks like a secret (an API key, a password in a URL); "
                             "nothing was bundled")


def first_difference(a: Any, b: Any, path: str = "") -> str | None:
    """The first JSON path where `a` and `b` differ, with both values; None when equal."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            if key not in a or key not in b:
                return f"{path}.{key}: {'missing' if key not in a else 'present'} in the recorded, " \
                       f"{'missing' if key not in b else 'present'} in the rebuilt"
            found = first_difference(a[key], b[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} entries recorded, {len(b)} rebuilt"
        for i, (x, y) in enumerate(zip(a, b)):
            found = first_difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return None
    if isinstance(a, float) and isinstance(b, float) and abs(a - b) <= 1e-12 * max(1.0, abs(a)):
        return None
    return None if a == b else f"{path or '.'}: recorded {a!r}, rebuilt {b!r}"


def metrics_document(folder_of: FolderOf, folder: Path, versions: Sequence[str]) -> dict[str, Any]:
    """`swecl metrics --version V... --json` of the folder, as a plain JSON value."""
    document = folder_of(folder).metrics(versions=list(versions)).document()
    return json.loads(json.dumps(document, default=str))


def outcomes_document(folder_of: FolderOf, folder: Path, versions: Sequence[str]) -> dict[str, Any]:
    """run -> sequence -> pass -> order -> [instance, attempt in force, status, resolved]:
    each verdict the a(i,j) matrices and the resolved counts are made of."""
    from projections import outcomes

    out: dict[str, Any] = {}
    with folder_of(folder).reading() as r:
        for v in versions:
            state = outcomes(r.ledger, r.projector, v)
            out[v] = {seq_id: {pass_: {str(order): [c.instance_id, c.attempt, c.status, c.resolved]
                                       for order, c in sorted(cells.items())}
                               for pass_, cells in seq.passes.items()}
                      for seq_id, seq in state.sequences.items()}
    return out


def _manifest_blobs(copy: Ledger, source: Ledger, known: dict[str, RunSummary], carried: dict[str, str],
                    versions: Sequence[str], *, dataset: str | None, rows: str | None,
                    cache_dir: str | None) -> dict[str, Any]:
    """The manifest's parts that are blobs of their own: task rows, locks, trajectories."""
    from ._bundle_parts import dataset_part, locks_part, servers_part, trajectories_part

    parts: dict[str, Any] = {"dataset": dataset_part(copy, known, versions, dataset=dataset, rows=rows)}
    parts["environments"] = locks_part(copy, source, list(carried), cache_dir=cache_dir)
    parts["memory_servers"] = servers_part(source, list(carried))
    parts["trajectories"] = trajectories_part(copy, versions)
    return parts


def make_bundle(folder_of: FolderOf, results: Path, versions: Sequence[str], out: str | os.PathLike[str], *,
                with_runs: Sequence[str] = (), key: str | os.PathLike[str] | None = None,
                dataset: str | None = None, rows: str | None = None, cache_dir: str | None = None) -> BundleReport:
    """Write the bundle of `versions` of the results folder `results` to `out` (see the
    module doc). Nothing is written to `out` unless the whole bundle is made and verified."""
    from projections import runs as list_runs

    from ._provenance import git_sha, package_version

    target = Path(out)
    if target.exists():
        raise SweclError(f"{target} exists already; a bundle is never overwritten")
    if not target.parent.is_dir():
        raise SweclError(f"{target.parent}: no such directory")
    if key is not None:
        sign(key, b"")  # a key that cannot sign is refused before any work, not after
    experiment = folder_of(results)
    with experiment.reading() as r:
        known = list_runs(r.ledger, r.projector)
        for v in [*versions, *with_runs]:
            if v not in known:
                raise SweclError(f"no run version {v!r} in {experiment.ledger_path} (versions: {', '.join(known) or 'none'})")
            if known[v].status == "incomplete":
                raise SweclError(f"run {v} has not finished (status {known[v].status}); bundle it once it has")
        carried, prefix = carried_runs(r.ledger, known, versions, with_runs)
        repos = {ref.repo for v in carried for refs in r.ledger.read(types=["run.started"], streams=[f"run/{v}"])
                 for plan in refs.event.tasks.values() for ref in plan}
        source_head = r.ledger.head()
        source_hash = (r.ledger.hash_at(source_head) or b"").hex()
        source_id = r.ledger.ledger_id
        recorded = metrics_document(folder_of, results, versions)
        verdicts = outcomes_document(folder_of, results, versions)
        scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        try:
            copy_path = scratch / "ledger.db"
            copy_subset(r.ledger, copy_path, _keep(carried, repos), prefix=prefix)
            prefix_runs = {v for v in known if v not in carried and known[v].started_seq <= prefix}
            with Ledger.open(copy_path) as copy:
                # What the runs recorded, not the task rows added next: those are the
                # dataset's own text (the demo's issues hold a URL password on purpose).
                _not_a_secret(copy)
                parts = _manifest_blobs(copy, r.ledger, known, carried, versions, dataset=dataset, rows=rows,
                                        cache_dir=cache_dir)
            rebuilt = metrics_document(folder_of, scratch, versions)
            diff = first_difference(recorded, rebuilt) or first_difference(
                verdicts, outcomes_document(folder_of, scratch, versions))
            if diff is not None:
                raise SweclError(f"the bundle's own events give other metrics than the source ({diff}); nothing was "
                                 "bundled: name the runs they are computed against with --with")
            for v in prefix_runs:
                carried[v] = "prefix"
            with Ledger.open(copy_path) as copy:
                head = copy.head()
                manifest = {
                    "format": BUNDLE_FORMAT, "created_at": utc_now(), "swecl": {"version": package_version("swecl"), **git_sha()},
                    "head": {"seq": head, "hash": (copy.hash_at(head) or b"").hex()},
                    "source": {"ledger_id": source_id, "head_seq": source_head, "head_hash": source_hash},
                    "runs": list(versions), "carried": carried, "prefix_seq": prefix,
                    "metrics": recorded, "outcomes": verdicts, **parts,
                }
                report = _seal(copy, manifest, key)
            os.replace(copy_path, target)  # one rename: the bundle appears whole or not at all
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    notes = [f"run {v} rides along: its events precede a seed position (the bundle keeps that prefix verbatim)"
             for v, why in carried.items() if why == "prefix"]
    return BundleReport(target, list(versions), carried, report[0], report[1], target.stat().st_size, report[2],
                        report[3], notes)


def _seal(copy: Ledger, manifest: dict[str, Any], key: str | os.PathLike[str] | None) -> tuple[int, int, str, str | None]:
    """Store the manifest, append `bundle.sealed` (signed when `key`), verify the whole file."""
    from ledger import NewEvent, StreamBatch, event_id_for

    body = canonical_json(manifest)
    digest = copy.put_blob(body)
    signature = public = fingerprint = None
    if key is not None:
        signature, public, fingerprint = sign(key, body)
    seal = BundleSealed(manifest=digest, signature=signature, public_key=public, key_fingerprint=fingerprint)
    event = NewEvent(event_id=event_id_for("bundle", digest), event=seal)
    copy.append_batches([StreamBatch(SEAL_STREAM, [event], expected_version=-1)], durable=True)
    verified = copy.verify()
    return verified.events, verified.blobs, verified.head_hash, fingerprint
