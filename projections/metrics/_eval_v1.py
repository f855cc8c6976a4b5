"""The `eval-v1` formula set: the SWE-Bench-CL authors' evaluation code, re-stated.

Source read (not copied): repository thomasjoshi/agents-never-forget, file
`eval_v1/eval_procedure.py` (commit 28d0ea2f5f9f0f253e590d3fec297bfe1b3e320e, the newest
version of that file; its metric functions are unchanged since c4fb045), section "9.
Continual Learning Metrics Calculation Functions": `calculate_accuracy`,
`calculate_aulc`, `calculate_forward_transfer`, `calculate_forgetting`,
`calculate_backward_transfer`, `calculate_cl_score`, called from section "10. Main
Experiment Orchestration" as `acc_mem = calculate_accuracy(seq_res_mem)` etc.

Their results are dicts instance_id -> passed that hold only the tasks that were
recorded; a None outcome here is a task absent from such a dict. Their definitions:

- ACC (`calculate_accuracy`): passes / number of recorded results of the memory-enabled
  condition, 0.0 when there are none. eval-v1 has one memory-on pass, the in-order one,
  so this is over a(i,i) = `initial`, missing entries left out of the denominator.
- AULC (`calculate_aulc`): docs/design.md section 7's formula over the full order with a
  task that has no recorded result counted as unresolved (`.get(id, False)`),
  denominators i and N; 0.0 when nothing is recorded.
- F (`calculate_forgetting`): sum_{j<N} (a(j,j) - a(N,j)) / (N-1); 0.0 when N <= 1 or no
  initial result is recorded; the final results fall back to the initial ones when none
  is recorded (an absent or all-missing `final`); unrecorded entries count as 0.
- BWT (`calculate_backward_transfer`): sum_{j<N} (a(N,j) - a(j,j)) / (N-1), which is -F.
- FWT (`calculate_forward_transfer`): sum_{j>=2} (a(j,j) - b(j)) / (N-1); 0.0 when N <= 1
  or either the memory-on or the memory-off results are empty; unrecorded entries count 0.
- CL-Score (`calculate_cl_score`): ACC - l_F*F + l_FT*FWT + l_BWT*BWT + l_AULC*AULC. Their
  ACC has no lambda; ours has `Lambdas.acc`, 1.0 by default, which is theirs.
- CL-P, CL-S, CL-F1: eval-v1 does not compute them; they take native's definitions
  (CL-P = mean of the recorded a(i,i), CL-S = 1 - F of this set, CL-F1 = 2PS/(P+S)).

Differences from `native`:

1. ACC is over the in-order memory-on results a(i,i), not the re-test a(N,j). With a
   re-test that changed outcomes they differ: on the design document's vector A eval-v1 gives ACC =
   3/4 = 0.75 (native 0.5) and so CL-Score = 1.145833 (native 0.895833); on B and C (no
   change, no re-test) all nine metrics equal the table. Without missing outcomes
   eval-v1's ACC is always native's CL-P.
2. Missing outcomes: ACC leaves them out (as native does), but AULC, F, BWT and FWT count
   them as unresolved with full N / N-1 denominators, where native leaves them out.
3. Empty inputs give 0.0 (their early returns) where native says None (not computable):
   ACC and AULC with no recorded initial outcome, F/BWT with none recorded, FWT with no
   recorded baseline. CL-P keeps native's None.
4. An all-missing `final` falls back to `initial`, as their empty final dict does; native
   keeps the missing re-test outcomes missing.

Not mirrored: their orchestration replaces a sequence's memory-off results by all-fail
when that sequence has none but other sequences do (so FT becomes the memory-on pass rate
of tasks 2..N); here, as in docs/design.md, a sequence without a baseline has FWT = 0. Their
published runs also pass the in-order results as both initial and final (they had no
re-test, so F = BWT = 0 there); here the recorded re-test is used when there is one, which
their functions' signatures allow.
"""

from __future__ import annotations

from collections.abc import Sequence

from projections.metrics._native import assemble, mean_valid, missing_notes, not_computable_notes, one_minus
from projections.metrics._vectors import Lambdas, Outcome, SequenceOutcomes, SequenceScore

NAME = "eval-v1"
VERSION = 1
DESCRIPTION = (
    "SWE-Bench-CL authors' eval_v1 code: ACC = passes / recorded memory-on (in-order) results; "
    "unrecorded outcomes count as unresolved elsewhere"
)


def score_eval_v1(seq: SequenceOutcomes, lambdas: Lambdas) -> SequenceScore:
    n = seq.n_tasks
    notes: list[str] = ["ACC is over the recorded in-order memory-on outcomes a(i,i), not the re-test"]
    recorded_initial = [value for value in seq.initial if value is not None]

    acc = sum(recorded_initial) / len(recorded_initial) if recorded_initial else 0.0
    initial = _as_unresolved(seq.initial)
    # An empty final dict falls back to the initial results in calculate_forgetting.
    final_recorded = seq.final is not None and any(value is not None for value in seq.final)
    final = _as_unresolved(seq.final) if final_recorded and seq.final is not None else initial

    if n <= 1 or not recorded_initial:
        forgetting = 0.0
    else:
        forgetting = sum(a - b for a, b in zip(initial[:-1], final[:-1], strict=True)) / (n - 1)

    baseline_recorded = seq.baseline is not None and any(value is not None for value in seq.baseline)
    if n <= 1 or not recorded_initial or not baseline_recorded or seq.baseline is None:
        fwt = 0.0
    else:
        baseline = _as_unresolved(seq.baseline)
        fwt = sum(a - b for a, b in zip(initial[1:], baseline[1:], strict=True)) / (n - 1)

    if recorded_initial:
        running = 0
        curve = 0.0
        for i, value in enumerate(initial, start=1):
            running += value
            curve += running / i
        aulc = curve / n
    else:
        aulc = 0.0

    if n <= 1:
        notes.append("N = 1: F, BWT and FWT are 0 by definition")
    if seq.final is None and n > 1:
        notes.append("no re-test recorded: final = initial, so F = BWT = 0")
    elif seq.final is not None and not final_recorded and n > 1:
        notes.append("every re-test outcome is missing: final = initial, as eval_v1 does")
    if seq.baseline is None:
        notes.append("no baseline (memory-off) results: FWT = 0")
    elif not baseline_recorded:
        notes.append("every baseline outcome is missing: FWT = 0, as eval_v1 does")
    if not recorded_initial:
        notes.append("no initial outcome recorded: ACC, AULC and F are 0.0, as eval_v1 does")

    plasticity = mean_valid(seq.initial)
    metrics = assemble(
        acc=acc,
        forgetting=forgetting,
        fwt=fwt,
        aulc=aulc,
        plasticity=plasticity,
        stability=one_minus(forgetting),
        lambdas=lambdas,
    )
    notes.extend(missing_notes(seq, "left out of ACC and CL-P, counted as unresolved in F, BWT, FWT and AULC"))
    notes.extend(not_computable_notes(metrics))
    return SequenceScore(metrics=metrics, notes=tuple(notes))


def _as_unresolved(vector: Sequence[Outcome]) -> list[int]:
    return [0 if value is None else int(value) for value in vector]
