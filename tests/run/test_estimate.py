"""`swecl run --estimate` on real ledgers: the estimate of a demo run from the demo's own
recorded run against what the run then takes, that it writes nothing, that it refuses
what `swecl run` refuses in the same line, the table when nothing of the agent and model
is recorded, and `--json`. Then the per-repository means on a crafted ledger of
claude-like attempts (`projections._estimate`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.ledgers import LedgerBuilder
from bench.processes import SPANS
from ledger import Ledger
from ledger.events import TaskRef
from projections._estimate import Basis, PlannedPass, PlannedRun, estimate_plan, recorded_rates
from projections._spend import run_wall_s, spend_cell
from tests.inprocess import swecl

BASE_SPANS = ("--stage", "base", "--sequence", SPANS)
# The wall time of the run the estimate rests on, over the estimate of the same plan, stays
# within this factor either way: the estimate rebuilds it from that run's own per-attempt
# means, workers and overhead. Compared with the run it was read from, not a later re-run,
# so the machine's load between two runs cannot move it (how well an estimate predicts a
# later run on a loaded machine is a measurement, not a test).
FACTOR = 2.0


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    """A results folder with one recorded demo run: base over spans (8 attempts)."""
    results = tmp_path_factory.mktemp("estimate") / "results"
    swecl(results, "run", *BASE_SPANS, "--quiet", cache=cache)
    return results


def _estimate(results: Path, cache: Path, *args: str) -> dict:
    out = swecl(results, "run", *args, "--estimate", "--json", cache=cache)
    return json.loads(out.stdout)


def _state(results: Path) -> tuple[int, dict[str, tuple[int, int]]]:
    """The ledger's head and every file of the folder (size, mtime), but SQLite's shared
    memory index (`-shm`), which every reader of a WAL database writes (its own included),
    and an empty write-ahead log (no content: SQLite removes it when the last connection
    that had the database open closes)."""
    with Ledger.open(results / "ledger.db", readonly=True) as ledger:
        head = ledger.head()
    files = {str(p.relative_to(results)): (p.stat().st_size, p.stat().st_mtime_ns)
             for p in sorted(results.rglob("*")) if p.is_file() and not p.name.endswith("-shm")
             and not (p.name.endswith("-wal") and p.stat().st_size == 0)}
    return head, files


def test_the_estimate_of_a_demo_run_is_what_the_run_takes(recorded: Path, cache: Path) -> None:
    before = _state(recorded)
    doc = _estimate(recorded, cache, *BASE_SPANS)
    assert _state(recorded) == before  # nothing written: no version claimed, no projection kept
    assert doc["rests_on"] == "recorded" and doc["recorded"]["overall"]["attempts"] == 8
    assert list(doc["recorded"]["by_repo"]) == ["swecl-demo/spans"]
    assert [(r["stage"], [(p["pass"], p["attempts"]) for p in r["passes"]]) for r in doc["runs"]] == [
        ("base", [("initial", 8)])]
    # the demo agent calls no model: $0 and 0 tokens, not "not reported"
    assert doc["total"]["usd"] == 0 and doc["total"]["tokens"] == 0

    swecl(recorded, "run", *BASE_SPANS, "--version", "2", "--quiet", cache=cache)
    with Ledger.open(recorded / "ledger.db", readonly=True) as ledger:
        attempts = sum(1 for r in ledger.read(types=["agent.finished"]) if r.stream.startswith("run/2/"))
        wall = run_wall_s(ledger, "1")  # the run the estimate rests on
    assert attempts == doc["total"]["attempts"] == 8
    assert wall is not None
    ratio = wall / doc["total"]["wall_seconds"]
    assert 1 / FACTOR <= ratio <= FACTOR, (wall, doc["total"])


def test_passes_retest_rows_and_the_demo_suite_are_counted(recorded: Path, cache: Path) -> None:
    doc = _estimate(recorded, cache, "--stage", "plugin-blank", "--sequence", SPANS, "--retest-every", "3")
    rows = [(p["pass"], p["attempts"]) for p in doc["runs"][0]["passes"]]
    assert rows == [("initial", 8), ("retest-every 3", 3 + 6), ("retest", 8), ("baseline", 8)]
    suite = _estimate(recorded, cache, "--repeat", "2")  # the demo suite, twice: 8 runs of 24 tasks
    assert [r["stage"] for r in suite["runs"]] == ["base", "plugin-blank", "plugin-accum", "plugin-dreamed"] * 2
    assert suite["total"]["attempts"] == 2 * (24 + 3 * 72)


def test_it_writes_nothing_where_there_is_no_ledger(tmp_path: Path, cache: Path) -> None:
    results = tmp_path / "none"
    out = swecl(results, "run", *BASE_SPANS, "--estimate", cache=cache)
    assert not results.exists()
    assert "no recorded run of demo" in out.stdout and "nothing ran and nothing was written" in out.stdout
    seeded = swecl(results, "run", "--stage", "plugin-accum", "--estimate", cache=cache, check=False)
    assert seeded.returncode == 2 and "no prior run of the same benchmark" in seeded.stderr
    assert not results.exists()


@pytest.mark.parametrize("bad", [
    ("--stage", "nope"),
    ("--stage", "base", "--retest-every", "2"),
    ("--stage", "base", "--sequence", SPANS, "--instance", "no-such-task"),
    ("--stage", "base", "--sequence", "no-such-sequence"),
    ("--passes", "initial,final", "--stage", "plugin-blank"),
    ("--stage", "base", "--jobs", "0"),
    ("--orders", "2", "--repeat", "2", "--stage", "base"),
    ("--stage", "base", "--sequence", SPANS, "--version", "1"),  # taken
    ("--stage", "plugin-accum", "--sequence", SPANS),  # no memory to seed from: the base run has none
])
def test_it_refuses_what_a_run_refuses_in_the_same_line(recorded: Path, cache: Path, bad: tuple[str, ...]) -> None:
    before = _state(recorded)
    estimated = swecl(recorded, "run", *bad, "--estimate", cache=cache, check=False)
    ran = swecl(recorded, "run", *bad, "--quiet", cache=cache, check=False)
    assert estimated.returncode == ran.returncode != 0
    assert estimated.stderr == ran.stderr, estimated.stderr
    # swecl's own refusals are one line (click's usage errors are click's: usage, then the error)
    assert estimated.stderr.startswith("swecl: error:") == (len(estimated.stderr.strip().splitlines()) == 1)
    assert _state(recorded) == before


def test_the_table_stands_in_for_an_agent_never_recorded(recorded: Path, cache: Path) -> None:
    args = (*BASE_SPANS, "--agent", "claude", "--model", "sonnet-4-6", "--budget-usd", "5")
    doc = _estimate(recorded, cache, *args)
    assert doc["rests_on"] == "table" and doc["recorded"] is None
    assert "no recorded run of claude with sonnet-4-6" in doc["says"] and "list price $3/$15" in doc["says"]
    per_attempt = (500_000 * 3 + 10_000 * 15) / 1e6
    assert doc["total"]["usd"] == pytest.approx(8 * per_attempt)
    assert doc["budget"]["attempts"] == int(5 / per_attempt) and doc["budget"]["covers_run"] is False
    text = swecl(recorded, "run", *args, "--estimate", cache=cache).stdout
    assert "rests on: no recorded run of claude" in text and "--budget-usd 5 covers: about 3 of 8 attempts" in text
    assert max(len(line) for line in text.splitlines()) <= 100


def test_swecl_runs_says_what_each_run_cost(recorded: Path, cache: Path) -> None:
    row = json.loads(swecl(recorded, "runs", "--json", cache=cache).stdout)[0]
    assert row["spend"]["attempts"] == 8 and row["spend"]["cost_usd"] is None and row["spend"]["wall_s"] > 0
    text = swecl(recorded, "runs", cache=cache).stdout
    assert "cost" in text and "8 att " in text and "$0" not in text  # the demo reports no cost: `-`, never $0


def test_the_cost_cell() -> None:
    claude = {"cost_usd": 12.3456, "budget_usd": 20.0, "tokens_in": 1_150_000, "tokens_out": 40_000, "attempts": 9,
              "wall_s": 3725.0}
    assert spend_cell(claude) == "$12.35/$20.00\n1.2M tok\n9 att 1h02m"
    assert spend_cell({"cost_usd": None, "budget_usd": None, "tokens_in": None, "tokens_out": None,
                       "attempts": 24, "wall_s": 20.3}) == "-\n24 att 20s"


# -- the per-repository means, on a crafted ledger ------------------------------------------

WIDGETS = [TaskRef(f"acme__widgets-{n}", n, "acme/widgets", 1) for n in (1, 2)]
GADGETS = [TaskRef(f"acme__gadgets-{n}", n, "acme/gadgets", 1) for n in (1, 2)]


def _claude(usd: float, tokens_in: int, tokens_out: int, seconds: float) -> dict:
    return {"agent": "claude", "model": "sonnet-4-6", "cost_usd": usd, "duration_s": seconds,
            "tokens": {"input": tokens_in, "output": tokens_out}}


def test_means_per_attempt_per_repository(tmp_path: Path) -> None:
    r = LedgerBuilder.create(tmp_path / "ledger.db")
    r.start_run("1", stage="base", plan={"w": WIDGETS, "g": GADGETS}, agent="claude", model="sonnet-4-6")
    r.task("1", "w", 1, agent=_claude(1.0, 300_000, 5_000, 200))
    r.task("1", "w", 2, agent=_claude(3.0, 500_000, 15_000, 400))
    r.task("1", "g", 1, agent=_claude(0.5, 100_000, 2_000, 100))
    # killed before its grade: paid, timed by the agent's duration (no task.finished)
    r.task("1", "g", 2, agent=_claude(0.7, 150_000, 4_000, 90.0), abandon=True)
    r.finish_run("1")
    # another model's run and a run that reported nothing: not in the means of sonnet-4-6
    r.start_run("2", stage="base", plan={"w": WIDGETS}, agent="claude", model="opus-4-8")
    r.task("2", "w", 1, agent={**_claude(9.0, 900_000, 9_000, 500), "model": "opus-4-8"})
    r.finish_run("2")
    r.close()
    with Ledger.open(tmp_path / "ledger.db", readonly=True) as ledger:
        rates = recorded_rates(ledger.read(), "claude", "sonnet-4-6")
    assert rates.runs == ["1"]
    widgets, gadgets = rates.by_repo["acme/widgets"], rates.by_repo["acme/gadgets"]
    assert (widgets.attempts, widgets.usd, widgets.tokens) == (2, pytest.approx(2.0), pytest.approx(410_000))
    assert (gadgets.attempts, gadgets.usd, gadgets.tokens) == (2, pytest.approx(0.6), pytest.approx(128_000))
    assert rates.overall.attempts == 4 and rates.overall.usd == pytest.approx(5.2 / 4)
    # graded attempts: task.started to task.finished (the builder appends at once); the
    # abandoned one: its agent's 90 s
    assert widgets.seconds < 5 and gadgets.seconds == pytest.approx(90 / 2, abs=5)

    table = Basis(source="table", seconds=600, tokens=510_000, usd=1.65)
    plan = [PlannedRun(stage="base", sequences=2, tasks=4, passes=[
        PlannedPass(name="initial", attempts=4, repos={"acme/widgets": 2, "acme/other": 2}, ordered=True,
                    longest_sequence=2)])]
    est = estimate_plan(plan, rates, table, agent="claude", model="sonnet-4-6", workers=1, budget_usd=3.0)
    # widgets from its own mean, the repository never run from the mean over all
    assert est.rests_on == "recorded" and est.total["usd"] == pytest.approx(2 * 2.0 + 2 * 5.2 / 4, abs=0.01)
    assert est.budget is not None and est.budget["covers_run"] is False and est.budget["attempts"] == 1
    nothing = estimate_plan(plan, type(rates)(), table, agent="claude", model="sonnet-4-6", workers=2)
    assert nothing.rests_on == "table" and nothing.total["usd"] == pytest.approx(4 * 1.65)
    assert nothing.total["wall_seconds"] == pytest.approx(4 * 600 / 2)
