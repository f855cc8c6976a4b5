"""Repeat groups (`swecl run --repeat K`): the t interval over a group's runs, the exact
stratified test between two groups, the comparison of groups, and how runs are grouped;
checked against scipy (seeded random data), brute-force enumeration and hand computations."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
import scipy.stats

from projections import RunSummary
from projections.compare import (
    RunSide,
    compare_groups,
    compare_runs,
    group_members,
    group_runs,
    mcnemar_exact_p,
    stratified_exact_p,
    t_interval,
    t_quantile,
)
from projections.metrics import SequenceOutcomes

# --- Student t ---------------------------------------------------------------------------


@pytest.mark.parametrize("df", [*range(1, 41), 60, 99, 100])
@pytest.mark.parametrize("probability", [0.9, 0.975, 0.995])
def test_t_quantile_matches_scipy(df: int, probability: float) -> None:
    assert t_quantile(probability, df) == pytest.approx(scipy.stats.t.ppf(probability, df), rel=1e-12)


def test_t_quantile_hand_values() -> None:
    # df = 1 is the Cauchy: tan(pi * (p - 1/2)); df = 2 has t = (2p - 1) * sqrt(2 / (1 - (2p - 1)^2)).
    assert t_quantile(0.975, 1) == pytest.approx(math.tan(math.pi * 0.475), rel=1e-13)
    a = 0.95
    assert t_quantile(0.975, 2) == pytest.approx(a * math.sqrt(2 / (1 - a * a)), rel=1e-13)


@pytest.mark.parametrize("bad", [(0.5, 3), (1.0, 3), (0.975, 0), (0.975, 2.5)])
def test_t_quantile_refuses_what_has_no_answer(bad: tuple[float, float]) -> None:
    with pytest.raises(ValueError):
        t_quantile(*bad)  # type: ignore[arg-type]


def test_t_interval_matches_scipy_on_seeded_random_data() -> None:
    rng = np.random.default_rng(2026)
    for _ in range(200):
        n = int(rng.integers(2, 12))
        values = list(rng.random(n))
        got = t_interval(values)
        sem = scipy.stats.sem(values)
        low, high = scipy.stats.t.interval(0.95, n - 1, loc=np.mean(values), scale=sem)
        assert got.n == n and got.mean == pytest.approx(np.mean(values), rel=1e-13)
        assert got.sd == pytest.approx(np.std(values, ddof=1), rel=1e-12)
        assert got.ci == pytest.approx((low, high), rel=1e-10, abs=1e-12)


def test_t_interval_hand_computed() -> None:
    # [0, 1]: mean 1/2, sd sqrt(1/2), half-width t(0.975, 1) * sd / sqrt(2) = 12.7062... / 2.
    got = t_interval([0.0, 1.0])
    half = 12.706204736174707 / 2
    assert got.mean == 0.5 and got.sd == pytest.approx(math.sqrt(0.5))
    assert got.ci == pytest.approx((0.5 - half, 0.5 + half), rel=1e-12)
    # Identical repeats: no spread, a zero-width interval (not "no interval").
    same = t_interval([0.25, 0.25, 0.25])
    assert same.sd == 0.0 and same.ci == (0.25, 0.25)


def test_one_run_is_no_interval() -> None:
    one = t_interval([0.4])
    assert (one.n, one.mean, one.sd, one.ci) == (1, 0.4, None, None)
    assert t_interval([]).mean is None


# --- the exact stratified test -------------------------------------------------------------


def brute_force_p(a: list[list[int]], b: list[list[int]]) -> float:
    """Every relabelling of each task's runs between the groups, equally likely under the
    null: p = the share whose |sum over tasks of (rate B - rate A)| reaches the observed."""
    ka, kb = len(a[0]), len(b[0])

    def stat(rows: list[tuple[list[int], list[int]]]) -> float:
        return sum(sum(y) / kb - sum(x) / ka for x, y in rows)

    observed = abs(stat(list(zip(a, b, strict=True))))
    per_task = []
    for x, y in zip(a, b, strict=True):
        pooled = x + y
        per_task.append([([pooled[i] for i in range(ka + kb) if i not in chosen], [pooled[i] for i in chosen])
                         for chosen in itertools.combinations(range(ka + kb), kb)])
    hits = total = 0
    for rows in itertools.product(*per_task):
        total += 1
        hits += abs(stat(list(rows))) >= observed - 1e-12
    return hits / total


def test_stratified_test_is_mcnemar_with_one_run_per_side() -> None:
    rng = random.Random(7)
    for _ in range(300):
        n = rng.randint(1, 40)
        a = [int(rng.random() < 0.4) for _ in range(n)]
        b = [int(rng.random() < 0.6) for _ in range(n)]
        only_a = sum(1 for x, y in zip(a, b, strict=True) if x and not y)
        only_b = sum(1 for x, y in zip(a, b, strict=True) if y and not x)
        assert stratified_exact_p(a, 1, b, 1) == pytest.approx(mcnemar_exact_p(only_a, only_b), rel=1e-12)
        expected = 1.0 if only_a + only_b == 0 else scipy.stats.binomtest(only_b, only_a + only_b, 0.5).pvalue
        assert stratified_exact_p(a, 1, b, 1) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(("ka", "kb"), [(2, 2), (2, 3), (3, 1), (1, 2)])
def test_stratified_test_matches_brute_force_enumeration(ka: int, kb: int) -> None:
    rng = random.Random(ka * 10 + kb)
    for _ in range(25):
        n = rng.randint(1, 4)
        a = [[int(rng.random() < 0.4) for _ in range(ka)] for _ in range(n)]
        b = [[int(rng.random() < 0.6) for _ in range(kb)] for _ in range(n)]
        got = stratified_exact_p([sum(x) for x in a], ka, [sum(y) for y in b], kb)
        assert got == pytest.approx(brute_force_p(a, b), rel=1e-12, abs=1e-15)


def test_stratified_test_hand_computed() -> None:
    # One task, A 0 of 2, B 2 of 2: B's count given 2 successes among 4 runs, 2 of them B's,
    # is hypergeometric: P(0) = P(2) = 1/6, P(1) = 4/6; |D| = 1 is reached by 0 and 2: p = 1/3.
    assert stratified_exact_p([0], 2, [2], 2) == pytest.approx(1 / 3)
    # Two such tasks: only both extreme the same way reach |D| = 2: p = 2 / 36.
    assert stratified_exact_p([0, 0], 2, [2, 2], 2) == pytest.approx(2 / 36)
    # No difference anywhere: p = 1.
    assert stratified_exact_p([1, 2, 0], 2, [1, 2, 0], 2) == 1.0


# --- comparing groups ------------------------------------------------------------------------


def side(version: str, initial: list[int | None], final: list[int | None] | None = None,
         baseline: list[int | None] | None = None, stage: str = "plugin-blank") -> RunSide:
    n = len(initial)
    seq = SequenceOutcomes(name="s", initial=initial, final=final, baseline=baseline, difficulty=[1] * n)
    passes = ("initial",) + (("retest",) if final is not None else ()) + (("baseline",) if baseline is not None else ())
    return RunSide(version=version, label=f"v{version}", stage=stage, passes=passes, status="finished",
                   tasks={"s": tuple(f"t{k}" for k in range(n))}, sequences=[seq])


def test_one_run_per_group_is_compare_runs_number_for_number() -> None:
    rng = random.Random(3)
    for _ in range(10):
        n = rng.randint(2, 15)
        a = side("1", [rng.choice([0, 1, None]) for _ in range(n)], [rng.choice([0, 1]) for _ in range(n)],
                 [rng.choice([0, 1]) for _ in range(n)])
        b = side("2", [rng.choice([0, 1]) for _ in range(n)], [rng.choice([0, 1, None]) for _ in range(n)],
                 [rng.choice([0, 1]) for _ in range(n)])
        assert compare_groups([a], [b], resamples=500) == compare_runs(a, b, resamples=500)


def test_a_group_of_identical_repeats_compares_as_its_run() -> None:
    a = side("1", [1, 0, 0, 1, 0, 1], [1, 0, 0, 0, 0, 1], [0, 0, 0, 1, 0, 1])
    b = side("2", [1, 1, 0, 1, 1, 1], [1, 1, 0, 1, 0, 1], [1, 0, 0, 1, 0, 1])
    copies_a = [a, side("3", *(list(v) if v is not None else None for v in (a.sequences[0].initial, a.sequences[0].final, a.sequences[0].baseline)))]
    copies_b = [b, side("4", list(b.sequences[0].initial), list(b.sequences[0].final or []), list(b.sequences[0].baseline or []))]
    single, grouped = compare_runs(a, b, resamples=2000), compare_groups(copies_a, copies_b, resamples=2000)
    for metric, m in single.macro.metrics.items():
        g = grouped.macro.metrics[metric]
        assert g.diff == pytest.approx(m.diff) and g.ci == pytest.approx(m.ci)
    assert grouped.runs_a == ("1", "3") and grouped.grouped


def test_group_values_are_means_and_the_interval_is_the_task_bootstrap_of_averaged_repeats() -> None:
    runs_a = [side("1", [1, 0, 0, 1, 0, 1, 0, 0]), side("2", [1, 0, 1, 1, 0, 0, 0, 0]), side("3", [0, 0, 0, 1, 0, 1, 0, 1])]
    runs_b = [side("4", [1, 1, 0, 1, 1, 1, 0, 0]), side("5", [1, 1, 1, 1, 0, 1, 0, 1])]
    got = compare_groups(runs_a, runs_b)
    rate = got.macro.metrics["resolved_rate"]
    flags_a = np.array([r.sequences[0].initial for r in runs_a], dtype=float)
    flags_b = np.array([r.sequences[0].initial for r in runs_b], dtype=float)
    assert rate.a == pytest.approx(flags_a.mean()) and rate.b == pytest.approx(flags_b.mean())
    # Tasks resampled, each task's repeats together: the paired bootstrap of the per-task
    # mean resolved rates (scipy's, on the same seed: `draw_indices` draws as scipy does).
    expected = scipy.stats.bootstrap(
        (flags_a.mean(axis=0), flags_b.mean(axis=0)), lambda x, y, axis=-1: y.mean(axis=axis) - x.mean(axis=axis),
        paired=True, vectorized=True, method="percentile", n_resamples=10_000, rng=np.random.default_rng(0),
    ).confidence_interval
    assert rate.ci == pytest.approx((expected.low, expected.high), abs=1e-12)
    test = got.macro.mcnemar
    assert test.test == "stratified-exact" and (test.runs_a, test.runs_b) == (3, 2)
    assert test.p_value == pytest.approx(stratified_exact_p(
        [int(c) for c in flags_a.sum(axis=0)], 3, [int(c) for c in flags_b.sum(axis=0)], 2))


def test_groups_sharing_a_run_or_over_other_tasks_are_refused() -> None:
    from ledger import SweclError

    a, b, c = side("1", [1, 0]), side("2", [0, 1]), side("3", [0, 1, 1])
    with pytest.raises(SweclError, match="run 1 is in both"):
        compare_groups([a, b], [a])
    with pytest.raises(SweclError, match="not over the same tasks"):
        compare_groups([a, c], [b])


# --- grouping --------------------------------------------------------------------------------


def summary(version: str, stage: str = "plugin-blank", group: str | None = None, status: str = "finished",
            model: str | None = None, config: dict | None = None) -> RunSummary:
    return RunSummary(version=version, stage=stage, sequences=["s"], agent="demo", model=model, grader="swebench",
                      benchmark="demo", dataset_hash="h", memory_mode="plugin-real", passes=["initial"],
                      started_seq=int(version), started_at="", status=status, repeat_group=group,
                      repeat_index=None if group is None else 1, repeat_count=None if group is None else 2,
                      config=config or {})


def test_recorded_groups_and_groups_by_setting() -> None:
    known = {v: s for v, s in (
        ("1", summary("1", group="1")), ("2", summary("2", group="1")),  # one --repeat 2
        ("3", summary("3")), ("4", summary("4")),  # the same setting, started apart
        ("5", summary("5", model="other")),  # another model: its own group
        ("6", summary("6", stage="base")), ("7", summary("7", status="failed")),
    )}
    groups = group_runs(known, list(known))
    assert [g.versions for g in groups] == [("1", "2"), ("3", "4", "7"), ("5",), ("6",)]
    assert [g.recorded for g in groups] == [True, False, False, False]
    assert groups[0].label == "plugin-blank ×2 (v1, v2)" and groups[2].label == "v5 plugin-blank"
    assert group_members(known, "2") == ["1", "2"]
    assert group_members(known, "3") == ["3", "4"]  # the failed run left out ...
    assert group_members(known, "7") == ["3", "4", "7"]  # ... unless it is the one asked for


def test_a_fork_is_not_a_repeat_of_its_source() -> None:
    # Tasks before K are the source's own events: grouping them as two draws would count them twice.
    known = {v: s for v, s in (
        ("1", summary("1")), ("2", summary("2", config={"fork": "1@4", "dream_at_fork": True})),
        ("3", summary("3", config={"fork": "1@4", "dream_at_fork": True})),  # the same fork again
        ("4", summary("4", config={"fork": "1@4"})), ("5", summary("5", config={"fork": "1@5", "dream_at_fork": True})),
    )}
    assert [g.versions for g in group_runs(known, list(known))] == [("1",), ("2", "3"), ("4",), ("5",)]
