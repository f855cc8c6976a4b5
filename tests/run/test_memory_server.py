"""`swecl run --memory-server`: a user's MCP memory server as the memory under test.

Real parts: the real `swecl run` on the demo spans sequence's first tasks with the demo
agent, the reference knowledge-graph server `@modelcontextprotocol/server-memory` from
npm, bubblewrap, a real ledger; and a small stdio server written with the MCP SDK that
dies in the middle of the run.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from commands import Experiment
from commands.run.memory import SNAPSHOT_CHUNK_ABOVE, restore_server_data
from ledger import Ledger, SweclError
from ledger.events import RunStarted, SnapshotFile
from tests.agents.conftest import server_memory_bin  # noqa: F401  (the session fixture: npm-installed server)

from .support import SPANS, events, first_of, first_tasks, swecl

TASKS = 3
FIRST = first_of(TASKS, SPANS)


def _payloads(results: Path, type_: str) -> list[dict[str, Any]]:
    return [p for *_, p in events(results, type_)]


def _blob(results: Path, digest: str) -> str:
    with Ledger.open(results / "ledger.db", readonly=True) as led:
        return led.get_blob(digest).decode()


def _grades(results: Path) -> dict[tuple[str, str], str]:
    return {(p["pass"], p["instance_id"]): p["status"] for p in _payloads(results, "grade.finished")}


# -- the reference server, end to end ---------------------------------------------------------


@pytest.fixture(scope="module")
def provider_run(tmp_path_factory: pytest.TempPathFactory, cache: Path, server_memory_bin: str) -> Path:
    results = tmp_path_factory.mktemp("provider-run")
    swecl(results, "run", "--stage", "plugin-blank", "--sequence", SPANS, *FIRST, "--passes", "initial,retest,baseline",
          "--memory-server", server_memory_bin, "--memory-env", "MEMORY_FILE_PATH={data}/memory.jsonl",
          "--memory-recall-tool", "search_nodes", "--memory-recall-args", '{"query": "{repo}"}',
          "--memory-write-tool", "create_entities", "--quiet", cache=cache, timeout=600)
    return results


def test_the_run_records_the_provider_its_calls_and_its_options(provider_run: Path, server_memory_bin: str) -> None:
    (finished,) = _payloads(provider_run, "run.finished")
    assert finished["status"] == "finished"
    (started,) = _payloads(provider_run, "run.started")
    config = started["config"]
    assert config["memory_server"] == server_memory_bin and config["memory_env_names"] == ["MEMORY_FILE_PATH"]
    assert "memory_env" not in config and "{data}" not in json.dumps(config)
    hosts = _payloads(provider_run, "memory.provider.started")  # the initial pass's, the re-test's; no baseline's
    assert len(hosts) == 2
    for host in hosts:
        assert host["server_name"] == "memory-server" and host["server_version"]
        assert {"search_nodes", "create_entities"} <= set(host["tools"])

    tasks = first_tasks(SPANS, TASKS)
    every = _payloads(provider_run, "memory.provider.called")
    # The re-test pass recalls from a copy of the memory as the initial pass left it: all of it.
    retests = [c for c in every if c["pass"] == "retest"]
    assert [(c["via"], c["instance_id"]) for c in retests] == [("recall", iid) for iid in tasks]
    assert all(all(iid in _blob(provider_run, c["result"]) for iid in tasks) for c in retests)
    assert not [c for c in every if c["pass"] == "baseline"]
    calls = [c for c in every if c["pass"] == "initial"]
    # Before each task the recall, after it the write; nothing in the baseline pass.
    assert [(c["via"], c["tool"], c["instance_id"], c["pass"]) for c in calls] == [
        (via, tool, iid, "initial") for iid in tasks
        for via, tool in (("recall", "search_nodes"), ("write", "create_entities"))
    ]
    assert all(c["failure"] is None and not c["is_error"] for c in calls)
    for call in calls:
        args = json.loads(_blob(provider_run, call["arguments"]))
        if call["via"] == "recall":
            assert args == {"query": "swecl-demo/spans"}
        else:
            (entity,) = args["entities"]
            assert entity["name"] == call["instance_id"] and entity["entityType"] == "swecl-task"
            assert any(o.startswith("swecl-lesson ") for o in entity["observations"])
    # What earlier tasks wrote is what later tasks recall.
    recalls = [c for c in calls if c["via"] == "recall"]
    for k, call in enumerate(recalls):
        answer = _blob(provider_run, call["result"])
        assert all(earlier in answer for earlier in tasks[:k]) and tasks[k] not in answer
    assert all(s != "infra_error" for s in _grades(provider_run).values())


def test_swecl_runs_names_the_provider(provider_run: Path, cache: Path) -> None:
    (row,) = json.loads(swecl(provider_run, "runs", "--json", cache=cache).stdout)
    assert row["memory_server"].startswith("memory-server ") and row["memory_server"] != "memory-server "
    assert "plugin-blank (memory-server " in swecl(provider_run, "runs", cache=cache).stdout


def test_a_snapshot_per_task_restores_the_servers_file(provider_run: Path, tmp_path: Path) -> None:
    tasks = first_tasks(SPANS, TASKS)
    snaps = _payloads(provider_run, "memory.provider.snapshot")
    assert [s["instance_id"] for s in snaps] == tasks and all(s["pass"] == "initial" for s in snaps)
    data = next((provider_run / "v1" / "_provider").iterdir()) / "initial" / "data" / "memory.jsonl"
    with Ledger.open(provider_run / "ledger.db", readonly=True) as led:
        for k, snap in enumerate(snaps, start=1):
            files = [SnapshotFile(**f) for f in snap["files"]]
            restore_server_data(led, files, tmp_path / str(k))
            lines = (tmp_path / str(k) / "memory.jsonl").read_text().splitlines()
            assert [json.loads(line)["name"] for line in lines] == tasks[:k]  # one entity per task so far
    assert (tmp_path / str(TASKS) / "memory.jsonl").read_bytes() == data.read_bytes()


def _entities(data: Path) -> list[str]:
    return [json.loads(line)["name"] for line in (data / "memory.jsonl").read_text().splitlines()]


def test_replay_restores_each_sequences_server_data_as_it_stood_before_task_k(
    provider_run: Path, tmp_path: Path
) -> None:
    tasks = first_tasks(SPANS, TASKS)
    exp = Experiment(provider_run)
    (sequence,) = (p.name for p in (provider_run / "v1" / "_provider").iterdir())
    for k in range(1, TASKS + 2):
        out = tmp_path / f"k{k}"
        report = exp.replay(version="1", upto_order=k, out_dir=out)
        data = out / "provider" / sequence / "data"
        manifest = json.loads((out / "replay.json").read_text())
        cut = manifest["provider"]["sequences"][sequence]
        assert manifest["provider"]["restorable"] and "provider/" in manifest["files"]
        assert cut["dir"] == f"provider/{sequence}/data/"
        said = [line for line in report.lines() if line.startswith(f"memory server data of {sequence}")]
        assert len(said) == 1 and str(data) in said[0]
        if k == 1:  # before the first task the server had nothing yet
            assert data.is_dir() and not any(data.iterdir())
            assert cut["source"] == "none" and "no snapshot before this task" in said[0]
        else:  # the snapshot after task k-1: one entity per task before k
            assert cut["source"] == "snapshot" and (cut["order"], cut["instance_id"]) == (k - 1, tasks[k - 2])
            assert _entities(data) == tasks[: k - 1]
            assert f"after task {k - 1}" in said[0]
    # As the initial pass left it: the server's own file, byte for byte.
    live = provider_run / "v1" / "_provider" / sequence / "initial" / "data" / "memory.jsonl"
    assert (tmp_path / f"k{TASKS + 1}" / "provider" / sequence / "data" / "memory.jsonl").read_bytes() == live.read_bytes()
    # An earlier replay's folder, replayed at another K: provider/ replaced whole, and the
    # same K gives the same bytes again.
    exp.replay(version="1", upto_order=1, out_dir=tmp_path / "k3")
    assert not any((tmp_path / "k3" / "provider" / sequence / "data").iterdir())
    exp.replay(version="1", upto_order=3, out_dir=tmp_path / "k3")
    assert _entities(tmp_path / "k3" / "provider" / sequence / "data") == tasks[:2]


def test_swecl_replay_as_of_order_prints_the_restored_server_data(provider_run: Path, tmp_path: Path, cache: Path) -> None:
    out = tmp_path / "replay"
    printed = swecl(provider_run, "replay", "1", "--as-of-order", "2", "--out", str(out), cache=cache).stdout
    (line,) = [line for line in printed.splitlines() if line.startswith("memory server data of ")]
    assert "after task 1" in line and "1 file(s)" in line and str(out / "provider") in line


def test_memory_snapshots_lists_one_row_per_snapshot_with_the_new_bytes_it_stored(
    provider_run: Path, cache: Path
) -> None:
    tasks = first_tasks(SPANS, TASKS)
    exp = Experiment(provider_run)
    doc = exp.memory_snapshots(version="1").document()
    assert doc["transport"] == "stdio"
    rows = doc["snapshots"]
    assert [(r["pass"], r["order"], r["instance_id"]) for r in rows] == [
        ("initial", k, iid) for k, iid in enumerate(tasks, start=1)]
    with Ledger.open(provider_run / "ledger.db", readonly=True) as led:
        for row, snap in zip(rows, _payloads(provider_run, "memory.provider.snapshot"), strict=True):
            assert row["files"] == len(snap["files"]) == 1
            assert row["total_bytes"] == sum(len(led.get_blob(f["blob"])) for f in snap["files"])
    # memory.jsonl grows with every task: each snapshot's one file is new content
    assert all(r["new_bytes"] == r["total_bytes"] > 0 for r in rows)
    assert [r["total_bytes"] for r in rows] == sorted({r["total_bytes"] for r in rows})
    sequence = rows[0]["sequence_id"]
    assert exp.memory_snapshots(version="1", sequence=sequence).document()["snapshots"] == rows

    printed = swecl(provider_run, "memory", "snapshots", "1", cache=cache).stdout.splitlines()
    assert len(printed) == 1 + TASKS and "3 memory server snapshot(s)" in printed[0]
    assert all(f"order {r['order']} {r['instance_id']}: 1 file(s), {r['total_bytes']} bytes, "
               f"{r['new_bytes']} new bytes stored" in line for r, line in zip(rows, printed[1:], strict=True))
    proc = swecl(provider_run, "memory", "snapshots", "1", "--sequence", "nope", cache=cache, check=False)
    assert proc.returncode != 0 and "--sequence 'nope'" in proc.stderr and "Traceback" not in proc.stderr


def test_a_url_server_run_is_not_restorable_and_a_run_without_a_server_has_no_snapshots(tmp_path: Path) -> None:
    # Written by hand: a run whose server was reached by URL, and one with swecl's memory.
    with Ledger.open(tmp_path / "ledger.db", create=True) as led:
        for version, config in (("1", {"memory_server": "http://127.0.0.1:9/mcp"}), ("2", {})):
            led.append(f"run/{version}", [RunStarted(
                version=version, benchmark="b", dataset_hash="h", sequences=["s"], stage="plugin-blank",
                memory_mode="plugin-real", agent="demo", config=config)], expected_version=-1)
    exp = Experiment(tmp_path)
    report = exp.replay(version="1", upto_order=1, out_dir=tmp_path / "replay")
    manifest = json.loads((tmp_path / "replay" / "replay.json").read_text())
    assert manifest["provider"] == {"transport": "http", "restorable": False, "sequences": {}}
    assert not (tmp_path / "replay" / "provider").exists() and "provider/" not in manifest["files"]
    assert any("not restorable" in line for line in report.lines())
    assert exp.memory_snapshots(version="1").document() == {"version": "1", "transport": "http", "snapshots": []}
    assert "provider" not in json.loads(
        (exp.replay(version="2", upto_order=1, out_dir=tmp_path / "r2").out_dir / "replay.json").read_text())
    with pytest.raises(SweclError, match="no --memory-server run"):
        exp.memory_snapshots(version="2")


def test_a_counterfactual_rebuilds_the_server_without_the_hidden_tasks_writes(
    provider_run: Path, tmp_path: Path, cache: Path
) -> None:
    results = tmp_path / "results"
    shutil.copytree(provider_run, results)
    first, second, third = first_tasks(SPANS, TASKS)
    refused = swecl(results, "counterfactual", "1", third, "--without", f"provider:{first}", cache=cache, check=False)
    assert refused.returncode != 0 and "give --memory-env MEMORY_FILE_PATH=VALUE again" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    done = Experiment(results).counterfactual("1", third, without=(f"provider:{first}",),
                                              memory_env=("MEMORY_FILE_PATH={data}/memory.jsonl",))
    (rerun,) = done.runs
    assert rerun.hidden == [f"provider:{first}"] and rerun.status != "infra_error"
    # The run's attempt recalled both earlier tasks' lessons; the re-run's server, rebuilt
    # from the recorded calls without the first task's, gives the second's only.
    each = Experiment(results).counterfactual("1", third, without_recalled=True,
                                              memory_env=("MEMORY_FILE_PATH={data}/memory.jsonl",))
    assert sorted(r.hidden for r in each.runs) == sorted([[f"provider:{first}"], [f"provider:{second}"]])
    assert rerun.recalled == [f"provider:{second}"]
    # Nothing of the re-run reached the run: its calls and snapshots are as they were.
    assert not [p for *_, p in events(results, "memory.provider.called") if p["via"] == "replay"]


# -- the read side: show, audit, metrics, report, view (of the same run) ------------------------


def test_swecl_show_lists_the_attempts_calls_to_the_memory_server(provider_run: Path, cache: Path) -> None:
    first, second, _third = first_tasks(SPANS, TASKS)
    shown = Experiment(provider_run).show("1", second).shown
    assert shown.memory_server is not None and shown.memory_server.startswith("memory-server ")
    # The initial pass's host numbers its calls: the first task's recall and write were 1 and 2.
    assert [(c.call, c.tool, c.via, c.failure) for c in shown.provider_calls] == [
        (3, "search_nodes", "recall", None), (4, "create_entities", "write", None)]
    recall, write = shown.provider_calls
    assert recall.arguments == '{"query": "swecl-demo/spans"}'
    assert recall.result is not None and first in recall.result and "\n" not in recall.result
    assert write.arguments is not None and write.arguments.startswith('{"entities": [{"entityType": "swecl-task"')
    assert _blob(provider_run, recall.result_blob or "").count(first) >= 1
    text = swecl(provider_run, "show", "1", second, cache=cache).stdout
    assert f"memory server {shown.memory_server}" in text.splitlines()[1]
    assert f"== memory server calls ({shown.memory_server})" in text
    assert "#3 search_nodes by swecl's recall: ok" in text and "#4 create_entities by swecl's write: ok" in text
    assert 'asked: {"query": "swecl-demo/spans"}' in text
    doc = json.loads(swecl(provider_run, "show", "1", second, "--pass", "retest", "--json", cache=cache).stdout)
    assert doc["memory_server"] == shown.memory_server
    # The re-test pass's own host: its second call, the recall of the second task.
    assert [(c["call"], c["via"]) for c in doc["provider_calls"]] == [(2, "recall")]


def test_swecl_audit_attributes_what_the_server_returned_to_earlier_writes(provider_run: Path, cache: Path) -> None:
    first, second, third = first_tasks(SPANS, TASKS)
    audit = Experiment(provider_run).audit("1", third, pass_="initial", no_dataset=True).audit
    assert audit.memory_server is not None and audit.memory_server.startswith("memory-server ")
    (recall,) = audit.provider_recalls
    assert (recall.call, recall.via, recall.tool, recall.failure) == (5, "recall", "search_nodes", None)
    # What the third task got was written by the first two tasks' write calls, in that order.
    writes = [(w.instance_id, w.order, w.tool, w.call) for w in recall.writes]
    assert writes == [(first, 1, "create_entities", 2), (second, 2, "create_entities", 4)]
    by_line = {line.text: line for line in recall.lines}
    for order, iid in ((1, first), (2, second)):
        assert by_line[f'"name": "{iid}"'].instance_id == iid and by_line[f'"name": "{iid}"'].order == order
        (lesson,) = [t for t in by_line if t.startswith('"swecl-lesson ') and iid in t]
        assert by_line[lesson].instance_id == iid
    # The server's own words (its graph's "relations") are no task's.
    unattributed = [line.text for line in recall.lines if line.write_seq is None]
    assert unattributed and not any(iid in t for t in unattributed for iid in (first, second, third))
    assert recall.unattributed == len(unattributed)
    assert sum(w.lines for w in recall.writes) + recall.unattributed == len(recall.lines)
    # The first task recalled from an empty memory: nothing of any write.
    (empty,) = Experiment(provider_run).audit("1", first, pass_="initial", no_dataset=True).audit.provider_recalls
    assert empty.writes == [] and empty.unattributed == len(empty.lines)
    # Re-tested, the first task gets what every task of the initial pass wrote (later ones included).
    (retest,) = Experiment(provider_run).audit("1", first, pass_="retest", no_dataset=True).audit.provider_recalls
    assert [w.instance_id for w in retest.writes] == [first, second, third]
    doc = json.loads(swecl(provider_run, "audit", "1", third, "--pass", "initial", "--no-dataset", "--json",
                           cache=cache).stdout)
    assert [w["instance_id"] for w in doc["provider_recalls"][0]["writes"]] == [first, second]
    text = swecl(provider_run, "audit", "1", third, "--pass", "initial", "--no-dataset", cache=cache).stdout
    assert f"memory server {audit.memory_server}" in text and "recall call #5" in text
    assert f"    {first} (task 1, initial attempt 1): create_entities #2 at seq" in text
    assert "unattributed" in text


def test_metrics_report_and_view_name_the_memory_server(provider_run: Path, cache: Path, tmp_path: Path) -> None:
    from projections import Results
    from projections.view import View

    (row,) = json.loads(swecl(provider_run, "runs", "--json", cache=cache).stdout)
    server = row["memory_server"]
    (version,) = json.loads(swecl(provider_run, "metrics", "--json", cache=cache).stdout)["versions"]
    assert version["memory_server"] == server
    title = swecl(provider_run, "metrics", cache=cache).stdout.strip().splitlines()[0]
    assert f"CL metrics of v1 plugin-blank ({server})" in title
    Experiment(provider_run).report(out_dir=tmp_path / "report")
    html = (tmp_path / "report" / "index.html").read_text()
    assert f", memory server {server}</td>" in html
    page = View(Results(provider_run)).respond("/run/1")
    assert page.status == 200 and f'data-memory-server="{server}"' in page.body.decode()


# -- refused before anything is written ---------------------------------------------------------


@pytest.mark.parametrize(("args", "says"), [
    (["--stage", "base", "--memory-server", "mcp-server-memory"], "is for the memory stages"),
    (["--memory-server", "mcp-server-memory"], "add --stage"),
    (["--stage", "plugin-blank", "--memory-server", "npx 'unclosed"], "cannot be split"),
    (["--stage", "plugin-blank", "--memory-env", "A=b"], "--memory-env is for --memory-server"),
    (["--stage", "plugin-blank", "--memory-server", "srv", "--memory-write-tool", "remember"],
     "knows no arguments for it"),
    (["--stage", "plugin-blank", "--memory-server", "srv", "--memory-recall-tool", "s",
      "--memory-recall-args", '{"q": "{nope}"}'], "unknown placeholder {nope}"),
    (["--stage", "plugin-accum", "--memory-server", "srv"], "give --source-memory VERSION"),
    (["--stage", "plugin-dreamed", "--memory-server", "srv", "--source-memory", "1"],
     "name the server's consolidation tool with --memory-dream-tool NAME"),
])
def test_bad_memory_server_options_are_one_line_errors_and_write_nothing(
    tmp_path: Path, cache: Path, args: list[str], says: str
) -> None:
    results = tmp_path / "results"
    proc = swecl(results, "run", *args, "--sequence", SPANS, cache=cache, check=False)
    assert proc.returncode != 0 and says in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert not (results / "ledger.db").exists()


# -- plugin-accum seeded from a --memory-server run ---------------------------------------------

SERVER_OPTIONS = ("--memory-env", "MEMORY_FILE_PATH={data}/memory.jsonl", "--memory-recall-tool", "search_nodes",
                  "--memory-recall-args", '{"query": "{repo}"}', "--memory-write-tool", "create_entities")


def _stream_payloads(results: Path, type_: str, prefix: str) -> list[tuple[int, str, dict[str, Any]]]:
    return [(seq, stream, p) for seq, stream, _, p in events(results, type_) if stream.startswith(prefix)]


@pytest.fixture(scope="module")
def accum_run(provider_run: Path, tmp_path_factory: pytest.TempPathFactory, cache: Path, server_memory_bin: str) -> Path:
    """v2, plugin-accum over the first task, seeded from v1's last snapshot, both passes."""
    results = tmp_path_factory.mktemp("accum-run") / "results"
    shutil.copytree(provider_run, results)
    swecl(results, "run", "--stage", "plugin-accum", "--source-memory", "1", "--sequence", SPANS, *first_of(1, SPANS),
          "--passes", "initial,retest", "--memory-server", server_memory_bin, *SERVER_OPTIONS, "--quiet", cache=cache,
          timeout=600)
    return results


