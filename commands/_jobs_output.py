"""The output jobs of `Experiment`: what writes files from the ledger (the HTML report, a
replay folder, an export, memory folders), plus the memory jobs by hand (dream, import),
merging ledgers, and what `swecl view` serves.

The read side builds every file as data (`projections.report.render_report`,
`projections.replay_files`, `projections.export_lines`, `projections.memory.memory_folder`);
the writing is here, through `commands._files`, so a failure (a full disk, a read-only
folder) leaves nothing behind and is worded as one line, the same for every writer.

Every command imports `Experiment`, and so this module: a job imports the projections
and memory modules it needs inside itself (`# lazy`), so `swecl --help` and the other
commands do not pay for them.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ledger import Ledger, SweclError

from ._files import WRITE_ERRNOS, output_file, undo_new_folder, write_atomic, write_error, write_if_changed, write_output
from ._folder import ExperimentFolder

if TYPE_CHECKING:
    from ledger import MergeReport
    from projections import ExportReport, Replay, ReplayReport, SnapshotRow
    from projections.memory import MaterialiseReport
    from projections.report import ReportPages, ReportSummary
    from projections.view import View

    from .memory import DreamReport, ExportReport as MemoryExportReport, SeedResult

__all__ = ["Dreamed", "Merged", "OutputJobs", "ProviderSnapshots", "write_replay"]


@dataclass(frozen=True)
class Dreamed:
    """One dream pass over a run's memory (`swecl dream`)."""

    version: str
    report: DreamReport

    def document(self) -> dict[str, Any]:
        r = self.report
        return {
            "version": self.version,
            "dream_id": r.dream_id,
            "decisions": [dataclasses.asdict(d) for d in r.decisions],
            "live_before": r.live_before,
            "live_after": r.live_after,
        }

    def lines(self) -> list[str]:
        return self.report.lines()


@dataclass(frozen=True)
class Merged:
    """Shard ledgers folded into one (`swecl merge`)."""

    report: MergeReport

    def document(self) -> dict[str, Any]:
        r = self.report
        return {
            "target": str(r.target),
            "created": r.created,
            "shards": [
                {"path": str(s.path), "events": s.events, "added": s.added, "skipped": s.skipped,
                 "blobs_added": s.blobs_added}
                for s in r.shards
            ],
            "events": r.events,
            "blobs": r.blobs,
            "head_hash": r.head_hash,
        }

    def lines(self) -> list[str]:
        return self.report.lines()


@dataclass(frozen=True)
class ProviderSnapshots:
    """A --memory-server run's snapshots of its server's data (`swecl memory snapshots`)."""

    version: str
    transport: str  # stdio | http
    rows: list[SnapshotRow]

    def document(self) -> dict[str, Any]:
        return {"version": self.version, "transport": self.transport, "snapshots": [r.document() for r in self.rows]}

    def lines(self) -> list[str]:
        if not self.rows:
            return [f"v{self.version}: no memory server snapshot recorded"]
        lines = [f"v{self.version}: {len(self.rows)} memory server snapshot(s)"
                 + (" (a server reached by URL: its data is not in them)" if self.transport == "http" else "")]
        for r in self.rows:
            lines.append(f"{r.sequence_id} {r.pass_} order {r.order} {r.instance_id or '-'}: {r.files} file(s), "
                         f"{r.total_bytes} bytes, {r.new_bytes} new bytes stored (seq {r.seq})")
        return lines


