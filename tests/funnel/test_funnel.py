"""The memory funnel (`projections.funnel`, `swecl funnel`): on real demo runs (plugin-blank
and base over the same tasks, initial pass), and on a ledger built through the real append
API with one task for each label and each override."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import msgspec
import pytest

import ledger.events
from bench.ledgers import LedgerBuilder
from bench.processes import SPANS, TEXTKIT
from commands.inputs.demo._build import demo_benchmark
from ledger import Ledger
from ledger._codec import decode_payload
from ledger.events import CounterfactualFinished, CounterfactualStarted, MemoryPruned, RunStarted, TaskRef
from projections.funnel import (
    LABELS,
    NO_DEPENDENCIES,
    NO_DEPENDENCY,
    NO_MEMORY,
    RETRIEVAL_GAP,
    STORAGE_GAP,
    USE_GAP,
    RunFunnel,
    format_funnel_difference,
    funnel,
    funnel_difference,
    funnel_difference_document,
    funnel_table_lines,
)
from tests.audit.crafted import diff_of
from tests.inprocess import swecl
from tests.run.support import first_of, first_tasks

pytestmark = pytest.mark.slow

TEXTKIT_TASKS = first_tasks(TEXTKIT, 6)  # 23: no dependency, 41: a decoy the memory leads astray (use gap)
STORAGE = "swecl-demo__spans-19"  # its dependency spans-8 is not in the run: nothing stored
RUN_ARGS = ("--sequence", TEXTKIT, "--sequence", SPANS, *(a for t in [*TEXTKIT_TASKS, STORAGE] for a in ("--instance", t)),
            "--passes", "initial", "--quiet")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    results = tmp_path_factory.mktemp("funnel") / "results"
    swecl(results, "run", "--stage", "plugin-blank", "--version", "1", *RUN_ARGS, cache=cache)
    swecl(results, "run", "--stage", "base", "--version", "2", *RUN_ARGS, cache=cache)
    return results


def _funnel(results: Path, version: str) -> RunFunnel:
    with Ledger.open(results / "ledger.db", readonly=True) as led:
        return funnel(led, version)


def _consistent(f: RunFunnel) -> None:
    """Every unresolved task that ran has exactly the label its booleans say; the counts add up."""
    for s in f.sequences:
        for t in s.tasks:
            assert not (t.retrieved and not t.stored) and not (t.used and not t.retrieved)
            if t.attempt is None or t.resolved:
                assert t.label is None
            elif not t.dependencies:
                assert t.label == NO_DEPENDENCY
            else:
                assert t.label == (STORAGE_GAP if not t.stored else RETRIEVAL_GAP if not t.retrieved else USE_GAP)
        c = s.counts
        ran = [t for t in s.tasks if t.attempt is not None]
        assert c.ran == len(ran) and sum(c.labels.values()) + sum(t.resolved for t in ran) == c.ran
        assert c.with_deps == sum(1 for t in ran if t.dependencies)
        assert c.with_deps >= c.stored >= c.retrieved >= c.used
        assert set(c.labels) == set(LABELS)
    assert f.macro is not None
    assert f.macro.counts.ran == sum(s.counts.ran for s in f.sequences)


def test_the_plan_records_the_datasets_dependencies(demo: Path) -> None:
    want = {t.instance_id: list(t.dependencies) for s in demo_benchmark(materialise=False).sequences for t in s.tasks}
    with Ledger.open(demo / "ledger.db", readonly=True) as led:
        started = next(led.read_stream("run/1")).event
    refs = [t for plan in started.tasks.values() for t in plan]
    assert refs and all(t.dependencies == want[t.instance_id] for t in refs)


def test_a_blank_runs_funnel_labels_every_unresolved_task(demo: Path) -> None:
    f = _funnel(demo, "1")
    assert f.na is None and f.memory == "substrate"
    _consistent(f)
    by_id = {t.instance_id: t for s in f.sequences for t in s.tasks}
    assert by_id["swecl-demo__textkit-23"].label == NO_DEPENDENCY
    decoy = by_id["swecl-demo__textkit-41"]
    assert decoy.label == USE_GAP and decoy.used and decoy.used_by == "patch"
    assert {s.instance_id for s in decoy.retrieved_from} <= set(decoy.dependencies)
    assert all(s.kind == "item" for s in decoy.stored_from + decoy.retrieved_from)
    assert by_id[STORAGE].label == STORAGE_GAP and not by_id[STORAGE].stored_from
    recurrence = by_id["swecl-demo__textkit-30"]  # the fix of task 11 recalled and reused
    assert recurrence.resolved and recurrence.label is None and recurrence.used
    lines = funnel_table_lines(f)
    # sequences by their short names (`textkit`), as a task's SEQ#ORDER names them
    assert all(len(line) <= 100 for line in lines) and any(line.startswith("textkit ") for line in lines)


def test_a_base_run_has_no_funnel_and_says_why(demo: Path, cache: Path) -> None:
    f = _funnel(demo, "2")
    assert f.na == NO_MEMORY and f.sequences == [] and f.macro is None
    out = swecl(demo, "funnel", "2", cache=cache)
    assert "no funnel: a run without memory" in out.stdout


def test_swecl_funnel_json_is_the_projection_and_an_unknown_version_is_one_line(demo: Path, cache: Path) -> None:
    out = swecl(demo, "funnel", "1", "--json", cache=cache)
    assert json.loads(out.stdout) == msgspec.to_builtins(_funnel(demo, "1"))
    text = swecl(demo, "funnel", "1", cache=cache).stdout
    assert "\nmacro " in text and "rates the mean" in text and all(len(line) <= 100 for line in text.splitlines())
    bad = swecl(demo, "funnel", "nope", cache=cache, check=False)
    assert bad.returncode != 0 and len(bad.stderr.strip().splitlines()) == 1


def test_the_funnel_is_the_same_without_any_projection_state(demo: Path, cache: Path, tmp_path: Path) -> None:
    before = _funnel(demo, "1")
    copy = shutil.copytree(demo, tmp_path / "copy", symlinks=True)
    swecl(copy, "report", "--out", str(tmp_path / "warm"), cache=cache)  # caches and checkpoints written
    for path in copy.iterdir():
        if path.name.startswith("projections.db") or path.name.startswith("v"):
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    assert _funnel(copy, "1") == before


def test_the_difference_of_base_and_blank(demo: Path) -> None:
    base, blank = _funnel(demo, "2"), _funnel(demo, "1")
    diff = funnel_difference(base, blank)
    assert diff.na is not None and "v2" in diff.na and diff.labels == []
    assert "no comparison" in format_funnel_difference(diff)[1]
    same = funnel_difference(blank, blank)
    assert same.na is None and same.changed == [] and all(d.difference == 0 for d in same.labels)
    assert sum(d.a for d in same.labels) == sum(s.counts.ran for s in blank.sequences)


def test_swecl_compare_ends_with_the_funnels_side_by_side(demo: Path, cache: Path) -> None:
    out = swecl(demo, "compare", "2", "1", cache=cache).stdout
    tail = out.split("memory funnel, v2 -> v1 (initial pass)\n", 1)[1]
    assert tail.startswith("no comparison: v2: a run without memory") and max(map(len, tail.splitlines())) <= 100
    doc = json.loads(swecl(demo, "compare", "2", "1", "--json", cache=cache).stdout)
    assert doc["funnel"]["a"] == "2" and doc["funnel"]["b"] == "1" and doc["funnel"]["na"].startswith("v2: ")


def test_swecl_show_prints_the_tasks_funnel_label(demo: Path, cache: Path) -> None:
    out = swecl(demo, "show", "1", "swecl-demo__textkit-41", cache=cache).stdout
    section = out.split("== memory funnel", 1)[1]
    assert "label: use gap" in section and "swecl-demo__textkit-11" in section
    assert "no funnel: a run without memory" in swecl(demo, "show", "2", STORAGE, cache=cache).stdout
    doc = json.loads(swecl(demo, "show", "1", "swecl-demo__textkit-41", "--json", cache=cache).stdout)
    assert doc["funnel"]["label"] == "use gap" and doc["funnel"] == msgspec.to_builtins(
        _funnel(demo, "1").task("swecl-demo__textkit-41"))
    base = json.loads(swecl(demo, "show", "2", STORAGE, "--json", cache=cache).stdout)
    assert base["funnel"]["na"].startswith("a run without memory")


def test_the_report_and_the_view_show_the_funnel(demo: Path, tmp_path: Path) -> None:
    from commands import Experiment
    from projections.report._funnel import funnel_table

    report = Experiment(demo).report(out_dir=tmp_path / "report")
    page = report.index.read_text(encoding="utf-8")
    assert '<section id="funnel" data-funnel=""' in page
    assert 'data-funnel-version="1"' in page and "data-funnel-chart" in page
    assert 'data-funnel-row="swecl-demo_textkit_sequence"' in page and "data-funnel-na" in page
    assert any(p.name.startswith("funnel-1-") for p in (tmp_path / "report" / "plots").iterdir())
    assert 'data-step="use gap" data-value="1"' in funnel_table(_funnel(demo, "1"))



def test_two_runs_funnels_side_by_side_in_the_report_and_the_view(demo: Path, cache: Path) -> None:
    from projections.report._funnel import funnels_compared
    from tests.cli.test_view import get, serving

    blank, base = _funnel(demo, "1"), _funnel(demo, "2")
    assert funnels_compared([("1", "plugin-blank v1", blank), ("2", "base v2", base)]) == ""  # one funnel: nothing to set beside
    both = funnels_compared([("1", "plugin-blank v1", blank), ("1b", "plugin-blank again", blank)])
    assert "data-funnels-side-by-side" in both and both.count("<svg") == 1
    bars = re.findall(r'<rect data-run="([^"]+)" data-step="use gap" data-value="(\d+)"', both)
    assert bars == [("1", "1"), ("1b", "1")]
    assert both.count('data-funnel-row="plugin-blank') == 2
    with serving(demo, cache) as (base_url, _):
        status, _, page = get(base_url + "/funnels")
        assert status == 200 and "Fewer than two runs have a funnel" in page
        assert "Runs without a funnel" in page and "a run without memory" in page
        status, _, run = get(base_url + "/run/1")
        assert status == 200 and "data-funnel-svg" in run and 'href="/funnels"' in run
        assert 'title="textkit#1 swecl-demo__textkit-11"' in run  # a task named as every output names it


# -- a ledger built event by event: each label, the live-item rule and the override -------------------

REPO, SEQ = "acme/widgets", "acme_widgets_sequence"
CORE = diff_of("widgets/core.py", " def frobnicate(n):", "-    return n", "+    return n * 2")
TEXT = diff_of("widgets/text.py", " def label(x):", "-    return str(x)", "+    return f'{x} frobs'")


def _ref(n: int, deps: list[int] | list[str]) -> TaskRef:
    return TaskRef(f"acme__widgets-{n}", n, REPO, 1,
                   [d if isinstance(d, str) else f"acme__widgets-{d}" for d in deps])


PLAN = [_ref(1, []), _ref(2, [1]), _ref(3, [1]), _ref(4, [1, 2]), _ref(5, ["acme__widgets-99"]), _ref(6, [1]),
        _ref(7, [1])]


def _crafted(path: Path, *, retrieve_in_2: bool = False) -> Path:
    r = LedgerBuilder(Ledger.open(path, create=True))
    r.start_run("1", stage="plugin-blank", plan={SEQ: PLAN}, passes=["initial"])
    r.pass_mark("1", SEQ, "initial", "started")
    first = r.item("1", SEQ, 1, "v1-1", patch=CORE, files=["widgets/core.py"], symbols=["frobnicate"], outcome="unresolved")
    r.task("1", SEQ, 1, status="unresolved", patch=CORE, write=first)  # no dependency
    r.task("1", SEQ, 2, status="unresolved", patch=TEXT, recalls=[["v1-1"]] if retrieve_in_2 else [])  # retrieval gap
    r.task("1", SEQ, 3, status="unresolved", patch=CORE, recalls=[["v1-1"]])  # use gap, used
    r.task("1", SEQ, 4, status="unresolved", patch=TEXT, recalls=[["v1-1"]])  # use gap, not used by its patch
    r.task("1", SEQ, 5, status="unresolved", patch=TEXT)  # storage gap: its dependency never ran
    r.task("1", SEQ, 6, status="resolved", patch=CORE, recalls=[["v1-1"]])  # resolved: no label
    r.dream("1", "d1", [MemoryPruned(item_id="v1-1", reason="cap", dream_id="d1")])
    r.task("1", SEQ, 7, status="unresolved", patch=CORE)  # storage gap: the item was pruned before it started
    r.pass_mark("1", SEQ, "initial", "finished")
    r.finish_run("1")
    r.close()
    return path


def _counterfactual(path: Path, order: int, resolved: bool) -> None:
    """A `swecl counterfactual` re-run of task `order` without item v1-1, as the command records it."""
    task = PLAN[order - 1]
    common = dict(version="1", sequence_id=SEQ, instance_id=task.instance_id, order=order, pass_="initial",
                  hidden=["v1-1"])
    with Ledger.open(path) as led:
        stream = f"counterfactual/1/cf-{order}"
        led.append(stream, [CounterfactualStarted(**common, cut_seq=1)])
        led.append(stream, [CounterfactualFinished(**common, status="resolved" if resolved else "unresolved",
                                                   resolved=resolved)])


def test_each_label_on_a_built_ledger(tmp_path: Path) -> None:
    path = _crafted(tmp_path / "ledger.db")
    with Ledger.open(path, readonly=True) as led:
        f = funnel(led, "1")
    _consistent(f)
    labels = {t.order: t.label for t in f.sequences[0].tasks}
    assert labels == {1: NO_DEPENDENCY, 2: RETRIEVAL_GAP, 3: USE_GAP, 4: USE_GAP, 5: STORAGE_GAP, 6: None,
                      7: STORAGE_GAP}
    tasks = {t.order: t for t in f.sequences[0].tasks}
    assert [s.ref for s in tasks[2].stored_from] == ["v1-1"] and tasks[2].retrieved_from == []
    assert tasks[3].used and [s.ref for s in tasks[3].used_from] == ["v1-1"]
    assert "widgets/core.py" in tasks[3].touched and "frobnicate()" in tasks[3].touched
    assert tasks[4].retrieved and not tasks[4].used and tasks[4].used_by is None
    c = f.sequences[0].counts
    assert (c.with_deps, c.stored, c.retrieved, c.used, c.resolved) == (6, 4, 3, 2, 1)
    assert c.stored_rate == pytest.approx(4 / 6) and c.retrieved_rate == pytest.approx(3 / 4)
    assert c.used_rate == pytest.approx(2 / 3) and c.resolved_used_rate == pytest.approx(1 / 2)
    assert f.macro is not None and f.macro.counts.stored_rate == c.stored_rate


def test_a_counterfactual_verdict_overrides_used(tmp_path: Path) -> None:
    path = _crafted(tmp_path / "ledger.db")
    _counterfactual(path, 4, resolved=True)  # without v1-1 task 4 resolves: the item was harmful, so it mattered
    _counterfactual(path, 3, resolved=False)  # without it task 3 fails as before: no effect, so not used
    with Ledger.open(path, readonly=True) as led:
        tasks = {t.order: t for t in funnel(led, "1").sequences[0].tasks}
    assert tasks[4].used and tasks[4].used_by == "counterfactual: harmful" and tasks[4].label == USE_GAP
    assert not tasks[3].used and tasks[3].used_by == "counterfactual: no effect"
    # As of a point before the counterfactuals: the patch's answer, as it was then.
    with Ledger.open(path, readonly=True) as led:
        before = led.head() - 4  # each counterfactual is two events
        earlier = {t.order: t for t in funnel(led, "1", upto=before).sequences[0].tasks}
    assert earlier[3].used and earlier[3].used_by == "patch"
    assert not earlier[4].used and earlier[4].used_by is None  # its patch touches another file


def test_the_views_funnel_follows_a_counterfactual_recorded_after_it_was_shown(tmp_path: Path) -> None:
    """A counterfactual's events are on their own stream, never the run's: the view's kept
    fold of the run must still drop its funnel when one is recorded."""
    from projections import Results
    from projections.view import View

    _crafted(tmp_path / "ledger.db")
    view = View(Results(tmp_path))
    before = view.respond("/run/1").body.decode()
    _counterfactual(tmp_path / "ledger.db", 4, resolved=True)  # task 4's item was harmful: now used
    after = view.respond("/run/1").body.decode()
    assert after == View(Results(tmp_path)).respond("/run/1").body.decode()  # as a fresh fold says
    assert after != before


def test_the_difference_names_the_tasks_whose_label_changed(tmp_path: Path) -> None:
    with Ledger.open(_crafted(tmp_path / "a.db"), readonly=True) as led:
        a = funnel(led, "1")
    with Ledger.open(_crafted(tmp_path / "b.db", retrieve_in_2=True), readonly=True) as led:
        b = funnel(led, "1")
    diff = funnel_difference(a, b)
    assert [(c.order, c.a, c.b) for c in diff.changed] == [(2, RETRIEVAL_GAP, USE_GAP)]
    by_label = {d.label: d for d in diff.labels}
    assert (by_label[RETRIEVAL_GAP].difference, by_label[USE_GAP].difference) == (-1, 1)
    lines = format_funnel_difference(diff)
    assert any("acme__widgets-2" in line and "retrieval gap -> use gap" in line for line in lines)
    assert funnel_difference_document(diff)["changed"][0]["b"] == USE_GAP


def test_a_run_recorded_before_dependencies_has_no_funnel(tmp_path: Path) -> None:
    old = RunStarted(version="1", benchmark="b", dataset_hash="h", sequences=[SEQ], stage="plugin-blank",
                     memory_mode="plugin-real", agent="demo", tasks={SEQ: [TaskRef("acme__widgets-1", 1, REPO, 1)]})
    raw = msgspec.json.encode(old)
    assert b'"dependencies":null' in raw
    decoded = decode_payload("run.started", RunStarted.SCHEMA, raw.replace(b',"dependencies":null', b""))
    assert decoded.tasks[SEQ][0].dependencies is None  # an older ledger's payload still decodes
    r = LedgerBuilder(Ledger.open(tmp_path / "ledger.db", create=True))
    r.start_run("1", stage="plugin-blank", plan={SEQ: [TaskRef("acme__widgets-1", 1, REPO, 1)]})
    r.task("1", SEQ, 1, status="unresolved")
    with Ledger.open(tmp_path / "ledger.db", readonly=True) as led:
        f = funnel(led, "1")
    r.close()
    assert f.na == NO_DEPENDENCIES and f.sequences == []


def test_a_full_history_prompt_retrieves_the_dependencies_it_lists(tmp_path: Path) -> None:
    history = ledger.events.BY_TYPE.get("memory.history")
    if history is None:
        pytest.skip("memory.history is not in this swecl's event catalog yet (the full-history arm)")
    r = LedgerBuilder(Ledger.open(tmp_path / "ledger.db", create=True))
    r.start_run("1", stage="plugin-blank", plan={SEQ: PLAN[:3]}, passes=["initial"])
    r.task("1", SEQ, 1, status="unresolved", patch=CORE)
    r.task("1", SEQ, 2, status="unresolved", patch=TEXT)  # its history left task 1 out: retrieval gap
    r.task_started("1", SEQ, 3)
    assert r.ledger is not None
    r.ledger.append(f"run/1/{SEQ}", [history(sequence_id=SEQ, instance_id="acme__widgets-3", order=3, pass_="initial",
                                             attempt=1, entries=["acme__widgets-1"], tokens=10, budget=100, dropped=0,
                                             text=None)])
    r.close()
    with Ledger.open(tmp_path / "ledger.db", readonly=True) as led:
        f = funnel(led, "1")
    assert f.memory == "history"
    tasks = {t.order: t for t in f.sequences[0].tasks}
    assert tasks[2].label == RETRIEVAL_GAP and tasks[2].stored
    assert tasks[3].retrieved and [s.instance_id for s in tasks[3].retrieved_from] == ["acme__widgets-1"]


def test_a_memory_servers_writes_and_attributed_recalls(tmp_path: Path) -> None:
    """A --memory-server run: stored is a dependency's write call before the task started,
    retrieved the recall answer's lines the audit attributes to it, used a file it names."""
    import hashlib

    from ledger.events import ProviderCalled

    plan = [_ref(1, []), _ref(2, [1]), _ref(3, [1, 2])]
    lessons = {1: "lesson of task 1: frobnicate in widgets/core.py doubles", 2: "lesson of task 2: label frobs",
               3: "lesson of task 3"}
    config = {"memory_server": "notes-server", "memory_recall_tool": "search", "memory_write_tool": "remember"}
    r = LedgerBuilder(Ledger.open(tmp_path / "ledger.db", create=True))
    r.start_run("1", stage="plugin-blank", plan={SEQ: plan}, passes=["initial"], config=config)
    writes = {}
    for order, (patch, answer) in {1: (CORE, ""), 2: (CORE, lessons[1]), 3: (TEXT, "nothing found")}.items():
        r.task("1", SEQ, order, status="unresolved", patch=patch)
        for call, (via, args, result) in enumerate([("recall", {"query": "widgets"}, answer),
                                                   ("write", {"text": lessons[order]}, None)], start=2 * order - 1):
            blobs = [json.dumps(args).encode()] + ([result.encode()] if result is not None else [])
            digests = [hashlib.sha256(b).hexdigest() for b in blobs]
            event = ProviderCalled(sequence_id=SEQ, instance_id=plan[order - 1].instance_id, order=order,
                                   pass_="initial", call=call, tool="remember" if via == "write" else "search", via=via,
                                   arguments=digests[0], result=digests[1] if result is not None else None)
            (rec,) = r.write("1", SEQ, event, blobs=blobs)
            writes[(order, via)] = rec.seq
    r.close()
    with Ledger.open(tmp_path / "ledger.db", readonly=True) as led:
        f = funnel(led, "1")
    assert f.memory == "server notes-server"
    _consistent(f)
    tasks = {t.order: t for t in f.sequences[0].tasks}
    first_write = f"provider:write@{writes[(1, 'write')]}"
    assert tasks[2].label == USE_GAP and tasks[2].used
    assert [(s.kind, s.ref, s.instance_id) for s in tasks[2].retrieved_from] == [("server", first_write, plan[0].instance_id)]
    assert tasks[3].label == RETRIEVAL_GAP
    assert sorted(s.instance_id for s in tasks[3].stored_from) == [plan[0].instance_id, plan[1].instance_id]


