"""Memory efficiency (mem - base) / (oracle - base), the oracle run's lookup, cost per solved
task and the verdict line in `swecl metrics` and `swecl compare`, on a crafted ledger with
hand-computed values. The oracle runs are recorded under stage `oracle` as `swecl run
--stage oracle` records them (a `--memory-server` oracle with the server in its config)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.ledgers import LedgerBuilder
from ledger import Ledger
from ledger.events import TaskRef
from tests.inprocess import swecl, swecl_json

S1, S2 = "alpha__alpha", "beta__beta"
PLAN = {S1: [TaskRef(f"alpha__alpha-{k}", k, "alpha/alpha") for k in range(1, 5)],
        S2: [TaskRef(f"beta__beta-{k}", k, "beta/beta") for k in range(1, 3)]}
SERVER = {"memory_server": "python -m my_memory"}
PAID = {"cost_usd": 0.1, "tokens": {"input": 100, "output": 20}}
# version: (stage, S1 initial, S2 initial, run.started fields, status)
RUNS = {
    "1": ("base", [1, 0, 0, 0], [1, 0], {}, "finished"),
    "2": ("plugin-blank", [1, 1, 0, 0], [1, 1], {}, "finished"),
    "3": ("oracle", [1, 1, 1, 0], [1, 0], {}, "finished"),  # S2: oracle == base, nothing to normalize by
    "4": ("oracle", [1, 1, 1, 1], [1, 1], {"agent": "other"}, "finished"),  # another agent: never an oracle of 2
    "5": ("oracle", [1, 1, 1, 1], [1, 1], {}, "failed"),  # failed: never
    "6": ("oracle", [1, 1, 1, 1], [1, 1], {"config": SERVER}, "finished"),  # the memory server's oracle
    "7": ("plugin-blank", [1, 0, 1, 0], [1, 0], {"config": SERVER}, "finished"),  # a --memory-server run
}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("efficiency") / "results"
    root.mkdir()
    b = LedgerBuilder(Ledger.open(root / "ledger.db", create=True))
    try:
        for version, (stage, s1, s2, fields, status) in RUNS.items():
            b.start_run(version, stage=stage, plan=PLAN, passes=["initial"], memory_mode="plugin-real"
                        if stage == "plugin-blank" else "off", **fields)
            if version == "2":  # paid attempts, one of them abandoned (it was paid too) and done again
                b.task(version, S1, 1, abandon=True, agent=PAID)
                b.run_pass(version, S1, "initial", s1, attempt=2, agent=PAID)
                b.run_pass(version, S2, "initial", s2, attempt=2, agent=PAID)
            else:
                b.run_pass(version, S1, "initial", s1)
                b.run_pass(version, S2, "initial", s2)
            b.finish_run(version, status=status)
    finally:
        b.close()
    return root


def _cache(root: Path) -> Path:
    return root.parent / "cache"


def _by_version(root: Path) -> dict[str, dict]:
    return {v["version"]: v for v in swecl_json(root, "metrics", cache=_cache(root))["versions"]}


def test_metrics_give_the_efficiency_against_the_oracle_of_the_same_memory_system(root: Path) -> None:
    runs = _by_version(root)
    eff = runs["2"]["memory_efficiency"]
    s1, s2 = eff["sequences"][S1], eff["sequences"][S2]
    # S1: (2/4 - 1/4) / (3/4 - 1/4) = 0.5 over base 1 and oracle 3 (4: another agent, 5: failed,
    # 6: a memory server's oracle, newer but not of the substrate's memory).
    assert (s1["base_version"], s1["oracle_version"], s1["efficiency"]) == ("1", "3", pytest.approx(0.5))
    assert s1["ci"][0] <= 0.5 <= s1["ci"][1]
    assert s2["efficiency"] is None and s2["na"].startswith("oracle == base") and s2["ci"] is None
    assert eff["macro"] == pytest.approx(0.5) and eff["na"] is None  # the mean of the defined sequences
    # The --memory-server run: its own server's oracle 6. S1 (2/4 - 1/4) / (1 - 1/4), S2 (1/2 - 1/2) / (1 - 1/2).
    mine = runs["7"]["memory_efficiency"]
    assert {name: (r["oracle_version"], r["efficiency"]) for name, r in mine["sequences"].items()} == {
        S1: ("6", pytest.approx(1 / 3)), S2: ("6", 0.0)}
    assert mine["macro"] == pytest.approx(1 / 6)
    # No efficiency for a base run (no gain either) or an oracle run (its gain over the base stands).
    assert runs["1"]["memory_efficiency"] is None
    assert runs["3"]["memory_efficiency"]["macro"] is None and runs["3"]["memory_efficiency"]["na"].startswith(
        "an oracle run")


def test_the_gain_has_its_interval_and_the_run_its_verdict(root: Path) -> None:
    run = _by_version(root)["2"]
    gain = run["normalized_gain"]
    assert gain["macro"] == pytest.approx(((0.5 - 0.25) / 0.75 + 1.0) / 2) and len(gain["ci"]) == 2
    assert run["verdict"].startswith("v2 plugin-blank vs v1 base: no clear difference (+2 tasks, -0 of 6 paired")
    assert "memory efficiency 0.500 [" in run["verdict"] and "\n" not in run["verdict"]
    assert _by_version(root)["1"]["verdict"] is None  # a base run is not judged against itself


def test_cost_per_solved_task_counts_every_paid_attempt(root: Path) -> None:
    runs = _by_version(root)
    cost = runs["2"]["cost_per_solved"]
    # Seven paid attempts (one abandoned) in the initial pass, four tasks solved.
    assert cost["run"]["spend"] == {"attempts": 7, "cost_usd": pytest.approx(0.7), "tokens": 840}
    assert cost["run"]["usd_per_solved"] == pytest.approx(0.7 / 4) and cost["run"]["tokens_per_solved"] == 210
    assert cost["sequences"][S2]["usd_per_solved"] == pytest.approx(0.1)  # two attempts, two solved
    assert cost["whole_run"]["attempts"] == 7
    # No cost reported: null with the reason, never $0.
    free = runs["1"]["cost_per_solved"]["run"]
    assert free["usd_per_solved"] is None and free["usd_na"] == "not reported: the agent reported no cost"
    out = " ".join(swecl(root, "metrics", cache=_cache(root)).stdout.split())
    assert ("cost per solved task of v2 plugin-blank (initial pass, every attempt): $0.1750 and 210 tokens per "
            "solved task (4 solved); whole run (7 attempts): $0.70, 840 tokens") in out
    assert "memory efficiency of v2 plugin-blank" in out and "(oracle 3)" in out


def test_compare_says_the_verdict_first_and_takes_an_oracle(root: Path) -> None:
    doc = swecl_json(root, "compare", "1", "2", cache=_cache(root))
    assert doc["memory_efficiency"]["macro"] == pytest.approx(0.5)
    # The very line `swecl metrics` says for run 2 against its base 1.
    assert doc["verdict"] == _by_version(root)["2"]["verdict"]
    given = swecl_json(root, "compare", "1", "2", "--oracle", "6", cache=_cache(root))["memory_efficiency"]
    assert {name: r["efficiency"] for name, r in given["sequences"].items()} == {
        S1: pytest.approx(1 / 3), S2: pytest.approx(1.0)}
    assert doc["cost_per_solved_diff"] == {"usd_per_solved": None, "tokens_per_solved": None}  # A reported none
    out = swecl(root, "compare", "1", "2", cache=_cache(root)).stdout
    assert out.splitlines()[0] == doc["verdict"]
    flat = " ".join(out.split())
    assert "memory efficiency of B, A as the base" in flat and "alpha=0.500 [" in flat
    assert "cost per solved task, B - A: n/a (not reported, or nothing solved, in A or B)" in flat
    bad = swecl(root, "compare", "1", "2", "--oracle", "9", cache=_cache(root), check=False)
    assert bad.returncode == 2 and "no run version '9' for --oracle" in bad.stderr
