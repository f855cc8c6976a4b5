"""swecl's benchmarks: each target is a ratio to a reference measured in the same run.

    python -m bench                 # full run (~ minutes; generated ledgers are cached)
    python -m bench --quick         # scaled down, under a minute (CI smoke)
    python -m bench --json          # {"results": [{name, value, unit, ratio, target, ok}], ...}
    python -m bench --only replay   # one group: append, rebuild, replay, memory, grading, scheduling, validation

Results go to `bench/results/latest.json` and `bench/results/SUMMARY.md` (a quick run:
`bench/results/quick.json`). Generated ledgers are kept in `bench/.cache/` (which ignores
itself in git), keyed by generator version, sizes and store schema.

1. `append`: events/s of `Ledger.append_batches` against the eventsourcing library's
   SQLite recorder, same events, batches, payload bytes and pragmas (`_append`).
2. `rebuild`: every projection of every run over a 1M-event ledger in one pass, against
   the floor of reading and decoding every row (`_rebuild`).
3. `replay`: one run as of any task order, and the catch-up after one new task, at 100k
   and 1M events (`_replay`).
4. `memory`: peak memory of a rebuild with the same state and 6x the events, and with
   10x the state (`_peak_memory`).
5. `grading`: the grader's own cost per task on a 2,000-file repository, and one
   environment build per (repo, version) (`_grading`).
6. `scheduling`: `swecl run --task-jobs N` on the demo matrix with a simulated agent
   whose time dominates: 1 against 2 workers on the order-free passes and on the whole
   matrix, and the matrix with enough workers against its critical path (`_scheduling`).

7. `provider`: a memory server's overhead per call (`_provider`).
8. `demo`: `swecl run` with no arguments, the demo suite's wall time (`_demo`).
9. `validation`: a warm `swecl validate` of two real tasks from each of five repositories
   against the same tasks' test commands run bare in the same environments (target at most
   1.1 times); skipped without `$SWECL_BENCH_REPO_SOURCES` (a mirror per repository) and
   the grading rows of `../shared`, and in a quick run (`_validation`).

`bench/soak.py` (a soak test of the runner) is separate and not run by `python -m bench`.
"""

from __future__ import annotations

from ._core import Result

__all__ = ["Result", "main"]


def main(argv: list[str] | None = None) -> int:
    """`python -m bench`; the benchmarks are imported only here, so `python -m bench.soak`
    does not pay for them."""
    from ._cli import main as run

    return run(argv)