def test_a_fork_of_a_memory_server_run_takes_its_sources_funnel_before_k(tmp_path: Path, cache: Path) -> None:
    """The tasks before K of a fork are its source's, and so are their server calls (on the
    source's streams only): their funnel is the source's, spans-19's retrieved write of
    spans-8 included."""
    from tests.run.test_memory_server_resume import POLICY, SPEC

    results = tmp_path / "results"
    server = ("--memory-server", SPEC, *POLICY, "--memory-env", "DIE=0")
    swecl(results, "run", "--stage", "plugin-blank", "--sequence", SPANS, *first_of(4, SPANS), "--passes", "initial",
          "--grader", "none", *server, "--quiet", cache=cache, timeout=600)
    swecl(results, "run", "--fork", "1@4", "--memory-server", SPEC, "--memory-env", "DIE=0", "--quiet", cache=cache,
          timeout=600)
    source, fork = _funnel(results, "1"), _funnel(results, "2")
    before = [t for t in source.sequences[0].tasks if t.order < 4]
    assert [t for t in fork.sequences[0].tasks if t.order < 4] == before
    (step_in,) = [t for t in before if t.instance_id == "swecl-demo__spans-19"]
    assert step_in.retrieved and [s.instance_id for s in step_in.retrieved_from] == ["swecl-demo__spans-8"]
