"""Types the metric formulas consume and produce: outcome vectors, lambdas, scores.

Every vector is indexed by task order (position 0 is task t1). An outcome is 1 (resolved),
0 (not resolved) or None: the task has no valid verdict (an infrastructure error, a task
that never ran). None is kept as None all the way through so that each formula set decides,
visibly and in one place, what a missing verdict does to each metric; the counts are
reported next to the scores.

Construction validates: a `SequenceOutcomes` that exists is well formed, so the formulas
never re-check shapes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import msgspec

from ledger.errors import SweclError

METRIC_NAMES: tuple[str, ...] = (
    "ACC",
    "F",
    "BWT",
    "FWT",
    "AULC",
    "CL-P",
    "CL-S",
    "CL-F1",
    "CL-Score",
)
"""The nine metrics every formula set computes, in reporting order."""

DIFFICULTY_LEVELS: tuple[int, ...] = (1, 2, 3, 4)

Outcome = int | None
"""1 resolved, 0 not resolved, None no valid verdict (missing)."""


class Lambdas(msgspec.Struct, frozen=True, kw_only=True):
    """Weights of CL-Score = acc*ACC - f*F + fwt*FWT + bwt*BWT + aulc*AULC."""

    acc: float = 1.0
    f: float = 1.0
    fwt: float = 1.0
    bwt: float = 1.0
    aulc: float = 1.0

    def __post_init__(self) -> None:
        for field in self.__struct_fields__:
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise SweclError(f"lambda {field!r} is {value!r}: give a finite number")


class SequenceOutcomes(msgspec.Struct, frozen=True, kw_only=True):
    """One sequence of N tasks in order, as recorded.

    - `initial`: a(i,i), the memory-on pass in order.
    - `final`: a(N,j), the memory-on re-test with the end-of-sequence memory; None when
      there was no re-test, in which case every formula uses `initial` in its place.
    - `baseline`: b(j), the memory-off pass; None when there was none (FWT is then 0).
    - `difficulty`: 1-4 per task (SWE-Bench-CL `difficulty_score`), for strata.
    - `steps`: agent steps per task, for tool-use efficiency; None entries are unknown.
    - `rows`: extra rows a(i, 1..i) from `--retest-every`, keyed by the 1-based row i,
      each with exactly i outcomes. Carried through unscored for now.
    """

    name: str
    initial: list[Outcome]
    final: list[Outcome] | None = None
    baseline: list[Outcome] | None = None
    difficulty: list[int] | None = None
    steps: list[int | None] | None = None
    rows: dict[int, list[Outcome]] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise SweclError(f"sequence name {self.name!r}: give a non-empty string")
        where = f"sequence {self.name!r}"
        if not isinstance(self.initial, list) or not self.initial:
            raise SweclError(f"{where}: field 'initial' must be a non-empty list of 0/1/null outcomes, one per task")
        n = len(self.initial)
        _check_outcomes(self.initial, where, "initial")
        for field in ("final", "baseline"):
            vector = getattr(self, field)
            if vector is None:
                continue
            _check_length(vector, n, where, field)
            _check_outcomes(vector, where, field)
        if self.difficulty is not None:
            _check_length(self.difficulty, n, where, "difficulty")
            for pos, level in enumerate(self.difficulty):
                if isinstance(level, bool) or not isinstance(level, int) or level not in DIFFICULTY_LEVELS:
                    raise SweclError(
                        f"{where}: field 'difficulty' entry {pos} (task t{pos + 1}) is {level!r}; give an integer 1-4"
                    )
        if self.steps is not None:
            _check_length(self.steps, n, where, "steps")
            for pos, count in enumerate(self.steps):
                if count is None:
                    continue
                if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                    raise SweclError(
                        f"{where}: field 'steps' entry {pos} (task t{pos + 1}) is {count!r}; "
                        "give a non-negative integer or null"
                    )
        if self.rows is not None:
            if not isinstance(self.rows, dict):
                raise SweclError(f"{where}: field 'rows' must map a row index i (1..{n}) to i outcomes")
            for i, row in self.rows.items():
                if isinstance(i, bool) or not isinstance(i, int) or not 1 <= i <= n:
                    raise SweclError(f"{where}: field 'rows' has row index {i!r}; give an integer 1..{n}")
                label = f"rows[{i}]"
                _check_length(row, i, where, label, what=f"the row index {i}")
                _check_outcomes(row, where, label)

    @property
    def n_tasks(self) -> int:
        return len(self.initial)

    @property
    def final_or_initial(self) -> list[Outcome]:
        """a(N,j): the re-test when recorded, else the initial pass (docs/design.md section 7)."""
        return self.final if self.final is not None else self.initial


class SequenceScore(msgspec.Struct, frozen=True, kw_only=True):
    """What one formula set says about one sequence: the nine metrics, and why.

    `metrics` has exactly the keys of `METRIC_NAMES`, in that order; a value is None when
    the metric is not computable (no valid terms), never a silent 0. `notes` explains
    every value that a reader could misread (FWT = 0 for want of a baseline, ...).
    """

    metrics: dict[str, float | None]
    notes: tuple[str, ...] = ()


def _check_length(vector: object, n: int, where: str, field: str, *, what: str = "'initial'") -> None:
    if not isinstance(vector, list):
        raise SweclError(f"{where}: field {field!r} must be a list (got {type(vector).__name__})")
    if len(vector) != n:
        raise SweclError(
            f"{where}: field {field!r} has {len(vector)} entries but {what} has {n}; give one entry per task"
        )


def _check_outcomes(vector: Sequence[object], where: str, field: str) -> None:
    for pos, value in enumerate(vector):
        # bool is accepted (a `resolved` flag is a bool) because True == 1 and False == 0.
        if value is None or (isinstance(value, int) and value in (0, 1)):
            continue
        raise SweclError(f"{where}: field {field!r} entry {pos} is {value!r}; give 0, 1 or null (missing)")


def count_missing(vector: Sequence[Outcome] | None) -> int | None:
    """Missing entries of a vector; None when the vector itself was not recorded."""
    if vector is None:
        return None
    return sum(1 for value in vector if value is None)


_DOCUMENT_FIELDS = ("initial", "final", "baseline", "difficulty")


def sequences_from_vectors_document(doc: object) -> list[SequenceOutcomes]:
    """Parse the `swecl metrics --vectors FILE` document, strictly.

    Shape: `{"sequences": {NAME: {"initial": [0|1, ...], "final": [...] | null,
    "baseline": [...] | null, "difficulty": [1-4, ...] (optional)}}}`. Outcomes may be
    null (missing). JSON booleans and numbers other than the integers 0 and 1 are refused,
    as are unknown keys, so that a typo (`"basline"`) cannot silently drop a vector.
    """
    if not isinstance(doc, dict):
        raise SweclError(
            f"vectors document: must be a JSON object with a 'sequences' object (got {type(doc).__name__})"
        )
    unknown = sorted(set(doc) - {"sequences"})
    if unknown:
        raise SweclError(f"vectors document: unknown top-level field {unknown[0]!r}; only 'sequences' is allowed")
    if "sequences" not in doc:
        raise SweclError(
            "vectors document: field 'sequences' is missing; give {\"sequences\": {NAME: {\"initial\": [...]}}}"
        )
    sequences = doc["sequences"]
    if not isinstance(sequences, dict):
        raise SweclError(
            "vectors document: field 'sequences' must be an object NAME -> vectors "
            f"(got {type(sequences).__name__})"
        )
    if not sequences:
        raise SweclError("vectors document: field 'sequences' is empty; give at least one sequence")
    parsed: list[SequenceOutcomes] = []
    for name, entry in sequences.items():
        where = f"sequence {name!r}"
        if not isinstance(entry, dict):
            raise SweclError(f"{where}: must be an object with 'initial' (got {type(entry).__name__})")
        unknown = sorted(set(entry) - set(_DOCUMENT_FIELDS))
        if unknown:
            raise SweclError(f"{where}: unknown field {unknown[0]!r}; allowed: {', '.join(_DOCUMENT_FIELDS)}")
        if "initial" not in entry or entry["initial"] is None:
            raise SweclError(f"{where}: field 'initial' is missing; give the 0/1 outcomes of the memory-on pass")
        for field in ("initial", "final", "baseline"):
            value = entry.get(field)
            if value is None:
                continue
            if not isinstance(value, list):
                raise SweclError(
                    f"{where}: field {field!r} must be a list of 0/1 outcomes (got {type(value).__name__})"
                )
            for pos, outcome in enumerate(value):
                # Stricter than the struct: JSON true/false and 1.0 are not the 0/1 the contract names.
                if outcome is None or (type(outcome) is int and outcome in (0, 1)):
                    continue
                raise SweclError(f"{where}: field {field!r} entry {pos} is {outcome!r}; give 0, 1 or null (missing)")
        parsed.append(
            SequenceOutcomes(
                name=name,
                initial=entry["initial"],
                final=entry.get("final"),
                baseline=entry.get("baseline"),
                difficulty=entry.get("difficulty"),
            )
        )
    return parsed
