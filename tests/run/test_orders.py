"""`swecl run --order` / `--orders N` on the demo benchmark, through the core in-process:
the order is recorded in run.started (the spec and the plan), every task event follows it,
the metrics read it from the ledger, `--orders N` is one group whose `--group` view gives
each metric's spread, and a bad order FILE is refused in one line before anything is claimed."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from commands import Experiment
from commands.inputs import demo_benchmark, find_sequence
from commands.run import QuietReporter, RunOptions
from commands.run._order import ordered
from ledger import SweclError
from tests.run.support import SPANS, events, first_tasks, swecl, swecl_json

TASKS = first_tasks(SPANS, 3)


@pytest.fixture(scope="module")
def two_orders(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    """plugin-blank over spans' first three tasks, initial pass, `--orders 2`: runs 1 and 2."""
    root = tmp_path_factory.mktemp("orders") / "results"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SWECL_CACHE", str(cache))
        opts = RunOptions(stage="plugin-blank", sequences=[SPANS], instances=TASKS, passes=["initial"], orders=2)
        done = Experiment(root).run(opts, QuietReporter())
    assert done.versions == ["1", "2"] and done.grouped
    assert [r.status for r in done.reports] == ["finished", "finished"]
    return root


def _shuffled(seed: int) -> list[str]:
    """permute:SEED as documented: the tasks shuffled by random.Random(f"{SEED}/{sequence id}")."""
    ids = list(TASKS)
    random.Random(f"{seed}/{SPANS}").shuffle(ids)
    return ids


def test_each_order_is_recorded_and_every_task_event_follows_it(two_orders: Path) -> None:
    started = {e[1]: e[3] for e in events(two_orders, "run.started")}
    for version, seed in (("1", 1), ("2", 2)):
        ev = started[f"run/{version}"]
        assert ev["task_order"] == f"permute:{seed}" and ev["config"]["orders"] == 2
        assert (ev["repeat_group"], ev["repeat_index"], ev["repeat_count"]) == ("1", seed, 2)
        plan = [(t["instance_id"], t["order"]) for t in ev["tasks"][SPANS]]
        assert plan == [(iid, k) for k, iid in enumerate(_shuffled(seed), start=1)]
        ran = [(e[3]["instance_id"], e[3]["order"]) for e in events(two_orders, "task.started")
               if e[1].startswith(f"run/{version}/")]
        assert ran == plan  # the initial pass ran t1..tN of the plan, in that order


def test_the_metrics_follow_the_order_of_the_run(two_orders: Path, cache: Path) -> None:
    doc = swecl_json(two_orders, "metrics", cache=cache)
    for entry, seed in zip(doc["versions"], (1, 2), strict=True):
        assert entry["order"] == f"permute:{seed}" and entry["plan"] == {SPANS: _shuffled(seed)}
    resolved = {(e[1].split("/")[1], e[3]["instance_id"]): e[3]["resolved"]
                for e in events(two_orders, "task.finished")}
    for vm in Experiment(two_orders).metrics().found:
        # a(i,i) is indexed by the run's order: task i of the vector is the plan's i-th task
        expected = [int(resolved[(vm.run.version, iid)]) for iid in _shuffled(int(vm.run.version))]
        assert vm.outcomes.vector(SPANS, "initial") == expected
        (inputs,) = vm.outcomes.to_metric_inputs()
        assert inputs.initial == expected


def test_runs_say_each_runs_order(two_orders: Path, cache: Path) -> None:
    assert [(r["version"], r["order"]) for r in swecl_json(two_orders, "runs", cache=cache)] == [
        ("1", "permute:1"), ("2", "permute:2")]
    table = swecl(two_orders, "runs", cache=cache, env={"COLUMNS": "300"}).stdout
    assert "spans (order permute:1)" in table and "spans (order permute:2)" in table
    page = Experiment(two_orders).view(log_error=print).respond("/").body.decode()  # and the view's runs page
    assert 'data-order="permute:1"' in page and 'data-order="permute:2"' in page


def test_orders_are_one_group_with_each_metrics_spread(two_orders: Path, cache: Path) -> None:
    grouped = swecl_json(two_orders, "metrics", "--group", cache=cache)
    (group,) = grouped["groups"]
    assert group["versions"] == ["1", "2"] and group["orders"] == ["permute:1", "permute:2"]
    metrics = swecl_json(two_orders, "metrics", cache=cache)
    rates = [v["resolved"][SPANS]["resolved"] / 3 for v in metrics["versions"]]
    rate = group["sequences"][SPANS]["metrics"]["resolved_rate"]
    assert rate["values"] == rates and (rate["min"], rate["max"]) == (min(rates), max(rates))
    low, high = rate["bootstrap_ci"]
    assert min(rates) <= low <= sum(rates) / 2 <= high <= max(rates)
    for metric, value in group["macro"].items():
        defined = [v for v in value["values"] if v is not None]
        assert (value["min"], value["max"]) == ((min(defined), max(defined)) if defined else (None, None)), metric
    out = swecl(two_orders, "metrics", "--group", cache=cache).stdout
    assert "macro min-max over its orders permute:1, permute:2" in " ".join(out.split())


