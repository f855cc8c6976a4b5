"""The verdict line, memory efficiency, cost per solved task and the direction marks on real
demo runs: the spans sequence's initial pass with plugin-blank (the session's shared run
`ref`) and base (run 1), as `swecl run` records them, and an oracle run (`swecl run --stage
oracle`) found for the efficiency."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from commands import Experiment
from tests.inprocess import swecl, swecl_json
from tests.run.support import SPANS
from tests.shared_runs import demo_run_copy


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    results = demo_run_copy(tmp_path_factory, cache, "ref-initial")
    swecl(results, "run", "--stage", "base", "--sequence", SPANS, "--version", "1", "--quiet", cache=cache)
    return results


def test_metrics_open_with_the_verdict_and_say_what_is_not_measured(demo: Path, cache: Path) -> None:
    doc = {v["version"]: v for v in swecl_json(demo, "metrics", cache=cache)["versions"]}
    ref = doc["ref"]
    verdict = ref["verdict"]
    assert verdict.startswith("ref plugin-blank vs v1 base: ") and "McNemar p=" in verdict
    assert ref["memory_efficiency"]["na"] == "no oracle run"  # null with the reason, never a number
    assert "memory efficiency n/a (no oracle run)" in verdict
    assert len(ref["normalized_gain"]["ci"]) == 2
    # The demo agent reports no cost and no tokens: not reported, never $0.
    for version in ("ref", "1"):
        cost = doc[version]["cost_per_solved"]["run"]
        assert cost["usd_per_solved"] is None and cost["tokens_per_solved"] is None
        assert cost["usd_na"] == "not reported: the agent reported no cost"
        assert doc[version]["cost_per_solved"]["whole_run"]["cost_usd"] is None
    # A difficulty stratum of one task in a run with no baseline pass: FWT null, with the reason.
    strata = doc["1"]["extras"][SPANS]["strata"]
    ones = [s for s in strata.values() if s["n_tasks"] == 1]
    assert ones and all(s["metrics"]["FWT"] is None and s["unmeasured"]["FWT"] == "no baseline pass" for s in ones)
    out = swecl(demo, "metrics", cache=cache, env={"COLUMNS": "100"}).stdout
    assert out.splitlines()[0] == verdict  # first, on one line
    header = next(line for line in out.splitlines() if "ACC" in line and "CL-Score" in line)
    assert header.split()[3:6] == ["ACC↑", "F↓", "FWT↑"]
    assert "↑ higher is better, ↓ lower is better" in out
    assert "not reported (their agents reported no cost or tokens)" in " ".join(out.split())


def test_compare_says_the_same_verdict_and_takes_an_oracle(demo: Path, cache: Path) -> None:
    metrics = {v["version"]: v for v in swecl_json(demo, "metrics", cache=cache)["versions"]}
    doc = swecl_json(demo, "compare", "1", "ref", cache=cache)
    assert doc["verdict"] == metrics["ref"]["verdict"]  # one function, the same line
    assert swecl(demo, "compare", "1", "ref", cache=cache).stdout.splitlines()[0] == doc["verdict"]
    # Any run as the oracle: B itself reaches exactly as far as the oracle.
    given = swecl_json(demo, "compare", "1", "ref", "--oracle", "ref", cache=cache)["memory_efficiency"]
    row = given["sequences"][SPANS]
    if row["oracle_rate"] != row["base_rate"]:
        assert row["efficiency"] == 1.0 and row["ci"] == [1.0, 1.0]
    else:
        assert row["efficiency"] is None and row["na"].startswith("oracle == base")


def test_report_opens_with_the_verdict_and_marks_directions(demo: Path, tmp_path: Path) -> None:
    page = Experiment(demo).report(out_dir=tmp_path / "report").index.read_text()
    assert page.index('id="verdict"') < page.index('id="runs"')
    assert 'data-verdict="ref"' in page and "McNemar p=" in page
    assert "<th>ACC↑</th>" in page and "<th>F↓</th>" in page
    assert "F = BWT = 0" not in page and "FWT = 0" not in page  # n/a is said as not measured
    assert "not reported (the agent reported no cost or tokens" in page


def test_oracle_run_is_found_for_the_efficiency(demo: Path, cache: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    shutil.copytree(demo, results, symlinks=True)
    swecl(results, "run", "--stage", "oracle", "--sequence", SPANS, "--passes", "initial", "--version", "orc",
          "--quiet", cache=cache)
    doc = {v["version"]: v for v in swecl_json(results, "metrics", cache=cache)["versions"]}
    row = doc["ref"]["memory_efficiency"]["sequences"][SPANS]
    assert row["oracle_version"] == "orc" and row["base_version"] == "1"
    if row["oracle_rate"] == row["base_rate"]:
        assert row["efficiency"] is None and row["na"].startswith("oracle == base")
    else:
        expected = (row["rate"] - row["base_rate"]) / (row["oracle_rate"] - row["base_rate"])
        assert row["efficiency"] == pytest.approx(expected) and row["ci"] is not None
    compared = json.loads(swecl(results, "compare", "1", "ref", "--json", cache=cache).stdout)
    assert compared["memory_efficiency"]["sequences"][SPANS]["oracle_version"] == "orc"
    # Regenerated from the ledger alone (no projection cache, no run folder): the same numbers.
    for path in results.iterdir():
        if path.name.startswith("projections.db") or path.name.startswith("v"):
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    again = {v["version"]: v for v in swecl_json(results, "metrics", cache=cache)["versions"]}
    assert again["ref"]["memory_efficiency"] == doc["ref"]["memory_efficiency"]
    assert again["ref"]["verdict"] == doc["ref"]["verdict"]


def test_view_run_page_says_the_verdict_and_the_cost(demo: Path) -> None:
    from projections import Results, runs
    from projections.report import collect, run_assessment
    from projections.view._pages import assessment_html

    results = Results(demo)
    with results.open_ledger(readonly=True) as ledger:
        projector = results.projector(ledger)
        known = runs(ledger, projector)
        vr = collect(ledger, projector, ["ref"], known=known).versions[0]
        assessed = run_assessment(ledger, projector, known, vr)
        base = collect(ledger, projector, ["1"], known=known).versions[0]
        assert run_assessment(ledger, projector, known, base) is None  # a base run has no base
    assert assessed is not None
    html = assessment_html(vr, assessed)
    assert 'data-verdict="ref"' in html and "ref plugin-blank vs v1 base: " in html
    assert "memory efficiency of" in html and "no oracle run" in html
    assert "not reported (the agent reported no cost or tokens" in html and "$0" not in html
