"""End to end on the real demo: plugin-blank then plugin-accum over one sequence, then
the audit flags what the seeded run recalled of its own tasks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.processes import SPANS
from tests.inprocess import swecl
from commands.cli._audit import audit_cmd
from commands.inputs import load_predictions, load_task_secrets
from ledger import Ledger
from tests.shared_runs import demo_run_copy
from commands import Experiment
from projections.audit import audit_summary, audit_task

pytestmark = pytest.mark.slow

@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    results = demo_run_copy(tmp_path_factory, cache, "blank-spans")  # plugin-blank, version 1
    # its initial pass: where a seeded run meets its own tasks (a re-test would add more of the same)
    swecl(results, "run", "--stage", "plugin-accum", "--sequence", SPANS, "--passes", "initial", "--quiet", cache=cache)
    return results


def test_audit_summary_flags_the_accum_runs_same_instance_recalls(demo: Path) -> None:
    out = CliRunner().invoke(audit_cmd, ["--results", str(demo), "2", "--summary", "--json"])
    assert out.exit_code == 0, out.output
    summary = json.loads(out.output)
    assert summary["stage"] == "plugin-accum" and summary["dataset"]["available"] is True
    initial = [f for f in summary["flagged"] if f["pass"] == "initial" and "same-instance" in f["kinds"]]
    assert initial, summary["flagged"]
    assert summary["by_kind"]["test-content"] == 0  # governance kept the grading secrets out
    # The demo agent reuses a remembered fix that worked: some same-instance item was reused.
    assert any(f["reused_items"] for f in initial)
    with Ledger.open(demo / "ledger.db", readonly=True) as led:
        secrets, _ = load_task_secrets(led, "1")
        blank = audit_summary(led, "1", pass_="initial", secrets=secrets)
        first = initial[0]
        audit = audit_task(led, "2", first["instance_id"], pass_="initial", secrets=secrets)
    assert blank.flagged == []  # a blank run never sees its own task, nor a later one, in order
    same = [h for r in audit.recalls for h in r.hits if any(f.kind == "same-instance" for f in h.flags)]
    assert same and all(h.provenance is not None and h.provenance.written.run == "1" for h in same)
    assert all([hop.via for hop in h.provenance.hops] == ["seeded"] for h in same)  # type: ignore[union-attr]


def test_replay_and_export_on_the_demo(demo: Path, tmp_path: Path) -> None:
    experiment = Experiment(demo)
    experiment.replay(version="2", upto_order=3, out_dir=tmp_path / "a")
    experiment.replay(version="2", upto_order=3, out_dir=tmp_path / "b")
    experiment.export(version="2", fmt="predictions", out=str(tmp_path / "preds.jsonl"))
    with Ledger.open(demo / "ledger.db", readonly=True) as led:
        plan = [t.instance_id for t in next(led.read_stream("run/2")).event.tasks[SPANS]]
    files_a = {p.relative_to(tmp_path / "a"): p.read_bytes() for p in (tmp_path / "a").rglob("*") if p.is_file()}
    files_b = {p.relative_to(tmp_path / "b"): p.read_bytes() for p in (tmp_path / "b").rglob("*") if p.is_file()}
    assert files_a == files_b and files_a
    assert list(load_predictions(tmp_path / "preds.jsonl")) == plan


def test_the_reports_task_tables_mark_exactly_the_tasks_the_audit_flags(demo: Path, tmp_path: Path) -> None:
    """Per-task leak markers: every task row the audit summary flags (over the attempts that
    count, as the run's counts) carries its flags per pass, kinds and counts; no other row does."""
    from tests.report.test_report import Page

    report = Experiment(demo).report(out_dir=tmp_path / "report")
    page = Page(report.index.read_text(encoding="utf-8"))
    marked: dict[tuple[str, str, int], dict[str, tuple[int, str]]] = {}
    ids: dict[tuple[str, str, int], str] = {}
    for attrs, up in page.with_attr("span", "data-pass"):
        row = next(a for t, a in reversed(up) if t == "tr")
        section = next(a for t, a in up if t == "section")
        article = next(a for t, a in up if t == "article")
        key = (article["data-version"], section["data-sequence"], int(row["data-order"]))
        marked.setdefault(key, {})[attrs["data-pass"]] = (int(attrs["data-hits"]), attrs["data-kinds"])
        ids[key] = row["id"]

    expected: dict[tuple[str, str, int], dict[str, tuple[int, str]]] = {}
    with Ledger.open(demo / "ledger.db", readonly=True) as led:
        for version in ("1", "2"):
            summary = audit_summary(led, version, counted_only=True)
            for f in summary.flagged:
                kinds = " ".join(f"{k}:{n}" for k, n in f.by_kind.items())
                expected.setdefault((version, f.sequence_id, f.order), {})[f.pass_] = (f.hits, kinds)
            # The per-task counts add up to the run's: the numbers `swecl runs` and the leakage table show.
            assert sum(f.hits for f in summary.flagged) == summary.flagged_hits
            for kind, n in summary.by_kind.items():
                assert sum(f.by_kind.get(kind, 0) for f in summary.flagged) == n, kind
    assert expected and all(version == "2" for version, _, _ in expected)  # the seeded run leaks, the blank one not
    assert marked == expected

    # The leakage section links each flagged task to its row, and only those.
    links = {a["href"].removeprefix("#") for a, up in page.with_attr("a", "data-task")
             if any(t == "tr" and "data-leakage" in r for t, r in up)}
    assert links == set(ids.values()) and len(links) == len(expected)
    # Folded, the table's summary line still says how many of its tasks are flagged.
    said = sum(int(a["data-leaked-tasks"]) for a, _ in page.with_attr("span", "data-leaked-tasks"))
    assert said == len(expected)
