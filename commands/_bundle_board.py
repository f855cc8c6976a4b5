"""`swecl leaderboard FILE... --out DIR`: rank the runs of bundles on one static page.

Each bundle is checked (`swecl check`, without grading again) and its bundled runs become
rows (`projections.leaderboard.BoardEntry`) with the numbers its manifest records, which
the check has just re-derived from its events. A bundle that fails its check still shows,
unranked, with why. Beside the page: each bundle copied under `bundles/` and its HTML
report under `reports/NAME/`, so the page and everything it links to move together.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ledger import SweclError

from ._bundle import FolderOf
from ._bundle_check import CheckReport, check_bundle


@dataclass(frozen=True)
class BoardReport:
    page: Path
    rows: int
    bundles: int
    failed: list[str]  # "FILE: why" of each bundle whose check failed


def _memory_system(run: Any, servers: list[dict[str, Any]]) -> str:
    if servers:
        first = servers[0]
        return f"{first.get('server_name') or 'memory server'}@{first.get('server_version') or '?'}"
    return {"off": "none", "oracle": "oracle (gold lessons)", "history": "full history"}.get(run.memory_mode,
                                                                                           "swecl memory")


def _dataset_of(manifest: dict[str, Any], version: str) -> tuple[str, str]:
    for part in manifest.get("dataset") or []:
        if version in part.get("runs", []):
            return str(part.get("content_hash")), str(part.get("name"))
    return "unknown", "unknown"


def _entries(folder_of: FolderOf, opened: Path, bundle: Path, check: CheckReport, report_href: str | None,
             bundle_href: str) -> list[Any]:
    """One board entry per run the bundle was made for (`opened`: a folder holding a copy
    of the bundle as its ledger)."""
    from projections import BoardEntry
    from projections import runs as list_runs

    manifest = check.manifest
    metrics = manifest.get("metrics") or {}
    by_version = {str(v.get("version")): v for v in metrics.get("versions", [])}
    with folder_of(opened).reading() as r:
        known = list_runs(r.ledger, r.projector)
    entries = []
    for version in check.runs:
        if version not in by_version or version not in known:
            continue
        run = known[version]
        dataset, name = _dataset_of(manifest, version)
        note = check.problem or "; ".join(line.split(":")[0] for line in check.passed)
        entries.append(BoardEntry(
            bundle=bundle.name, metrics=by_version[version], formula=str(metrics.get("formula")),
            formula_version=int(metrics.get("formula_version") or 0), dataset=dataset, dataset_name=name,
            model=run.model, memory_system=_memory_system(run, (manifest.get("memory_servers") or {}).get(version, [])),
            checked=check.problem is None, check_note=note, key=check.signed_by,
            report_href=report_href, bundle_href=bundle_href))
    return entries


def build_board(folder_of: FolderOf, bundles: Sequence[Path], out: Path, *, keys: Sequence[str] = (),
                say: Callable[[str], object] = lambda line: None) -> BoardReport:
    """Check every bundle, write their reports and the ranked page into `out`."""
    from projections import build_leaderboard, write_leaderboard

    if out.exists() and not out.is_dir():
        raise SweclError(f"--out {out} is a file; give a directory")
    names = [b.name for b in bundles]
    if len(set(names)) != len(names):
        raise SweclError("two bundles share a file name; the page links each by its name, so rename one")
    for bundle in bundles:
        if not bundle.is_file():
            raise SweclError(f"{bundle}: no such bundle file")
    (out / "bundles").mkdir(parents=True, exist_ok=True)
    entries: list[Any] = []
    failed: list[str] = []
    for bundle in bundles:
        say(f"checking {bundle.name}")
        check = check_bundle(folder_of, bundle, keys=keys)
        shutil.copyfile(bundle, out / "bundles" / bundle.name)
        if check.problem is not None:
            failed.append(f"{bundle.name}: {check.problem}")
        if not check.manifest:
            continue
        # One copy opened as a results folder serves the report and the entries.
        with tempfile.TemporaryDirectory(prefix="swecl-board-") as tmp:
            opened = Path(tmp)
            shutil.copyfile(bundle, opened / "ledger.db")
            report_href = None
            if check.problem is None:
                folder_of(opened).report(versions=check.runs, out_dir=out / "reports" / bundle.stem)
                report_href = f"reports/{bundle.stem}/index.html"
            entries += _entries(folder_of, opened, bundle, check, report_href, f"bundles/{bundle.name}")
    board = build_leaderboard(entries)
    page = write_leaderboard(board, out)
    return BoardReport(page, len(entries), len(bundles), failed)

