"""`projections.compare`: the exact McNemar test and the paired bootstrap intervals against
scipy (a test-only dependency) on seeded random data, hand-computed small cases, the point
estimates against `projections.metrics.compute`, and what is refused or n/a."""

from __future__ import annotations

import random
from collections.abc import Callable

import numpy as np
import pytest
import scipy.stats

from ledger.errors import SweclError
from projections.compare import (
    COMPARED,
    RESOLVED,
    RunSide,
    check_comparable,
    compare_runs,
    mcnemar,
    mcnemar_exact_p,
    percentile_interval,
    resampled_metrics,
)
from projections.metrics import Lambdas, Outcome, SequenceOutcomes, compute, get_formula

SEED = 20240611
ALL_PASSES = ("initial", "retest", "baseline")


def side(version: str, *seqs: SequenceOutcomes, passes: tuple[str, ...] = ALL_PASSES, status: str = "finished",
         ids: dict[str, tuple[str, ...]] | None = None) -> RunSide:
    """A run over `seqs`; task ids `{sequence}-{k}` unless given (the same tasks in every run)."""
    tasks = ids or {s.name: tuple(f"{s.name}-{k}" for k in range(1, s.n_tasks + 1)) for s in seqs}
    return RunSide(version=version, label=f"v{version}", stage="plugin-blank", passes=passes, status=status,
                   tasks=tasks, sequences=list(seqs))


def random_vector(rnd: random.Random, n: int, missing: float, p: float) -> list[Outcome]:
    return [None if rnd.random() < missing else int(rnd.random() < p) for _ in range(n)]


def random_sequence(rnd: random.Random, name: str, n: int, missing: float = 0.0, *, final: bool = True,
                    baseline: bool = True) -> SequenceOutcomes:
    p = rnd.uniform(0.2, 0.8)
    return SequenceOutcomes(
        name=name,
        initial=random_vector(rnd, n, missing, p),
        final=random_vector(rnd, n, missing, p) if final else None,
        baseline=random_vector(rnd, n, missing, p - 0.1) if baseline else None,
    )


# --- McNemar ----------------------------------------------------------------------------


@pytest.mark.parametrize(("b", "c", "p"), [
    (1, 6, 0.125),        # 2 * (C(7,0) + C(7,1)) / 2^7 = 2 * 8/128
    (6, 1, 0.125),        # symmetric
    (0, 0, 1.0),          # no discordant pair: nothing against the null
    (0, 1, 1.0),          # 2 * 1/2, capped
    (0, 5, 0.0625),       # 2 / 2^5
    (3, 3, 1.0),
    (2, 8, 0.109375),     # 2 * (1 + 10 + 45) / 1024
    (0, 20, 2 / 2**20),
])
def test_mcnemar_exact_hand_computed(b: int, c: int, p: float) -> None:
    assert mcnemar_exact_p(b, c) == pytest.approx(p, rel=1e-15, abs=0)


def test_mcnemar_exact_matches_scipy_binomtest() -> None:
    rnd = random.Random(SEED)
    pairs = [(rnd.randint(0, 40), rnd.randint(0, 40)) for _ in range(300)] + [(150, 200), (273, 0), (0, 273), (130, 143)]
    for b, c in pairs:
        if b + c == 0:
            continue
        expected = scipy.stats.binomtest(c, b + c, 0.5, alternative="two-sided").pvalue
        assert mcnemar_exact_p(b, c) == pytest.approx(expected, rel=1e-12, abs=1e-300), (b, c)


def test_mcnemar_counts_the_discordant_pairs() -> None:
    a = [True, True, False, False, True, False, False]
    b = [True, False, True, True, False, False, True]
    test = mcnemar(a, b)
    assert (test.b, test.c, test.both, test.neither, test.discordant) == (2, 3, 1, 1, 5)
    assert test.p_value == scipy.stats.binomtest(3, 5, 0.5).pvalue == 1.0
    with pytest.raises(ValueError):
        mcnemar_exact_p(-1, 2)


# --- the statistic the bootstrap resamples is the metric `swecl metrics` reports ---------


