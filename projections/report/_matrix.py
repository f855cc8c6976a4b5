"""The a(i,j) grid of one sequence, its cells and the passes a run planned.

The grid of a sequence of N tasks (rows i = the task after which memory was evaluated,
columns j = the task):

- the diagonal a(i,i) is the initial pass (the in-order, memory-on result);
- row i < N off the diagonal is the `retest-{i}` pass (from `--retest-every`);
- row N off the diagonal is the final `retest` pass. Its own a(N,N) cell keeps the initial
  result, as the whole diagonal does; the re-test of task N is in the task table;
- j > i is never evaluated ("n/a");
- b(j), the memory-off baseline pass, is a separate row.

A cell of a pass that was planned or ran, but has no valid verdict (infrastructure error,
ungraded, never run) is "missing", never 0; a cell of a pass nobody asked for is "n/a".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from projections import Cell, RunOutcomes, RunSummary

CellState = Literal["resolved", "unresolved", "missing", "n/a"]


@dataclass(frozen=True)
class MatrixCell:
    state: CellState
    pass_: str | None = None
    """The pass the value comes from (None for "n/a")."""
    status: str | None = None
    """The grader's status, when the task ran ("infra_error" explains a missing cell)."""


@dataclass(frozen=True)
class MatrixRow:
    label: str
    """"1".."N" for a(i, .), "b" for the baseline."""
    cells: tuple[MatrixCell, ...]


@dataclass(frozen=True)
class Matrix:
    orders: tuple[int, ...]
    instance_ids: tuple[str, ...]
    rows: tuple[MatrixRow, ...]
    """a(1, .) .. a(N, .), in order."""
    baseline: MatrixRow | None
    """None when no baseline pass was planned or run."""


def planned_passes(run: RunSummary, retest_every: int | None, n: int) -> frozenset[str]:
    planned = set(run.passes)
    if retest_every and retest_every > 0:
        planned.update(f"retest-{i}" for i in range(retest_every, n, retest_every))
    return frozenset(planned)


def cell_state(cell: Cell | None, *, planned: bool) -> CellState:
    """One outcome as a cell: "missing" when a planned/run task has no valid verdict."""
    outcome = cell.outcome if cell is not None else None
    if outcome == 1:
        return "resolved"
    if outcome == 0:
        return "unresolved"
    return "missing" if (planned or cell is not None) else "n/a"


def cell_of(state: RunOutcomes, sequence_id: str, pass_: str, order: int, planned: frozenset[str]) -> MatrixCell:
    cell = state.cell(sequence_id, pass_, order)
    seq = state.sequences.get(sequence_id)
    ran = seq is not None and pass_ in seq.passes
    kind = cell_state(cell, planned=pass_ in planned or ran)
    if kind == "n/a":
        return MatrixCell("n/a")
    return MatrixCell(kind, pass_=pass_, status=cell.status if cell is not None else None)


def build_matrix(state: RunOutcomes, sequence_id: str, planned: frozenset[str]) -> Matrix:
    seq = state.sequences.get(sequence_id)
    plan = list(seq.plan) if seq is not None else []
    n = len(plan)
    rows: list[MatrixRow] = []
    for i in range(1, n + 1):
        off_diagonal = "retest" if i == n else f"retest-{i}"
        cells = []
        for j, task in enumerate(plan, start=1):
            if j > i:
                cells.append(MatrixCell("n/a"))
            elif j == i:
                cells.append(cell_of(state, sequence_id, "initial", task.order, planned))
            else:
                cells.append(cell_of(state, sequence_id, off_diagonal, task.order, planned))
        rows.append(MatrixRow(label=str(i), cells=tuple(cells)))
    baseline = None
    ran_baseline = seq is not None and "baseline" in seq.passes
    if "baseline" in planned or ran_baseline:
        baseline = MatrixRow(
            label="b", cells=tuple(cell_of(state, sequence_id, "baseline", t.order, planned) for t in plan)
        )
    return Matrix(
        orders=tuple(t.order for t in plan),
        instance_ids=tuple(t.instance_id for t in plan),
        rows=tuple(rows),
        baseline=baseline,
    )
