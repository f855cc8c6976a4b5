"""`swecl check FILE`: is this bundle what it says, and do its numbers follow from it?

In order, stopping at the first problem (each said in one line):

1. the file is a swecl ledger and verifies (`Ledger.verify`: the hash chain from genesis,
   every payload, every blob against its hash, every blob reference, the schema);
2. its last event, and only that one, is `bundle.sealed`, and the manifest it names is
   canonical JSON whose `head` is the seq and hash of the event just before the seal (an
   event added, removed or changed after sealing moves that hash);
3. the signature, when there is one, holds for the manifest's bytes and the public key
   carried; `--key` pins whose key that must be (an unsigned bundle then fails too);
4. every projection is rebuilt from the bundle's events alone and `swecl metrics --json`
   of the bundled runs must equal the manifest's metrics, number for number; the first
   path that differs is named (metrics, a(i,j) outcomes, resolved counts, verdicts);
5. the task rows carried hash to the recorded rows hash;
6. with `--regrade`, every bundled patch is graded again on this host (`_bundle_regrade`).

The bundle is copied to a scratch folder first: checking never writes beside the file,
and a read of a damaged file cannot change it.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ledger import IntegrityError, Ledger, LedgerDamaged, LedgerError, SweclError

from ._bundle import BUNDLE_FORMAT, FolderOf, canonical_json, first_difference, metrics_document, outcomes_document
from ._bundle_keys import normalise_fingerprint, signature_problem
from ._bundle_regrade import Regraded, regrade_bundle


@dataclass
class CheckReport:
    path: Path
    problem: str | None = None  # the first thing that failed, one line; None: the bundle holds
    passed: list[str] = field(default_factory=list)  # what was checked and held, in order
    signed_by: str | None = None  # the key fingerprint, when the signature holds
    runs: list[str] = field(default_factory=list)
    manifest: dict[str, Any] = field(default_factory=dict)
    regraded: Regraded | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None and (self.regraded is None or self.regraded.agrees)

    def document(self) -> dict[str, Any]:
        return {
            "bundle": str(self.path), "ok": self.ok, "problem": self.problem, "passed": self.passed,
            "signed_by": self.signed_by, "runs": self.runs,
            "regrade": None if self.regraded is None else self.regraded.document(),
        }


def _seal_and_manifest(ledger: Ledger, report: CheckReport) -> tuple[Any, bytes] | None:
    head = ledger.head()
    last = ledger.get(head) if head else None
    if last is None or last.type != "bundle.sealed":
        report.problem = f"not a sealed bundle: its last event is {last.type if last else 'none'}, not bundle.sealed"
        return None
    seals = list(ledger.read(types=["bundle.sealed"]))
    if len(seals) != 1:
        report.problem = f"{len(seals)} bundle.sealed events: a bundle is sealed once, by its last event"
        return None
    body = ledger.get_blob(last.event.manifest)
    try:
        manifest = json.loads(body)
    except ValueError as exc:
        report.problem = f"the manifest is not JSON ({exc})"
        return None
    if not isinstance(manifest, dict) or canonical_json(manifest) != body:
        report.problem = "the manifest is not in canonical form (sorted keys, compact UTF-8 JSON)"
        return None
    if manifest.get("format") != BUNDLE_FORMAT:
        report.problem = f"bundle format {manifest.get('format')!r}: this swecl reads {BUNDLE_FORMAT}"
        return None
    sealed = manifest.get("head") or {}
    actual = (ledger.hash_at(head - 1) or b"").hex()
    if sealed.get("seq") != head - 1 or sealed.get("hash") != actual:
        report.problem = (f"the events changed after sealing: the manifest seals seq {sealed.get('seq')} with hash "
                          f"{str(sealed.get('hash'))[:12]}, the bundle's event before the seal is seq {head - 1} "
                          f"with hash {actual[:12]}")
        return None
    report.manifest = manifest
    report.runs = [str(v) for v in manifest.get("runs", [])]
    report.passed.append(f"sealed: {head - 1} events and the manifest, head hash {actual[:16]}")
    return last.event, body


def _signature(seal: Any, body: bytes, keys: Sequence[str], report: CheckReport) -> None:
    wanted = [normalise_fingerprint(k) for k in keys]
    if seal.signature is None:
        if wanted:
            report.problem = "the bundle is not signed, and --key asks for a signature"
        else:
            report.passed.append("not signed (anyone could have made it: pass --key to require a signature)")
        return
    problem = signature_problem(body, seal.signature, seal.public_key or "", seal.key_fingerprint)
    if problem is not None:
        report.problem = problem
        return
    fingerprint = seal.key_fingerprint or ""
    if wanted and not any(fingerprint.startswith(w) for w in wanted):
        report.problem = f"signed by key {fingerprint[:16]}, not by the key given with --key ({wanted[0][:16]})"
        return
    report.signed_by = fingerprint
    pinned = "the key given" if wanted else "a key not pinned (pass --key to require it)"
    report.passed.append(f"signature holds: Ed25519 key {fingerprint[:16]}, {pinned}")


def _rows(ledger: Ledger, scratch: Path, report: CheckReport) -> list[tuple[dict[str, Any], Path]]:
    """Each dataset part's rows written to a file, checked against its recorded hash."""
    from .inputs import load_benchmark

    written = []
    for i, part in enumerate(report.manifest.get("dataset") or []):
        path = scratch / f"rows-{i}.json"
        path.write_bytes(ledger.get_blob(part["rows"]))
        try:
            benchmark = load_benchmark(str(path))
        except SweclError as exc:
            report.problem = f"the task rows of {part.get('name')} do not load: {exc}"
            return []
        if benchmark.content_hash != part.get("rows_hash"):
            report.problem = (f"the task rows of {part.get('name')} hash to {benchmark.content_hash[:12]}, "
                              f"the manifest says {str(part.get('rows_hash'))[:12]}")
            return []
        written.append((part, path))
        whole = " (the whole dataset the runs recorded)" if part.get("rows_hash") == part.get("content_hash") else ""
        report.passed.append(f"task rows of {part.get('name')}: {part.get('tasks')} tasks, hash "
                             f"{benchmark.content_hash[:12]}{whole}")
    return written