def test_plugin_accum_starts_its_server_on_the_source_runs_last_snapshot(
    accum_run: Path, tmp_path: Path, cache: Path
) -> None:
    results = accum_run
    (finished,) = _stream_payloads(results, "run.finished", "run/2")
    assert finished[2]["status"] == "finished"
    # The seed is recorded: the source run, and which of its snapshots each sequence starts on.
    (last_source_snapshot,) = [(seq, p) for seq, _, p in _stream_payloads(results, "memory.provider.snapshot", "run/1/")
                               if p["order"] == TASKS]
    (seeded,) = _stream_payloads(results, "memory.seeded", "run/2")
    assert seeded[1] == "run/2" and seeded[2]["source_run"] == "1" and seeded[2]["item_count"] == 0
    assert seeded[2]["provider_snapshots"] == {SPANS: last_source_snapshot[0]}
    # The first task's recall already finds every task the source run wrote.
    tasks = first_tasks(SPANS, TASKS)
    calls = [p for *_, p in _stream_payloads(results, "memory.provider.called", "run/2/")]
    first_recall = next(c for c in calls if c["via"] == "recall")
    assert first_recall["instance_id"] == tasks[0] and not first_recall["is_error"]
    answer = _blob(results, first_recall["result"])
    assert all(iid in answer for iid in tasks)
    # This run's own snapshot holds the seed's entities (server-memory keeps the first
    # entity of a name: the task's write of an entity it already holds adds nothing).
    (own,) = [p for *_, p in _stream_payloads(results, "memory.provider.snapshot", "run/2/")]
    with Ledger.open(results / "ledger.db", readonly=True) as led:
        restore_server_data(led, [SnapshotFile(**f) for f in own["files"]], tmp_path / "own")
    lines = (tmp_path / "own" / "memory.jsonl").read_text().splitlines()
    assert [json.loads(line)["name"] for line in lines] == tasks
    assert swecl(results, "verify", cache=cache).returncode == 0
    # Replayed before its first task, the server's data is the seed it started on; its own
    # snapshot stored only the contents the source's snapshots did not hold already.
    exp = Experiment(results)
    report = exp.replay(version="2", upto_order=1, out_dir=tmp_path / "replay")
    cut = json.loads((tmp_path / "replay" / "replay.json").read_text())["provider"]["sequences"][SPANS]
    assert (cut["source"], cut["seq"]) == ("seed", last_source_snapshot[0])
    assert _entities(tmp_path / "replay" / "provider" / SPANS / "data") == tasks
    assert any("the snapshot it was seeded from" in line for line in report.lines())
    (row,) = exp.memory_snapshots(version="2").document()["snapshots"]
    source_blobs = {f["blob"]: f["size"] for f in last_source_snapshot[1]["files"]}
    assert row["new_bytes"] == sum(f["size"] for f in own["files"] if f["blob"] not in source_blobs)