@pytest.mark.parametrize("formula", ["native", "eval-v1"])
def test_each_task_drawn_once_gives_the_formula_sets_value(formula: str) -> None:
    """On random vectors with missing outcomes, with and without re-test and baseline, for
    default and other weights: the resampled statistic at the identity draw is `compute`'s."""
    rnd = random.Random(SEED)
    weights = [Lambdas(), Lambdas(acc=0.5, f=2.0, fwt=0.0, bwt=1.5, aulc=0.3)]
    for trial in range(1500):
        n = rnd.randint(1, 12)
        missing = rnd.choice([0.0, 0.2, 0.6, 1.0])
        seq = SequenceOutcomes(
            name="s",
            initial=random_vector(rnd, n, missing if rnd.random() < 0.5 else 0.0, 0.5),
            final=rnd.choice([None, random_vector(rnd, n, missing, 0.5)]),
            baseline=rnd.choice([None, random_vector(rnd, n, missing, 0.4)]),
        )
        lambdas = weights[trial % 2]
        # The formula set's own value (a convention included): what the resample recomputes.
        expected = get_formula(formula).score(seq, lambdas).metrics
        got = resampled_metrics(seq, formula, lambdas, np.arange(n)[None, :])
        assert got[RESOLVED][0] == sum(1 for v in seq.initial if v == 1) / n
        for metric in ("ACC", "F", "FWT", "AULC", "CL-Score"):
            value = expected[metric]
            if value is None:
                assert np.isnan(got[metric][0]), (trial, metric, seq)
            else:
                assert got[metric][0] == pytest.approx(value, abs=1e-12), (trial, metric, seq)


def test_point_estimates_are_the_difference_of_the_two_runs_metrics() -> None:
    rnd = random.Random(SEED)
    seqs_a = [random_sequence(rnd, f"s{k}", n, 0.2) for k, n in enumerate((6, 9, 4))]
    seqs_b = [random_sequence(rnd, f"s{k}", n, 0.2) for k, n in enumerate((6, 9, 4))]
    for formula in ("native", "eval-v1"):
        comparison = compare_runs(side("1", *seqs_a), side("2", *seqs_b), formula=formula, resamples=500)
        result_a, result_b = compute(seqs_a, formula), compute(seqs_b, formula)
        for name, row in comparison.sequences.items():
            for metric in COMPARED[1:]:
                m = row.metrics[metric]
                assert (m.a, m.b) == (result_a.sequences[name].metrics[metric], result_b.sequences[name].metrics[metric])
                assert m.diff == m.b - m.a  # type: ignore[operator]
        for metric in COMPARED[1:]:
            m = comparison.macro.metrics[metric]
            assert (m.a, m.b, m.diff) == (result_a.macro[metric], result_b.macro[metric],
                                          result_b.macro[metric] - result_a.macro[metric])  # type: ignore[operator]
        rates_a = [sum(v == 1 for v in s.initial) / s.n_tasks for s in seqs_a]
        rates_b = [sum(v == 1 for v in s.initial) / s.n_tasks for s in seqs_b]
        assert comparison.macro.metrics[RESOLVED].diff == pytest.approx(np.mean(rates_b) - np.mean(rates_a), abs=1e-15)


# --- the bootstrap against scipy.stats.bootstrap -------------------------------------------


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    total = den.sum(axis=-1)
    return np.where(total > 0, num.sum(axis=-1) / np.where(total > 0, total, 1.0), np.nan)


def _ok(x: np.ndarray) -> np.ndarray:
    return ~np.isnan(x)


def reference_native(ini: np.ndarray, fin: np.ndarray, base: np.ndarray, pos: np.ndarray, w: np.ndarray,
                     n: int) -> dict[str, np.ndarray]:
    """native's five compared metrics written directly on resampled data (NaN = missing):
    `pos` is each drawn task's place in the recorded order, `w` its learning-curve weight."""
    zero = np.nan_to_num
    out = {RESOLVED: (ini == 1).mean(axis=-1), "ACC": _ratio(zero(fin) * _ok(fin), _ok(fin) * 1.0)}
    f_terms = (pos < n - 1) & _ok(ini) & _ok(fin)
    out["F"] = _ratio(np.where(f_terms, zero(ini) - zero(fin), 0.0), f_terms * 1.0)
    fwt_terms = (pos >= 1) & _ok(ini) & _ok(base)
    out["FWT"] = _ratio(np.where(fwt_terms, zero(ini) - zero(base), 0.0), fwt_terms * 1.0)
    aulc = _ratio(w * zero(ini), w)
    out["CL-Score"] = out["ACC"] - out["F"] + out["FWT"] + (0.0 - out["F"]) + aulc
    return out


