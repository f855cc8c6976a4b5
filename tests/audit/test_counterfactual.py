"""Leave-one-memory-out on the real demo (`swecl counterfactual`, then `swecl audit`).

plugin-blank over spans (run 1): #19 resolves only through #8's recalled fix (necessary);
#12's item, recalled beside it, changes nothing (no effect); in the re-test, #40's item
misleads #24, which resolves without it (harmful). The run itself stays as it was.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from commands import Experiment
from commands.cli import main
from ledger import Ledger, SweclError
from ledger.events import RunStarted
from tests.inprocess import swecl
from tests.shared_runs import demo_run_copy

pytestmark = pytest.mark.slow

STEP_IN, FORGOTTEN, MISLEADER = "swecl-demo__spans-19", "swecl-demo__spans-24", "swecl-demo__spans-40"
FIRST, SORTER = "swecl-demo__spans-8", "swecl-demo__spans-12"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    return demo_run_copy(tmp_path_factory, cache, "blank-spans")  # plugin-blank, version 1


@pytest.fixture(autouse=True)
def demo_cache(monkeypatch: pytest.MonkeyPatch, cache: Path) -> None:
    # The run recorded no --cache-dir: its re-runs find the demo repositories where a
    # `swecl` process of these tests would (bench.processes.swecl_env).
    monkeypatch.setenv("SWECL_CACHE", str(cache))


def _item_of(results: Path, instance_id: str) -> str:
    with Ledger.open(results / "ledger.db", readonly=True) as led:
        return next(r.event.item_id for r in led.read(types=["memory.written"])
                    if r.event.source_instance == instance_id)


def _views(results: Path, cache: Path, out: Path) -> dict[str, object]:
    """What the run shows of itself: runs, metrics, show, and a replay's files."""
    experiment = Experiment(results)
    experiment.replay(version="1", upto_order=4, out_dir=out)
    return {
        "runs": swecl(results, "runs", "--json", cache=cache).stdout,
        "metrics": swecl(results, "metrics", "--json", cache=cache).stdout,
        # The attempt as recorded; its funnel is left out: a counterfactual's verdict is what
        # decides the funnel's `used` (design.md, "The memory funnel"), so it may change.
        "show": {k: v for k, v in json.loads(swecl(results, "show", "1", STEP_IN, "--json", cache=cache).stdout).items()
                 if k != "funnel"},
        "replay": {p.relative_to(out): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()},
    }


def test_verdicts_and_the_run_left_as_it_was(demo: Path, cache: Path, tmp_path: Path) -> None:
    before = _views(demo, cache, tmp_path / "before")
    experiment = Experiment(demo)
    first, sorter, misleader = (_item_of(demo, i) for i in (FIRST, SORTER, MISLEADER))

    done = experiment.counterfactual("1", STEP_IN, without_recalled=True)
    assert done.original_resolved is True
    assert {tuple(r.hidden): r.resolved for r in done.runs} == {(first,): False, (sorter,): True}
    assert all(first not in r.recalled for r in done.runs if r.hidden == [first])  # hidden from the recall
    harmful = experiment.counterfactual("1", FORGOTTEN, without=(misleader,), pass_="retest")
    assert harmful.original_resolved is False and [r.resolved for r in harmful.runs] == [True]

    assert _views(demo, cache, tmp_path / "after") == before  # V's own views never count a re-run

    audit = json.loads(swecl(demo, "audit", "1", STEP_IN, "--json", cache=cache).stdout)
    verdicts = {(v["pass"], tuple(v["hidden"])): (v["verdict"], v["runs"]) for v in audit["counterfactuals"]}
    assert verdicts == {("initial", (first,)): ("necessary", 1), ("initial", (sorter,)): ("no effect", 1)}
    assert [a["status"] for a in audit["attempts"]] == ["finished"] * 3  # no attempt added to the run
    retest = json.loads(swecl(demo, "audit", "1", FORGOTTEN, "--pass", "retest", "--json", cache=cache).stdout)
    assert [(v["hidden"], v["verdict"]) for v in retest["counterfactuals"]] == [([misleader], "harmful")]
    text = swecl(demo, "audit", "1", STEP_IN, cache=cache).stdout
    assert "necessary" in text and "no effect" in text


@pytest.mark.parametrize(("args", "says"), [
    (["9", STEP_IN, "--without-recalled"], "no run version '9'"),
    (["1", "swecl-demo__nope-1", "--without-recalled"], "is not in the plan of v1"),
    (["1", STEP_IN, "--without", "mem-nope"], "--without 'mem-nope': no memory item"),
    (["1", FIRST, "--without-recalled"], "recalled nothing in run 1"),
])
def test_refusals_are_one_line(demo: Path, capsys: pytest.CaptureFixture[str], args: list[str], says: str) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--results", str(demo), "counterfactual", *args])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and says in err and len(err.strip().splitlines()) == 1, err



# A --memory-server run is rebuilt without the hidden tasks' writes: tests/run/test_memory_server.py.
@pytest.mark.parametrize(("stage", "config", "says"), [
    ("base", {}, "it recalls nothing"),
])
def test_runs_whose_recall_cannot_be_filtered_are_refused(tmp_path: Path, stage: str, config: dict, says: str) -> None:
    with Ledger.open(tmp_path / "ledger.db", create=True) as led:
        led.append("run/1", [RunStarted(version="1", benchmark="demo", dataset_hash="0", sequences=[], stage=stage,
                                        memory_mode="plugin-real" if stage != "base" else "off", agent="demo",
                                        config=config)])
    with pytest.raises(SweclError, match=says):
        Experiment(tmp_path).counterfactual("1", STEP_IN, without_recalled=True)