def test_a_seed_that_is_no_memory_server_snapshot_is_refused_before_anything_is_written(
    provider_run: Path, tmp_path: Path, cache: Path, server_memory_bin: str
) -> None:
    results = tmp_path / "results"
    shutil.copytree(provider_run, results)
    swecl(results, "run", "--stage", "base", "--sequence", SPANS, *first_of(1, SPANS), "--quiet", cache=cache,
          timeout=600)  # run 2: no memory server
    head = len(events(results))
    for source, says in (("2", "run 2 is not a --memory-server run"),
                         ("9", "no run version '9'"),
                         ("1@3", "no memory server snapshot of sequence")):
        proc = swecl(results, "run", "--stage", "plugin-accum", "--source-memory", source, "--sequence", SPANS,
                     *first_of(1, SPANS), "--memory-server", server_memory_bin, *SERVER_OPTIONS, cache=cache,
                     check=False)
        assert proc.returncode != 0 and says in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
        assert len(events(results)) == head


def test_audit_flags_what_the_seed_gave_a_plugin_accum_task(accum_run: Path) -> None:
    first, second, third = first_tasks(SPANS, TASKS)
    exp = Experiment(accum_run)
    (recall,) = exp.audit("2", first, pass_="initial").audit.provider_recalls  # against the demo's gold tests
    # Its first recall returned what v1's three tasks wrote, attributed across the seed.
    assert [(w.run, w.instance_id) for w in recall.writes] == [("1", first), ("1", second), ("1", third)]
    kinds = {w.instance_id: [f.kind for f in w.flags if f.kind != "test-content"] for w in recall.writes}
    assert kinds == {first: ["same-instance"], second: ["later-task"], third: ["later-task"]}
    assert recall.test_content_checked and recall.unattributed > 0  # the graph's "relations": the server's own
    # Re-tested, the task gets its own v2 write (retention: unflagged) and still v1's (a seed: flagged).
    (retest,) = exp.audit("2", first, pass_="retest", no_dataset=True).audit.provider_recalls
    mine = [w for w in retest.writes if w.run == "2"]
    assert all(not w.flags for w in mine)
    assert [f.kind for w in retest.writes if w.run == "1" and w.instance_id == first for f in w.flags] == [
        "same-instance"]
    summary = exp.audit("2", summary=True, no_dataset=True).audit
    assert summary.provider_recalls == 2 and summary.by_kind["same-instance"] == 2
    assert summary.by_kind["later-task"] == 2 + 2  # v1's second and third tasks' writes, in both passes
    assert [(f.pass_, f.instance_id) for f in summary.flagged] == [("initial", first), ("retest", first)]
    # `swecl metrics`' leakage line counts them too.
    leakage = exp.metrics(versions=["2"]).leakage["2"]
    assert leakage is not None and leakage["by_kind"]["same-instance"] == 2
    assert leakage["flagged"] == summary.flagged_hits and leakage["recalled_items"] == summary.hits