class OutputJobs(ExperimentFolder):
    """report, replay, export, memory export/import/materialise/snapshots, dream, merge, view."""

    # -- report ------------------------------------------------------------------------

    def report(self, *, versions: Sequence[str] = (), out_dir: str | os.PathLike[str], formula: str = "native",
               include_failed: bool = False, grouped: bool = False) -> ReportSummary:
        """Write `out_dir/index.html` and `out_dir/plots/` for `versions` (every run that
        did not fail when empty; `include_failed`: failed ones too)."""
        from projections.report import collect, render_report  # lazy: matplotlib, for `swecl report` only

        with self.reading() as r:
            data = collect(r.ledger, r.projector, list(versions), formula=formula, include_failed=include_failed,
                           grouped=grouped)
        out = Path(out_dir)
        if out.exists() and not out.is_dir():
            raise SweclError(f"--out {out} is a file; give a directory")
        return write_report(render_report(data), out)

    # -- replay ------------------------------------------------------------------------

    def replay(self, *, version: str, upto_order: int, out_dir: str | os.PathLike[str]) -> ReplayReport:
        """Run `version` as it stood before initial task `upto_order` started, written to
        `out_dir` (new, empty, or an earlier replay's)."""
        from projections import replay_state  # lazy: loads only for `swecl replay`

        with self.reading() as r:
            state = replay_state(r.ledger, version, upto_order, projector=r.projector)
            return write_replay(r.ledger, state, out_dir)

    # -- export ------------------------------------------------------------------------

    def export(self, *, version: str, fmt: str, out: str, pass_: str | None = None, with_blobs: bool = False,
               stdout: TextIO | None = None) -> ExportReport:
        """Write `version` as `fmt` to the file `out`; `out` "-" writes the JSON-lines
        formats to `stdout` (the process's when not given)."""
        from projections import FORMATS, ExportReport, events_frame, export_lines, parquet_bytes, write_atif

        with self.open_ledger(readonly=True) as ledger:
            if fmt not in FORMATS:
                raise SweclError(f"--format {fmt!r}: one of {', '.join(FORMATS)}")
            if with_blobs and fmt != "events":
                raise SweclError("--with-blobs inlines blobs into the events format only")
            if fmt == "atif":
                if out == "-":
                    raise SweclError("--format atif writes a directory of trajectories: give --out DIR")
                if pass_ is not None:
                    raise SweclError("--format atif writes every pass's attempts; --pass is not for it")
                written = write_atif(ledger, version, Path(out))
                return ExportReport(version, fmt, out, len(written))
            if fmt == "parquet":
                if out == "-":
                    raise SweclError("--format parquet writes a file: give --out FILE.parquet")
                frame = events_frame(ledger, version, pass_)
                write_output(Path(out), parquet_bytes(frame))
                return ExportReport(version, fmt, out, frame.height)
            lines, missing = export_lines(ledger, version, fmt, pass_=pass_, with_blobs=with_blobs)
            count = _write_lines(out, lines, stdout if stdout is not None else sys.stdout)
        return ExportReport(version, fmt, out, count, missing)

    # -- memory ------------------------------------------------------------------------

    def dream(self, *, version: str) -> Dreamed:
        """One dream pass over `version`'s memory, then its memory folder rebuilt."""
        # lazy: the memory commands bring unidiff; `swecl --help` need not load them
        from .memory import dream, materialise_version

        with self.open_ledger() as ledger:
            report = dream(ledger, version, reason="manual")
            materialise_version(ledger, version, self.version_dir(version))
        return Dreamed(version, report)

    def memory_export(self, *, version: str, out_dir: str | os.PathLike[str]) -> MemoryExportReport:
        """`version`'s live memory as a portable `_memory/` folder in `out_dir`."""
        from .memory import export_memory

        with self.open_ledger(readonly=True) as ledger:
            return export_memory(ledger, version, out_dir)

    def memory_import(self, *, path: str | os.PathLike[str], version: str) -> SeedResult:
        """Seed `version` from an exported `_memory/` folder (one batch)."""
        from .memory import import_seed

        with self.open_ledger() as ledger:
            return import_seed(ledger, version, path)

    def memory_snapshots(self, *, version: str, sequence: str | None = None) -> ProviderSnapshots:
        """The `memory.provider.snapshot`s of the --memory-server run `version` (of
        `sequence` only, when given), each with its new bytes stored."""
        from projections import provider_snapshots, provider_transport

        with self.open_ledger(readonly=True) as ledger:
            transport = provider_transport(ledger, version)
            if transport is None:
                raise SweclError(f"run {version} is no --memory-server run: it has no memory server snapshots")
            return ProviderSnapshots(version, transport, provider_snapshots(ledger, version, sequence))

    def materialise(self, *, version: str | None = None, every: bool = False,
                    upto: int | None = None) -> list[MaterialiseReport]:
        """Rebuild `v{version}/_memory/` (or, `every`, each run's) as of `upto` (default: now)."""
        from projections import fork_of, rebuild
        from projections.memory import MEMORY_DIR, blob_patch_reader

        from .memory import materialise_version, write_memory_folder

        if every == (version is not None):
            raise SweclError("give a run VERSION or --all (not both)")
        with self.open_ledger(readonly=True) as ledger:
            if version is not None:
                if ledger.stream_version(f"run/{version}") < 0:
                    raise SweclError(f"no run version {version!r} in {ledger.path}: nothing to materialise")
                return [materialise_version(ledger, version, self.version_dir(version), upto=upto)]
            rebuilt = rebuild(ledger, upto=upto)  # the ledger read once for every run
            if not rebuilt.runs.runs:
                raise SweclError(f"no runs in {ledger.path} as of seq {rebuilt.seq}: nothing to materialise")
            read_patch = blob_patch_reader(ledger)
            # The one-pass rebuild does not follow a fork's per-sequence memory cut
            # (`memory.seeded.sequence_seqs`): a fork's folder is rebuilt on its own.
            return [
                materialise_version(ledger, v, self.version_dir(v), upto=upto) if fork_of(ledger, v) is not None
                else write_memory_folder(rebuilt.memory_of(v), self.version_dir(v) / MEMORY_DIR, read_patch,
                                         ledger_id=ledger.ledger_id)
                for v in rebuilt.runs.runs
            ]

    # -- merge -------------------------------------------------------------------------

    def merge(self, *, shards: Sequence[str | os.PathLike[str]], into: str | os.PathLike[str] | None = None) -> Merged:
        """Fold `shards` into `into` (default: this folder's ledger). A shard that does not
        verify raises `ledger.IntegrityError`, with nothing of it written."""
        from ledger import merge_ledgers  # lazy: the merge machinery loads only for `swecl merge`

        return Merged(merge_ledgers(list(shards), into if into is not None else self.ledger_path))

    # -- view --------------------------------------------------------------------------

    def view(self, *, log_error: Callable[[str], object]) -> View:
        """The web view over this folder's ledger, checked first (a missing ledger is
        refused, a damaged one too, a chain that does not verify warned of); the caller
        serves it (`commands._view_server`)."""
        from projections.view import View  # lazy: the web view's modules load only for `swecl view`

        if not self.ledger_path.exists():
            raise SweclError(f"no ledger at {self.ledger_path}: nothing to view (run `swecl run` first, or give --results DIR)")
        with self.open_ledger(readonly=True):
            pass  # opens as every read command does
        return View(self.results, log_error=log_error, secrets=_secrets_loader())


