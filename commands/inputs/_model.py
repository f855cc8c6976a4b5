"""What a benchmark *is* once loaded: frozen tasks in frozen sequences.

Loaders validate what users hand us (pydantic, the models in `_schemas`) and then build these
plain frozen dataclasses, so the rest of swecl never sees half-validated dicts. Absent
fields stay `None` (a manifest has no patches); `Task.missing()` says which of them a run
needs, and `Task.require_runnable()` turns that into the one-line error users see.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from ledger.errors import SweclError

__all__ = [
    "DIFFICULTY_LABELS",
    "Benchmark",
    "Prediction",
    "RUNNABLE_FIELDS",
    "Sequence",
    "Task",
    "canonical_content",
    "how_to_supply",
]

# SWE-bench Verified's annotation of each task -> SWE-Bench-CL's difficulty_score.
DIFFICULTY_LABELS: dict[str, int] = {
    "<15 min fix": 1,
    "15 min - 1 hour": 2,
    "1-4 hours": 3,
    ">4 hours": 4,
}

# The fields a run cannot do without, named as users know them from the data files.
RUNNABLE_FIELDS = ("problem_statement", "patch", "test_patch", "FAIL_TO_PASS", "PASS_TO_PASS")
# Grading recorded patches (`swecl grade`, `swecl validate`) never shows an agent the issue.
GRADING_FIELDS = ("patch", "test_patch", "FAIL_TO_PASS", "PASS_TO_PASS")

# Bumped only when the meaning of the hashed content changes (never for new optional
# fields that hash as before), so `dataset_hash` in old ledgers stays comparable.
_HASH_FORMAT = "swecl-benchmark-content-v1"


def how_to_supply() -> str:
    """The remedy every 'fields missing' error ends with."""
    return (
        "supply them with --rows FILE (SWE-bench Verified rows as JSON, JSONL or parquet) "
        "or --dataset hf:princeton-nlp/SWE-bench_Verified / hf:thomasjoshi/swe-bench-cl "
        "on a machine that reaches the Hugging Face Hub"
    )


@dataclass(frozen=True, slots=True)
class Task:
    """One SWE-bench task at its place in a sequence.

    Lists are tuples (the object is frozen all the way down, except `environment`,
    which is the validated mapping as given; the grader converts it to its `EnvSpec`).
    `environment` is the effective one: the task's own, else its sequence's.
    """

    instance_id: str
    repo: str
    base_commit: str
    order: int
    difficulty: int
    difficulty_label: str | None = None
    version: str | None = None
    created_at: str | None = None
    problem_statement: str | None = None
    hints_text: str = ""
    patch: str | None = None
    test_patch: str | None = None
    fail_to_pass: tuple[str, ...] | None = None
    pass_to_pass: tuple[str, ...] | None = None
    dependencies: tuple[str, ...] = ()
    modified_files: tuple[str, ...] = ()
    environment: dict[str, Any] | None = None
    environment_setup_commit: str | None = None  # SWE-bench's; the grader resolves the env as of it

    def __hash__(self) -> int:
        # The generated hash would fail on the `environment` dict; identity is enough.
        return hash((self.instance_id, self.base_commit, self.order))

    def missing(self, *, grading_only: bool = False) -> list[str]:
        """The absent fields a run needs, in `RUNNABLE_FIELDS` order (`grading_only`:
        those that grading a given patch needs, without an agent to brief).

        An empty problem statement, gold patch or test patch counts as absent (nothing
        to give the agent or grade with), and so does an empty FAIL_TO_PASS (every
        patch, even an empty one, would "resolve" the task). An empty PASS_TO_PASS is
        legitimate: some SWE-bench tasks have none.
        """
        absent = []
        if not self.problem_statement and not grading_only:
            absent.append("problem_statement")
        if not self.patch:
            absent.append("patch")
        if not self.test_patch:
            absent.append("test_patch")
        if not self.fail_to_pass:
            absent.append("FAIL_TO_PASS")
        if self.pass_to_pass is None:
            absent.append("PASS_TO_PASS")
        return absent

    def is_runnable(self) -> bool:
        return not self.missing()

    def require_runnable(self, *, grading_only: bool = False) -> None:
        """Raise `SweclError` naming what is missing and how to supply it."""
        absent = self.missing(grading_only=grading_only)
        if absent:
            raise SweclError(
                f"task {self.instance_id!r} cannot run: it has no {', '.join(absent)}; "
                + how_to_supply()
            )

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able values (tuples as lists), for encoding and hashing."""
        document: dict[str, Any] = {
            "instance_id": self.instance_id,
            "repo": self.repo,
            "base_commit": self.base_commit,
            "order": self.order,
            "difficulty": self.difficulty,
            "difficulty_label": self.difficulty_label,
            "version": self.version,
            "created_at": self.created_at,
            "problem_statement": self.problem_statement,
            "hints_text": self.hints_text,
            "patch": self.patch,
            "test_patch": self.test_patch,
            "FAIL_TO_PASS": None if self.fail_to_pass is None else list(self.fail_to_pass),
            "PASS_TO_PASS": None if self.pass_to_pass is None else list(self.pass_to_pass),
            "dependencies": list(self.dependencies),
            "modified_files": list(self.modified_files),
            "environment": self.environment,
        }
        if self.environment_setup_commit is not None:  # absent: hashes as before the field existed
            document["environment_setup_commit"] = self.environment_setup_commit
        return document


