"""The recall audit on crafted ledgers: provenance, reuse, leakage flags, attempts."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from bench.ledgers import Item, LedgerBuilder
from commands.cli._audit import audit_cmd
from commands.inputs import load_task_secrets
from commands.memory import export_memory, import_seed
from ledger import Ledger, SweclError
from ledger._merge import merge_ledgers
from projections.audit import (
    REUSE_THRESHOLD,
    audit_summary,
    audit_task,
    changed_lines,
    patch_reuse,
)

from .crafted import F2P, LEAK_LINE, OWN_WRONG, P1, P2, P3, SEQ, TASKS, accum_run, blank_run, diff_of, secrets_for_task_1


@pytest.fixture(scope="module")
def crafted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    path = tmp_path_factory.mktemp(__name__.rsplit(".", 1)[-1]) / "results" / "ledger.db"
    with Ledger.open(path, create=True) as led:
        r = LedgerBuilder(led)
        blank_run(r, "1")
        seqs = accum_run(r, "2", "1")
    return path, seqs


def _hits(audit, seq: int):  # type: ignore[no-untyped-def]
    (recall,) = [r for r in audit.recalls if r.seq == seq]
    return {h.item_id: h for h in recall.hits}, recall


# -- patch overlap ----------------------------------------------------------------------------


def test_changed_lines_reads_hunks_by_their_counts() -> None:
    patch = (
        "diff --git a/pkg/a.py b/pkg/a.py\n--- a/pkg/a.py\n+++ b/pkg/a.py\n@@ -1,3 +1,3 @@\n"
        " keep\n-+++ not a header\n++++ still a line\n \n\\ No newline at end of file\n"
        "diff --git a/new.py b/new.py\nnew file mode 100644\n--- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@\n+x =   1\n"
    )
    assert changed_lines(patch) == {
        ("pkg/a.py", "-", "+++ not a header"),
        ("pkg/a.py", "+", "+++ still a line"),
        ("new.py", "+", "x = 1"),
    }


def test_reuse_scores_the_share_of_the_items_added_lines() -> None:
    same = patch_reuse(P1, P1)
    assert (same.compared, same.score, same.reused, same.basis, same.shared_files) == (
        True, 1.0, True, "added", ["widgets/core.py"])
    # Another fix of the same bug removes the same line but adds something else: not reuse.
    other = patch_reuse(P1, OWN_WRONG)
    assert other.score == 0.0 and other.reused is False and other.shared_files == ["widgets/core.py"]
    # Half of P3's added lines reappear: exactly at the threshold.
    half = diff_of("widgets/core.py", " def frobnicate(n):", "-    return n", "+    return n * 3")
    assert patch_reuse(P3, half).score == 0.5 == REUSE_THRESHOLD and patch_reuse(P3, half).reused is True
    assert patch_reuse(None, P1).compared is False and patch_reuse(P1, None).reason == "the attempt has no agent patch"
    deletion = diff_of("widgets/core.py", " def frobnicate(n):", "-    return n")
    assert patch_reuse(deletion, P1).basis == "removed" and patch_reuse(deletion, P1).reused is True


# -- one task ---------------------------------------------------------------------------------


def test_a_seeded_run_recalling_the_same_instance_is_flagged(crafted: tuple[Path, dict[str, int]]) -> None:
    path, seqs = crafted
    with Ledger.open(path, readonly=True) as led:
        audit = audit_task(led, "2", "acme__widgets-1")
    assert audit.stage == "plugin-accum" and audit.sequence_id == SEQ and audit.order == 1
    hits, recall = _hits(audit, seqs["recall_attempt2"])
    assert [f.kind for f in hits["v1-1"].flags] == ["same-instance"]
    assert "acme__widgets-1" in hits["v1-1"].flags[0].detail and "seeded into v2" in hits["v1-1"].flags[0].detail
    assert [f.kind for f in hits["v1-3"].flags] == ["later-task"]
    assert [f.kind for f in hits["v1-2"].flags] == ["later-task"]
    assert audit.flags == ["same-instance", "later-task"]
    # Without a dataset the test-content check says it was not run.
    assert audit.dataset.available is False and not hits["v1-2"].test_content_checked


def test_provenance_of_a_seeded_item_and_a_supersede(crafted: tuple[Path, dict[str, int]]) -> None:
    path, seqs = crafted
    with Ledger.open(path, readonly=True) as led:
        audit = audit_task(led, "2", "acme__widgets-1", pass_="initial")
        written_v1_1 = next(r.seq for r in led.read(types=["memory.written"]) if r.event.item_id == "v1-1")
    hits, _ = _hits(audit, seqs["recall_attempt2"])
    p = hits["v1-1"].provenance
    assert p is not None
    assert (p.written.run, p.written.seq, p.written.instance_id, p.written.order, p.written.pass_, p.written.attempt) == (
        "1", written_v1_1, "acme__widgets-1", 1, "initial", 1)
    (hop,) = p.hops
    assert (hop.via, hop.into, hop.source_run, hop.seq) == ("seeded", "2", "1", seqs["seed"])
    assert hop.source_seq == seqs["seed"] - 1
    superseded = hits["v1-3"].provenance
    assert superseded is not None
    assert superseded.status_at_recall == "live" and superseded.status_now == "superseded"
    assert superseded.superseded_by == "v2-1"
    decision = superseded.decisions[-1]
    assert (decision.status, decision.by, decision.dream_id, decision.dream_run, decision.dream_reason) == (
        "superseded", "v2-1", "dream-1", "2", "manual")
    assert "contradiction" in decision.reason
    # The superseding item says what it made obsolete.
    with Ledger.open(path, readonly=True) as led:
        retest = audit_task(led, "2", "acme__widgets-1", pass_="retest")
    own = {h.item_id: h for h in retest.recalls[0].hits}["v2-1"]
    assert own.provenance is not None and own.provenance.supersedes == ["v1-3"]


def test_attempts_abandoned_recalls_and_reuse(crafted: tuple[Path, dict[str, int]]) -> None:
    path, seqs = crafted
    with Ledger.open(path, readonly=True) as led:
        audit = audit_task(led, "2", "acme__widgets-1")
    first, first_recall = _hits(audit, seqs["recall_abandoned"])
    assert (first_recall.attempt, first_recall.attempt_status, first_recall.in_force) == (1, "abandoned", False)
    assert first["ghost-item"].known is False and first["ghost-item"].provenance is None
    assert first["v1-1"].reuse.reused is False  # attempt 1 submitted its own (wrong) fix
    second, second_recall = _hits(audit, seqs["recall_attempt2"])
    assert (second_recall.attempt, second_recall.attempt_status, second_recall.in_force) == (2, "finished", True)
    assert second["v1-1"].reuse.reused is True and second["v1-1"].reuse.score == 1.0
    assert second["v1-3"].reuse.reused is False and second["v1-2"].reuse.shared_files == []
    attempts = [(a.pass_, a.attempt, a.status, a.in_force) for a in audit.attempts]
    assert attempts == [("initial", 1, "abandoned", False), ("initial", 2, "finished", True), ("retest", 1, "finished", True)]


def test_the_runs_own_items_in_its_retest_are_not_leaks(crafted: tuple[Path, dict[str, int]]) -> None:
    path, seqs = crafted
    with Ledger.open(path, readonly=True) as led:
        audit = audit_task(led, "2", "acme__widgets-1", pass_="retest")
    hits, _ = _hits(audit, seqs["recall_retest"])
    assert hits["v2-1"].flags == []  # written by this run's initial pass: retention, by design
    assert [f.kind for f in hits["v1-1"].flags] == ["same-instance"]  # seeded: still the exam's answer
    # The blank run's own later items in its initial pass are never visible; nothing flagged there.
    with Ledger.open(path, readonly=True) as led:
        assert audit_task(led, "1", "acme__widgets-3").flags == []


def test_test_content_is_flagged_with_the_grading_secrets(crafted: tuple[Path, dict[str, int]]) -> None:
    path, seqs = crafted
    with Ledger.open(path, readonly=True) as led:
        audit = audit_task(led, "2", "acme__widgets-1", secrets=secrets_for_task_1())
    hits, _ = _hits(audit, seqs["recall_attempt2"])
    leak = [f for f in hits["v1-2"].flags if f.kind == "test-content"]
    assert leak and "body holds 1 line(s) of the gold test patch" in leak[0].detail
    name = [f for f in hits["v1-3"].flags if f.kind == "test-content"]
    assert name and "test_frobnicate_counts_twice" in name[0].detail
    assert [f.kind for f in hits["v1-1"].flags] == ["same-instance"] and hits["v1-1"].test_content_checked
    assert audit.flags == ["same-instance", "later-task", "test-content"] and audit.dataset.available
    assert LEAK_LINE not in json.dumps(msgspec.to_builtins(hits["v1-1"]))
    assert F2P.endswith("test_frobnicate_counts_twice")


def test_summary_lists_flagged_tasks_of_the_whole_run(crafted: tuple[Path, dict[str, int]]) -> None:
    path, _ = crafted
    with Ledger.open(path, readonly=True) as led:
        summary = audit_summary(led, "2", secrets=secrets_for_task_1())
        blank = audit_summary(led, "1")
    rows = [(f.instance_id, f.pass_, f.attempts, f.kinds) for f in summary.flagged]
    assert rows == [
        ("acme__widgets-1", "initial", [1, 2], ["same-instance", "later-task", "test-content"]),
        ("acme__widgets-1", "retest", [1], ["same-instance"]),
    ]
    initial = summary.flagged[0]
    assert initial.items == ["v1-1", "v1-3", "v1-2"] and initial.reused_items == ["v1-1"]
    assert summary.recalls == 3 and summary.hits == 8 and summary.by_kind["same-instance"] == 3
    assert blank.flagged == [] and blank.recalls == 2


def test_unknown_task_and_run_are_one_line_errors(crafted: tuple[Path, dict[str, int]]) -> None:
    path, _ = crafted
    with Ledger.open(path, readonly=True) as led:
        with pytest.raises(SweclError, match="not in the plan of v2"):
            audit_task(led, "2", "acme__widgets-99")
        with pytest.raises(SweclError, match="no run version '7'"):
            audit_summary(led, "7")
        assert audit_task(led, "2", "1").instance_id == "acme__widgets-1"  # an order, in a one-sequence run


def test_cli_json_and_readable_views(crafted: tuple[Path, dict[str, int]]) -> None:
    path, seqs = crafted
    runner = CliRunner()
    out = runner.invoke(audit_cmd, ["--results", str(path.parent), "2", "acme__widgets-1", "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    # The crafted benchmark is not a dataset swecl can load: said, not failed.
    assert doc["dataset"]["available"] is False and "not available" in doc["dataset"]["note"]
    assert {r["seq"] for r in doc["recalls"]} == {seqs["recall_abandoned"], seqs["recall_attempt2"], seqs["recall_retest"]}
    hit = doc["recalls"][1]["hits"][0]
    assert set(hit) >= {"item_id", "rank", "score", "provenance", "reuse", "flags"}
    assert hit["provenance"]["hops"][0]["via"] == "seeded" and hit["reuse"]["reused"] is True
    text = runner.invoke(audit_cmd, ["--results", str(path.parent), "2", "acme__widgets-1", "--no-dataset"])
    assert text.exit_code == 0, text.output
    assert "same-instance" in text.output and "abandoned" in text.output and "superseded" in text.output
    summary = runner.invoke(audit_cmd, ["--results", str(path.parent), "2", "--summary", "--json"])
    assert json.loads(summary.output)["flagged"][0]["instance_id"] == "acme__widgets-1"
    both = runner.invoke(audit_cmd, ["--results", str(path.parent), "2", "acme__widgets-1", "--summary"])
    assert both.exit_code == 2


# -- provenance across a merge and an import ---------------------------------------------------


def test_provenance_of_items_whose_source_came_in_by_merge(tmp_path: Path) -> None:
    shard = tmp_path / "shard" / "ledger.db"
    with Ledger.open(shard, create=True) as led:
        blank_run(LedgerBuilder(led), "1")
        shard_ids = {r.event.item_id: r.event_id for r in led.read(types=["memory.written"])}
    target = tmp_path / "main" / "ledger.db"
    with Ledger.open(target, create=True) as led:
        r = LedgerBuilder(led)
        r.start_run("0", stage="base", plan={SEQ: TASKS})  # the target already holds a run: seqs shift
        r.finish_run("0")
    merge_ledgers([shard], target)
    with Ledger.open(target) as led:
        seqs = accum_run(LedgerBuilder(led), "2", "1")
        merged_seq = led.get_by_id(shard_ids["v1-1"]).seq
        audit = audit_task(led, "2", "acme__widgets-1", pass_="initial")
    hits, _ = _hits(audit, seqs["recall_attempt2"])
    p = hits["v1-1"].provenance
    assert p is not None and p.written.run == "1" and p.written.seq == merged_seq and p.written.attempt == 1
    assert [(h.via, h.source_run, h.seq) for h in p.hops] == [("seeded", "1", seqs["seed"])]
    assert hits["v1-3"].provenance.status_now == "superseded"


def test_provenance_of_an_item_imported_from_an_export(tmp_path: Path) -> None:
    source = tmp_path / "elsewhere" / "ledger.db"
    with Ledger.open(source, create=True) as led:
        blank_run(LedgerBuilder(led), "1")
        export_memory(led, "1", tmp_path / "export")
        source_id = led.ledger_id
    target = tmp_path / "here" / "ledger.db"
    with Ledger.open(target, create=True) as led:
        r = LedgerBuilder(led)
        r.start_run("5", stage="plugin-accum", plan={SEQ: TASKS})
        import_seed(led, "5", tmp_path / "export")
        rec = r.task("5", SEQ, 1, patch=P1, recalls=[["v1-1"]])[1]
        audit = audit_task(led, "5", "acme__widgets-1")
    hits, _ = _hits(audit, rec.seq)
    p = hits["v1-1"].provenance
    assert p is not None and p.written.run == "1" and p.written.seq is None  # written in another ledger
    (hop,) = p.hops
    assert hop.via == "imported" and hop.into == "5" and hop.path == str((tmp_path / "export").resolve())
    assert p.upstream is not None and p.upstream["ledger_id"] == source_id and p.upstream["written_in"] == "1"
    assert [f.kind for f in hits["v1-1"].flags] == ["same-instance"]
    assert hits["v1-1"].reuse.reused is True


def test_load_task_secrets_of_the_demo_needs_no_repositories(tmp_path: Path) -> None:
    from commands.inputs.demo import demo_benchmark

    bench = demo_benchmark(materialise=False)
    task = bench.tasks()[0]
    with Ledger.open(tmp_path / "ledger.db", create=True) as led:
        r = LedgerBuilder(led)
        from ledger.events import RunStarted, TaskRef

        led.append("run/1", [RunStarted(version="1", benchmark="demo", dataset_hash=bench.content_hash,
                                        sequences=[bench.sequences[0].id], stage="plugin-blank",
                                        memory_mode="plugin-real", agent="demo",
                                        tasks={bench.sequences[0].id: [TaskRef(task.instance_id, 1, task.repo)]})])
        del r
        secrets, note = load_task_secrets(led, "1")
        missing, missing_note = load_task_secrets(led, "1", dataset=str(tmp_path / "nope.json"))
    assert note.available and note.note is None and secrets is not None
    assert secrets[task.instance_id].test_patch == task.test_patch
    assert missing is None and not missing_note.available and "nope.json" in (missing_note.note or "")


def test_items_written_with_a_patch_but_an_agent_without_one(tmp_path: Path) -> None:
    with Ledger.open(tmp_path / "ledger.db", create=True) as led:
        r = LedgerBuilder(led)
        r.start_run("1", stage="plugin-blank", plan={SEQ: TASKS})
        r.task("1", SEQ, 1, patch=P1, write=Item("a", patch=P1))
        rec = r.task("1", SEQ, 2, patch=None, recalls=[["a"]])[1]
        hits, _ = _hits(audit_task(led, "1", "acme__widgets-2"), rec.seq)
    assert hits["a"].reuse.compared is False and hits["a"].reuse.reason == "the attempt has no agent patch"
    assert P2  # the crafted patches stay importable


def test_merged_and_pruned_items_say_by_which_dream_and_why(tmp_path: Path) -> None:
    from ledger.events import DreamFinished, DreamStarted, MemoryMerged, MemoryPruned

    with Ledger.open(tmp_path / "ledger.db", create=True) as led:
        r = LedgerBuilder(led)
        r.start_run("1", stage="plugin-blank", plan={SEQ: TASKS})
        r.task("1", SEQ, 1, patch=P1, write=Item("a", patch=P1))
        r.task("1", SEQ, 2, patch=P1, write=Item("b", patch=P1))
        rec = r.task("1", SEQ, 3, patch=P3, recalls=[["a", "b"]])[1]
        led.append("run/1", [
            DreamStarted(dream_id="d9", reason="pre-eval"),
            MemoryMerged(into="a", from_=["b"], reason="near-duplicate (jaccard 0.91)", similarity=0.91, dream_id="d9"),
            MemoryPruned(item_id="a", reason="ttl_tasks=1 exceeded", dream_id="d9"),
            DreamFinished(dream_id="d9", decisions=2),
        ])
        hits, _ = _hits(audit_task(led, "1", "acme__widgets-3"), rec.seq)
    merged, kept = hits["b"].provenance, hits["a"].provenance
    assert merged is not None and kept is not None
    assert (merged.status_at_recall, merged.status_now, merged.merged_into) == ("live", "merged", "a")
    assert [(d.status, d.by, d.dream_id, d.dream_reason) for d in merged.decisions] == [
        ("written", None, None, None), ("merged", "a", "d9", "pre-eval")]
    assert kept.merged_from == ["b"] and kept.status_now == "pruned"
    assert kept.decisions[-1].status == "pruned" and "ttl_tasks" in kept.decisions[-1].reason