def test_reverse_and_a_file_give_their_order_renumbered(tmp_path: Path) -> None:
    spans = find_sequence(demo_benchmark(materialise=False), SPANS)
    ids = [t.instance_id for t in spans.tasks]
    (reversed_,) = ordered([spans], "reverse")
    assert [(t.instance_id, t.order) for t in reversed_.tasks] == list(zip(ids[::-1], range(1, len(ids) + 1)))
    given = ids[1:] + ids[:1]
    for text in (json.dumps(given), "\n".join(given) + "\n"):
        (tmp_path / "order").write_text(text)
        (from_file,) = ordered([spans], str(tmp_path / "order"))
        assert [t.instance_id for t in from_file.tasks] == given
        assert [t.order for t in from_file.tasks] == list(range(1, len(ids) + 1))


@pytest.mark.parametrize(("listed", "says"), [
    (lambda ids: ids[:-1], "missing; the file must list every task run, each once"),
    (lambda ids: [*ids, ids[0]], "is listed twice; each task once"),
    (lambda ids: [*ids[:-1], "nobody__nothing-1"], "nobody__nothing-1 is not a task of the sequences run"),
    (lambda ids: {SPANS: ids}, "a JSON list of instance ids (strings) is expected"),
])
def test_a_bad_order_file_is_refused_in_one_line_before_a_run_is_claimed(
        tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch, listed, says: str) -> None:
    order = tmp_path / "order.json"
    order.write_text(json.dumps(listed(list(TASKS))))
    monkeypatch.setenv("SWECL_CACHE", str(cache))
    opts = RunOptions(stage="base", sequences=[SPANS], instances=TASKS, passes=["initial"], order=str(order))
    with pytest.raises(SweclError) as caught:
        Experiment(tmp_path / "results").run(opts, QuietReporter())
    message = str(caught.value)
    assert message.startswith(f"--order {order}: ") and says in message and "\n" not in message
    assert not (tmp_path / "results" / "ledger.db").exists()


def test_the_cli_refuses_a_bad_order_in_one_line(tmp_path: Path, cache: Path) -> None:
    proc = swecl(tmp_path, "run", "--stage", "base", "--sequence", SPANS, "--order", "permute:x", cache=cache,
                 check=False)
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines() == [
        "swecl: error: --order 'permute:x': give permute:SEED with SEED a non-negative integer"]


def test_an_ordered_run_killed_midway_resumes_in_its_order(tmp_path: Path, cache: Path, two_orders: Path) -> None:
    """Killed in the middle of its 2nd task (SIGKILL, the real CLI), an ordered plugin run
    resumes in the order it recorded, not the dataset's nor a new shuffle, redoes that
    task and ends with the outcomes (and the memory each task saw) of the same order run
    uninterrupted (run 2 of `two_orders`, permute:2)."""
    assert _shuffled(2) not in (list(TASKS), list(TASKS)[::-1])  # neither the dataset's order nor its reverse
    root = tmp_path / "results"
    killed = swecl(root, "run", "--stage", "plugin-blank", "--sequence", SPANS,
                   *[a for iid in TASKS for a in ("--instance", iid)], "--passes", "initial",
                   "--order", "permute:2", "--version", "o", "--quiet",
                   cache=cache, env={"SWECL_FAILPOINTS": "agent.finished:2"}, check=False)
    assert killed.returncode == -9, killed.stderr
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SWECL_CACHE", str(cache))
        assert [r.status for r in Experiment(root).resume("o", QuietReporter()).reports] == ["finished"]
    plan = [(iid, k) for k, iid in enumerate(_shuffled(2), start=1)]

    def of(results: Path, version: str, kind: str) -> list[dict]:
        return [p for _, stream, _, p in events(results, kind) if stream.startswith(f"run/{version}/")]

    def cells(results: Path, version: str, kind: str) -> list[tuple[str, int]]:
        return [(p["instance_id"], p["order"]) for p in of(results, version, kind)]

    assert cells(root, "o", "task.started") == [plan[0], plan[1], plan[1], plan[2]]  # the 2nd again, then the 3rd
    assert cells(root, "o", "task.abandoned") == [plan[1]]
    assert cells(root, "o", "task.finished") == cells(two_orders, "2", "task.finished") == plan

    def outcomes(results: Path, version: str) -> list[tuple]:
        return [(p["instance_id"], p["order"], p["status"], p["resolved"]) for p in of(results, version, "task.finished")]

    def recalled(results: Path, version: str) -> list[tuple]:
        """What each finished attempt recalled: the lessons, by the task they came from."""
        source = {p["item_id"]: p["source_instance"] for p in of(results, version, "memory.written")}
        finished = {(p["order"], p["attempt"]) for p in of(results, version, "task.finished")}
        return [(p["order"], tuple(source.get(h["item_id"]) for h in p["results"]))
                for p in of(results, version, "memory.recalled") if (p["order"], p["attempt"]) in finished]

    assert outcomes(root, "o") == outcomes(two_orders, "2")
    assert recalled(root, "o") == recalled(two_orders, "2") and any(hits for _, hits in recalled(root, "o"))
