"""Memory efficiency, the verdict line, cost per solved task and the CL-Score drivers as
pure functions, on vectors with hand-computed values (no ledger)."""

from __future__ import annotations

import numpy as np
import pytest

from projections._spend import NOTHING_SOLVED, SpendSum, cost_text, per_solved, reported_cost
from projections.compare import PairedTasks, VerdictInputs, memory_efficiency, verdict_line
from projections.compare._efficiency import EQUAL, NO_BASE, NO_ORACLE, bootstrap, efficiency_draws, efficiency_na
from projections.compare._verdict import call, weakeners
from projections.metrics import LEGEND, Lambdas, ScoredRun, SequenceOutcomes, compute, marked, score_drivers


def test_efficiency_formula_and_its_null_cases() -> None:
    assert memory_efficiency(0.75, 0.5, 1.0) == pytest.approx(0.5)
    assert memory_efficiency(0.5, 0.5, 0.75) == 0.0
    assert memory_efficiency(0.25, 0.5, 0.75) == pytest.approx(-1.0)  # worse than the base
    assert memory_efficiency(1.0, 0.5, 0.75) == pytest.approx(2.0)  # better than the oracle
    assert memory_efficiency(0.75, 0.5, 0.5) is None and efficiency_na(0.75, 0.5, 0.5) == EQUAL
    assert memory_efficiency(0.75, None, 1.0) is None and efficiency_na(0.75, None, 1.0) == NO_BASE
    assert memory_efficiency(0.75, 0.5, None) is None and efficiency_na(0.75, 0.5, None) == NO_ORACLE
    assert efficiency_na(0.75, 0.5, 1.0) is None


MEM = (True, True, False, True, False, True)
BASE = (True, False, False, False, False, True)
ORACLE = (True, True, True, True, False, True)


def _reference(mem: tuple[bool, ...], base: tuple[bool, ...], oracle: tuple[bool, ...], idx: np.ndarray) -> np.ndarray:
    """The efficiency on each resample, one loop at a time."""
    out = []
    for row in idx:
        m, b, o = (float(np.mean([v[i] for i in row])) for v in (mem, base, oracle))
        out.append(np.nan if o == b else (m - b) / (o - b))
    return np.array(out)


def test_bootstrap_draws_the_same_tasks_in_the_three_runs_and_is_deterministic() -> None:
    idx = np.random.default_rng(3).integers(0, len(MEM), (500, len(MEM)))
    got = efficiency_draws(MEM, BASE, ORACLE, idx)
    np.testing.assert_allclose(got, _reference(MEM, BASE, ORACLE, idx), equal_nan=True)
    # Every task drawn once: the point value (4/6 - 2/6) / (5/6 - 2/6) = 2/3.
    assert efficiency_draws(MEM, BASE, ORACLE, np.arange(6)[None, :])[0] == pytest.approx(2 / 3)
    paired = [PairedTasks(name="s", mem=MEM, base=BASE, oracle=ORACLE)]
    first, second = bootstrap(paired, resamples=2000, seed=0), bootstrap(paired, resamples=2000, seed=0)
    assert first == second  # a fixed seed: the same interval every time
    (ci, undefined), (macro_ci, _) = first[0]["s"], first[1]
    assert ci is not None and ci[0] <= 2 / 3 <= ci[1] and macro_ci == ci  # one sequence: the macro is it
    assert undefined > 0  # draws where oracle == base are left out, and counted
    assert bootstrap(paired, resamples=2000, seed=1) != first


def test_macro_interval_averages_the_defined_sequences_of_each_resample() -> None:
    same = PairedTasks(name="flat", mem=(True, False), base=(True, False), oracle=(True, False))  # always undefined
    paired = [PairedTasks(name="s", mem=MEM, base=BASE, oracle=ORACLE), same]
    per, (macro_ci, _) = bootstrap(paired, resamples=1000, seed=0)
    assert per["flat"] == (None, 1000)  # oracle == base on every draw: no interval
    assert macro_ci == per["s"][0]  # the undefined sequence is left out of every resample's mean


@pytest.mark.parametrize(("gained", "lost", "p", "said"), [
    (8, 1, 0.039, "memory helped"), (1, 8, 0.039, "memory hurt"), (8, 2, 0.109, "no clear difference"),
    (0, 0, 1.0, "no clear difference")])
def test_the_call(gained: int, lost: int, p: float, said: str) -> None:
    assert call(gained, lost, p) == said


BASE_INPUTS = VerdictInputs(a="v1 base", b="v3 plugin-accum", b_version="3", gained=8, lost=2, tasks=24,
                            p_value=0.109375, gain=0.583, gain_ci=(-0.278, 0.933), efficiency=None,
                            efficiency_na=NO_ORACLE, flagged=0, passes_a=("initial",), passes_b=("initial",))


def test_verdict_line_with_nothing_to_weaken_it() -> None:
    line = verdict_line(BASE_INPUTS)
    assert line == ("v3 plugin-accum vs v1 base: no clear difference (+8 tasks, -2 of 24 paired in the initial pass, "
                    "McNemar p=0.109); normalized gain 0.583 [-0.278, 0.933]; memory efficiency n/a (no oracle run); "
                    "nothing found to weaken it")
    with_eff = verdict_line(VerdictInputs(**{**_fields(BASE_INPUTS), "efficiency": 0.5, "efficiency_ci": (0.1, 0.9)}))
    assert "memory efficiency 0.500 [0.100, 0.900]" in with_eff


def _fields(v: VerdictInputs) -> dict[str, object]:
    return {f: getattr(v, f) for f in v.__struct_fields__}


