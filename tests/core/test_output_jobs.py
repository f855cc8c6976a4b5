"""The output jobs of the application core (`Experiment.report`, `replay`, `export`, the
memory jobs), called in-process on a real demo run, write exactly what the CLI writes;
and a write refused by the file system leaves nothing behind."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner

from commands import Experiment
from commands.cli._export import export_cmd
from commands.cli._memory import memory_export_cmd, memory_materialise_cmd
from commands.cli._replay import replay_cmd
from commands.cli._report import report_cmd
from ledger import SweclError
from projections import manifest_document
from tests.shared_runs import demo_run_copy


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    return demo_run_copy(tmp_path_factory, cache, "blank-spans")  # plugin-blank, version 1


def tree(root: Path) -> dict[str, bytes]:
    """Every file under `root` (dot-files included) by relative path, with its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def cli(command: object, demo: Path, *args: str) -> str:
    done = CliRunner().invoke(command, ["--results", str(demo), *args])  # type: ignore[arg-type]
    assert done.exit_code == 0, done.output
    return done.output


def test_report_writes_what_the_cli_writes(demo: Path, tmp_path: Path) -> None:
    summary = Experiment(demo).report(out_dir=tmp_path / "core")
    printed = cli(report_cmd, demo, "--out", str(tmp_path / "cli"))
    assert tree(tmp_path / "core") == tree(tmp_path / "cli")
    assert sorted(str(p.relative_to(tmp_path / "core")) for p in summary.files) == sorted(tree(tmp_path / "core"))
    assert summary.index == tmp_path / "core" / "index.html" and summary.versions == ("1",)
    assert printed == (f"wrote {len(summary.files)} files for 1 version(s) and {len(summary.sequences)} sequence(s) "
                       f"as of ledger seq {summary.head_seq}: open {tmp_path / 'cli' / 'index.html'}\n")


def test_replay_folder_equals_the_clis(demo: Path, tmp_path: Path) -> None:
    report = Experiment(demo).replay(version="1", upto_order=2, out_dir=tmp_path / "core")
    printed = cli(replay_cmd, demo, "1", "--upto-order", "2", "--out", str(tmp_path / "cli"), "--json")
    files = tree(tmp_path / "core")
    assert files == tree(tmp_path / "cli")
    assert "replay.json" in files and any(name.startswith("_memory/.cookbook-memory/") for name in files)
    assert json.loads(printed) == {**manifest_document(report.replay), "out": str(tmp_path / "cli")}
    assert json.loads(files["replay.json"]) == manifest_document(report.replay)


@pytest.mark.parametrize("fmt", ["predictions", "events"])
def test_export_writes_what_the_cli_writes(demo: Path, tmp_path: Path, fmt: str) -> None:
    report = Experiment(demo).export(version="1", fmt=fmt, out=str(tmp_path / "core.jsonl"))
    printed = cli(export_cmd, demo, "1", "--format", fmt, "--out", str(tmp_path / "cli.jsonl"))
    written = (tmp_path / "core.jsonl").read_bytes()
    assert written == (tmp_path / "cli.jsonl").read_bytes() and report.rows == written.count(b"\n") > 0
    assert printed == "\n".join(report.lines()).replace(str(tmp_path / "core.jsonl"), str(tmp_path / "cli.jsonl")) + "\n"
    # '-' writes the same lines to the stream it is given
    stream = io.StringIO()
    Experiment(demo).export(version="1", fmt=fmt, out="-", stdout=stream)
    assert stream.getvalue().encode() == written


def test_export_parquet_has_a_row_per_event(demo: Path, tmp_path: Path) -> None:
    import polars as pl

    report = Experiment(demo).export(version="1", fmt="parquet", out=str(tmp_path / "v1.parquet"))
    events = Experiment(demo).export(version="1", fmt="events", out=str(tmp_path / "v1.jsonl"))
    cli(export_cmd, demo, "1", "--format", "parquet", "--out", str(tmp_path / "cli.parquet"))
    assert report.rows == events.rows == pl.read_parquet(tmp_path / "v1.parquet").height
    assert pl.read_parquet(tmp_path / "v1.parquet").equals(pl.read_parquet(tmp_path / "cli.parquet"))


def test_memory_export_and_materialise_agree_with_the_cli(demo: Path, tmp_path: Path) -> None:
    experiment = Experiment(demo)
    exported = experiment.memory_export(version="1", out_dir=tmp_path / "core")
    cli(memory_export_cmd, demo, "1", "--out", str(tmp_path / "cli"))
    assert tree(tmp_path / "core") == tree(tmp_path / "cli") and exported.item_count > 0
    # materialise writes the same folder into v1/_memory (rebuilt: nothing changes the second time)
    shutil.rmtree(demo / "v1" / "_memory", ignore_errors=True)
    (first,) = experiment.materialise(version="1")
    assert tree(demo / "v1" / "_memory") == tree(tmp_path / "core") and first.changed
    (again,) = experiment.materialise(every=True)
    assert again.changed == () and again.lines()[0].endswith("; unchanged")
    assert cli(memory_materialise_cmd, demo, "1") == "\n".join(again.lines()) + "\n"
    with pytest.raises(SweclError, match="give a run VERSION or --all"):
        experiment.materialise()


@contextmanager
def immutable(path: Path) -> Iterator[None]:
    """`path` made unwritable even for root (chattr +i), or chmod a-w for anyone else."""
    if os.geteuid() == 0:
        if not shutil.which("chattr") or subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode:
            pytest.skip("chattr +i is not available here: no way to make a folder read-only for root")
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", str(path)], check=True)
    else:
        path.chmod(0o555)
        try:
            yield
        finally:
            path.chmod(0o755)


def test_a_write_into_a_read_only_folder_leaves_nothing_behind(demo: Path, tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    experiment = Experiment(demo)
    with immutable(locked):
        with pytest.raises(SweclError, match=r"^cannot write the report to .*locked/new.*; choose another --out DIR$"):
            experiment.report(out_dir=locked / "new" / "report")
        with pytest.raises(SweclError, match=r"^cannot write .*locked/v1.parquet: .*; nothing was written$"):
            experiment.export(version="1", fmt="parquet", out=str(locked / "v1.parquet"))
        with pytest.raises(SweclError, match=r"^cannot write .*locked/replay"):
            experiment.replay(version="1", upto_order=2, out_dir=locked / "replay")
        assert list(locked.iterdir()) == []
    # A folder made (or found empty) by a job that failed part-way is left as it was: the
    # replay's memory folder is written, then its other files are refused.
    out = tmp_path / "half"
    out.mkdir()
    (out / "outcomes.json").mkdir()  # a directory where a file must go: the write fails there
    (out / "replay.json").write_text("{}")  # an earlier replay's folder, so the job goes ahead
    before = tree(out)
    with pytest.raises(SweclError, match="the replay was not \\(fully\\) written"):
        experiment.replay(version="1", upto_order=2, out_dir=out)
    assert [p for p in out.rglob("*") if p.name.endswith(".tmp")] == []
    assert {k for k in tree(out).keys() - before.keys() if not k.startswith("_memory/")} == set()