# -- a server that dies mid-run ------------------------------------------------------------------

# Dies on its third call: the second task's recall (the first task recalled and wrote);
# the count is in its data directory, so restarted on the first task's snapshot it dies
# on the third task's recall again.
# Given inline (-c): a confined server sees no file under /tmp, where the test's files are.
DYING_SERVER = textwrap.dedent('''
    import os
    from pathlib import Path
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("dying", log_level="WARNING")
    calls = Path("calls")

    def count() -> None:
        n = int(calls.read_text()) + 1 if calls.exists() else 1
        calls.write_text(str(n))
        if n == 3:
            os._exit(3)

    async def search(query: str) -> str:
        count()
        return Path("notes").read_text() if Path("notes").exists() else ""

    async def remember(text: str) -> str:
        count()
        with open("notes", "a") as fh:
            fh.write(text + "\\n")
        return "ok"

    server.add_tool(search, name="search", description="find notes", structured_output=False)
    server.add_tool(remember, name="remember", description="keep a note", structured_output=False)
    server.run("stdio")
''')


def test_a_server_that_dies_mid_run_makes_the_tasks_infrastructure_and_the_run_ends(
    tmp_path: Path, cache: Path
) -> None:
    results = tmp_path / "results"
    swecl(results, "run", "--stage", "plugin-blank", "--sequence", SPANS, *FIRST, "--passes", "initial",
          "--memory-server", f"{sys.executable} -c {shlex.quote(DYING_SERVER)}", "--memory-recall-tool", "search",
          "--memory-write-tool", "remember", "--memory-write-args", '{"text": "{lesson}"}', "--quiet",
          cache=cache, timeout=600)
    (finished,) = _payloads(results, "run.finished")
    assert finished["status"] == "finished"
    first, second, third = first_tasks(SPANS, TASKS)
    grades = _grades(results)
    assert grades[("initial", first)] != "infra_error"
    assert grades[("initial", second)] == grades[("initial", third)] == "infra_error"  # never the agent's 0
    failed = {p["instance_id"]: p for p in _payloads(results, "grade.finished") if p["status"] == "infra_error"}
    assert all(p["resolved"] is None and "memory server" in p["error"] for p in failed.values())
    calls = _payloads(results, "memory.provider.called")
    # The third task ran on a fresh server (the dead one is not called again), its calls numbered anew.
    assert [(c["instance_id"], c["via"], c["call"], c["failure"]) for c in calls] == [
        (first, "recall", 1, None), (first, "write", 2, None), (second, "recall", 3, "crashed"),
        (third, "recall", 1, "crashed"),
    ]
    assert len(_payloads(results, "memory.provider.started")) == 2
    assert [s["instance_id"] for s in _payloads(results, "memory.provider.snapshot")] == [first]
    # The written lesson is the task's, test hunks dropped: it names the task and its outcome.
    lesson = json.loads(_blob(results, calls[1]["arguments"]))["text"]
    assert lesson.startswith("swecl-lesson ") and json.loads(lesson.split(" ", 1)[1])["instance_id"] == first
    # `swecl show` says which call failed and how: never a silent gap in the attempt's calls.
    (crashed,) = Experiment(results).show("1", second).shown.provider_calls
    assert (crashed.call, crashed.via, crashed.failure) == (3, "recall", "crashed")
    assert "#3 search by swecl's recall: FAILED (crashed: " in swecl(results, "show", "1", second, cache=cache).stdout
    assert [c.failure for c in Experiment(results).show("1", third).shown.provider_calls] == ["crashed"]