def check_bundle(folder_of: FolderOf, path: Path, *, keys: Sequence[str] = (), regrade: bool = False,
                 repo_sources: Mapping[str, str] | None = None, cache_dir: str | None = None, jobs: int = 1,
                 python_paths: Mapping[str, str] | None = None,
                 say: Callable[[str], object] = lambda line: None) -> CheckReport:
    """Check the bundle at `path` (see the module doc); the report says what held and the
    first thing that did not."""
    if not path.is_file():
        raise SweclError(f"{path}: no such bundle file")
    report = CheckReport(path)
    scratch = Path(tempfile.mkdtemp(prefix="swecl-check-"))
    try:
        shutil.copyfile(path, scratch / "ledger.db")
        try:
            with Ledger.open(scratch / "ledger.db", readonly=True) as ledger:
                verified = ledger.verify()
                report.passed.append(f"hash chain, blobs and schema verify: {verified.events} events, "
                                     f"{verified.blobs} blobs")
                found = _seal_and_manifest(ledger, report)
                if found is None:
                    return report
                _signature(*found, keys, report)
                if report.problem:
                    return report
                rows = _rows(ledger, scratch, report)
                if report.problem:
                    return report
        except (IntegrityError, LedgerDamaged) as exc:
            said = ' '.join(str(exc).split()).replace(str(scratch / "ledger.db"), str(path))
            report.problem = f"the bundle does not verify: {said}"
            return report
        except LedgerError as exc:
            said = ' '.join(str(exc).split()).replace(str(scratch / "ledger.db"), str(path))
            report.problem = f"not a swecl bundle: {said}"
            return report
        _metrics(folder_of, scratch, report)
        if report.problem is None and regrade:
            report.regraded = regrade_bundle(folder_of, scratch, report.runs, rows, repo_sources=repo_sources or {},
                                             cache_dir=cache_dir, jobs=jobs, python_paths=python_paths or {},
                                             locks=_locks(scratch, report.manifest), say=say)
        return report
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _locks(scratch: Path, manifest: dict[str, Any]) -> dict[str, bytes]:
    """env_key -> the lock the bundle carries for it."""
    with Ledger.open(scratch / "ledger.db", readonly=True) as ledger:
        return {key: ledger.get_blob(entry["lock"]) for key, entry in (manifest.get("environments") or {}).items()
                if isinstance(entry, dict) and entry.get("lock")}


def _metrics(folder_of: FolderOf, scratch: Path, report: CheckReport) -> None:
    recorded = report.manifest.get("metrics")
    try:
        rebuilt = metrics_document(folder_of, scratch, report.runs)
    except SweclError as exc:
        report.problem = f"the metrics cannot be rebuilt from the bundle: {exc}"
        return
    if (diff := first_difference(recorded, rebuilt)) is not None:
        report.problem = f"a recorded number differs from the one its events give: metrics{diff}"
        return
    verdicts = outcomes_document(folder_of, scratch, report.runs)
    if (diff := first_difference(report.manifest.get("outcomes"), verdicts)) is not None:
        report.problem = f"a recorded verdict differs from the one its events give: outcomes{diff}"
        return
    n = len(report.runs)
    report.passed.append(f"metrics, outcomes and verdicts of {n} run{'s' if n != 1 else ''} rebuilt from the "
                         "events: every number as recorded")
