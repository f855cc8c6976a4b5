"""Writing a report: collect from the ledger, draw the figures, render and write the page."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from ledger import SweclError
from projections import WRITE_ERRNOS, Results, undo_new_folder, write_atomic, write_error

from ._curves import SequenceCurves, sequence_curves, version_colour
from ._data import ReportData, collect
from ._html import Anchors, Images, render

INDEX_FILE = "index.html"
PLOTS_DIR = "plots"


@dataclass(frozen=True)
class ReportSummary:
    out_dir: Path
    index: Path
    files: tuple[Path, ...]
    """Every file written: the page first, then the figures."""
    versions: tuple[str, ...]
    sequences: tuple[str, ...]
    head_seq: int
    """The ledger seq the report is as of."""


def build_report(results: Results, versions: list[str], out_dir: Path, *, formula: str = "native",
                 include_failed: bool = False, grouped: bool = False) -> ReportSummary:
    """Write `out_dir/index.html` and `out_dir/plots/` for `versions` (every run when empty).

    Raises `SweclError` for an unknown version or formula, a ledger without runs, or an
    output directory that cannot be written.
    """
    with results.open_ledger(readonly=True) as ledger:
        data = collect(ledger, results.projector(ledger), versions, formula=formula, include_failed=include_failed,
                       grouped=grouped)
    return write_report(data, Path(out_dir))


def write_report(data: ReportData, out_dir: Path) -> ReportSummary:
    # A report folder that was new or empty and cannot be completed is removed again;
    # every file in it is written to a temporary name and renamed when complete.
    try:
        with undo_new_folder(out_dir):
            return _write(data, out_dir)
    except OSError as exc:
        where = exc.filename or out_dir
        if exc.errno in WRITE_ERRNOS:
            raise write_error(exc, where, hint="the report was not (fully) written") from None
        raise SweclError(f"cannot write the report to {where}: {exc.strerror or exc}; choose another --out DIR") from None


def _write(data: ReportData, out_dir: Path) -> ReportSummary:
    # matplotlib lazily: every `swecl` invocation imports this package through the CLI.
    from ._plots import curves_png, matrix_png

    if out_dir.exists() and not out_dir.is_dir():
        raise SweclError(f"--out {out_dir} is a file; give a directory")
    plots = out_dir / PLOTS_DIR
    plots.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    curves: dict[str, str] = {}
    lines: dict[str, SequenceCurves] = {}
    matrices: dict[tuple[str, str], str] = {}
    colours = {vr.run.version: version_colour(i) for i, vr in enumerate(data.versions)}

    for sequence_id in data.sequence_ids:
        name = f"{PLOTS_DIR}/curves-{_file_stem(sequence_id)}.png"
        lines[sequence_id] = sequence_curves(sequence_id, data.versions, colours)
        curves_png(lines[sequence_id], out_dir / name)
        curves[sequence_id] = name
        written.append(out_dir / name)
        for vr in data.versions:
            seq = vr.sequences.get(sequence_id)
            if seq is None or not seq.plan:
                continue
            name = f"{PLOTS_DIR}/matrix-{_file_stem(vr.run.version, sequence_id)}.png"
            matrix_png(seq.matrix, f"a(i,j) of {vr.label} on {sequence_id}", out_dir / name)
            matrices[(vr.run.version, sequence_id)] = name
            written.append(out_dir / name)

    anchors = Anchors(
        sequences={s: f"seq-{_file_stem(s)}" for s in data.sequence_ids},
        articles={(vr.run.version, s): f"run-{_file_stem(vr.run.version, s)}"
                  for vr in data.versions for s in vr.sequences},
    )
    page = render(data, Images(curves=curves, matrices=matrices, lines=lines), anchors=anchors)
    index = out_dir / INDEX_FILE
    write_atomic(index, page.encode("utf-8"))
    return ReportSummary(
        out_dir=out_dir,
        index=index,
        files=(index, *written),
        versions=tuple(vr.run.version for vr in data.versions),
        sequences=data.sequence_ids,
        head_seq=data.head_seq,
    )


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _file_stem(*parts: str) -> str:
    """A file-system and URL safe name for ledger-provided text, unique by a short hash.

    Versions and sequence ids are user text: `../x`, `a/b` or `<b>` must not become paths
    or markup, and two ids that slug alike must not share a file.
    """
    slug = "-".join(_UNSAFE.sub("_", p).strip("._-")[:40] or "x" for p in parts)
    digest = hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:8]
    return f"{slug}-{digest}"