# -- a server whose one data file is large: stored in chunks -----------------------------------

# Keeps its graph in one file of some 700 KB (above the chunking threshold), seeded on its
# first start, and inserts each note in the middle, as server-memory's rewrite puts a new
# entity before the relations. Given inline (-c), as the dying server is.
BIG_FILE_SERVER = textwrap.dedent('''
    import json, random
    from pathlib import Path
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("big-file", log_level="WARNING")
    graph = Path("graph.jsonl")
    if not graph.exists():
        rng = random.Random(11)
        words = ["".join(rng.choice("abcdefghijklmnop") for _ in range(rng.randint(2, 9))) for _ in range(500)]
        graph.write_text("".join(json.dumps({"type": "relation", "from": f"n{i}", "to": f"n{i + 1}",
                                             "note": " ".join(rng.choices(words, k=20))}) + "\\n"
                                 for i in range(5000)))

    async def search(query: str) -> str:
        return "".join(line for line in graph.open() if "swecl-lesson" in line)

    async def remember(text: str) -> str:
        lines = graph.read_text().splitlines(keepends=True)
        middle = len(lines) // 2
        graph.write_text("".join(lines[:middle] + [json.dumps({"type": "entity", "note": text}) + "\\n"]
                                 + lines[middle:]))
        return "ok"

    server.add_tool(search, name="search", description="find notes", structured_output=False)
    server.add_tool(remember, name="remember", description="keep a note", structured_output=False)
    server.run("stdio")
''')


