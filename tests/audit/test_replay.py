"""`swecl replay`: the state before task K, exact, repeatable, and equal to a ledger cut there."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from bench.ledgers import Item, LedgerBuilder
from commands.cli._replay import replay_cmd
from ledger import Ledger, SweclError
from projections import _replay as replay_module
from commands._jobs_output import write_replay
from commands.memory import materialise_version
from projections import ReplayReport, replay_state, sequence_cutoffs
from projections.memory import load_memory

from .crafted import OTHER_SEQ, OTHER_TASKS, P1, P2, P3, SEQ, TASKS, accum_run, blank_run, supersede


def replay(led: Ledger, version: str, upto_order: int, out: Path) -> ReplayReport:
    """The replay job's state and writer (`Experiment.replay`) on an open ledger."""
    return write_replay(led, replay_state(led, version, upto_order), out)


def tree(root: Path) -> dict[str, bytes]:
    """Every file under `root` (dot-files included) by relative path, with its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def cut_ledger(source: Path, dest: Path, upto: int) -> Path:
    """A fresh ledger holding the source's events up to `upto` (and their blobs), copied
    with `import_recorded`: the ledger as it physically stood at that seq."""
    with Ledger.open(source, readonly=True) as src, Ledger.open(dest, create=True) as out:
        blobs = [data for _, _, data in src.iter_blobs()]
        out.append_batches([], blobs=blobs)
        out.import_recorded(list(src.read(upto=upto)))
    return dest


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp(__name__.rsplit(".", 1)[-1]) / "results" / "ledger.db"
    with Ledger.open(path, create=True) as led:
        r = LedgerBuilder(led)
        blank_run(r, "1")
        accum_run(r, "2", "1")
    return path


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_replay_at_k_equals_the_ledger_cut_at_k(two_runs: Path, tmp_path: Path, k: int) -> None:
    with Ledger.open(two_runs, readonly=True) as led:
        cutoffs = sequence_cutoffs(led, "2", k)
        upto = cutoffs[SEQ] - 1 if SEQ in cutoffs else led.head()
        replay(led, "2", k, tmp_path / "full")
    cut = cut_ledger(two_runs, tmp_path / "cut" / "ledger.db", upto)
    with Ledger.open(cut, readonly=True) as led:
        assert led.head() == upto
        replay(led, "2", k, tmp_path / "from-cut")
    full, from_cut = tree(tmp_path / "full"), tree(tmp_path / "from-cut")
    assert full == from_cut
    manifest = json.loads(full["replay.json"])
    assert manifest["cursors"] == {SEQ: upto} and manifest["upto_order"] == k


def test_replay_twice_is_byte_identical(two_runs: Path, tmp_path: Path) -> None:
    with Ledger.open(two_runs, readonly=True) as led:
        replay(led, "2", 2, tmp_path / "a")
        first = tree(tmp_path / "a")
        replay(led, "2", 2, tmp_path / "a")  # again, over itself
        replay(led, "2", 2, tmp_path / "b")
    assert tree(tmp_path / "a") == first == tree(tmp_path / "b")
    assert {"replay.json", "outcomes.json", "outcomes.csv", "metrics.json", "_memory/items.json",
            "_memory/memory.db", "_memory/graph.db"} <= set(first)


def test_replay_contents_before_task_2(two_runs: Path, tmp_path: Path) -> None:
    with Ledger.open(two_runs, readonly=True) as led:
        state = replay_state(led, "2", 2)
        cursor = state.cursors[SEQ]
        materialise_version(led, "2", tmp_path / "materialised", upto=cursor)
        replay(led, "2", 2, tmp_path / "replay")
    # Memory: the seed (v1's three items) and what task 1 wrote; v1-3 was superseded by then.
    items = state.memory.items
    assert sorted(items) == ["v1-1", "v1-2", "v1-3", "v2-1"]
    assert items["v1-3"].status == "superseded" and items["v2-1"].live
    # The same substrate materialise_version writes at that cursor (items.json differs only
    # in ledger_id, which a replay leaves out).
    replayed, materialised = tree(tmp_path / "replay" / "_memory"), tree(tmp_path / "materialised" / "_memory")
    assert set(replayed) == set(materialised)
    for name in replayed:
        if name != "items.json":
            assert replayed[name] == materialised[name], name
    exported = json.loads(replayed["items.json"])
    assert exported["ledger_id"] is None and exported["as_of_seq"] == json.loads(materialised["items.json"])["as_of_seq"]
    # a(i,j): only task 1 of the initial pass had run; the plan is whole, the rest missing.
    outcomes = json.loads((tmp_path / "replay" / "outcomes.json").read_text())
    seq = outcomes["sequences"][SEQ]
    assert list(seq["passes"]) == ["initial"] and list(seq["passes"]["initial"]) == ["1"]
    assert seq["passes"]["initial"]["1"]["attempt"] == 2 and seq["vectors"]["initial"] == [1, None, None]
    csv_rows = (tmp_path / "replay" / "outcomes.csv").read_text().splitlines()
    assert csv_rows == [
        "sequence_id,pass,order,instance_id,attempt,done,status,resolved,outcome",
        f"{SEQ},initial,1,acme__widgets-1,2,True,resolved,True,1",
    ]
    metrics = json.loads((tmp_path / "replay" / "metrics.json").read_text())
    assert set(metrics["formulas"]) == {"native", "eval-v1"}
    assert metrics["formulas"]["native"]["sequences"][SEQ]["CL-P"] is not None


def test_a_multi_sequence_run_is_cut_per_repository(tmp_path: Path) -> None:
    """Sequence A runs fully, then sequence B: before task 2, repo A's memory is as of A's
    cut (only a1), repo B's as of B's (only b1), though by B's cut all of A was written."""
    path = tmp_path / "ledger.db"
    with Ledger.open(path, create=True) as led:
        r = LedgerBuilder(led)
        r.start_run("1", stage="plugin-blank", plan={SEQ: TASKS, OTHER_SEQ: OTHER_TASKS})
        for n, patch in enumerate((P1, P2, P3), start=1):
            r.task("1", SEQ, n, patch=patch, write=Item(f"a{n}", patch=patch))
        for n, patch in enumerate((P1, P2, P3), start=1):
            r.task("1", OTHER_SEQ, n, patch=patch, write=Item(f"b{n}", patch=patch))
        r.finish_run("1")
        state = replay_state(led, "1", 2)
        cutoffs = sequence_cutoffs(led, "1", 2)
    assert state.cursors == {SEQ: cutoffs[SEQ] - 1, OTHER_SEQ: cutoffs[OTHER_SEQ] - 1}
    assert sorted(state.memory.items) == ["a1", "b1"]
    assert state.repo_cursors == {"acme/gadgets": cutoffs[OTHER_SEQ] - 1, "acme/widgets": cutoffs[SEQ] - 1}
    # K one past every plan: nothing to cut, the whole run; further is a typo, refused.
    with Ledger.open(path, readonly=True) as led:
        whole = replay_state(led, "1", 4)
        assert whole.cursors == {SEQ: led.head(), OTHER_SEQ: led.head()}
        with pytest.raises(SweclError, match=r"--upto-order 9: run 1's sequences have tasks 1 to 3 \(4: as"):
            replay_state(led, "1", 9)
    assert sorted(whole.memory.items) == ["a1", "a2", "a3", "b1", "b2", "b3"]


