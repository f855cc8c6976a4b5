"""The normalized gain (mem - base) / (1 - base) of initial-pass resolve rates, on a crafted
ledger with hand-computed values: per sequence and macro in `swecl metrics` (the base: the
base-stage run of the same agent and tasks in the folder) and `swecl compare A B` (A the
base); null where the base resolved every task."""

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
# Base (run 1): S1 1/4 resolved, S2 2/2. Memory run 2: S1 2/4, S2 1/2.
BASE = {S1: [1, 0, 0, 0], S2: [1, 1]}
MEM = {S1: [1, 1, 0, 0], S2: [1, 0]}
GAIN_S1 = (2 / 4 - 1 / 4) / (1 - 1 / 4)  # 1/3; S2's base is 1: no gain defined


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("gain") / "results"
    root.mkdir()
    b = LedgerBuilder(Ledger.open(root / "ledger.db", create=True))
    try:
        for version, stage, vectors, agent in (("1", "base", BASE, "demo"), ("2", "plugin-blank", MEM, "demo"),
                                               ("3", "base", MEM, "other")):  # run 3: another agent, never a base of 2
            b.start_run(version, stage=stage, plan=PLAN, agent=agent, passes=["initial"])
            for seq, initial in vectors.items():
                b.run_pass(version, seq, "initial", initial)
            b.finish_run(version)
    finally:
        b.close()
    return root


def test_metrics_give_the_gain_over_the_base_run(root: Path) -> None:
    doc = swecl_json(root, "metrics", cache=root.parent / "cache")
    by_version = {v["version"]: v["normalized_gain"] for v in doc["versions"]}
    gain = by_version["2"]
    assert {k: v for k, v in gain["sequences"][S1].items() if k != "ci"} == {
        "base_version": "1", "rate": 0.5, "base_rate": 0.25, "gain": pytest.approx(GAIN_S1)}
    assert {k: v for k, v in gain["sequences"][S2].items() if k != "ci"} == {
        "base_version": "1", "rate": 0.5, "base_rate": 1.0, "gain": None}
    assert gain["sequences"][S2]["ci"] is None  # the base resolved every task: no gain, no interval
    assert gain["macro"] == pytest.approx(GAIN_S1) and gain["na"] is None
    assert by_version["1"]["macro"] is None and by_version["1"]["na"].startswith("a base run")
    out = " ".join(swecl(root, "metrics", cache=root.parent / "cache").stdout.split())
    assert "normalized gain of v2 plugin-blank over base 1" in out and "macro=0.333" in out


def test_compare_gives_the_gain_of_b_over_a(root: Path) -> None:
    doc = swecl_json(root, "compare", "1", "2", cache=root.parent / "cache")
    assert doc["sequences"][S1]["normalized_gain"] == pytest.approx(GAIN_S1)
    assert doc["sequences"][S2]["normalized_gain"] is None
    assert doc["macro"]["normalized_gain"] == pytest.approx(GAIN_S1)
    out = " ".join(swecl(root, "compare", "1", "2", cache=root.parent / "cache").stdout.split())
    assert "normalized gain of B over A" in out and "macro=0.333" in out