def test_a_large_server_file_is_snapshotted_in_chunks_and_replayed_byte_for_byte(
    tmp_path: Path, cache: Path
) -> None:
    results = tmp_path / "results"
    first, second = first_tasks(SPANS, 2)
    swecl(results, "run", "--stage", "plugin-blank", "--sequence", SPANS, *first_of(2, SPANS), "--passes", "initial",
          "--memory-server", f"{sys.executable} -c {shlex.quote(BIG_FILE_SERVER)}", "--memory-recall-tool", "search",
          "--memory-write-tool", "remember", "--memory-write-args", '{"text": "{lesson}"}', "--quiet",
          cache=cache, timeout=600)
    snaps = _payloads(results, "memory.provider.snapshot")
    assert [s["instance_id"] for s in snaps] == [first, second]
    for snap in snaps:
        (entry,) = snap["files"]
        assert entry["path"] == "graph.jsonl" and entry["blob"] is None and len(entry["chunks"]) > 5
        assert sum(size for _, size in entry["chunks"]) == entry["size"] > SNAPSHOT_CHUNK_ABOVE
    # The second task's note went in mid-file: its snapshot stored a few chunks, not the file.
    exp = Experiment(results)
    rows = exp.memory_snapshots(version="1").document()["snapshots"]
    assert rows[0]["new_bytes"] == rows[0]["total_bytes"]
    assert 0 < rows[1]["new_bytes"] < rows[1]["total_bytes"] // 4
    assert exp.verify().ok

    (sequence,) = (p.name for p in (results / "v1" / "_provider").iterdir())
    live = results / "v1" / "_provider" / sequence / "initial" / "data" / "graph.jsonl"
    exp.replay(version="1", upto_order=3, out_dir=tmp_path / "k3")
    assert (tmp_path / "k3" / "provider" / sequence / "data" / "graph.jsonl").read_bytes() == live.read_bytes()
    exp.replay(version="1", upto_order=2, out_dir=tmp_path / "k2")
    after_first = (tmp_path / "k2" / "provider" / sequence / "data" / "graph.jsonl").read_text()
    assert first in after_first and second not in after_first and second in live.read_text()
