"""`swecl run --fork V@K`, in-process through the core: the fork's initial pass takes V's
tasks before K as they were (referenced by `run.forked`, not re-run), its memory starts as
V's stood before K, and every read of it (metrics, compare, replay, show) sees the whole
sequence; the refusals say so in one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from commands import Experiment
from commands.run import QuietReporter
from ledger import SweclError
from tests.run.support import SPANS, demo_tasks, events, swecl, swecl_json
from tests.shared_runs import demo_run_copy

K = 3


def _fork(root: Path, spec: str, **given: Any) -> str:
    done = Experiment(root).fork(spec, QuietReporter(), **given)
    (report,) = done.reports
    assert report.status == "finished", report.error
    return report.version


@pytest.fixture(scope="module")
def forked(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    """The shared plugin-blank spans run (initial pass, version `ref`), forked at K with
    its own options (version 1), and that fork forked again at K + 1 (version 2)."""
    root = demo_run_copy(tmp_path_factory, cache, "ref-initial")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SWECL_CACHE", str(cache))
        assert _fork(root, f"ref@{K}") == "1"
        assert _fork(root, f"1@{K + 1}") == "2"
    return root


def _recalls(root: Path, version: str) -> dict[int, list[tuple[str, float, int]]]:
    out = {}
    for _, stream, _, ev in events(root, "memory.recalled"):
        if stream.startswith(f"run/{version}/") and ev["pass"] == "initial":
            out[ev["order"]] = [(h["item_id"], h["score"], h["rank"]) for h in ev["results"]]
    return out


def test_a_fork_references_the_tasks_before_k_and_runs_the_rest(forked: Path) -> None:
    n = demo_tasks(SPANS)
    (fork_ev,) = [e for e in events(forked, "run.forked") if e[1] == "run/1"]
    assert (fork_ev[3]["source_run"], fork_ev[3]["order"]) == ("ref", K)
    started = [e[3]["order"] for e in events(forked, "task.started") if e[1].startswith("run/1/")]
    assert started == list(range(K, n + 1))  # nothing before K re-run
    (seed,) = [e[3] for e in events(forked, "memory.seeded") if e[1] == "run/1"]
    assert (seed["source_run"], seed["chosen"]) == ("ref", "fork")
    # The memory task K recalled is what ref's held before K: the same recall, exactly.
    assert _recalls(forked, "1")[K] == _recalls(forked, "ref")[K]


def test_the_metrics_of_a_fork_with_the_same_options_are_its_sources(forked: Path, cache: Path) -> None:
    import msgspec

    found = {vm.run.version: vm for vm in Experiment(forked).run_summary(["ref", "1", "2"]).found}
    inputs = {v: vm.outcomes.to_metric_inputs() for v, vm in found.items()}
    assert inputs["1"] == inputs["ref"] == inputs["2"]  # every task of the sequence, K..N the fork's own
    results = {v: msgspec.to_builtins(vm.result) for v, vm in found.items()}
    assert results["1"] == results["ref"] == results["2"]


def test_comparing_a_fork_with_its_source_pairs_the_tasks_from_k(forked: Path, cache: Path) -> None:
    n = demo_tasks(SPANS)
    doc = swecl_json(forked, "compare", "ref", "1", cache=cache)
    assert doc["paired_from"] == K
    assert any(f"from order {K}" in note for note in doc["notes"])
    (seq,) = doc["sequences"].values()
    # Two forks of one run: paired from where they part (the smaller K).
    assert swecl_json(forked, "compare", "1", "2", cache=cache)["paired_from"] == K + 1
    assert swecl_json(forked, "compare", "ref", "2", cache=cache)["paired_from"] == K
    assert n > K


def test_replay_of_a_fork_before_k_is_its_sources(forked: Path, cache: Path, tmp_path: Path) -> None:
    # Before K the fork is its source: the same cells, metrics and memory items.
    for v in ("ref", "1"):
        swecl(forked, "replay", v, "--as-of-order", str(K), "--out", str(tmp_path / v), cache=cache)
    assert (tmp_path / "1" / "outcomes.csv").read_bytes() == (tmp_path / "ref" / "outcomes.csv").read_bytes()
    metrics = {v: json.loads((tmp_path / v / "metrics.json").read_text()) for v in ("ref", "1")}
    assert {k: x for k, x in metrics["1"].items() if k != "version"} == \
        {k: x for k, x in metrics["ref"].items() if k != "version"}
    items = {v: json.loads((tmp_path / v / "_memory" / "items.json").read_text()) for v in ("ref", "1")}
    ids = {v: sorted(i["item_id"] for i in (doc["items"] if isinstance(doc, dict) else doc)) for v, doc in items.items()}
    assert ids["1"] == ids["ref"] and ids["1"]


def test_dream_at_fork_dreams_before_task_k(forked: Path, cache: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    root = tmp_path / "results"
    shutil.copytree(forked, root)
    monkeypatch.setenv("SWECL_CACHE", str(cache))
    n = demo_tasks(SPANS)
    version = _fork(root, f"ref@{n}", dream_at_fork=True)  # the last task: one task to run
    mine = [e for e in events(root) if e[1] == f"run/{version}" or e[1].startswith(f"run/{version}/")]
    kinds = [e[2] for e in mine]
    assert kinds.index("dream.started") < kinds.index("dream.finished") < kinds.index("task.started")
    assert [e[3]["reason"] for e in mine if e[2] == "dream.started"] == ["fork"]
    assert [e[3]["order"] for e in mine if e[2] == "task.started"] == [n]
    # Into plugin-dreamed, a fork is dreamed only when asked: its source's memory as it stood.
    version = _fork(root, f"ref@{n}", stage="plugin-dreamed")
    assert not [e for e in events(root, "dream.started") if e[1] == f"run/{version}"]
    assert _recalls(root, version)[n] == _recalls(root, "ref")[n]


@pytest.mark.parametrize(("spec", "given", "message"), [
    ("nope@2", {}, "no run version 'nope'"),
    ("ref@1", {}, "K must be within 2.."),
    ("ref@99", {}, "K must be within 2.."),
    ("ref", {}, "give VERSION@K"),
    ("ref@2", {"orders": 2}, "drop --orders"),
    ("ref@2", {"sequences": [SPANS]}, "drop --sequence"),
    ("ref@2", {"repeat": 2}, "drop --repeat"),
    ("ref@2", {"stage": "builtin"}, "builtin"),
])
def test_a_fork_is_refused_in_one_line(forked: Path, spec: str, given: dict, message: str) -> None:
    with pytest.raises(SweclError, match=message.replace("(", r"\(")) as err:
        Experiment(forked).fork(spec, QuietReporter(), **given)
    assert "\n" not in str(err.value)


def test_a_run_not_finished_up_to_k_is_not_forked(forked: Path, cache: Path, tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "results"
    shutil.copytree(forked, root)
    # Killed as its second task finishes: task 2 may be recorded, task 3 never is.
    swecl(root, "run", "--stage", "plugin-blank", "--sequence", SPANS, "--passes", "initial", "--version", "cut",
          "--quiet", cache=cache, env={"SWECL_FAILPOINTS": "task.finished:2"}, check=False)
    with pytest.raises(SweclError, match="has not finished initial task"):
        Experiment(root).fork("cut@4", QuietReporter())
    out = swecl(root, "run", "--fork", "cut@4", cache=cache, check=False)
    assert out.returncode != 0 and out.stderr.strip().count("\n") == 0 and "has not finished" in out.stderr


def test_show_and_audit_of_a_fork_see_its_tasks_before_k(forked: Path, cache: Path) -> None:
    first = next(e[3]["instance_id"] for e in events(forked, "task.started") if e[1].startswith("run/ref/"))
    shown = Experiment(forked).show("1", first)
    assert shown is not None
    assert first in swecl(forked, "audit", "1", first, cache=cache).stdout


def test_materialising_every_run_rebuilds_a_forks_memory_as_that_run_alone(forked: Path, tmp_path: Path) -> None:
    # `--all` reads the ledger once for every run, but a fork's memory is cut per sequence:
    # its folder must be what materialising that one version gives.
    every = {r.memory_dir.parent.name: r for r in Experiment(forked).materialise(every=True)}
    (alone,) = Experiment(forked).materialise(version="2")
    assert (every["v2"].live_items, every["v2"].total_items) == (alone.live_items, alone.total_items)
    assert alone.total_items > 0 and alone.changed == ()  # the same bytes: nothing left to rewrite


def test_the_report_and_export_of_a_fork_cover_its_tasks_before_k(forked: Path, tmp_path: Path) -> None:
    from projections.report import collect

    n = demo_tasks(SPANS)
    exp = Experiment(forked)
    with exp.reading() as r:
        data = collect(r.ledger, r.projector, ["ref", "1"])
    rows = {vr.run.version: {row.order: row for row in vr.sequences[SPANS].tasks} for vr in data.versions}
    for order in range(1, K):  # the very recall events of ref's tasks before K, referenced
        assert rows["1"][order].recalls and rows["1"][order].recalls == rows["ref"][order].recalls
    assert all(rows["1"][order].recalls for order in range(K, n + 1))
    # The events dump: ref's task events before K (in ref's streams), the fork's own from K.
    exp.export(version="1", fmt="events", out=str(tmp_path / "events.jsonl"))
    dumped = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    started = {(d["stream"].split("/")[1], d["payload"]["order"]) for d in dumped if d["type"] == "task.started"}
    assert started == {("ref", o) for o in range(1, K)} | {("1", o) for o in range(K, n + 1)}
    assert [d["seq"] for d in dumped] == sorted(d["seq"] for d in dumped)
    # Predictions: every task of the sequence, the same patches as ref's (the same options).
    for v in ("ref", "1"):
        report = exp.export(version=v, fmt="predictions", out=str(tmp_path / f"{v}.jsonl"))
        assert report.missing == () and report.rows == n
    patches = {v: [(p["instance_id"], p["model_patch"]) for p in map(json.loads, (tmp_path / f"{v}.jsonl").open())]
               for v in ("ref", "1")}
    assert patches["1"] == patches["ref"]


def test_a_ttl_written_before_k_expires_in_the_fork_at_the_task_it_would_in_its_source(
    forked: Path, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    from commands.memory import export_memory
    from ledger import Ledger
    from projections import sequence_cutoffs
    from tests.run.support import first_of

    root = tmp_path / "results"
    shutil.copytree(forked, root)
    # ref's lessons of its first task, each to live three tasks of the sequence.
    with Ledger.open(root / "ledger.db", readonly=True) as led:
        export_memory(led, "ref", tmp_path / "seed", upto=sequence_cutoffs(led, "ref", 2)[SPANS] - 1)
    doc = json.loads((tmp_path / "seed" / "items.json").read_text())
    for item in doc["items"]:
        item["ttl_tasks"] = 3
    (tmp_path / "seed" / "items.json").write_text(json.dumps(doc))
    lasting = {item["item_id"] for item in doc["items"]}
    assert lasting
    # v ttl: four tasks, the items imported before its first (ages 1..4: gone at task 4).
    swecl(root, "run", "--stage", "plugin-accum", "--source-memory", str(tmp_path / "seed"), "--sequence", SPANS,
          *first_of(4, SPANS), "--passes", "initial", "--version", "ttl", "--quiet", cache=cache)
    monkeypatch.setenv("SWECL_CACHE", str(cache))
    fork = _fork(root, f"ttl@{K}")
    recalled = {v: {o: {i for i, _, _ in hits} & lasting for o, hits in _recalls(root, v).items()}
                for v in ("ttl", fork)}
    assert recalled["ttl"][K] and recalled["ttl"][K + 1] == set()  # the source: alive at K = 3, gone at 4
    assert recalled[fork][K] == recalled["ttl"][K] and recalled[fork][K + 1] == set()
    assert _recalls(root, fork)[K] == _recalls(root, "ttl")[K]  # task K recalled exactly what ttl's did