@pytest.mark.parametrize(("change", "said"), [
    ({"flagged": 106}, "106 recalled items flagged as leakage (`swecl audit 3 --summary`)"),
    ({"no_verdict_a": 1, "no_verdict_b": 2}, "tasks without a valid verdict, counted unresolved: 1 in A, 2 in B"),
    ({"passes_b": ("initial", "retest", "baseline")}, "different passes (initial vs initial+retest+baseline: ACC is "
     "one run's re-test row against the other's initial pass)"),
    ({"passes_b": ("initial", "baseline")}, "different passes (initial vs initial+baseline)"),
    ({"order_b": "permute:1"}, "different task orders (dataset vs permute:1)"),
    ({"paired_from": 4}, "a fork: paired only from order 4 on"),
])
def test_each_weakener_is_said_in_the_one_line(change: dict[str, object], said: str) -> None:
    inputs = VerdictInputs(**{**_fields(BASE_INPUTS), **change})
    assert weakeners(inputs) == [said]
    line = verdict_line(inputs)
    assert line.endswith(f"weakened by: {said}") and "\n" not in line


def test_the_verdict_stays_one_line_whatever_the_names_hold() -> None:
    line = verdict_line(VerdictInputs(**{**_fields(BASE_INPUTS), "b": "v3\nplugin", "flagged": 2, "order_a": "x"}))
    assert "\n" not in line and line.count("; ") >= 4


def test_cost_per_solved_task_is_null_with_the_reason_never_zero() -> None:
    assert reported_cost(0.0, {}) is None  # the demo's placeholder: no price
    assert reported_cost(0.0, {"input": 10}) == 0.0 and reported_cost(0.4, {}) == 0.4
    spend = SpendSum()
    spend.add(0.0, {})
    assert spend.cost_usd is None and spend.tokens is None
    cost = per_solved(spend, 3)
    assert cost.usd_per_solved is None and cost.usd_na == "not reported: the agent reported no cost"
    assert cost_text(cost) == "not reported (the agent reported no cost or tokens; 3 solved)"
    paid = SpendSum()
    paid.add(0.5, {"input": 1000, "output": 200})
    paid.add(0.25, {"input": 500, "output": 100})  # an abandoned attempt: paid, counted
    got = per_solved(paid, 3)
    assert got.usd_per_solved == pytest.approx(0.25) and got.tokens_per_solved == pytest.approx(600)
    assert cost_text(got) == "$0.2500 and 600 tokens per solved task (3 solved)"
    none_solved = per_solved(paid, 0)
    assert none_solved.usd_per_solved is None and none_solved.usd_na == NOTHING_SOLVED
    assert cost_text(none_solved) == f"n/a ({NOTHING_SOLVED})"


def test_direction_marks() -> None:
    assert [marked(m) for m in ("ACC", "F", "BWT", "FWT", "CL-Score")] == ["ACC↑", "F↓", "BWT↑", "FWT↑", "CL-Score↑"]
    assert LEGEND == "↑ higher is better, ↓ lower is better"


def test_what_drives_a_cl_score_above_a_run_that_solved_more() -> None:
    # The demo's plugin-accum and plugin-dreamed macro values: 20/24 at 2.002 above 21/24 at 1.991.
    accum = {"ACC": 0.833333, "F": 0.0, "BWT": 0.0, "FWT": 0.285714, "AULC": 0.883333, "CL-Score": 2.002381}
    dreamed = {"ACC": 0.833333, "F": 0.047619, "BWT": -0.047619, "FWT": 0.333333, "AULC": 0.920139,
               "CL-Score": 1.991468}
    runs = [ScoredRun(label="v3", metrics=accum, solved=20, tasks=24),
            ScoredRun(label="v4", metrics=dreamed, solved=21, tasks=24)]
    (line,) = score_drivers(runs, Lambdas())
    assert line.startswith("CL-Score ranks v3 (2.002, 20/24 solved) above v4 (1.991, 21/24): ")
    assert line.endswith("difference +0.011: -F +0.048, BWT +0.048, AULC -0.037, FWT -0.048")
    # Ranked as they solved, or a CL-Score not measured: nothing to say.
    assert score_drivers([runs[1], ScoredRun(label="v5", metrics=accum, solved=22, tasks=24)], Lambdas()) == []
    assert score_drivers([ScoredRun(label="v3", metrics={**accum, "F": None}, solved=20, tasks=24), runs[1]],
                         Lambdas()) == []


def test_a_one_task_stratum_without_the_pass_is_not_measured() -> None:
    # Difficulty 2 holds one task; no re-test and no baseline ran.
    seq = SequenceOutcomes(name="s", initial=[1, 0, 1], difficulty=[1, 1, 2])
    stratum = compute([seq]).sequences["s"].extras.strata["2"]
    assert stratum.n_tasks == 1 and stratum.metrics["FWT"] is None and stratum.metrics["F"] is None
    assert stratum.unmeasured["FWT"] == "no baseline pass" and stratum.unmeasured["F"] == "no re-test pass"
    assert not any("= 0" in note for note in stratum.notes), stratum.notes
    # With the passes run, the one task's F = FWT = 0 is the definition, measured (as for a sequence of one).
    full = SequenceOutcomes(name="s", initial=[1, 0, 1], final=[1, 0, 1], baseline=[0, 0, 1], difficulty=[1, 1, 2])
    measured = compute([full]).sequences["s"].extras.strata["2"]
    assert measured.metrics["FWT"] == 0.0 and measured.unmeasured == {}


def test_the_notes_say_not_measured_where_the_values_are_na() -> None:
    item = compute([SequenceOutcomes(name="s", initial=[1, 0, 1])]).sequences["s"]
    assert item.notes == ("no re-test recorded: F, BWT, CL-S and CL-F1 are not measured (n/a)",
                          "no baseline (memory-off) results: FWT is not measured (n/a)")
