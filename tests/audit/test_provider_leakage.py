"""Leakage flags of a --memory-server run's recall calls, on a crafted ledger: a
plugin-blank run whose tasks wrote lessons to the server (one of them quoting the gold test
of task 1), and a plugin-accum run seeded from its last snapshot. What the server returned
is attributed to the writes across the seed, and flagged as swecl's own recalls are
(same instance, later task, test content), in `swecl audit`, its --summary and the
leakage counts `swecl metrics` prints. The end-to-end run with the real reference server
is in tests/run/test_memory_server.py."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.ledgers import LedgerBuilder
from commands.cli._audit import audit_cmd
from ledger import Ledger
from ledger.events import MemorySeeded, ProviderCalled, ProviderSnapshot, ProviderStarted
from projections.audit import audit_summary, audit_task, leakage_of

from .crafted import F2P, LEAK_LINE, SEQ, TASKS, secrets_for_task_1

FIRST, SECOND, THIRD = (t.instance_id for t in TASKS)
CONFIG = {"memory_server": "notes-server", "memory_recall_tool": "search", "memory_write_tool": "remember"}
SERVER_WORDS = "notes found in the knowledge base"  # the server's own line: no write holds it
LESSONS = {
    1: f"lesson of {FIRST}: frobnicate doubles its input",
    2: f"lesson of {SECOND}: the expected value is {LEAK_LINE}",  # the gold test of task 1, quoted
    3: f"lesson of {THIRD}: twice adds n to itself",
}


def _call(r: LedgerBuilder, version: str, order: int, *, via: str, call: int, args: dict[str, str],
          result: str | None = None, pass_: str = "initial") -> int:
    task = TASKS[order - 1]
    blobs = [json.dumps(args).encode()] + ([result.encode()] if result is not None else [])
    digests = [hashlib.sha256(b).hexdigest() for b in blobs]
    event = ProviderCalled(sequence_id=SEQ, instance_id=task.instance_id, order=order, pass_=pass_, call=call,
                           tool="remember" if via == "write" else "search", via=via, arguments=digests[0],
                           result=digests[1] if result is not None else None)
    (rec,) = r.write(version, SEQ, event, blobs=blobs)
    return rec.seq


def _answer(*orders: int, extra: str = "") -> str:
    # A plain-text server: its own header, then each stored lesson as it was written.
    return "\n".join([SERVER_WORDS, *(LESSONS[o] for o in orders), *([extra] if extra else [])])


@pytest.fixture(scope="module")
def ledger_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("provider-leakage") / "results" / "ledger.db"
    with Ledger.open(path, create=True) as led:
        r = LedgerBuilder(led)
        # v1, plugin-blank: each task recalls, then its lesson is written; a snapshot after each.
        r.start_run("1", stage="plugin-blank", plan={SEQ: TASKS}, passes=["initial"], config=CONFIG)
        call = 0
        snapshot = 0
        for order in (1, 2, 3):
            r.task("1", SEQ, order)
            call += 1
            _call(r, "1", order, via="recall", call=call, args={"query": "widgets"}, result=_answer(*range(1, order)))
            call += 1
            _call(r, "1", order, via="write", call=call, args={"text": LESSONS[order]})
            (rec,) = r.write("1", SEQ, ProviderSnapshot(sequence_id=SEQ, instance_id=TASKS[order - 1].instance_id,
                                                        order=order, pass_="initial"))
            snapshot = rec.seq
        r.finish_run("1")
        # v2, plugin-accum seeded from v1's last snapshot: its first task is told everything
        # v1 wrote (its own lesson among it) and a line quoting its gold test's name.
        r.start_run("2", stage="plugin-accum", plan={SEQ: TASKS}, passes=["initial", "retest"], config=CONFIG)
        r.write("2", None, MemorySeeded(item_count=0, source_run="1", source_seq=snapshot,
                                        provider_snapshots={SEQ: snapshot}))
        r.task("2", SEQ, 1)
        _call(r, "2", 1, via="recall", call=1, args={"query": "widgets"},
              result=_answer(1, 2, 3, extra=f"see {F2P.split('::')[-1]} for the counts"))
        _call(r, "2", 1, via="write", call=2, args={"text": "v2 lesson of task 1: frobnicate triples now"})
        # Re-tested, task 1 gets its own v2 lesson (retention: no flag) and v1's (a seed: flagged).
        r.task("2", SEQ, 1, pass_="retest")
        _call(r, "2", 1, via="recall", call=1, pass_="retest", args={"query": "widgets"},
              result="v2 lesson of task 1: frobnicate triples now\n" + LESSONS[1])
        r.finish_run("2")
    return path


def test_a_seeded_runs_recall_is_attributed_across_the_seed_and_flagged(ledger_path: Path) -> None:
    with Ledger.open(ledger_path, readonly=True) as led:
        audit = audit_task(led, "2", FIRST, pass_="initial", secrets=secrets_for_task_1())
    (recall,) = audit.provider_recalls
    # Each lesson goes to v1's write of it, across the seed.
    assert [(w.run, w.instance_id, w.order, w.lines) for w in recall.writes] == [
        ("1", FIRST, 1, 1), ("1", SECOND, 2, 1), ("1", THIRD, 3, 1)]
    by_writer = {w.instance_id: {f.kind for f in w.flags} for w in recall.writes}
    assert by_writer[FIRST] == {"same-instance"}  # the answer to the exam, from a seed
    assert by_writer[SECOND] == {"later-task", "test-content"}  # the future, and the gold test's line
    assert by_writer[THIRD] == {"later-task"}
    (second,) = [w for w in recall.writes if w.instance_id == SECOND]
    assert any("1 line(s) of the gold test patch" in f.detail for f in second.flags)
    assert any("by v1, remember #" in f.detail for f in second.flags if f.kind == "later-task")
    # The server's own words and the line naming the test: no write of this ledger holds them.
    assert recall.unattributed == 2
    assert [line.text for line in recall.lines if line.write_seq is None] == [
        SERVER_WORDS, f"see {F2P.split('::')[-1]} for the counts"]
    (flag,) = recall.unattributed_flags
    assert flag.kind == "test-content" and "test name(s) test_frobnicate_counts_twice" in flag.detail
    assert recall.flags == ["same-instance", "later-task", "test-content"]
    assert audit.flags == ["same-instance", "later-task", "test-content"]


def test_the_re_test_of_a_seeded_run_flags_the_seeds_lines_not_its_own(ledger_path: Path) -> None:
    with Ledger.open(ledger_path, readonly=True) as led:
        (recall,) = audit_task(led, "2", FIRST, pass_="retest", secrets=secrets_for_task_1()).provider_recalls
    own, seeded = recall.writes
    assert (own.run, own.flags) == ("2", [])  # retention, the re-test's design
    assert seeded.run == "1" and [f.kind for f in seeded.flags] == ["same-instance"]


def test_the_source_runs_own_recalls_are_not_flagged(ledger_path: Path) -> None:
    # v1's tasks only ever got what earlier tasks wrote; task 3 recalled task 2's lesson,
    # which quotes task 1's gold test, not task 3's.
    with Ledger.open(ledger_path, readonly=True) as led:
        summary = audit_summary(led, "1", secrets=secrets_for_task_1())
    assert summary.provider_recalls == 3 and summary.flagged_hits == 0 and summary.flagged == []
    # Three calls: nothing, then one lesson, then two, each with the server's header unattributed.
    assert summary.provider_hits == 1 + 2 + 3 == summary.hits


def test_summary_and_metrics_count_the_flagged_provider_items(ledger_path: Path) -> None:
    with Ledger.open(ledger_path, readonly=True) as led:
        summary = audit_summary(led, "2", secrets=secrets_for_task_1())
        counts = leakage_of(led, "2")
    # Initial: v1's three writes and the unattributed lines; re-test: v2's write and v1's.
    assert (summary.provider_recalls, summary.provider_hits) == (2, 4 + 2)
    assert summary.recalls == 2 and summary.hits == 6
    assert summary.flagged_hits == 4 + 1
    assert summary.by_kind == {"same-instance": 2, "later-task": 2, "test-content": 2}
    initial, retest = summary.flagged
    assert (initial.instance_id, initial.pass_, initial.hits) == (FIRST, "initial", 4)
    assert initial.by_kind == {"same-instance": 1, "later-task": 2, "test-content": 2}
    assert "provider:unattributed" in initial.items and all(i.startswith("provider:") for i in initial.items)
    assert (retest.pass_, retest.kinds) == ("retest", ["same-instance"])
    # `swecl metrics`' leakage line reads the same fold (without the dataset: no test-content).
    assert counts["recalled_items"] == 6 and counts["flagged"] == 4
    assert counts["by_kind"] == {"same-instance": 2, "later-task": 2, "test-content": 0}


def test_swecl_audit_prints_the_flags_of_the_servers_lines(ledger_path: Path) -> None:
    results = str(ledger_path.parent)
    out = CliRunner().invoke(audit_cmd, ["2", FIRST, "--pass", "initial", "--no-dataset", "--results", results])
    assert out.exit_code == 0, out.output
    assert "leakage flags: same-instance, later-task" in out.output
    assert f"v1 {FIRST} (task 1, initial attempt 1): remember #2 at seq" in out.output
    assert f"same-instance: written for this same task {FIRST} (by v1, remember #2 at seq" in out.output
    assert "unattributed: 2 line(s) no write recorded in this ledger holds" in out.output
    summary = CliRunner().invoke(audit_cmd, ["2", "--summary", "--no-dataset", "--results", results])
    assert summary.exit_code == 0, summary.output
    assert "2 recall call(s) to the memory server returned 6 item(s)" in summary.output
    assert "4 flagged (same-instance=2, later-task=2, test-content=0)" in summary.output


# -- the agent's own calls: sources and recalls by the server's tool list ------------------

AGENT_CONFIG = {"memory_server": "mcp-server-memory"}  # no recall or write tool named: the agent's calls only
LISTING = [
    {"name": "search_nodes", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
    {"name": "open_nodes", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
    {"name": "create_entities", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": False}},
    {"name": "remember_note", "inputSchema": {"type": "object"}},  # no hint: assumed to store what it is given
]
RETRIED = f"lesson of {FIRST}: the retried entity"


def _agent_call(r: LedgerBuilder, version: str, order: int, call: int, tool: str, args: dict[str, object],
                result: str = "", is_error: bool = False) -> int:
    task = TASKS[order - 1]
    blobs = [json.dumps(args).encode(), result.encode()]
    digests = [hashlib.sha256(b).hexdigest() for b in blobs]
    event = ProviderCalled(sequence_id=SEQ, instance_id=task.instance_id, order=order, call=call, tool=tool, pass_="initial",
                           via="agent", arguments=digests[0], result=digests[1], is_error=is_error)
    (rec,) = r.write(version, SEQ, event, blobs=blobs)
    return rec.seq


def _started(r: LedgerBuilder, version: str) -> None:
    listing = json.dumps(LISTING, sort_keys=True).encode()
    r.write(version, SEQ, ProviderStarted(sequence_id=SEQ, server_name="memory-server",
                                          tools=[t["name"] for t in LISTING],
                                          tools_listing=hashlib.sha256(listing).hexdigest()), blobs=[listing])


def _entities(text: str) -> dict[str, object]:
    return {"entities": [{"name": "lesson", "entityType": "lesson", "observations": [text]}]}


@pytest.fixture(scope="module")
def agent_ledger(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    """v3: the agents write the server themselves (create_entities, and a tool with no
    hint), one write refused by the server and retried by the next task; v4 seeded from it."""
    path = tmp_path_factory.mktemp("provider-agent-writes") / "results" / "ledger.db"
    seqs: dict[str, int] = {}
    with Ledger.open(path, create=True) as led:
        r = LedgerBuilder(led)
        r.start_run("3", stage="plugin-blank", plan={SEQ: TASKS}, passes=["initial"], config=AGENT_CONFIG)
        _started(r, "3")
        r.task("3", SEQ, 1)
        _agent_call(r, "3", 1, 1, "search_nodes", {"query": "frobnicate"}, result='{"entities": []}')
        seqs["write1"] = _agent_call(r, "3", 1, 2, "create_entities", _entities(LESSONS[1]))
        _agent_call(r, "3", 1, 3, "create_entities", _entities(RETRIED), result="entity exists", is_error=True)
        r.task("3", SEQ, 2)
        seqs["write2"] = _agent_call(r, "3", 2, 4, "remember_note", {"note": LESSONS[2]})
        seqs["retried"] = _agent_call(r, "3", 2, 5, "create_entities", _entities(RETRIED))
        r.task("3", SEQ, 3)
        answer = json.dumps({"entities": [{"name": "lesson", "observations": [LESSONS[1], LESSONS[2], RETRIED]}]})
        seqs["read3"] = _agent_call(r, "3", 3, 6, "open_nodes", {"names": ["lesson"]}, result=answer)
        (snap,) = r.write("3", SEQ, ProviderSnapshot(sequence_id=SEQ, instance_id=THIRD, order=3, pass_="initial"))
        r.finish_run("3")
        r.start_run("4", stage="plugin-accum", plan={SEQ: TASKS}, passes=["initial"], config=AGENT_CONFIG)
        r.write("4", None, MemorySeeded(item_count=0, source_run="3", source_seq=snap.seq,
                                        provider_snapshots={SEQ: snap.seq}))
        _started(r, "4")
        r.task("4", SEQ, 1)
        _agent_call(r, "4", 1, 1, "search_nodes", {"query": "frobnicate"}, result=f"{LESSONS[1]}\n{LESSONS[2]}")
        r.finish_run("4")
    return path, seqs


def test_the_agents_own_writes_are_the_sources_of_what_a_later_task_read(
        agent_ledger: tuple[Path, dict[str, int]]) -> None:
    path, seqs = agent_ledger
    with Ledger.open(path, readonly=True) as led:
        first = audit_task(led, "3", FIRST, pass_="initial")
        (recall,) = audit_task(led, "3", THIRD, pass_="initial", secrets=secrets_for_task_1()).provider_recalls
    # A read-only tool's call is what the task was told, not a source; task 1's search found nothing.
    (search,) = first.provider_recalls
    assert (search.tool, search.via, search.lines, search.writes) == ("search_nodes", "agent", [], [])
    assert (recall.tool, recall.via) == ("open_nodes", "agent")
    assert [(w.seq, w.tool, w.via, w.instance_id, w.order, w.lines) for w in recall.writes] == [
        (seqs["write1"], "create_entities", "agent", FIRST, 1, 2),  # the entity's name, held first by it
        (seqs["write2"], "remember_note", "agent", SECOND, 2, 1),  # no hint: a writing tool
        (seqs["retried"], "create_entities", "agent", SECOND, 2, 1),  # not the refused call of task 1
    ]
    assert recall.unattributed == 0
    # Earlier tasks' writes: no leak for task 3.
    assert all(w.flags == [] for w in recall.writes)


def test_the_agents_own_writes_carry_the_flags_across_a_seed(agent_ledger: tuple[Path, dict[str, int]]) -> None:
    path, seqs = agent_ledger
    with Ledger.open(path, readonly=True) as led:
        (recall,) = audit_task(led, "4", FIRST, pass_="initial", secrets=secrets_for_task_1()).provider_recalls
        summary = audit_summary(led, "4", secrets=secrets_for_task_1())
    own, later = recall.writes
    assert (own.run, own.seq, own.via, [f.kind for f in own.flags]) == ("3", seqs["write1"], "agent", ["same-instance"])
    assert (later.run, later.seq, later.tool) == ("3", seqs["write2"], "remember_note")
    assert sorted(f.kind for f in later.flags) == ["later-task", "test-content"]
    assert recall.flags == ["same-instance", "later-task", "test-content"]
    assert (summary.provider_recalls, summary.provider_hits, summary.flagged_hits) == (1, 2, 2)
    out = CliRunner().invoke(audit_cmd, ["4", FIRST, "--pass", "initial", "--no-dataset", "--results",
                                         str(path.parent)])
    assert out.exit_code == 0, out.output
    assert f"v3 {FIRST} (task 1, initial attempt 1): create_entities #2 by the agent at seq {seqs['write1']}" in out.output