def reference_eval_v1(ini: np.ndarray, fin: np.ndarray, base: np.ndarray, pos: np.ndarray, w: np.ndarray,
                      n: int) -> dict[str, np.ndarray]:
    """eval-v1 likewise: missing = unresolved outside ACC, 0.0 for an empty input, decided per resample."""
    zero = np.nan_to_num
    recorded = _ok(ini).sum(axis=-1) > 0
    out = {RESOLVED: (ini == 1).mean(axis=-1)}
    acc = _ratio(zero(ini) * _ok(ini), _ok(ini) * 1.0)
    out["ACC"] = np.where(np.isnan(acc), 0.0, acc)
    not_last, not_first = (pos < n - 1) * 1.0, (pos >= 1) * 1.0
    out["F"] = np.where(recorded & (_ok(fin).sum(axis=-1) > 0), _ratio((zero(ini) - zero(fin)) * not_last, not_last), 0.0)
    out["FWT"] = np.where(recorded & (_ok(base).sum(axis=-1) > 0),
                          _ratio((zero(ini) - zero(base)) * not_first, not_first), 0.0)
    aulc = np.where(recorded, _ratio(w * zero(ini), w), 0.0)
    out["CL-Score"] = out["ACC"] - out["F"] + out["FWT"] + (0.0 - out["F"]) + aulc
    return out


def curve_weights(initial: list[Outcome], formula: str) -> np.ndarray:
    """Each task's weight on the learning curve, by the definition: the task at curve
    position m of M weighs sum_{i=m..M} 1/i (native: M valid tasks; eval-v1: all N)."""
    n = len(initial)
    valid = [k for k, v in enumerate(initial) if v is not None] if formula == "native" else list(range(n))
    weights = np.zeros(n)
    for m, k in enumerate(valid, start=1):
        weights[k] = sum(1.0 / i for i in range(m, len(valid) + 1))
    return weights


def as_floats(vector: list[Outcome] | None, n: int) -> np.ndarray:
    return np.full(n, np.nan) if vector is None else np.array([np.nan if v is None else float(v) for v in vector])


def run_arrays(seq: SequenceOutcomes, formula: str) -> tuple[np.ndarray, ...]:
    n = seq.n_tasks
    ini = as_floats(seq.initial, n)
    fin = as_floats(seq.final_or_initial, n) if formula == "native" else as_floats(seq.final, n)
    return ini, fin, as_floats(seq.baseline, n), curve_weights(seq.initial, formula)


def difference_statistic(formula: str, metric: str, n: int) -> Callable[..., np.ndarray]:
    reference = reference_native if formula == "native" else reference_eval_v1

    def statistic(ini_a: np.ndarray, fin_a: np.ndarray, base_a: np.ndarray, w_a: np.ndarray, ini_b: np.ndarray,
                  fin_b: np.ndarray, base_b: np.ndarray, w_b: np.ndarray, pos: np.ndarray, axis: int = -1) -> np.ndarray:
        return (reference(ini_b, fin_b, base_b, pos, w_b, n)[metric]
                - reference(ini_a, fin_a, base_a, pos, w_a, n)[metric])

    return statistic


def scipy_interval(seq_a: SequenceOutcomes, seq_b: SequenceOutcomes, formula: str, metric: str,
                   rng: np.random.Generator, resamples: int) -> tuple[float, float]:
    n = seq_a.n_tasks
    data = (*run_arrays(seq_a, formula), *run_arrays(seq_b, formula), np.arange(n, dtype=float))
    result = scipy.stats.bootstrap(data, difference_statistic(formula, metric, n), paired=True, vectorized=True,
                                   method="percentile", n_resamples=resamples, confidence_level=0.95, rng=rng)
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


