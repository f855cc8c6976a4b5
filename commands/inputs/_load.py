"""Loading a benchmark: the demo, a SWE-Bench-CL curriculum or manifest, rows, the Hub.

The curriculum shape (docs/design.md section 8):
`{metadata, sequences: [{id, repo, num_tasks, tasks: [{metadata: {instance_id, repo,
base_commit, created_at, difficulty}, task: {problem_statement, hints_text}, evaluation:
{patch, test_patch, FAIL_TO_PASS, PASS_TO_PASS}, continual_learning: {sequence_position,
difficulty_score, dependencies, modified_files}}]}]}`. A manifest is the same shape
without texts, patches and tests (the shared one adds `swebench_verified_extra.version`).
swecl's own optional additions: `environment` on a sequence or task,
`metadata.version` on a task, `metadata.repo_sources` on the curriculum.

Loading goes draft (plain dicts, so rows can fill gaps) -> checks -> frozen `Benchmark`.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ledger.errors import SweclError

from ._dump import dump_curriculum, write_curriculum
from ._model import DIFFICULTY_LABELS, Benchmark, Sequence, Task
from ._rows import load_hf, modified_files_of, read_rows, row_fields, rows_from_records, sequences_from_rows
from ._validate import describe_validation_error, environment_dict, parse_json, read_text, short_repr
from .demo import demo_benchmark

if TYPE_CHECKING:
    from ._schemas import SwebenchRow, TaskIn

__all__ = [
    "benchmark_from_curriculum",
    "dump_curriculum",
    "find_sequence",
    "find_task",
    "list_sequences",
    "load_benchmark",
    "write_curriculum",
]


# --- curriculum -> draft ---------------------------------------------------------------


def _task_draft(raw: TaskIn, sequence_repo: str, where: str) -> dict[str, Any]:
    meta, cl = raw.metadata, raw.continual_learning
    difficulty = cl.difficulty_score
    if difficulty is None:
        difficulty = DIFFICULTY_LABELS.get(meta.difficulty or "")
    if difficulty is None:
        detail = f" and metadata.difficulty {meta.difficulty!r} is not a SWE-bench label" if meta.difficulty else ""
        raise SweclError(f"{where}: continual_learning.difficulty_score: field required{detail}")
    if meta.repo is not None and meta.repo != sequence_repo:
        raise SweclError(f"{where}: metadata.repo: {meta.repo!r} differs from the sequence's repo {sequence_repo!r}")
    from ._schemas import EvaluationIn, TextIn  # pydantic off the start-up path (see _schemas)

    text = raw.task or TextIn()
    evaluation = raw.evaluation or EvaluationIn()
    version = meta.version
    if version is None and raw.swebench_verified_extra is not None:
        version = raw.swebench_verified_extra.version
    return {
        "instance_id": meta.instance_id,
        "repo": sequence_repo,
        "base_commit": meta.base_commit,
        "order": cl.sequence_position,
        "difficulty": difficulty,
        "difficulty_label": meta.difficulty,
        "version": version,
        "created_at": meta.created_at,
        "problem_statement": text.problem_statement,
        "hints_text": text.hints_text,
        "patch": evaluation.patch,
        "test_patch": evaluation.test_patch,
        "fail_to_pass": evaluation.FAIL_TO_PASS,
        "pass_to_pass": evaluation.PASS_TO_PASS,
        "dependencies": list(cl.dependencies),
        "modified_files": cl.modified_files,
        "environment": environment_dict(raw.environment),
        "environment_setup_commit": meta.environment_setup_commit,
    }


def _sequence_draft(raw: Any, number: int, label: str) -> dict[str, Any]:
    from ._schemas import SequenceIn, TaskIn, ValidationError  # pydantic off the start-up path (see _schemas)

    if not isinstance(raw, dict):
        raise SweclError(f"{label}: sequence #{number}: expected an object, got {type(raw).__name__}")
    name = raw.get("id")
    where = f"{label}: sequence {name!r}" if isinstance(name, str) and name else f"{label}: sequence #{number}"
    try:
        sequence = SequenceIn.model_validate(raw)
    except ValidationError as exc:
        raise SweclError(f"{where}: {describe_validation_error(exc)}") from None
    if not sequence.tasks:
        raise SweclError(f"{where}: tasks: empty (a sequence needs at least one task)")
    if sequence.num_tasks is not None and sequence.num_tasks != len(sequence.tasks):
        raise SweclError(f"{where}: num_tasks: says {sequence.num_tasks} but the sequence holds {len(sequence.tasks)} tasks")
    tasks: list[dict[str, Any]] = []
    by_position: dict[int, str] = {}
    for index, raw_task in enumerate(sequence.tasks, start=1):
        task_where = f"{where}, task #{index}"
        if not isinstance(raw_task, dict):
            raise SweclError(f"{task_where}: expected an object, got {type(raw_task).__name__}")
        meta = raw_task.get("metadata")
        if isinstance(meta, dict) and isinstance(meta.get("instance_id"), str) and meta["instance_id"]:
            task_where = f"{where}, task {meta['instance_id']!r}"
        try:
            parsed = TaskIn.model_validate(raw_task)
        except ValidationError as exc:
            raise SweclError(f"{task_where}: {describe_validation_error(exc)}") from None
        task = _task_draft(parsed, sequence.repo, task_where)
        position = task["order"]
        if position in by_position:
            raise SweclError(
                f"{task_where}: continual_learning.sequence_position: duplicate value {position} "
                f"(also task {by_position[position]!r})"
            )
        by_position[position] = task["instance_id"]
        tasks.append(task)
    for position in range(1, len(tasks) + 1):
        if position not in by_position:
            raise SweclError(
                f"{where}: continual_learning.sequence_position: no task at position {position} "
                f"(positions must run 1..{len(tasks)})"
            )
    tasks.sort(key=lambda t: t["order"])
    return {
        "id": sequence.id,
        "repo": sequence.repo,
        "environment": environment_dict(sequence.environment),
        "tasks": tasks,
    }


def _is_url(value: str) -> bool:
    return "://" in value or (value.count(":") == 1 and "@" in value.split(":")[0])


def _repo_sources(metadata: Any, label: str, base_dir: Path | None) -> dict[str, str]:
    if not isinstance(metadata, dict) or metadata.get("repo_sources") is None:
        return {}
    raw = metadata["repo_sources"]
    if not isinstance(raw, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        raise SweclError(f"{label}: metadata.repo_sources: expected an object of OWNER/NAME -> path or URL")
    sources = {}
    for repo, where in raw.items():
        if not _is_url(where) and base_dir is not None and not os.path.isabs(where):
            # Relative paths are relative to the curriculum file, so a folder holding the
            # file and its repos can move (and two copies stay byte-identical).
            where = str((base_dir / where).resolve())
        sources[repo] = where
    return sources


def _curriculum_sequences(document: Any, label: str) -> list[dict[str, Any]]:
    if not isinstance(document, dict):
        raise SweclError(f"{label}: expected a curriculum object with 'sequences', got {type(document).__name__}")
    raw_sequences = document.get("sequences")
    if not isinstance(raw_sequences, list):
        got = "nothing" if raw_sequences is None else type(raw_sequences).__name__
        raise SweclError(f"{label}: sequences: expected a list of sequences, got {got}")
    if not raw_sequences:
        raise SweclError(f"{label}: sequences: empty (a curriculum needs at least one sequence)")
    sequences = [_sequence_draft(raw, n, label) for n, raw in enumerate(raw_sequences, start=1)]
    _refuse_repeats(sequences, label)
    return sequences


def _refuse_repeats(sequences: list[dict[str, Any]], label: str) -> None:
    seen_sequences: set[str] = set()
    seen_tasks: dict[str, str] = {}
    for sequence in sequences:
        where = f"{label}: sequence {sequence['id']!r}"
        if sequence["id"] in seen_sequences:
            raise SweclError(f"{where}: id: duplicate sequence id")
        seen_sequences.add(sequence["id"])
        for task in sequence["tasks"]:
            other = seen_tasks.get(task["instance_id"])
            if other is not None:
                also = "this sequence" if other == sequence["id"] else f"sequence {other!r}"
                raise SweclError(
                    f"{where}, task {task['instance_id']!r}: metadata.instance_id: duplicate (also in {also})"
                )
            seen_tasks[task["instance_id"]] = sequence["id"]


# --- rows join ---------------------------------------------------------------------------


def _join_rows(sequences: list[dict[str, Any]], rows: list[SwebenchRow], rows_label: str, label: str) -> None:
    """Fill every field a task lacks from the row with its instance_id.

    Fields the curriculum already has win; a row whose base_commit or repo disagrees
    means the rows describe other tasks, which is an error rather than a silent mix.
    """
    index = {row.instance_id: row for row in rows}
    matched = 0
    total = 0
    for sequence in sequences:
        for task in sequence["tasks"]:
            total += 1
            row = index.get(task["instance_id"])
            if row is None:
                continue
            matched += 1
            for key in ("repo", "base_commit"):
                if getattr(row, key) != task[key]:
                    raise SweclError(
                        f"{rows_label}: instance {task['instance_id']!r}: {key} "
                        f"{short_repr(getattr(row, key))} differs from {label}'s {short_repr(task[key])}; "
                        "these rows describe other tasks"
                    )
            for key, value in row_fields(row).items():
                if task.get(key) is None and value is not None:
                    task[key] = value
    if matched == 0:
        raise SweclError(f"{rows_label}: none of its {len(rows)} rows is one of the {total} tasks of {label}")


# --- draft -> frozen ----------------------------------------------------------------------


def _tuple(value: list[str] | None) -> tuple[str, ...] | None:
    return None if value is None else tuple(value)


def _freeze_sequence(sequence: dict[str, Any]) -> Sequence:
    default_env = sequence["environment"]
    tasks = []
    for draft in sequence["tasks"]:
        modified = draft.get("modified_files")
        if modified is None:
            modified = modified_files_of(draft.get("patch"))
        environment = draft.get("environment")
        tasks.append(
            Task(
                instance_id=draft["instance_id"],
                repo=draft["repo"],
                base_commit=draft["base_commit"],
                order=draft["order"],
                difficulty=draft["difficulty"],
                difficulty_label=draft.get("difficulty_label"),
                version=draft.get("version"),
                created_at=draft.get("created_at"),
                problem_statement=draft.get("problem_statement"),
                hints_text=draft.get("hints_text") or "",
                patch=draft.get("patch"),
                test_patch=draft.get("test_patch"),
                fail_to_pass=_tuple(draft.get("fail_to_pass")),
                pass_to_pass=_tuple(draft.get("pass_to_pass")),
                dependencies=tuple(draft.get("dependencies") or ()),
                modified_files=tuple(modified),
                environment=environment if environment is not None else default_env,
                environment_setup_commit=draft.get("environment_setup_commit"),
            )
        )
    return Sequence(id=sequence["id"], repo=sequence["repo"], tasks=tuple(tasks), environment=default_env)


def _freeze(name: str, source: str, sequences: list[dict[str, Any]], repo_sources: dict[str, str]) -> Benchmark:
    return Benchmark(
        name=name,
        source=source,
        sequences=tuple(_freeze_sequence(s) for s in sequences),
        repo_sources=dict(repo_sources),
    )


def benchmark_from_curriculum(
    document: Any, label: str, *, name: str | None = None, base_dir: Path | None = None
) -> Benchmark:
    """A `Benchmark` from an already-parsed curriculum object; errors name `label`."""
    sequences = _curriculum_sequences(document, label)
    metadata = document.get("metadata") if isinstance(document, dict) else None
    meta_name = metadata.get("name") if isinstance(metadata, dict) else None
    return _freeze(
        name or (meta_name if isinstance(meta_name, str) and meta_name else label),
        label,
        sequences,
        _repo_sources(metadata, label, base_dir),
    )


# --- the public loader -------------------------------------------------------------------


def _draft_from_path(dataset: str) -> tuple[str, list[dict[str, Any]], dict[str, str]]:
    path = Path(dataset)
    if path.is_dir():
        raise SweclError(f"{dataset}: is a directory; --dataset takes a SWE-Bench-CL curriculum JSON file or hf:NAME")
    if not path.exists():
        raise SweclError(f"{dataset}: no such file; --dataset takes a SWE-Bench-CL curriculum JSON file or hf:NAME")
    if path.suffix.lower() in (".parquet", ".jsonl", ".ndjson"):
        rows, label = read_rows(dataset)
        return path.stem, sequences_from_rows(rows, label), {}
    document = parse_json(read_text(path, dataset), dataset)
    if isinstance(document, list):
        # A JSON list is SWE-bench rows: build the curriculum the way SWE-Bench-CL did.
        return path.stem, sequences_from_rows(rows_from_records(document, dataset), dataset), {}
    if isinstance(document, dict) and "sequences" not in document:
        raise SweclError(
            f"{dataset}: neither a SWE-Bench-CL curriculum (an object with 'sequences') "
            "nor a list of SWE-bench rows"
        )
    metadata = document.get("metadata") if isinstance(document, dict) else None
    meta_name = metadata.get("name") if isinstance(metadata, dict) else None
    name = meta_name if isinstance(meta_name, str) and meta_name else path.stem
    sequences = _curriculum_sequences(document, dataset)
    return name, sequences, _repo_sources(metadata, dataset, path.resolve().parent)


def _draft_from_hub(dataset: str) -> tuple[str, list[dict[str, Any]], dict[str, str]]:
    loaded = load_hf(dataset)
    name = dataset[len("hf:"):].partition(":")[0]
    if isinstance(loaded, dict):
        return name, _curriculum_sequences(loaded, dataset), _repo_sources(loaded.get("metadata"), dataset, None)
    return name, sequences_from_rows(rows_from_records(loaded, dataset), dataset), {}


def load_benchmark(dataset: str | os.PathLike[str] | None, rows: str | os.PathLike[str] | None = None) -> Benchmark:
    """The benchmark named by `dataset`, completed with `rows` when given.

    dataset: None -> the built-in demo; `hf:NAME[:SPLIT]` -> a Hugging Face dataset
    (a SWE-Bench-CL curriculum, or SWE-bench rows arranged by SWE-Bench-CL's rule); a
    path -> a curriculum / manifest JSON, or rows (JSON list, JSONL, parquet).
    rows: SWE-bench rows (file or `hf:NAME`) that fill what the dataset lacks (a
    manifest's texts, patches and tests), matched by instance_id.
    """
    rows = None if rows is None else os.fspath(rows)
    if dataset is None:
        if rows is not None:
            raise SweclError("--rows completes a manifest given with --dataset; the built-in demo needs no rows")
        return demo_benchmark()
    dataset = os.fspath(dataset)
    if dataset.startswith("hf:"):
        name, sequences, sources = _draft_from_hub(dataset)
    else:
        name, sequences, sources = _draft_from_path(dataset)
    source = dataset
    if rows is not None:
        loaded_rows, rows_label = read_rows(rows)
        _join_rows(sequences, loaded_rows, rows_label, dataset)
        source = f"{dataset} + rows {rows}"
    return _freeze(name, source, sequences, sources)


# --- what the CLI shows ---------------------------------------------------------------------


def benchmark_to_list(dataset: str | os.PathLike[str] | None, rows: str | os.PathLike[str] | None = None) -> Benchmark:
    """The benchmark `swecl sequences` and `swecl show` read: as `load_benchmark`, but the
    demo without its git repositories (a listing needs none)."""
    if dataset is None and rows is None:
        return demo_benchmark(materialise=False)
    return load_benchmark(dataset, rows)


def list_sequences(benchmark: Benchmark) -> list[dict[str, Any]]:
    """One entry per sequence, in file order: id, repo, num_tasks, difficulty counts."""
    return [
        {"id": s.id, "repo": s.repo, "num_tasks": len(s.tasks), "difficulty": s.difficulty_counts()}
        for s in benchmark.sequences
    ]


def _suggest(wanted: str, names: list[str]) -> str:
    close = difflib.get_close_matches(wanted, names, n=3, cutoff=0.6)
    return f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""


def find_task(benchmark: Benchmark, instance_id: str) -> tuple[Sequence, Task]:
    for sequence in benchmark.sequences:
        task = sequence.task(instance_id)
        if task is not None:
            return sequence, task
    ids = [t.instance_id for t in benchmark.tasks()]
    raise SweclError(
        f"task {instance_id!r} is not in benchmark {benchmark.name!r} ({len(ids)} tasks in "
        f"{len(benchmark.sequences)} sequences; `swecl sequences` lists them){_suggest(instance_id, ids)}"
    )


def task_document(sequence: Sequence, task: Task) -> dict[str, Any]:
    """`swecl show --json`: every field of the task, where it sits, and what it lacks to run."""
    return {"sequence": sequence.id, **task.to_dict(), "missing": task.missing()}


def find_sequence(benchmark: Benchmark, key: str) -> Sequence:
    """The sequence with this id, or the only one of this repo (OWNER/NAME)."""
    found = benchmark.sequence(key)
    if found is not None:
        return found
    of_repo = [s for s in benchmark.sequences if s.repo == key]
    if len(of_repo) == 1:
        return of_repo[0]
    ids = [s.id for s in benchmark.sequences]
    raise SweclError(
        f"sequence {key!r} is not in benchmark {benchmark.name!r} (it has {', '.join(ids)})"
        f"{_suggest(key, ids)}"
    )