# -- writers ---------------------------------------------------------------------------


def write_report(pages: ReportPages, out_dir: Path) -> ReportSummary:
    """Write a report's files into `out_dir`. A folder that was new or empty and cannot be
    completed is removed again; every file goes to a temporary name, renamed when complete."""
    from projections.report import INDEX_FILE, PLOTS_DIR, ReportSummary

    try:
        with undo_new_folder(out_dir):
            (out_dir / PLOTS_DIR).mkdir(parents=True, exist_ok=True)
            for name, data in pages.files.items():
                write_atomic(out_dir / name, data)
    except OSError as exc:
        where = exc.filename or out_dir
        if exc.errno in WRITE_ERRNOS:
            raise write_error(exc, where, hint="the report was not (fully) written") from None
        raise SweclError(f"cannot write the report to {where}: {exc.strerror or exc}; choose another --out DIR") from None
    index = out_dir / INDEX_FILE
    return ReportSummary(
        out_dir=out_dir,
        index=index,
        files=(index, *(out_dir / name for name in pages.files if name != INDEX_FILE)),
        versions=pages.versions,
        sequences=pages.sequences,
        head_seq=pages.head_seq,
    )


def write_replay(ledger: Ledger, replay: Replay, out_dir: str | os.PathLike[str]) -> ReplayReport:
    """Write `replay` into `out_dir` (files whose bytes would not change are left alone)."""
    from projections import (
        MANIFEST_FILE, MEMORY_SUBDIR, METRICS_JSON, OUTCOMES_CSV, OUTCOMES_JSON, PROVIDER_SUBDIR, ReplayReport,
        replay_files,
    )
    from projections.memory import blob_patch_reader

    from .memory import write_memory_folder

    out = Path(out_dir)
    if out.is_dir() and any(out.iterdir()) and not (out / MANIFEST_FILE).exists():
        raise SweclError(f"{out} holds files and is not a replay folder: give an empty or new --out DIR")
    # A new (or empty) folder that cannot be completed (a full disk) is removed again;
    # in an earlier replay's folder every file is replaced atomically, the manifest last.
    with undo_new_folder(out):
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise write_error(exc, out) from None
        write_memory_folder(replay.memory, out / MEMORY_SUBDIR, blob_patch_reader(ledger), ledger_id=None)
        try:
            _write_provider_data(ledger, replay, out / PROVIDER_SUBDIR)
            for name, data in replay_files(replay).items():
                write_if_changed(out / name, data)
        except OSError as exc:
            raise write_error(exc, out, hint="the replay was not (fully) written") from None
    files = (MANIFEST_FILE, MEMORY_SUBDIR, OUTCOMES_JSON, OUTCOMES_CSV, METRICS_JSON)
    if replay.provider is not None and replay.provider.restorable:
        files += (PROVIDER_SUBDIR,)
    return ReplayReport(out, replay, files)