@pytest.mark.parametrize("formula", ["native", "eval-v1"])
@pytest.mark.parametrize("missing", [0.0, 0.15])
def test_sequence_intervals_match_scipy_bootstrap(formula: str, missing: float) -> None:
    """Per sequence, each metric's interval equals scipy.stats.bootstrap(paired=True,
    method='percentile') of B - A on the same seed: scipy called once per sequence, in
    order, on one generator draws exactly the resamples compare draws."""
    rnd = random.Random(f"{SEED}-{formula}-{missing}")
    sizes = (15, 22, 18)
    seqs_a = [random_sequence(rnd, f"s{k}", n, missing) for k, n in enumerate(sizes)]
    seqs_b = [random_sequence(rnd, f"s{k}", n, missing) for k, n in enumerate(sizes)]
    resamples = 2000
    comparison = compare_runs(side("1", *seqs_a), side("2", *seqs_b), formula=formula, seed=SEED, resamples=resamples)
    for metric in COMPARED:
        rng = np.random.default_rng(SEED)
        for seq_a, seq_b in zip(seqs_a, seqs_b, strict=True):
            got = comparison.sequences[seq_a.name].metrics[metric]
            assert got.undefined_resamples == 0 and got.ci is not None, (metric, got)
            expected = scipy_interval(seq_a, seq_b, formula, metric, rng, resamples)
            assert got.ci == pytest.approx(expected, abs=1e-12), (seq_a.name, metric)


@pytest.mark.parametrize("formula", ["native", "eval-v1"])
def test_macro_interval_matches_a_hand_rolled_stratified_bootstrap(formula: str) -> None:
    """The macro interval: resample r of each sequence (drawn in order from one generator),
    each run's metric averaged over the sequences, B - A, then numpy's percentiles."""
    rnd = random.Random(f"{SEED}-macro-{formula}")
    sizes = (12, 7, 20, 9)
    seqs_a = [random_sequence(rnd, f"s{k}", n, 0.1) for k, n in enumerate(sizes)]
    seqs_b = [random_sequence(rnd, f"s{k}", n, 0.1) for k, n in enumerate(sizes)]
    resamples = 3000
    comparison = compare_runs(side("1", *seqs_a), side("2", *seqs_b), formula=formula, seed=7, resamples=resamples)
    rng = np.random.default_rng(7)
    reference = reference_native if formula == "native" else reference_eval_v1
    per_sequence: list[tuple[dict[str, np.ndarray], dict[str, np.ndarray]]] = []
    for seq_a, seq_b in zip(seqs_a, seqs_b, strict=True):
        n = seq_a.n_tasks
        idx = rng.integers(0, n, (resamples, n))
        pos = np.arange(n, dtype=float)[idx]
        ini_a, fin_a, base_a, w_a = (x[idx] for x in run_arrays(seq_a, formula))
        ini_b, fin_b, base_b, w_b = (x[idx] for x in run_arrays(seq_b, formula))
        per_sequence.append((reference(ini_a, fin_a, base_a, pos, w_a, n), reference(ini_b, fin_b, base_b, pos, w_b, n)))
    alpha = (1 - 0.95) / 2  # as scipy.stats.bootstrap computes it
    for metric in COMPARED:
        dist = (np.mean([b[metric] for _, b in per_sequence], axis=0)
                - np.mean([a[metric] for a, _ in per_sequence], axis=0))
        got = comparison.macro.metrics[metric]
        # A resample where some sequence holds no term of the metric (F of the 7-task
        # sequence with missing outcomes, now and then) is undefined, and left out.
        defined = dist[~np.isnan(dist)]
        assert got.undefined_resamples == dist.size - defined.size
        assert got.ci == pytest.approx(tuple(np.quantile(defined, [alpha, 1 - alpha])), abs=1e-12), metric
    assert comparison.macro.metrics[RESOLVED].undefined_resamples == 0


def test_percentile_interval_is_numpys_and_leaves_undefined_resamples_out() -> None:
    values = np.random.default_rng(1).normal(size=1001)
    alpha = (1 - 0.95) / 2
    assert percentile_interval(values) == tuple(np.quantile(values, [alpha, 1 - alpha]))
    with_nan = np.concatenate([values, [np.nan] * 50])
    assert percentile_interval(with_nan) == percentile_interval(values)
    assert percentile_interval(np.array([np.nan, np.nan])) is None


# --- hand-computed small cases ---------------------------------------------------------------


def one_pass(name: str, outcomes: list[Outcome]) -> SequenceOutcomes:
    """A sequence whose re-test and baseline repeat the initial pass (everything measured)."""
    return SequenceOutcomes(name=name, initial=outcomes, final=list(outcomes), baseline=list(outcomes))