@dataclass(frozen=True, slots=True)
class Sequence:
    """The tasks of one repository in curriculum order (`tasks[i].order == i + 1`)."""

    id: str
    repo: str
    tasks: tuple[Task, ...]
    environment: dict[str, Any] | None = None

    def __len__(self) -> int:
        return len(self.tasks)

    def __hash__(self) -> int:
        return hash((self.id, self.repo, self.tasks))

    def task(self, instance_id: str) -> Task | None:
        for task in self.tasks:
            if task.instance_id == instance_id:
                return task
        return None

    def difficulty_counts(self) -> dict[str, int]:
        """{"1": n, ...} for the difficulties present, in ascending order."""
        counts: dict[int, int] = {}
        for task in self.tasks:
            counts[task.difficulty] = counts.get(task.difficulty, 0) + 1
        return {str(level): counts[level] for level in sorted(counts)}

    def require_runnable(self, *, grading_only: bool = False) -> None:
        """Raise one error covering every task of the sequence that lacks run fields."""
        lacking = [(t.instance_id, absent) for t in self.tasks if (absent := t.missing(grading_only=grading_only))]
        if not lacking:
            return
        fields = sorted({f for _, absent in lacking for f in absent}, key=RUNNABLE_FIELDS.index)
        first = ", ".join(repr(i) for i, _ in lacking[:3])
        more = f" and {len(lacking) - 3} more" if len(lacking) > 3 else ""
        raise SweclError(
            f"sequence {self.id!r}: {len(lacking)} of {len(self.tasks)} tasks cannot run "
            f"({first}{more}): they have no {', '.join(fields)}; " + how_to_supply()
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "repo": self.repo,
            "environment": self.environment,
            "tasks": [task.to_dict() for task in self.tasks],
        }


def canonical_content(sequences: tuple[Sequence, ...] | list[Sequence]) -> bytes:
    """The bytes `Benchmark.content_hash` hashes: sorted-key compact UTF-8 JSON.

    Only what a run depends on is in it (sequences, tasks, environments), not where the
    benchmark came from (name, source, repo_sources): the same tasks loaded from a
    curriculum file, a manifest joined with rows, or the Hub hash alike.
    """
    document = {"format": _HASH_FORMAT, "sequences": [s.to_dict() for s in sequences]}
    return json.dumps(
        document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


@dataclass(frozen=True, slots=True)
class Benchmark:
    """Sequences of tasks plus where their repositories can be cloned from.

    repo_sources: "OWNER/NAME" -> local path or URL to clone; repos absent from it are
    cloned from GitHub by the grader's repo cache.
    """

    name: str
    source: str
    sequences: tuple[Sequence, ...]
    repo_sources: dict[str, str] = field(default_factory=dict)
    content_hash: str = field(init=False)

    def __post_init__(self) -> None:
        digest = hashlib.sha256(canonical_content(self.sequences)).hexdigest()
        object.__setattr__(self, "content_hash", digest)

    def __hash__(self) -> int:
        return hash(self.content_hash)

    def tasks(self) -> list[Task]:
        return [task for sequence in self.sequences for task in sequence.tasks]

    def sequence(self, sequence_id: str) -> Sequence | None:
        for sequence in self.sequences:
            if sequence.id == sequence_id:
                return sequence
        return None


@dataclass(frozen=True, slots=True)
class Prediction:
    """One line of a SWE-bench predictions file. A null model_patch is the empty patch."""

    instance_id: str
    model_patch: str
    model_name_or_path: str | None = None
    line: int = 0