def _write_provider_data(ledger: Ledger, replay: Replay, target: Path) -> None:
    """A --memory-server run's server data as of the cut, one `<sequence>/data/` each,
    restored byte for byte from the snapshot's blobs (hash-checked). Built beside and
    renamed into place, so an earlier replay's folder is replaced whole, never mixed."""
    import shutil

    from .run.memory import restore_server_data  # lazy: only a --memory-server run's replay restores

    provider = replay.provider
    if provider is None or not provider.restorable:
        shutil.rmtree(target, ignore_errors=True)  # an earlier replay's, of another run
        return
    staging = target.with_name(f".{target.name}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        for sequence_id, cut in provider.cuts.items():
            if sequence_id in ("", ".", "..") or "/" in sequence_id:
                raise SweclError(f"sequence {sequence_id!r} cannot name a folder: its server data is not restored")
            restore_server_data(ledger, cut.files, staging / sequence_id / "data")
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _write_lines(out: str, lines: Iterator[str], stdout: TextIO) -> int:
    """Write `lines` to the file `out` atomically ('-': to `stdout`); the number of lines."""
    count = 0
    if out == "-":
        for line in lines:
            stdout.write(line)
            count += 1
        return count
    path = Path(out)
    try:
        with output_file(path) as tmp:
            with tmp.open("w", encoding="utf-8", newline="\n") as fh:
                for line in lines:
                    fh.write(line)
                    count += 1
    except OSError as exc:
        raise write_error(exc, path) from None
    return count


def _secrets_loader() -> Callable[[Any, str], Any]:
    """`load_task_secrets` once per run version (a dataset can take seconds to load), shared by the threads."""
    # lazy: the benchmark loaders bring pydantic (about 0.15 s), paid only by the commands that load one
    from .inputs import load_task_secrets

    loaded: dict[str, Any] = {}
    lock = threading.Lock()

    def secrets(ledger: Any, version: str) -> Any:
        with lock:
            if version not in loaded:
                loaded[version] = load_task_secrets(ledger, version)
            return loaded[version]

    return secrets