def test_one_task_the_interval_is_the_difference_itself() -> None:
    comparison = compare_runs(side("1", one_pass("s", [0])), side("2", one_pass("s", [1])), resamples=200)
    row = comparison.sequences["s"]
    assert row.metrics[RESOLVED].diff == 1.0 and row.metrics[RESOLVED].ci == (1.0, 1.0)
    assert row.metrics["F"].diff == 0.0 and row.metrics["F"].ci == (0.0, 0.0)  # N = 1: F = 0 by definition
    assert (row.mcnemar.b, row.mcnemar.c, row.mcnemar.p_value) == (0, 1, 1.0)


def test_two_tasks_one_discordant() -> None:
    """A resolves neither task, B the first: on a resample the difference is the share of
    draws of task 1 (0, 1/2 or 1 with probabilities 1/4, 1/2, 1/4), so the 95% interval is [0, 1]."""
    comparison = compare_runs(side("1", one_pass("s", [0, 0])), side("2", one_pass("s", [1, 0])), resamples=10_000)
    m = comparison.sequences["s"].metrics[RESOLVED]
    assert m.diff == 0.5 and m.ci == (0.0, 1.0)


def test_mcnemar_b1_c6_from_runs() -> None:
    a = one_pass("s", [1, 0, 0, 0, 0, 0, 0, 1])
    b = one_pass("s", [0, 1, 1, 1, 1, 1, 1, 1])
    row = compare_runs(side("1", a), side("2", b), resamples=200).sequences["s"]
    assert (row.mcnemar.b, row.mcnemar.c, row.mcnemar.both, row.mcnemar.neither) == (1, 6, 1, 0)
    assert row.mcnemar.p_value == 0.125


def test_macro_mcnemar_pools_the_tasks_of_every_sequence() -> None:
    a = [one_pass("s", [1, 0, 0]), one_pass("t", [0, 0, 0, 0, 1])]
    b = [one_pass("s", [0, 1, 1]), one_pass("t", [1, 1, 1, 1, 1])]
    comparison = compare_runs(side("1", *a), side("2", *b), resamples=200)
    assert [(r.mcnemar.b, r.mcnemar.c) for r in comparison.sequences.values()] == [(1, 2), (0, 4)]
    macro = comparison.macro.mcnemar
    assert (macro.b, macro.c, macro.p_value) == (1, 6, 0.125)
    assert comparison.macro.tasks == 8 and comparison.macro.sequences == 2


def test_identical_runs_differ_by_zero_with_a_zero_interval() -> None:
    seq = SequenceOutcomes(name="s", initial=[1, 0, 1, 1], final=[0, 0, 1, 1], baseline=[1, 0, 0, 1])
    comparison = compare_runs(side("1", seq), side("2", seq), resamples=500)
    for metric in COMPARED:
        assert comparison.macro.metrics[metric].diff == 0.0 and comparison.macro.metrics[metric].ci == (0.0, 0.0)
    assert comparison.macro.mcnemar.p_value == 1.0


def test_the_same_seed_gives_the_same_numbers() -> None:
    rnd = random.Random(SEED)
    a, b = random_sequence(rnd, "s", 12), random_sequence(rnd, "s", 12)
    first = compare_runs(side("1", a), side("2", b), seed=3, resamples=1000)
    assert compare_runs(side("1", a), side("2", b), seed=3, resamples=1000) == first
    other = compare_runs(side("1", a), side("2", b), seed=4, resamples=1000)
    assert [m.diff for m in other.macro.metrics.values()] == [m.diff for m in first.macro.metrics.values()]
    assert [m.ci for m in other.macro.metrics.values()] != [m.ci for m in first.macro.metrics.values()]


def test_resamples_without_a_term_are_counted_and_left_out() -> None:
    """Two tasks: only the first has an F term (the last task has none), so a resample that
    draws the second task twice holds no F term: F is undefined there."""
    a = SequenceOutcomes(name="s", initial=[1, 0], final=[0, 0], baseline=[0, 0])
    b = SequenceOutcomes(name="s", initial=[1, 1], final=[1, 1], baseline=[0, 0])
    resamples = 4000
    comparison = compare_runs(side("1", a), side("2", b), seed=11, resamples=resamples)
    idx = np.random.default_rng(11).integers(0, 2, (resamples, 2))
    only_last = int((idx == 1).all(axis=1).sum())
    assert 0 < only_last < resamples
    f = comparison.sequences["s"].metrics["F"]
    assert f.undefined_resamples == only_last and f.ci == (-1.0, -1.0) and f.diff == -1.0
    assert comparison.sequences["s"].metrics[RESOLVED].undefined_resamples == 0