@pytest.mark.parametrize("late_seed", [False, True])
def test_memory_cut_per_repository_equals_independent_folds(
    tmp_path: Path, late_seed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The replayed substrate of a seeded two-sequence run, at every K, is what folding the
    substrate afresh at each repository's cursor gives (items, seeds, records), whether one
    fold serves every cursor or, with a seed recorded between the cursors (`late_seed`:
    the source's history joins mid-run), each cursor is folded on its own."""
    path = tmp_path / "ledger.db"
    with Ledger.open(path, create=True) as led:
        r = LedgerBuilder(led)
        blank_run(r, "1")
        r.start_run("2", stage="plugin-accum", plan={SEQ: TASKS, OTHER_SEQ: OTHER_TASKS})
        if not late_seed:
            r.seed("2", "1")
        for n, patch in enumerate((P1, P2, P3), start=1):
            r.task("2", SEQ, n, patch=patch, recalls=[["v1-1", f"a{n - 1}"]], write=Item(f"a{n}", patch=patch))
            if late_seed and n == 2:
                r.seed("2", "1")  # after sequence A's task 2 started, before B's
            r.task("2", OTHER_SEQ, n, patch=patch, write=Item(f"b{n}", patch=patch))
        supersede(r, "2", "a1", "a2", "newer")
        r.finish_run("2")
    separate: list[int] = []
    by_folds = replay_module._memory_by_folds
    monkeypatch.setattr(
        replay_module, "_memory_by_folds", lambda led, v, rc, oc, runner: separate.append(len(set(rc.values())))
        or by_folds(led, v, rc, oc, runner)
    )
    with Ledger.open(path, readonly=True) as led:
        for k in (1, 2, 3, 4):
            state = replay_state(led, "2", k)
            expected = {}
            for repo, cursor in state.repo_cursors.items():
                at = load_memory(led, "2", upto=cursor).state
                expected.update({i: item for i, item in at.items.items() if item.repo == repo})
            base = load_memory(led, "2", upto=state.other_cursor).state
            expected.update({i: item for i, item in base.items.items() if item.repo not in state.repo_cursors})
            encoded = msgspec.msgpack.encode
            assert {i: encoded(item) for i, item in state.memory.items.items()} == {
                i: encoded(item) for i, item in expected.items()
            }
            last = load_memory(led, "2", upto=max(state.repo_cursors.values())).state
            assert state.memory.seeds == last.seeds
            assert (state.memory.rejected, state.memory.dreams, state.memory.clock, state.memory.recalls) == (
                base.rejected, base.dreams, base.clock, base.recalls
            )
            if k == 2:
                assert len(set(state.repo_cursors.values())) == 2
                assert ("v1-1" in state.memory.items) == (not late_seed)  # repo A's cut is before the late seed
    # K=2 straddles the late seed: folded cut by cut; K=4 (past every plan) is one cut.
    assert separate == ([2, 1] if late_seed else [1])


def test_bad_replays_are_refused(two_runs: Path, tmp_path: Path) -> None:
    with Ledger.open(two_runs, readonly=True) as led:
        with pytest.raises(SweclError, match="orders start at 1"):
            replay_state(led, "2", 0)
        with pytest.raises(SweclError, match="no run version '9'"):
            replay_state(led, "9", 1)
        (tmp_path / "busy").mkdir()
        (tmp_path / "busy" / "notes.txt").write_text("mine")
        with pytest.raises(SweclError, match="not a replay folder"):
            replay(led, "2", 1, tmp_path / "busy")


def test_cli_writes_the_folder(two_runs: Path, tmp_path: Path) -> None:
    out = CliRunner().invoke(replay_cmd, ["--results", str(two_runs.parent), "2", "--upto-order", "3",
                                          "--out", str(tmp_path / "r"), "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert doc["format"] == "swecl-replay" and doc["upto_order"] == 3 and (tmp_path / "r" / "replay.json").is_file()
    text = CliRunner().invoke(replay_cmd, ["--results", str(two_runs.parent), "2", "--upto-order", "3",
                                           "--out", str(tmp_path / "r")])
    assert text.exit_code == 0 and "before task 3" in text.output


def test_materialise_all_equals_each_version_materialised(
    two_runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`swecl memory materialise --all` (one pass over the ledger, `projections.rebuild`)
    writes every run's folder byte for byte as materialising each version does."""
    from commands.cli._memory import memory_materialise_cmd

    results = tmp_path / "results"
    results.mkdir()
    (results / "ledger.db").write_bytes(two_runs.read_bytes())
    runner = CliRunner()
    every = runner.invoke(memory_materialise_cmd, ["--results", str(results), "--all"])
    assert every.exit_code == 0, every.output
    assert len(every.output.splitlines()) == 2
    with Ledger.open(results / "ledger.db", readonly=True) as led:
        for version in ("1", "2"):
            materialise_version(led, version, tmp_path / "one" / f"v{version}")
            assert tree(results / f"v{version}" / "_memory") == tree(tmp_path / "one" / f"v{version}" / "_memory")
        upto = led.head() // 2
        for version in ("1", "2"):
            materialise_version(led, version, tmp_path / "half" / f"v{version}", upto=upto)
    half = runner.invoke(memory_materialise_cmd, ["--results", str(results), "--all", "--upto", str(upto)])
    assert half.exit_code == 0, half.output
    for version in ("1", "2"):
        assert tree(results / f"v{version}" / "_memory") == tree(tmp_path / "half" / f"v{version}" / "_memory")
    from commands.cli import main

    for args, said in (
        ([], "give a run VERSION or --all (not both)"),
        (["1", "--all"], "give a run VERSION or --all (not both)"),
        (["42"], f"no run version '42' in {results / 'ledger.db'}: nothing to materialise"),
    ):
        with pytest.raises(SystemExit) as exited:
            main(["memory", "materialise", "--results", str(results), *args])
        err = capsys.readouterr().err
        assert exited.value.code != 0 and err == f"swecl: error: {said}\n"
    assert not (results / "v42").exists()
