"""Copy-seeding: a run's substrate starts from another's, recorded as `memory.seeded`.

From a run in this ledger the seed is one event (`source_run`, `source_seq`): the
memory projection then folds the source's streams up to that seq, so nothing is
copied and "what did the seed hold" stays answerable. From an exported folder (another
machine) there is no history to fold: the seed event carries the imported bytes as a
blob and is followed, in the same atomic batch, by one `memory.written` per item,
keeping its id and provenance fields.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from graders import read_limited
from ledger import Ledger, NewEvent, Recorded, SweclError, event_id_for
from ledger.events import MemorySeeded, MemoryWritten, memory_content
from projections import Projector, RunsProjection, RunSummary, canonical_version
from projections.memory import (
    ITEMS_FILE,
    ExportFile,
    MaterialiseReport,
    blob_patch_reader,
    decode_export,
    load_memory,
    resolve_seed_chain,
)

from ._materialise import write_memory_folder

# `VERSION@SEQ` of --source-memory (a run as of a seq).
VERSION_AT = re.compile(r"^(?P<version>[^@/\\]+)@(?P<seq>\d+)$")


@dataclass(frozen=True)
class SeedPlan:
    """A resolved `--source-memory`: what `apply_seed` will record (nothing written yet)."""

    version: str
    chosen: str  # explicit | newest-prior
    source_run: str | None = None
    source_seq: int | None = None
    source_path: Path | None = None
    item_count: int = 0

    def describe(self) -> str:
        if self.source_path is not None:
            return f"v{self.version} seeded from {self.source_path} ({self.item_count} items)"
        how = " (newest prior run with memory)" if self.chosen == "newest-prior" else ""
        return f"v{self.version} seeded from v{self.source_run} as of seq {self.source_seq}{how}: {self.item_count} live items"


@dataclass(frozen=True)
class SeedResult:
    plan: SeedPlan
    recorded: list[Recorded]
    already: bool = False  # the version was seeded before; nothing was written

    def lines(self) -> list[str]:
        return [self.plan.describe() + (" (already recorded)" if self.already else "")]


@dataclass(frozen=True)
class ExportReport:
    version: str
    out_dir: Path
    item_count: int
    as_of_seq: int
    materialised: MaterialiseReport

    def lines(self) -> list[str]:
        return [
            f"exported {self.item_count} live items of v{self.version} (as of seq {self.as_of_seq}) to {self.out_dir}"
        ]


# -- resolving --------------------------------------------------------------------------


def _runs(ledger: Ledger) -> dict[str, RunSummary]:
    return Projector(ledger).run(RunsProjection()).state.runs


def _live_count(ledger: Ledger, version: str, upto: int) -> int:
    return len(load_memory(ledger, version, upto=upto).state.live_items())


def _existing_seed(ledger: Ledger, version: str) -> Recorded | None:
    for rec in ledger.read(types=["memory.seeded"], streams=[f"run/{version}"]):
        return rec
    return None


def _looks_like_path(text: str) -> bool:
    return os.sep in text or "/" in text or text.startswith(".") or text.endswith(".json")


def resolve_seed(
    ledger: Ledger,
    version: str,
    source_memory: str | os.PathLike[str] | None = None,
    *,
    dataset_hash: str | None = None,
    sequences: list[str] | None = None,
) -> SeedPlan:
    """Turn `--source-memory PATH|VERSION[@SEQ]` (or nothing) into a seed plan.

    PATH: an exported `_memory/` folder (or its items.json). VERSION: that run's
    substrate as of now (or as of SEQ). Nothing: the newest prior run (by run.started
    seq) of the same dataset hash and the same sequences that has live items; the
    version's own run.started supplies those unless `dataset_hash`/`sequences` are
    given. Refuses seeding a version from itself (or from a run seeded from it).
    """
    if source_memory is not None and str(source_memory).strip() == "":
        source_memory = None
    if source_memory is None:
        return _newest_prior(ledger, version, dataset_hash, sequences)
    text = str(source_memory)
    runs = _runs(ledger)
    path = Path(text).expanduser()
    is_export = path.is_file() or (path.is_dir() and (path / ITEMS_FILE).is_file())
    if is_export or (text not in runs and not VERSION_AT.match(text) and (path.exists() or _looks_like_path(text))):
        _, doc = read_export(path)
        return SeedPlan(version=version, chosen="explicit", source_path=path.resolve(), item_count=len(doc.items))
    source, source_seq = text, None
    m = VERSION_AT.match(text)
    if m and text not in runs:
        source, source_seq = m["version"], int(m["seq"])
    source = canonical_version(ledger, source)  # `v2` is run 2, as the CLI reads every VERSION
    if source not in runs:
        known = ", ".join(sorted(runs)) or "none yet"
        raise SweclError(
            f"--source-memory {text!r}: no run version {source!r} in {ledger.path} and no such folder (versions: {known})"
        )
    source_seq = seed_cut(ledger, text, version, source, source_seq)
    count = _live_count(ledger, source, source_seq)
    if count == 0:
        raise SweclError(
            f"--source-memory {text!r}: run {source!r} has no live memory items as of seq {source_seq}; nothing to seed from"
        )
    return SeedPlan(version=version, chosen="explicit", source_run=source, source_seq=source_seq, item_count=count)


def seed_cut(ledger: Ledger, text: str, version: str, source: str, source_seq: int | None) -> int:
    """The ledger seq a seed of `version` from run `source` is taken as of (`text`: the
    option as given): the head when none was named; refused past the head or in a loop."""
    head = ledger.head()
    if source_seq is None:
        source_seq = head
    elif source_seq > head:
        raise SweclError(f"--source-memory {text!r}: seq {source_seq} is past the ledger's head ({head})")
    refuse_seed_loops(ledger, version, source, source_seq)
    return source_seq


def refuse_seed_loops(ledger: Ledger, version: str, source: str, source_seq: int) -> None:
    if source == version:
        raise SweclError(
            f"--source-memory {source!r}: a run must write to a different version than its source (v{version} would seed itself)"
        )
    for link in resolve_seed_chain(ledger, source, source_seq):
        if version in (link.source, link.target):
            raise SweclError(
                f"--source-memory {source!r}: v{source} was itself seeded from v{version}; that would be a loop"
            )


def _newest_prior(ledger: Ledger, version: str, dataset_hash: str | None, sequences: list[str] | None) -> SeedPlan:
    runs = _runs(ledger)
    me = runs.get(version)
    if dataset_hash is None or sequences is None:
        if me is None:
            raise SweclError(
                f"cannot choose a seed for v{version}: the run has not started and no dataset hash/sequences were given"
            )
        dataset_hash = dataset_hash if dataset_hash is not None else me.dataset_hash
        sequences = sequences if sequences is not None else me.sequences
    before = me.started_seq if me is not None else ledger.head() + 1
    head = ledger.head()
    candidates = sorted(
        (
            r
            for r in runs.values()
            if r.version != version
            and r.started_seq < before
            and r.dataset_hash == dataset_hash
            and sorted(r.sequences) == sorted(sequences)
        ),
        key=lambda r: r.started_seq,
        reverse=True,
    )
    for run in candidates:
        try:
            refuse_seed_loops(ledger, version, run.version, head)
        except SweclError:
            continue
        count = _live_count(ledger, run.version, head)
        if count > 0:
            return SeedPlan(
                version=version, chosen="newest-prior", source_run=run.version, source_seq=head, item_count=count
            )
    raise SweclError(
        f"no prior run of the same benchmark (dataset {dataset_hash[:12]}) and sequences ({', '.join(sequences)}) has "
        f"memory items to seed v{version} from: run plugin-blank first, or pass --source-memory PATH|VERSION"
    )


# -- recording --------------------------------------------------------------------------


def _require_started(ledger: Ledger, version: str) -> int:
    header_version = ledger.stream_version(f"run/{version}")
    if header_version < 0:
        raise SweclError(f"no run version {version!r} in {ledger.path}: start the run before seeding its memory")
    return header_version


def apply_seed(ledger: Ledger, plan: SeedPlan) -> SeedResult:
    """Record `plan` on `run/{version}` (after its run.started). A version is seeded once:
    asking again for the same source returns the recorded seed; another source is refused."""
    existing = _existing_seed(ledger, plan.version)
    if existing is not None:
        ev = existing.event
        same = (plan.source_path is not None and ev.source_path == str(plan.source_path)) or (
            plan.source_run is not None and ev.source_run == plan.source_run
        )
        recorded_plan = SeedPlan(
            version=plan.version,
            chosen=ev.chosen,
            source_run=ev.source_run,
            source_seq=ev.source_seq,
            source_path=Path(ev.source_path) if ev.source_path else None,
            item_count=ev.item_count,
        )
        if not same:
            raise SweclError(f"v{plan.version} is already seeded ({recorded_plan.describe()}); a run is seeded once")
        return SeedResult(plan=recorded_plan, recorded=[], already=True)
    if plan.source_path is not None:
        return import_seed(ledger, plan.version, plan.source_path)
    header_version = _require_started(ledger, plan.version)
    assert plan.source_run is not None and plan.source_seq is not None
    refuse_seed_loops(ledger, plan.version, plan.source_run, plan.source_seq)
    event = MemorySeeded(
        item_count=plan.item_count, source_run=plan.source_run, source_seq=plan.source_seq, chosen=plan.chosen
    )
    rec = ledger.append(
        f"run/{plan.version}",
        [NewEvent(event, event_id_for("memory.seeded", plan.version, plan.source_run, plan.source_seq))],
        expected_version=header_version,
        durable=True,
    )
    return SeedResult(plan=plan, recorded=rec)


def seed_memory(
    ledger: Ledger,
    version: str,
    source_memory: str | os.PathLike[str] | None = None,
    *,
    dataset_hash: str | None = None,
    sequences: list[str] | None = None,
) -> SeedResult:
    """Resolve and record the seed of `version` (plugin-accum / plugin-dreamed, after run.started)."""
    existing = _existing_seed(ledger, version)
    if existing is not None and source_memory is None:
        ev = existing.event
        plan = SeedPlan(
            version=version,
            chosen=ev.chosen,
            source_run=ev.source_run,
            source_seq=ev.source_seq,
            source_path=Path(ev.source_path) if ev.source_path else None,
            item_count=ev.item_count,
        )
        return SeedResult(plan=plan, recorded=[], already=True)
    plan = resolve_seed(ledger, version, source_memory, dataset_hash=dataset_hash, sequences=sequences)
    return apply_seed(ledger, plan)


# -- export / import ----------------------------------------------------------------------


def export_memory(
    ledger: Ledger, version: str, out_dir: str | os.PathLike[str], *, upto: int | None = None
) -> ExportReport:
    """Write `version`'s memory as a portable `_memory/` folder into `out_dir`.

    The folder is the materialised layout (Markdown, memory.db, graph.db) plus
    `items.json`: every live item with its provenance and patch text, which is what
    `import_seed` (or `--source-memory PATH`) reads on another machine.
    """
    if ledger.stream_version(f"run/{version}") < 0:
        raise SweclError(f"no run version {version!r} in {ledger.path}: nothing to export")
    state = load_memory(ledger, version, upto=upto).state
    out = Path(out_dir)
    report = write_memory_folder(state, out, blob_patch_reader(ledger), ledger_id=ledger.ledger_id)
    return ExportReport(
        version=version, out_dir=out, item_count=report.live_items, as_of_seq=report.as_of_seq, materialised=report
    )


def read_export(path: str | os.PathLike[str]) -> tuple[bytes, ExportFile]:
    """The exact bytes and the parsed contents of an export (folder or its items.json)."""
    p = Path(path).expanduser()
    file = p / ITEMS_FILE if p.is_dir() else p
    if not file.is_file():
        raise SweclError(f"--source-memory {p}: no {ITEMS_FILE} there; give a folder written by `swecl memory export`")
    data = read_limited(file, str(file))  # a regular file within the input size cap
    doc = decode_export(data, str(file))
    seen: set[str] = set()
    for n, item in enumerate(doc.items):
        where = f"{file}: items[{n}]"
        if not item.item_id.strip():
            raise SweclError(f"{where}.item_id is empty")
        if item.item_id in seen:
            raise SweclError(f"{where}.item_id {item.item_id!r} appears twice")
        if not item.repo.strip():
            raise SweclError(f"{where}.repo is empty")
        if (
            item.patch_text is not None
            and item.patch_sha256 is not None
            and hashlib.sha256(item.patch_text.encode()).hexdigest() != item.patch_sha256
        ):
            raise SweclError(f"{where}.patch_text does not match its patch_sha256 (the file was edited or damaged)")
        seen.add(item.item_id)
    return data, doc


def import_seed(ledger: Ledger, version: str, path: str | os.PathLike[str]) -> SeedResult:
    """Seed `version` from an exported folder: one atomic batch on `run/{version}` of
    `memory.seeded` (the exact bytes imported as a blob) and a `memory.written` per item.

    Importing the same bytes from the same path again is a no-op; items whose ids the
    version already holds are refused (an import never overwrites memory).
    """
    data, doc = read_export(path)
    source_path = str(Path(path).expanduser().resolve())
    header_version = _require_started(ledger, version)
    digest = hashlib.sha256(data).hexdigest()
    event_ids = [event_id_for("memory.import", version, digest, source_path, n) for n in range(len(doc.items) + 1)]
    plan = SeedPlan(version=version, chosen="explicit", source_path=Path(source_path), item_count=len(doc.items))
    if ledger.get_by_id(event_ids[0]) is not None:
        return SeedResult(plan=plan, recorded=[], already=True)
    existing = _existing_seed(ledger, version)
    if existing is not None:
        raise SweclError(f"v{version} is already seeded (at seq {existing.seq}); a run is seeded once")
    held = load_memory(ledger, version).state.items
    clash = sorted(i.item_id for i in doc.items if i.item_id in held)
    if clash:
        raise SweclError(
            f"{source_path}: v{version} already holds item {clash[0]} (and {len(clash) - 1} more); nothing was imported"
        )

    events: list[NewEvent] = [
        NewEvent(
            MemorySeeded(item_count=len(doc.items), source_path=source_path, items=digest, chosen="explicit"),
            event_ids[0],
        )
    ]
    blobs: list[bytes] = [data]
    for n, item in enumerate(doc.items, start=1):
        patch_ref = None
        if item.patch_text:
            raw = item.patch_text.encode()
            blobs.append(raw)
            patch_ref = hashlib.sha256(raw).hexdigest()
        events.append(
            NewEvent(
                MemoryWritten(**memory_content(item, patch=patch_ref)),
                event_ids[n],
            )
        )
    recorded = ledger.append(f"run/{version}", events, expected_version=header_version, blobs=blobs, durable=True)
    return SeedResult(plan=plan, recorded=recorded)