# --- refused, n/a, flagged -------------------------------------------------------------------


def test_refusals_name_the_difference_in_one_line() -> None:
    seq = one_pass("s", [1, 0, 1])
    a = side("1", seq)
    cases: list[tuple[RunSide, str]] = [
        (side("1", seq), "two different runs"),
        (side("2", seq, one_pass("t", [1])), "sequence t is only in v2"),
        (side("2", one_pass("s", [1, 0, 1, 1])), "sequence s has 3 tasks in v1, 4 in v2"),
        (side("2", seq, ids={"s": ("s-1", "s-9", "s-3")}), "task t2 is s-2 in v1, s-9 in v2"),
        (side("2", seq, ids={"s": ("s-2", "s-1", "s-3")}), "the same tasks in another order"),
        (side("2", seq, passes=("baseline",)), "v2 has no initial pass"),
    ]
    for b, said in cases:
        with pytest.raises(SweclError, match=said) as caught:
            check_comparable(a, b)
        assert "\n" not in str(caught.value)
        with pytest.raises(SweclError):
            compare_runs(a, b)


def test_a_metric_one_run_did_not_measure_is_na_with_the_reason() -> None:
    """v1 ran the initial pass only (base), v2 every pass: F, FWT and CL-Score are n/a and
    say why; the resolved rate compares; ACC compares but is flagged (different passes)."""
    rnd = random.Random(SEED)
    base = random_sequence(rnd, "s", 10, final=False, baseline=False)
    full = random_sequence(rnd, "s", 10)
    comparison = compare_runs(side("1", base, passes=("initial",)), side("2", full), resamples=500)
    for row in (comparison.sequences["s"], comparison.macro):
        m = row.metrics
        assert m["F"].diff is None and m["F"].ci is None and m["F"].na == "not measured (v1: no re-test pass)"
        assert m["F"].unmeasured_a == "no re-test pass" and m["F"].unmeasured_b is None
        assert m["FWT"].na == "not measured (v1: no baseline pass)"
        assert m["CL-Score"].diff is None and "v1: F, FWT, BWT not measured" in (m["CL-Score"].na or "")
        assert m[RESOLVED].ci is not None and not m[RESOLVED].flags
        assert m["ACC"].ci is not None and m["ACC"].flags == (
            "ACC of v1 is over its initial pass (no re-test), of v2 over its re-test a(N,j)",)
    assert any(note.startswith("different passes (v1: initial; v2: initial+retest+baseline)")
               for note in comparison.notes)
    # eval-v1's ACC is over the initial pass in both runs: nothing to flag.
    assert not compare_runs(side("1", base, passes=("initial",)), side("2", full), formula="eval-v1",
                            resamples=200).macro.metrics["ACC"].flags


def test_not_computable_and_missing_verdicts_are_said() -> None:
    a = SequenceOutcomes(name="s", initial=[1, None, 0], final=[None, None, None], baseline=[0, 0, 0])
    b = SequenceOutcomes(name="s", initial=[1, 1, 0], final=[1, 1, 0], baseline=[0, 0, 0])
    comparison = compare_runs(side("1", a, status="interrupted"), side("2", b), resamples=200)
    row = comparison.sequences["s"]
    assert row.metrics["ACC"].diff is None and row.metrics["ACC"].na == "not computable in v1"
    assert row.metrics["F"].na == "not measured (v1: the re-test pass has no valid outcome)"
    assert (row.missing_a, row.missing_b, row.mcnemar.b, row.mcnemar.c) == (1, 0, 0, 1)
    notes = " | ".join(comparison.notes)
    assert "v1 is interrupted" in notes and "v1: 1 of 3 tasks have no valid initial verdict" in notes


def test_resampled_metrics_refuses_bad_input() -> None:
    seq = one_pass("s", [1, 0])
    with pytest.raises(ValueError):
        resampled_metrics(seq, "native", Lambdas(), np.array([[0, 2]]))
    with pytest.raises(SweclError, match="unknown metric formula set"):
        resampled_metrics(seq, "nope", Lambdas(), np.array([[0, 1]]))
