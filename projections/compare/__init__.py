"""Comparing two runs over the same tasks: is a difference signal or noise?

    from projections.compare import compare_runs, side_of

    comparison = compare_runs(side_of(vm_a, "v1"), side_of(vm_b, "v2"), formula="native")
    comparison.macro.metrics["ACC"].diff, comparison.macro.metrics["ACC"].ci, comparison.macro.mcnemar.p_value

For two run versions over the same sequences and tasks in the same order (anything else
is refused, see `check_comparable`): per sequence and macro-averaged, B - A of the
resolved rate, ACC, F, FWT and CL-Score, each with a paired bootstrap percentile
interval, and an exact McNemar test on the per-task resolved flags.

Point estimates: each run scored by `projections.metrics.compute`, the function behind
`swecl metrics`, so a difference is exactly the difference of the two runs' `swecl metrics
--json` values (the resolved rate: `solved` X/N, a task without a valid verdict not
resolved; its macro is the unweighted mean over sequences, like every headline).

Not measured, not compared: a metric one run's passes did not measure (F without a
re-test, FWT without a baseline, CL-Score when a term it weighs is unmeasured; see
`projections.metrics._measured`) or could not compute has no difference (n/a, with the
reason). Partly comparable numbers stand with a flag: native ACC is over the re-test when
there is one, so with a re-test in one run only the two ACCs are of different passes.

The bootstrap (`_resample`, `_stats`). A resample draws N task positions with replacement
within a sequence of N tasks; both runs are scored on the same draw (paired: the same task
in A and B), and the interval is the 2.5th and 97.5th percentiles of B - A over the
resamples (10,000 by default, a fixed default seed: the same command prints the same
interval). The macro row resamples each sequence on its own (stratified: a sequence's
length is fixed by the benchmark) and averages the sequences' resampled metrics as the
macro does. Per metric, what a resample recomputes:

- resolved rate, ACC: the mean of the drawn tasks' outcomes (resolved; the re-test
  a(N,j), or eval-v1's in-order a(i,i)), missing outcomes as the formula set treats them.
- F: resampling tasks resamples the columns j of the a(i,j) matrix; each task keeps its
  own term a(j,j) - a(N,j) (its initial outcome against the re-test taken after the whole
  recorded sequence: row N is not re-drawn, it is an outcome of the recorded order), and the
  last task keeps having no term. F on a resample is the mean of its drawn tasks' terms.
- FWT: likewise over the terms a(j,j) - b(j), the first task keeping none.
- CL-Score: its terms recomputed on the same draw (BWT = -F) and weighed by the lambdas;
  its AULC term is the learning-curve mean with each task's curve weight fixed by its
  place in the recorded order (AULC = sum_k w_k a(k,k) / sum_k w_k, w_k = sum_{i>=k} 1/i):
  a task's position is history, so a resample re-draws tasks, not the curve's shape.

Every metric is thus a ratio of per-task sums, vectorised with numpy; with each task drawn
once it equals the formula set's value (the tests check this on random vectors with
missing outcomes, for both formula sets). A resample holding no term of a metric (F on a
draw of only the last task) leaves it undefined; such resamples are counted
(`undefined_resamples`) and left out of the interval, and when every one is, the
interval is n/a. Intervals from few tasks are rough: with N tasks a rate moves in steps of
1/N, and a percentile interval cannot be narrower than the data allow.

Repeats (`swecl run --repeat K`, `--group`; `_groups`, `compare_groups`). A group's value
of a metric is the mean of its runs' values. `grouped_metrics` gives each group's mean with
a Student-t 95% interval over its K runs (n = K; with K = 1 there is no interval): the
run-to-run spread of one setting. Comparing two groups, the interval is the bootstrap above
with every run of both groups scored on the same draw of tasks and each group's runs
averaged on it: tasks are the sampled unit and a task's repeats stay together (resampling
the repeats as well would count run-to-run noise twice; a t-interval over the repeats of
B - A would miss the task sampling and the pairing). The test generalises McNemar: per
task, under the null the K_A + K_B outcomes are exchangeable between the groups, so B's
count given the task's total is hypergeometric; the exact distribution of the summed
per-task rate difference over tasks (strata) gives the two-sided p (`stratified_exact_p`,
exactly McNemar's exact test when each group is one run).

McNemar (`_stats.mcnemar`): b = tasks only A resolved, c = tasks only B resolved; the
two-sided exact p-value is the binomial test of c in b + c trials at p = 0.5 (1.0 when
b + c = 0). The macro row pools every task of every sequence: under the null each
discordant task falls either way with probability 1/2 whatever its sequence, so the
pooled exact test is valid.
"""

from __future__ import annotations

from projections.compare._fold import (
    MACRO,
    Comparison,
    MetricDiff,
    RunSide,
    SequenceComparison,
    check_comparable,
    compare_groups,
    compare_runs,
    side_of,
)
from projections.compare._assess import (
    Assessment,
    assess_comparison,
    assess_run,
    efficiency_line,
    gain_intervals,
    gain_line,
    run_label,
)
from projections.compare._efficiency import (
    NO_ORACLE,
    ORACLE_HINT,
    ORACLE_STAGE,
    Efficiency,
    PairedTasks,
    SequenceEfficiency,
    efficiency_of,
    memory_efficiency,
    oracle_candidates,
    pick_oracle,
)
from projections.compare._fork_cut import from_order, shared_before
from projections.compare._gain import Gain, SequenceGain, base_candidates, gain_of, macro_gain, normalized_gain
from projections.compare._groups import (
    GroupedMetrics,
    GroupedSequence,
    GroupedValue,
    RunGroup,
    group_members,
    group_runs,
    grouped_metrics,
)
from projections.compare._resample import COMPARED, RESOLVED, resampled_metrics
from projections.compare._verdict import VerdictInputs, verdict_line
from projections.compare._stats import (
    CONFIDENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    GROUP_TEST,
    McNemar,
    TInterval,
    draw_indices,
    mcnemar,
    mcnemar_exact_p,
    percentile_interval,
    stratified_exact_p,
    t_interval,
    t_quantile,
)

__all__ = [
    "NO_ORACLE",
    "ORACLE_HINT",
    "ORACLE_STAGE",
    "Assessment",
    "Efficiency",
    "PairedTasks",
    "SequenceEfficiency",
    "VerdictInputs",
    "assess_comparison",
    "assess_run",
    "efficiency_line",
    "efficiency_of",
    "gain_line",
    "gain_intervals",
    "memory_efficiency",
    "oracle_candidates",
    "pick_oracle",
    "run_label",
    "verdict_line",
    "COMPARED",
    "CONFIDENCE",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "GROUP_TEST",
    "MACRO",
    "RESOLVED",
    "Comparison",
    "Gain",
    "GroupedMetrics",
    "GroupedSequence",
    "GroupedValue",
    "McNemar",
    "MetricDiff",
    "RunGroup",
    "RunSide",
    "SequenceComparison",
    "SequenceGain",
    "TInterval",
    "check_comparable",
    "compare_groups",
    "compare_runs",
    "draw_indices",
    "gain_of",
    "group_members",
    "group_runs",
    "grouped_metrics",
    "macro_gain",
    "mcnemar",
    "mcnemar_exact_p",
    "normalized_gain",
    "percentile_interval",
    "resampled_metrics",
    "side_of",
    "stratified_exact_p",
    "t_interval",
    "t_quantile",
    "base_candidates",
    "from_order",
    "shared_before",
]
