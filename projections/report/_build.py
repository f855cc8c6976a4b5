"""A report as data: collect from the ledger, draw the figures, render the page; the
files are written by the core (`commands.Experiment.report`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ._curves import SequenceCurves, sequence_curves, version_colour
from ._data import ReportData
from ._funnel import funnel_files
from ._headline import headline
from ._html import render
from ._html_common import Anchors, Images
from .present import file_stem

INDEX_FILE = "index.html"
PLOTS_DIR = "plots"
HEADLINE_FILE = f"{PLOTS_DIR}/headline.png"


@dataclass(frozen=True)
class ReportPages:
    """Every file of a report folder, by path relative to it: the figures in drawing
    order, then the page (`INDEX_FILE`), which links them, last."""

    files: dict[str, bytes]
    versions: tuple[str, ...]
    sequences: tuple[str, ...]
    head_seq: int


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


def render_report(data: ReportData) -> ReportPages:
    """The page and its figures for `data` (the same data gives the same bytes)."""
    # matplotlib lazily: every `swecl` invocation imports this package through the CLI.
    from ._plots import curves_png, headline_png, matrix_png

    files: dict[str, bytes] = {}
    curves: dict[str, str] = {}
    lines: dict[str, SequenceCurves] = {}
    matrices: dict[tuple[str, str], str] = {}
    colours = {vr.run.version: version_colour(i) for i, vr in enumerate(data.versions)}
    found = headline(data)
    files[HEADLINE_FILE] = headline_png(found)

    for sequence_id in data.sequence_ids:
        name = f"{PLOTS_DIR}/curves-{file_stem(sequence_id)}.png"
        lines[sequence_id] = sequence_curves(sequence_id, data.versions, colours)
        files[name] = curves_png(lines[sequence_id])
        curves[sequence_id] = name
        for vr in data.versions:
            seq = vr.sequences.get(sequence_id)
            if seq is None or not seq.plan:
                continue
            name = f"{PLOTS_DIR}/matrix-{file_stem(vr.run.version, sequence_id)}.png"
            files[name] = matrix_png(seq.matrix, f"a(i,j) of {vr.label} on {sequence_id}")
            matrices[(vr.run.version, sequence_id)] = name
    files.update(funnel_files(data))

    anchors = Anchors(
        sequences={s: f"seq-{file_stem(s)}" for s in data.sequence_ids},
        articles={(vr.run.version, s): f"run-{file_stem(vr.run.version, s)}"
                  for vr in data.versions for s in vr.sequences},
    )
    images = Images(curves=curves, matrices=matrices, lines=lines, headline=HEADLINE_FILE, bars=found)
    page = render(data, images, anchors=anchors)
    files[INDEX_FILE] = page.encode("utf-8")
    return ReportPages(
        files=files,
        versions=tuple(vr.run.version for vr in data.versions),
        sequences=data.sequence_ids,
        head_seq=data.head_seq,
    )
